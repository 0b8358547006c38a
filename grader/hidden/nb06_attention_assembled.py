"""Hidden checks for notebook 06 (attention, assembled)."""

import numpy as np

from grader.hidden import exercise


def _softmax(S, axis=-1):
    E = np.exp(S - S.max(axis=axis, keepdims=True))
    return E / E.sum(axis=axis, keepdims=True)


def _causal(T):
    return np.where(np.triu(np.ones((T, T), dtype=bool), k=1), -np.inf, 0.0)


def _random_mask(rng, T_q, T_k):
    """Finite values plus some −inf entries; every row keeps at least one key."""
    M = rng.normal(size=(T_q, T_k))
    blocked = rng.random((T_q, T_k)) < 0.4
    blocked[np.arange(T_q), rng.integers(0, T_k, size=T_q)] = False
    return np.where(blocked, -np.inf, M)


def _cases(rng):
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


def _variant(scores=None, scale=None, axis=-1, mask_step="before", swap=False, wT=False):
    """A reference with one slip; every argument names a place where learners go wrong."""

    @np.errstate(all="ignore")  # a slip may make NaNs; that only means "not this slip"
    def attention(Q, K, V, mask=None):
        d_k = Q.shape[-1]
        S = (scores or (lambda Q, K: Q @ np.swapaxes(K, -1, -2)))(Q, K)
        S = S / (scale(Q, K) if scale else np.sqrt(d_k))
        if mask is not None and mask_step == "before":
            S = S + mask
        A = _softmax(S, axis=axis)
        if mask is not None and mask_step == "zero after":
            A = np.where(np.isneginf(mask), 0.0, A)
        out = (np.swapaxes(A, -1, -2) if wT else A) @ V
        return (A, out) if swap else (out, A)

    return attention


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
        (
            _variant(scores=lambda Q, K: K @ np.swapaxes(Q, -1, -2)),
            "`attention` computes K Qᵀ instead of Q Kᵀ (rows must be queries).",
        ),
        (_variant(scale=lambda Q, K: 1.0), "`attention` does not scale the scores by 1/√d_k."),
        (
            _variant(scale=lambda Q, K: Q.shape[-1]),
            "`attention` divides the scores by d_k instead of √d_k.",
        ),
        (
            _variant(scale=lambda Q, K: np.sqrt(Q.shape[-2])),
            "`attention` divides the scores by √T instead of √d_k.",
        ),
        (
            _variant(scale=lambda Q, K: np.sqrt(K.shape[-2])),
            "`attention` divides the scores by √T instead of √d_k.",
        ),
        (
            _variant(axis=-2),
            "`attention` takes the softmax over the queries (axis -2), not the keys.",
        ),
        (_variant(mask_step="ignore"), "`attention` ignores the mask."),
        (
            _variant(mask_step="zero after"),
            "`attention` applies the mask after the softmax; add it to the scores before.",
        ),
        (_variant(swap=True), "`attention` returns (weights, output); return (output, weights)."),
        (_variant(wT=True), "`attention` computes weights.T @ V; the output is weights @ V."),
    ],
)
def attention(Q, K, V, mask=None):
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # [..., T_q, T_k]
    if mask is not None:
        S = S + mask
    A = _softmax(S)
    return A @ V, A
