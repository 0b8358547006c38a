"""Hidden checks and the mistake catalogue for notebook 06 (attention, assembled)."""

from collections.abc import Iterator

import numpy as np

from grader.hidden import Alternative, Array, Mistake, edited, exercise


def _causal(T: int) -> Array:
    return np.where(np.triu(np.ones((T, T), dtype=bool), k=1), -np.inf, 0.0)


def _random_mask(rng: np.random.Generator, T_q: int, T_k: int) -> Array:
    """Finite values plus some −inf entries; every row keeps at least one key."""
    M = rng.normal(size=(T_q, T_k))
    blocked = rng.random((T_q, T_k)) < 0.4
    blocked[np.arange(T_q), rng.integers(0, T_k, size=T_q)] = False
    return np.where(blocked, -np.inf, M)


def _cases(
    rng: np.random.Generator,
) -> Iterator[tuple[Array, Array, Array] | tuple[Array, Array, Array, Array]]:
    T, d_k, d_v = 5, 3, 4
    yield rng.normal(size=(T, d_k)), rng.normal(size=(T, d_k)), rng.normal(size=(T, d_v))
    T, d_k = 6, 8
    yield (
        rng.normal(size=(T, d_k)) * 2,
        rng.normal(size=(T, d_k)),
        rng.normal(size=(T, 3)),
        _causal(T),
    )
    B, T, d_k = 2, 5, 4
    yield (
        rng.normal(size=(B, T, d_k)),
        rng.normal(size=(B, T, d_k)),
        rng.normal(size=(B, T, 2)),
        _causal(T),
    )
    yield (
        rng.normal(size=(3, 4)),
        rng.normal(size=(7, 4)),
        rng.normal(size=(7, 2)),
        _random_mask(rng, 3, 7),
    )
    shape = (2, 3, 5, 6)
    yield (
        rng.normal(size=shape),
        rng.normal(size=shape),
        rng.normal(size=shape),
        _random_mask(rng, 5, 5),
    )
    yield rng.normal(size=(4, 16)) * 30, rng.normal(size=(4, 16)) * 30, rng.normal(size=(4, 3))


# The solution, written out; each mistake below changes one or two of its lines.
_ATTENTION = """
def attention(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        S = S + mask
    S = S - S.max(axis=-1, keepdims=True)
    E = np.exp(S)
    weights = E / E.sum(axis=-1, keepdims=True)
    return weights @ V, weights
"""


def _slip(
    label: str, says: tuple[str, ...], message: str | None = None, **edits: tuple[str, str]
) -> Mistake:
    """The solution with ``edits`` ({what: (as written, replacement)}) made: one Mistake."""
    return Mistake(label, edited(_ATTENTION, *edits.values()), says=says, message=message)


_SCORES = "S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)"
_ADD_MASK = "    if mask is not None:\n        S = S + mask\n"
_SOFTMAX = "weights = E / E.sum(axis=-1, keepdims=True)"


@exercise(
    "attention",
    shortcuts={
        "torch": {
            "scaled_dot_product_attention",
            "MultiheadAttention",
            "multi_head_attention_forward",
        },
        "attnlib": {"CausalSelfAttention"},
    },
    cases=_cases,
    mistakes=[
        _slip(
            "K-times-Q",
            ("K Qᵀ instead of Q Kᵀ",),
            "`attention` computes K Qᵀ instead of Q Kᵀ: rows must be queries.",
            scores=(_SCORES, "S = K @ np.swapaxes(Q, -1, -2) / np.sqrt(d_k)"),
        ),
        _slip(
            "unscaled",
            ("divide Q Kᵀ by np.sqrt(d_k)",),
            "`attention` does not scale the scores: divide Q Kᵀ by np.sqrt(d_k).",
            scores=(_SCORES, "S = Q @ np.swapaxes(K, -1, -2)"),
        ),
        _slip(
            "by-d_k",
            ("divide by np.sqrt(d_k) instead",),
            "`attention` divides the scores by d_k; divide by np.sqrt(d_k) instead.",
            scores=(_SCORES, "S = Q @ np.swapaxes(K, -1, -2) / d_k"),
        ),
        _slip(
            "by-sqrt-T",
            ("√T",),
            "`attention` divides the scores by √T (the number of positions); divide by "
            "np.sqrt(d_k), with d_k = Q.shape[-1].",
            scores=(_SCORES, "S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-2])"),
        ),
        _slip(
            "over-queries",
            ("over the keys",),
            "`attention` takes the softmax over the queries (axis -2): take it over the keys, "
            "the last axis.",
            shift=("S.max(axis=-1, keepdims=True)", "S.max(axis=-2, keepdims=True)"),
            norm=(_SOFTMAX, "weights = E / E.sum(axis=-2, keepdims=True)"),
        ),
        _slip(
            "unstable",
            ("subtract each row's max",),
            "`attention` overflows for large scores: subtract each row's max before np.exp.",
            shift=("    S = S - S.max(axis=-1, keepdims=True)\n", ""),
        ),
        _slip(
            "mask-ignored",
            ("ignore",),
            "`attention` ignores the mask: add it to the scaled scores before the softmax.",
            mask=(_ADD_MASK, ""),
        ),
        _slip(
            "mask-zeroes-after",
            ("after the softmax",),
            "`attention` applies the mask after the softmax; add it to the scores before.",
            mask=(_ADD_MASK, ""),
            after=(
                _SOFTMAX,
                _SOFTMAX + "\n    if mask is not None:\n"
                "        weights = np.where(np.isneginf(mask), 0.0, weights)",
            ),
        ),
        _slip(
            "mask-added-after",
            ("before the softmax",),
            "`attention` adds the mask to the weights after the softmax (they become -inf): "
            "add it to the scores before the softmax.",
            mask=(_ADD_MASK, ""),
            after=(
                _SOFTMAX,
                _SOFTMAX + "\n    if mask is not None:\n        weights = weights + mask",
            ),
        ),
        _slip(
            "mask-multiplied",
            ("never multiply",),
            "`attention` multiplies the scores by the mask: add the mask, never multiply by it "
            "(0 · −inf is NaN).",
            mask=("S = S + mask", "S = S * mask"),
        ),
        _slip(
            "returns-weights-first",
            ("(weights, output)",),
            "`attention` returns (weights, output); return (output, weights).",
            ret=("return weights @ V, weights", "return weights, weights @ V"),
        ),
        _slip(
            "weights-transposed",
            ("weights.T @ V",),
            "`attention` computes weights.T @ V; the output is weights @ V.",
            ret=("return weights @ V", "return np.swapaxes(weights, -1, -2) @ V"),
        ),
        _slip(
            "K.T-on-batches",
            ("np.swapaxes(K, -1, -2)",),
            scores=(_SCORES, "S = Q @ K.T / np.sqrt(d_k)"),
        ),
    ],
    alternatives=[
        Alternative(
            "loops",
            """
            def attention(Q, K, V, mask=None):
                *batch, T_q, d_k = Q.shape
                T_k = K.shape[-2]
                M = np.zeros((T_q, T_k)) if mask is None else np.broadcast_to(mask, (T_q, T_k))
                out = np.zeros((*batch, T_q, V.shape[-1]))
                A = np.zeros((*batch, T_q, T_k))
                for b in np.ndindex(*batch):
                    for i in range(T_q):
                        s = np.array(
                            [Q[b][i] @ K[b][j] / np.sqrt(d_k) + M[i, j] for j in range(T_k)]
                        )
                        e = np.exp(s - s.max())
                        A[b][i] = e / e.sum()
                        out[b][i] = sum(A[b][i, j] * V[b][j] for j in range(T_k))
                return out, A
            """,
        ),
        Alternative(
            "einsum-large-negative",
            """
            def attention(Q, K, V, mask=None):
                S = np.einsum("...id,...jd->...ij", Q, K) / np.sqrt(Q.shape[-1])
                if mask is not None:
                    S = S + np.maximum(mask, -1e9)  # −1e9 instead of −inf: the same weights
                E = np.exp(S - S.max(axis=-1, keepdims=True))
                A = E / E.sum(axis=-1, keepdims=True)
                return np.einsum("...ij,...jd->...id", A, V), A
            """,
        ),
        Alternative(
            "torch-ops",
            """
            def attention(Q, K, V, mask=None):
                import torch

                q, k, v = (torch.from_numpy(x) for x in (Q, K, V))
                S = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
                if mask is not None:
                    S = S + torch.as_tensor(mask, dtype=S.dtype)
                A = torch.softmax(S, dim=-1)
                return (A @ v).numpy(), A.numpy()
            """,
        ),
    ],
)
def attention(Q: Array, K: Array, V: Array, mask: Array | None = None) -> tuple[Array, Array]:
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # [..., T_q, T_k]
    if mask is not None:
        S = S + mask
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    A = E / E.sum(axis=-1, keepdims=True)
    return A @ V, A
