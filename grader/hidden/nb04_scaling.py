"""Hidden checks for notebook 04 (why divide by √d_k)."""

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from grader.hidden import Alternative, Array, Floats, Mistake, exercise


def _scaled_cases(rng: np.random.Generator) -> Iterator[tuple[Floats, Floats]]:
    for T_q, T_k, d_k in [(5, 7, 3), (6, 6, 16), (2, 9, 64), (11, 4, 10)]:  # one square case
        yield rng.normal(size=(T_q, d_k)), rng.normal(size=(T_k, d_k))
    Q, K = rng.normal(size=(8, 128)), rng.normal(size=(10, 128))
    yield Q.astype(np.float32), K.astype(np.float32)


def _raw(Q: npt.ArrayLike, K: npt.ArrayLike) -> Array:
    return np.asarray(Q, dtype=np.float64) @ np.asarray(K, dtype=np.float64).T


@exercise(
    "scaled_scores",
    cases=_scaled_cases,
    atol=1e-4,
    rtol=1e-4,
    mistakes=[
        Mistake(
            "unscaled",
            """
            def scaled_scores(Q, K):
                return Q @ K.T
            """,
            says=("forgot to scale",),
            message="`scaled_scores` forgot to scale: divide Q Kᵀ by √d_k.",
        ),
        Mistake(
            "by-d_k",
            """
            def scaled_scores(Q, K):
                return Q @ K.T / Q.shape[-1]
            """,
            says=("by d_k instead of √d_k",),
            message="`scaled_scores` divided by d_k instead of √d_k.",
        ),
        Mistake(
            "by-sqrt-T-keys",
            """
            def scaled_scores(Q, K):
                return Q @ K.T / np.sqrt(K.shape[0])
            """,
            says=("√T (the number of keys)",),
            message="`scaled_scores` divided by √T (the number of keys) instead of √d_k.",
        ),
        Mistake(
            "by-sqrt-T-queries",
            """
            def scaled_scores(Q, K):
                return Q @ K.T / np.sqrt(Q.shape[0])
            """,
            says=("√T (the number of queries)",),
            message="`scaled_scores` divided by √T (the number of queries) instead of √d_k.",
        ),
        Mistake(
            "transposed",
            """
            def scaled_scores(Q, K):
                return K @ Q.T / np.sqrt(Q.shape[-1])
            """,
            says=("K Qᵀ",),
            message="`scaled_scores` is transposed: rows must be queries (Q Kᵀ, not K Qᵀ).",
        ),
        Mistake(
            "multiplied",
            """
            def scaled_scores(Q, K):
                return Q @ K.T * np.sqrt(Q.shape[-1])
            """,
            says=("multiplied by √d_k",),
            message="`scaled_scores` multiplied by √d_k instead of dividing.",
        ),
        Mistake(
            "fixed-d_model",
            """
            d_model = 512


            def scaled_scores(Q, K):
                return Q @ K.T / np.sqrt(d_model)
            """,
            says=("fixed √512", "d_model"),
            caught_by="visible",  # the hidden check says only "a wrong result"
        ),
    ],
    alternatives=[
        Alternative(
            "loops",
            """
            def scaled_scores(Q, K):
                d_k = len(Q[0])
                return np.array(
                    [[sum(q * k for q, k in zip(qi, kj)) / d_k**0.5 for kj in K] for qi in Q]
                )
            """,
        ),
        Alternative(
            "einsum",
            """
            def scaled_scores(Q, K):
                return np.einsum("id,jd->ij", Q / np.sqrt(Q.shape[1]), K)
            """,
        ),
        Alternative(
            "torch",
            """
            def scaled_scores(Q, K):
                import torch

                S = torch.from_numpy(Q) @ torch.from_numpy(K).T
                return (S / Q.shape[-1] ** 0.5).numpy()
            """,
        ),
        Alternative(
            "split-root",
            """
            def scaled_scores(Q, K):
                return (Q / Q.shape[-1] ** 0.25) @ (K / K.shape[-1] ** 0.25).T
            """,
        ),
    ],
)
def scaled_scores(Q: Floats, K: Floats) -> Array:
    scores: Array = _raw(Q, K) / np.sqrt(Q.shape[-1])  # [T_q, T_k]
    return scores


def _weights(rng: np.random.Generator, N: int, T: int, scale: float) -> Array:
    S = rng.normal(size=(N, T)) * scale
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    A: Array = E / E.sum(axis=-1, keepdims=True)
    return A


def _entropy_cases(rng: np.random.Generator) -> Iterator[tuple[Floats]]:
    yield (_weights(rng, 6, 9, 1.0),)
    yield (_weights(rng, 20, 5, 4.0),)
    A = _weights(rng, 7, 12, 2.0)
    A[:3] = np.eye(12)[rng.integers(0, 12, size=3)]  # one-hot rows: 0 · log 0 must count as 0
    A[3, :6], A[3, 6:] = 0.0, 1 / 6
    yield (A,)
    yield (_weights(rng, 50, 64, 300.0),)  # saturated: many weights underflow to exactly 0
    yield (_weights(rng, 10, 16, 1.0).astype(np.float32),)


def _xlogx(A: npt.ArrayLike) -> Array:
    A = np.asarray(A, dtype=np.float64)
    return np.where(A > 0, A * np.log(np.where(A > 0, A, 1.0)), 0.0)


@exercise(
    "softmax_entropy",
    cases=_entropy_cases,
    atol=1e-5,
    rtol=1e-5,
    mistakes=[
        Mistake(
            "log2",
            """
            def softmax_entropy(A):
                return -np.sum(A * np.log2(np.where(A > 0, A, 1.0)), axis=-1)
            """,
            says=("log base 2",),
            message="`softmax_entropy` uses log base 2 (bits): this course uses nats (np.log).",
        ),
        Mistake(
            "sign",
            """
            def softmax_entropy(A):
                return np.sum(A * np.log(np.where(A > 0, A, 1.0)), axis=-1)
            """,
            says=("wrong sign",),
            message="`softmax_entropy` has the wrong sign: H = −Σ p log p.",
        ),
        Mistake(
            "axis-0",
            """
            def softmax_entropy(A):
                return -np.sum(A * np.log(np.where(A > 0, A, 1.0)), axis=0)
            """,
            says=("axis=-1",),
            message="`softmax_entropy` sums over axis 0 (the rows): one entropy per row means "
            "summing over the keys, axis=-1.",
        ),
        Mistake(
            "whole-array",
            """
            def softmax_entropy(A):
                return -np.sum(A * np.log(np.where(A > 0, A, 1.0)))
            """,
            says=("one entropy per row",),
            message="`softmax_entropy` sums the whole array: return one entropy per row.",
        ),
        Mistake(
            "mean",
            """
            def softmax_entropy(A):
                return -np.mean(A * np.log(np.where(A > 0, A, 1.0)), axis=-1)
            """,
            says=("H = −Σ",),
            message="`softmax_entropy` averages over the keys instead of summing: "
            "H = −Σ_j p_j ln p_j.",
        ),
        Mistake(
            "zero-log-zero",
            """
            def softmax_entropy(A):
                return -np.sum(A * np.log(A), axis=-1)
            """,
            says=("0 · log 0",),
            message="`softmax_entropy` gives NaN for weights that are exactly 0: 0 · log 0 is "
            "NaN in NumPy but counts as 0 in the entropy.",
        ),
    ],
    alternatives=[
        Alternative(
            "loops",
            """
            def softmax_entropy(A):
                rows = [-sum(float(p) * np.log(float(p)) for p in row if p > 0) for row in A]
                return np.array(rows)
            """,
        ),
        Alternative(
            "epsilon",
            """
            def softmax_entropy(A):
                return -np.sum(A * np.log(A + 1e-300), axis=-1)
            """,
        ),
        Alternative(
            "nansum",
            """
            def softmax_entropy(A):
                with np.errstate(divide="ignore", invalid="ignore"):
                    return -np.nansum(A * np.log(A), axis=1)
            """,
        ),
        Alternative(
            "torch-entr",
            """
            def softmax_entropy(A):
                import torch

                return torch.special.entr(torch.from_numpy(np.asarray(A))).sum(-1).numpy()
            """,
        ),
    ],
)
def softmax_entropy(A: npt.ArrayLike) -> Array:
    entropy: Array = -_xlogx(A).sum(axis=-1)  # [N]
    return entropy


def _rows_with_maxima(rng: np.random.Generator, maxima: list[float], T: int) -> Array:
    """Rows of T weights whose largest weight is each of ``maxima``; the largest weights sit
    in every column in turn, and the rest of each row is spread below them."""
    A = np.zeros((len(maxima), T))
    for i, top in enumerate(maxima):
        rest = rng.dirichlet(np.ones(T - 1)) * (1 - top)
        while rest.max() >= top:  # the given maximum must stay the largest weight
            rest = rng.dirichlet(np.ones(T - 1)) * (1 - top)
        A[i] = np.insert(rest, i % T, top)
    return A


def _share_cases(rng: np.random.Generator) -> Iterator[tuple[Array, float]]:
    # First a case where every slip below gives its own answer: 15 of 40 row maxima above
    # 0.6, 9 of them above 0.9, 4 equal to 0.6; the maxima cover every column.
    maxima = [0.95] * 9 + [0.7] * 6 + [0.6] * 4 + [0.45] * 21
    yield rng.permutation(_rows_with_maxima(rng, maxima, 8)), 0.6
    for N, T, scale, threshold in [
        (40, 8, 3.0, 0.9),
        (30, 5, 2.0, 0.6),
        (25, 16, 4.0, 0.3),
        (60, 64, 10.0, 0.9),
        (17, 3, 1.5, 0.5),
    ]:
        yield _weights(rng, N, T, scale), threshold
    A = _weights(rng, 12, 4, 2.0)
    A[:4] = [0.5, 0.25, 0.25, 0.0]  # rows whose largest weight equals the threshold
    yield rng.permutation(A), 0.5


@exercise(
    "near_one_hot_share",
    cases=_share_cases,
    mistakes=[
        Mistake(
            "count",
            """
            def near_one_hot_share(A, threshold=0.9):
                return np.sum(A.max(axis=-1) > threshold)
            """,
            says=("count",),
            message="`near_one_hot_share` returns a count: divide by the number of rows.",
        ),
        Mistake(
            "all-weights",
            """
            def near_one_hot_share(A, threshold=0.9):
                return np.mean(A > threshold)
            """,
            says=("all N·T",),
            message="`near_one_hot_share` averaged over all N·T weights: the share is over "
            "rows, using each row's largest weight.",
        ),
        Mistake(
            "axis-0",
            """
            def near_one_hot_share(A, threshold=0.9):
                return np.mean(A.max(axis=0) > threshold)
            """,
            says=("axis 0",),
            message="`near_one_hot_share` took the maximum over axis 0 (each key's column): "
            "use each row's maximum, axis=-1.",
        ),
        Mistake(
            "fixed-threshold",
            """
            def near_one_hot_share(A, threshold=0.9):
                return np.mean(A.max(axis=-1) > 0.9)
            """,
            says=("`threshold` argument",),
            message="`near_one_hot_share` ignores the `threshold` argument.",
        ),
        Mistake(
            "every-weight",
            """
            def near_one_hot_share(A, threshold=0.9):
                return np.sum(A > threshold) / len(A)
            """,
            says=("every weight above",),
            message="`near_one_hot_share` counted every weight above the threshold: count "
            "rows whose largest weight is above it.",
        ),
        Mistake(
            "at-least",
            """
            def near_one_hot_share(A, threshold=0.9):
                return float(np.mean(A.max(axis=-1) >= threshold))
            """,
            says=("not `>=`",),
            message="`near_one_hot_share` counts rows whose largest weight equals the "
            "threshold: above means `>`, not `>=`.",
        ),
        Mistake(
            "one-per-row",
            """
            def near_one_hot_share(A, threshold=0.9):
                return A.max(axis=-1) > threshold
            """,
            says=("one number",),
        ),
    ],
    alternatives=[
        Alternative(
            "loops",
            """
            def near_one_hot_share(A, threshold=0.9):
                hits = 0
                for row in A:
                    if max(row) > threshold:
                        hits += 1
                return hits / len(A)
            """,
        ),
        Alternative(
            "any",
            """
            def near_one_hot_share(A, threshold=0.9):
                return np.count_nonzero(np.any(A > threshold, axis=1)) / A.shape[0]
            """,
        ),
        Alternative(
            "torch-0d",
            """
            def near_one_hot_share(A, threshold=0.9):
                import torch

                return (torch.from_numpy(A).amax(-1) > threshold).double().mean().numpy()
            """,
        ),
        Alternative(
            "numpy-scalar",
            """
            def near_one_hot_share(A, threshold=0.9):
                return np.mean(np.max(A, axis=-1) > threshold, keepdims=True)[0]
            """,
        ),
    ],
)
def near_one_hot_share(A: npt.ArrayLike, threshold: float = 0.9) -> float:
    return float(np.mean(np.asarray(A).max(axis=-1) > threshold))
