"""Hidden checks for notebook 04 (why divide by √d_k)."""

import numpy as np

from grader.hidden import exercise


def _scaled_cases(rng):
    for T_q, T_k, d_k in [(5, 7, 3), (6, 6, 16), (2, 9, 64), (11, 4, 10)]:  # one square case
        yield rng.normal(size=(T_q, d_k)), rng.normal(size=(T_k, d_k))
    Q, K = rng.normal(size=(8, 128)), rng.normal(size=(10, 128))
    yield Q.astype(np.float32), K.astype(np.float32)


def _raw(Q, K):
    return np.asarray(Q, dtype=np.float64) @ np.asarray(K, dtype=np.float64).T


@exercise(
    "scaled_scores",
    cases=_scaled_cases,
    atol=1e-4,
    rtol=1e-4,
    mistakes=[
        (_raw, "`scaled_scores` forgot to scale: divide Q Kᵀ by √d_k."),
        (lambda Q, K: _raw(Q, K) / Q.shape[-1], "`scaled_scores` divides by d_k instead of √d_k."),
        (
            lambda Q, K: _raw(Q, K) / np.sqrt(K.shape[0]),
            "`scaled_scores` divides by √T (the number of keys) instead of √d_k.",
        ),
        (
            lambda Q, K: _raw(Q, K) / np.sqrt(Q.shape[0]),
            "`scaled_scores` divides by √T (the number of queries) instead of √d_k.",
        ),
        (
            lambda Q, K: _raw(K, Q) / np.sqrt(Q.shape[-1]),
            "`scaled_scores` is transposed: rows must be queries (Q Kᵀ, not K Qᵀ).",
        ),
        (
            lambda Q, K: _raw(Q, K) * np.sqrt(Q.shape[-1]),
            "`scaled_scores` multiplies by √d_k instead of dividing.",
        ),
    ],
)
def scaled_scores(Q, K):
    return _raw(Q, K) / np.sqrt(Q.shape[-1])


def _weights(rng, N, T, scale):
    S = rng.normal(size=(N, T)) * scale
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


def _entropy_cases(rng):
    yield (_weights(rng, 6, 9, 1.0),)
    yield (_weights(rng, 20, 5, 4.0),)
    A = _weights(rng, 7, 12, 2.0)
    A[:3] = np.eye(12)[rng.integers(0, 12, size=3)]  # one-hot rows: 0 · log 0 must count as 0
    A[3, :6], A[3, 6:] = 0.0, 1 / 6
    yield (A,)
    yield (_weights(rng, 50, 64, 300.0),)  # saturated: many weights underflow to exactly 0
    yield (_weights(rng, 10, 16, 1.0).astype(np.float32),)


def _xlogx(A):
    A = np.asarray(A, dtype=np.float64)
    return np.where(A > 0, A * np.log(np.where(A > 0, A, 1.0)), 0.0)


@exercise(
    "softmax_entropy",
    cases=_entropy_cases,
    atol=1e-5,
    rtol=1e-5,
    mistakes=[
        (
            lambda A: -_xlogx(A).sum(axis=-1) / np.log(2),
            "`softmax_entropy` uses log base 2 (bits): this course uses nats (np.log).",
        ),
        (lambda A: _xlogx(A).sum(axis=-1), "`softmax_entropy` has the wrong sign: H = −Σ p log p."),
        (
            lambda A: -_xlogx(A).sum(axis=0),
            "`softmax_entropy` sums over axis 0 (the rows): one "
            "entropy per row means summing over the keys, axis=-1.",
        ),
        (
            lambda A: -_xlogx(A).sum(),
            "`softmax_entropy` sums the whole array: one entropy per row.",
        ),
        (
            lambda A: -_xlogx(A).mean(axis=-1),
            "`softmax_entropy` averages over the keys instead of summing: H = −Σ_j p_j log p_j.",
        ),
    ],
)
def softmax_entropy(A):
    return -_xlogx(A).sum(axis=-1)


def _share_cases(rng):
    for N, T, scale, threshold in [
        (40, 8, 3.0, 0.9),
        (30, 5, 2.0, 0.6),
        (25, 16, 4.0, 0.3),
        (60, 64, 10.0, 0.9),
        (17, 3, 1.5, 0.5),
    ]:
        yield _weights(rng, N, T, scale), threshold


@exercise(
    "near_one_hot_share",
    cases=_share_cases,
    mistakes=[
        (
            lambda A, threshold=0.9: np.sum(A.max(axis=-1) > threshold),
            "`near_one_hot_share` returns a count: divide by the number of rows.",
        ),
        (
            lambda A, threshold=0.9: np.mean(A > threshold),
            "`near_one_hot_share` averages over all N·T "
            "weights: the share is over rows, using each row's largest weight.",
        ),
        (
            lambda A, threshold=0.9: np.mean(A.max(axis=0) > threshold),
            "`near_one_hot_share` takes the maximum over axis 0 (columns): use each row's maximum.",
        ),
        (
            lambda A, threshold=0.9: np.mean(A.max(axis=-1) > 0.9),
            "`near_one_hot_share` ignores the `threshold` argument.",
        ),
        (
            lambda A, threshold=0.9: np.sum(A > threshold) / len(A),
            "`near_one_hot_share` counts every "
            "weight above the threshold: count rows whose largest weight is above it.",
        ),
    ],
)
def near_one_hot_share(A, threshold=0.9):
    return float(np.mean(np.asarray(A).max(axis=-1) > threshold))
