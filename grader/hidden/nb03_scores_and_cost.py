"""Hidden checks and the mistake catalogue for notebook 03 (scores and their cost)."""

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from attnlib.checks._core import is_whole
from grader.hidden import Alternative, Array, Floats, Mistake, exercise


def _scores_cases(rng: np.random.Generator) -> Iterator[tuple[Floats, Floats]]:
    for T_q, T_k, d_k in [(5, 7, 3), (6, 6, 4), (1, 9, 16), (12, 4, 8)]:  # one square case
        yield rng.normal(size=(T_q, d_k)), rng.normal(size=(T_k, d_k))
    Q, K = rng.normal(size=(8, 32)), rng.normal(size=(10, 32))
    yield Q.astype(np.float32), K.astype(np.float32)  # float32 in: float32 out is fine


@exercise(
    "attention_scores",
    cases=_scores_cases,
    atol=1e-4,
    rtol=1e-4,
    mistakes=[
        Mistake(
            "K-times-Q",
            """
            def attention_scores(Q, K):
                return K @ Q.T
            """,
            says=("K Qᵀ",),
            message="`attention_scores` computes K Qᵀ: rows must be queries and columns "
            "keys, so compute Q Kᵀ.",
        ),
        Mistake(
            "over-positions",
            """
            def attention_scores(Q, K):
                return Q.T @ K
            """,
            says=("Qᵀ K",),
            message="`attention_scores` computes Qᵀ K ([d_k, d_k]): sum over d_k, not over "
            "the positions.",
        ),
        Mistake(
            "scaled-by-sqrt-d_k",
            """
            def attention_scores(Q, K):
                return Q @ K.T / np.sqrt(Q.shape[-1])
            """,
            says=("by √d_k", "unscaled"),
            message="`attention_scores` divides by √d_k: this exercise wants the raw, "
            "unscaled Q Kᵀ.",
        ),
        Mistake(
            "scaled-by-d_k",
            """
            def attention_scores(Q, K):
                return Q @ K.T / Q.shape[-1]
            """,
            says=("by d_k", "unscaled"),
            message="`attention_scores` divides by d_k: this exercise wants the raw, unscaled "
            "Q Kᵀ.",
        ),
        Mistake(
            "torch-tensor",
            """
            def attention_scores(Q, K):
                import torch

                return torch.from_numpy(Q) @ torch.from_numpy(K).T
            """,
            says=("torch tensor", ".numpy()"),
        ),
        Mistake(
            "one-entry-off",
            """
            def attention_scores(Q, K):
                S = Q @ K.T
                S[0, 0] += 1.0
                return S
            """,
            says=("query i with key j",),
            caught_by="visible",  # the hidden check says only "a wrong result"
        ),
        Mistake(
            "float32",
            """
            def attention_scores(Q, K):
                return np.dot(np.asarray(Q, dtype=np.float32), np.asarray(K, dtype=np.float32).T)
            """,
            says=("float32", "keep float64"),
        ),
    ],
    alternatives=[
        Alternative(
            "loops",
            """
            def attention_scores(Q, K):
                S = np.zeros((Q.shape[0], K.shape[0]))
                for i in range(Q.shape[0]):
                    for j in range(K.shape[0]):
                        S[i, j] = sum(Q[i, c] * K[j, c] for c in range(Q.shape[1]))
                return S
            """,
        ),
        Alternative(
            "einsum",
            """
            def attention_scores(Q, K):
                return np.einsum("id,jd->ij", Q, K)
            """,
        ),
        Alternative(
            "torch",
            """
            def attention_scores(Q, K):
                import torch

                return (torch.from_numpy(Q) @ torch.from_numpy(K).T).numpy()
            """,
        ),
    ],
)
def attention_scores(Q: npt.ArrayLike, K: npt.ArrayLike) -> Array:
    return np.asarray(Q, dtype=np.float64) @ np.asarray(K, dtype=np.float64).T


def _bytes_cases(rng: np.random.Generator) -> Iterator[tuple[int] | tuple[int, int]]:
    yield (int(rng.integers(5, 50)),)  # T > dtype_bytes, so T·T and T·4 differ
    yield (int(rng.integers(100, 5000)),)
    yield int(rng.integers(10, 200)), 8
    yield int(rng.integers(10, 200)), 2


def _whole_bytes(result: object, args: tuple[int, ...]) -> object:
    """The task says "Return an int": a float or a string of the right size is refused."""
    if not is_whole(result):
        kind = type(result).__name__ if not hasattr(result, "dtype") else result.dtype
        raise TypeError(
            f"{result!r} as a {kind}: a number of bytes is whole, so return an int "
            "(no `/`, or wrap the result in `int(...)`)"
        )
    return result


@exercise(
    "score_matrix_bytes",
    cases=_bytes_cases,
    atol=0,
    rtol=0,
    outcome=_whole_bytes,
    mistakes=[
        Mistake(
            "linear",
            """
            def score_matrix_bytes(T, dtype_bytes=4):
                return T * dtype_bytes
            """,
            says=("linear",),
            message="`score_matrix_bytes` grows linearly in T: the score matrix has T × T entries.",
        ),
        Mistake(
            "entries",
            """
            def score_matrix_bytes(T, dtype_bytes=4):
                return T * T
            """,
            says=("number of entries",),
            message="`score_matrix_bytes` returns the number of entries: multiply by "
            "`dtype_bytes`.",
        ),
        Mistake(
            "bits",
            """
            def score_matrix_bytes(T, dtype_bytes=4):
                return T * T * dtype_bytes * 8
            """,
            says=("bits",),
            message="`score_matrix_bytes` counts bits, not bytes.",
        ),
        Mistake(
            "always-4",
            """
            def score_matrix_bytes(T, dtype_bytes=4):
                return T * T * 4
            """,
            says=("`dtype_bytes`",),
            message="`score_matrix_bytes` ignores `dtype_bytes` (always 4).",
        ),
        Mistake(
            "float",
            """
            def score_matrix_bytes(T, dtype_bytes=4):
                return T * T * (8 * dtype_bytes) / 8  # bits, then bytes
            """,
            says=("return an int",),
        ),
        Mistake(
            "string",
            """
            def score_matrix_bytes(T, dtype_bytes=4):
                return f"{T * T * dtype_bytes}"
            """,
            says=("str",),
        ),
    ],
    alternatives=[
        Alternative(
            "nbytes",
            """
            def score_matrix_bytes(T, dtype_bytes=4):
                return np.zeros((T, T), dtype=f"V{dtype_bytes}").nbytes
            """,
        ),
        Alternative(
            "numpy-int",
            """
            def score_matrix_bytes(T, dtype_bytes=4):
                return np.int64(T) ** 2 * dtype_bytes
            """,
        ),
    ],
)
def score_matrix_bytes(T: int, dtype_bytes: int = 4) -> int:
    return T * T * dtype_bytes
