"""Hidden checks for notebook 03 (scores and their cost)."""

import numpy as np

from grader.hidden import exercise


def _scores_cases(rng):
    for T_q, T_k, d_k in [(5, 7, 3), (6, 6, 4), (1, 9, 16), (12, 4, 8)]:  # one square case
        yield rng.normal(size=(T_q, d_k)), rng.normal(size=(T_k, d_k))
    Q, K = rng.normal(size=(8, 32)), rng.normal(size=(10, 32))
    yield Q.astype(np.float32), K.astype(np.float32)


@exercise(
    "attention_scores",
    cases=_scores_cases,
    atol=1e-4,
    rtol=1e-4,
    mistakes=[
        (
            lambda Q, K: K @ Q.T,
            "`attention_scores` computes K Qᵀ: rows must be queries and columns "
            "keys, so compute Q Kᵀ.",
        ),
        (
            lambda Q, K: Q @ K.T / np.sqrt(Q.shape[-1]),
            "`attention_scores` divides by √d_k: this exercise wants the raw, unscaled Q Kᵀ.",
        ),
        (
            lambda Q, K: Q @ K.T / Q.shape[-1],
            "`attention_scores` divides by d_k: this exercise wants the raw, unscaled Q Kᵀ.",
        ),
        (
            lambda Q, K: Q.T @ K,
            "`attention_scores` computes Qᵀ K ([d_k, d_k]): sum over d_k, not over the positions.",
        ),
    ],
)
def attention_scores(Q, K):
    return np.asarray(Q, dtype=np.float64) @ np.asarray(K, dtype=np.float64).T


def _bytes_cases(rng):
    yield (int(rng.integers(5, 50)),)  # T > dtype_bytes, so T·T and T·4 differ
    yield (int(rng.integers(100, 5000)),)
    yield int(rng.integers(10, 200)), 8
    yield int(rng.integers(10, 200)), 2


@exercise(
    "score_matrix_bytes",
    cases=_bytes_cases,
    atol=0,
    rtol=0,
    mistakes=[
        (
            lambda T, dtype_bytes=4: T * dtype_bytes,
            "`score_matrix_bytes` grows linearly in T: the score matrix has T × T entries.",
        ),
        (
            lambda T, dtype_bytes=4: T * T,
            "`score_matrix_bytes` returns the number of entries: multiply by `dtype_bytes`.",
        ),
        (
            lambda T, dtype_bytes=4: T * T * dtype_bytes * 8,
            "`score_matrix_bytes` counts bits, not bytes.",
        ),
        (
            lambda T, dtype_bytes=4: T * T * 4,
            "`score_matrix_bytes` ignores `dtype_bytes` (always 4).",
        ),
    ],
)
def score_matrix_bytes(T, dtype_bytes=4):
    return T * T * dtype_bytes
