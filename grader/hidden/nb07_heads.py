"""Hidden checks and the mistake catalogue for notebook 07_heads (several heads)."""

from collections.abc import Iterator

import numpy as np

from grader.hidden import TORCH_ATTENTION, Alternative, Array, Mistake, edited, exercise

# The helper package's own versions, and torch's: each would be the whole exercise in one call.
MODEL_HEADS = {"attnlib": {"CausalSelfAttention", "TinyTransformer"}}


def _softmax(S: Array) -> Array:
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    A: Array = E / E.sum(axis=-1, keepdims=True)
    return A


def _causal(T: int) -> Array:
    return np.where(np.triu(np.ones((T, T), dtype=bool), k=1), -np.inf, 0.0)


def _random_mask(rng: np.random.Generator, T: int) -> Array:
    """Finite values and some −inf entries; every query keeps at least one key."""
    M = rng.normal(size=(T, T))
    blocked = rng.random((T, T)) < 0.4
    blocked[np.arange(T), rng.integers(0, T, size=T)] = False
    return np.where(blocked, -np.inf, M)


# --------------------------------------------------------------------------- split_heads


def _split_cases(rng: np.random.Generator) -> Iterator[tuple[Array, int]]:
    for lead, T, d_model, n_heads in [
        ((), 5, 12, 3),
        ((), 4, 8, 2),
        ((2,), 3, 8, 4),
        ((2, 3), 4, 6, 2),
        ((), 3, 6, 6),
        ((3,), 2, 10, 1),
    ]:
        yield rng.normal(size=(*lead, T, d_model)), n_heads


# The answer its mistakes slip in, each named by the edit that makes it.
_SPLIT = """
def split_heads(X, n_heads):
    *lead, T, d_model = X.shape
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}")
    H = X.reshape(*lead, T, n_heads, d_model // n_heads)
    return np.swapaxes(H, -2, -3)
"""
_SPLIT_RESHAPE = "X.reshape(*lead, T, n_heads, d_model // n_heads)"
_SPLIT_RETURN = "return np.swapaxes(H, -2, -3)"


@exercise(
    "split_heads",
    cases=_split_cases,
    shortcuts=MODEL_HEADS,
    mistakes=[
        Mistake(
            "reshape-no-transpose",
            edited(
                _SPLIT,
                (_SPLIT_RESHAPE, "X.reshape(*lead, n_heads, T, d_model // n_heads)"),
                (_SPLIT_RETURN, "return H"),
            ),
            says=("transpose",),
            message="`split_heads` reshapes straight to [n_heads, T, d_head], which mixes "
            "positions: reshape to [..., T, n_heads, d_head], then transpose the heads axis "
            "in front of T.",
        ),
        Mistake(
            "interleaved",
            edited(
                _SPLIT,
                (_SPLIT_RESHAPE, "X.reshape(*lead, T, d_model // n_heads, n_heads)  # h::n"),
                (_SPLIT_RETURN, "return np.moveaxis(H, -1, -3)"),
            ),
            says=("interleaved",),
            message="`split_heads` gives head h every n_heads-th column (interleaved "
            "columns); head h is the block of columns h*d_head:(h+1)*d_head.",
        ),
        Mistake(
            "heads-after-T",
            edited(_SPLIT, (_SPLIT_RETURN, "return H")),
            says=("axis",),
            message="`split_heads` returns [..., T, n_heads, d_head]: put the heads axis "
            "before T, [..., n_heads, T, d_head].",
        ),
        Mistake(
            "numpy-error-only",
            edited(
                _SPLIT,
                (
                    "    if d_model % n_heads:\n"
                    '        raise ValueError(f"n_heads={n_heads} does not divide '
                    'd_model={d_model}")\n',
                    "",
                ),
            ),
            says=("ValueError", "both numbers"),
            caught_by="visible",  # raising is judged by the visible check only
        ),
        Mistake(
            "assumes-a-batch-axis",
            edited(
                _SPLIT,
                ("*lead, T, d_model = X.shape", "B, T, d_model = X.shape"),
                (_SPLIT_RESHAPE, "X.reshape(B, T, n_heads, d_model // n_heads)"),
                (_SPLIT_RETURN, "return H.transpose(0, 2, 1, 3)"),
            ),
            says=("no batch axes or several", "*lead, T, d_model = X.shape"),
            caught_by="visible",  # it raises: the hidden check reports the error itself
        ),
    ],
    alternatives=[
        Alternative(
            "slices",
            """
            def split_heads(X, n_heads):
                d_model = X.shape[-1]
                if d_model % n_heads:
                    raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}")
                d_head = d_model // n_heads
                return np.stack([X[..., h * d_head:(h + 1) * d_head] for h in range(n_heads)],
                                axis=-3)
            """,
        ),
        Alternative(
            "np-split",
            """
            def split_heads(X, n_heads):
                if X.shape[-1] % n_heads != 0:
                    raise ValueError(
                        f"d_model = {X.shape[-1]} is not a multiple of n_heads = {n_heads}")
                return np.stack(np.split(X, n_heads, axis=-1), axis=-3)
            """,
        ),
    ],
)
def split_heads(X: Array, n_heads: int) -> Array:
    *lead, T, d_model = X.shape
    if d_model % n_heads:
        raise ValueError(f"n_heads = {n_heads} does not divide d_model = {d_model}")
    H = X.reshape(*lead, T, n_heads, d_model // n_heads)  # [..., T, n_heads, d_head]
    return np.swapaxes(H, -2, -3)  # [..., n_heads, T, d_head]


# --------------------------------------------------------------------------- merge_heads


def _merge_cases(rng: np.random.Generator) -> Iterator[tuple[Array]]:
    for shape in [(3, 5, 4), (2, 4, 3), (2, 4, 6, 2), (2, 3, 2, 5, 4), (1, 6, 8), (5, 2, 1)]:
        yield (rng.normal(size=shape),)


@exercise(
    "merge_heads",
    cases=_merge_cases,
    shortcuts=MODEL_HEADS,
    mistakes=[
        Mistake(
            "reshape-no-transpose",
            """
            def merge_heads(H):
                *lead, n_heads, T, d_head = H.shape
                return H.reshape(*lead, T, n_heads * d_head)
            """,
            says=("transpose",),
            message="`merge_heads` reshapes [n_heads, T, d_head] straight to "
            "[T, n_heads*d_head], which mixes positions: transpose to [..., T, n_heads, "
            "d_head] first, then reshape.",
        ),
        Mistake(
            "interleaved",
            """
            def merge_heads(H):
                *lead, n_heads, T, d_head = H.shape
                return np.moveaxis(H, -3, -1).reshape(*lead, T, n_heads * d_head)
            """,
            says=("interleaved",),
            message="`merge_heads` leaves the heads' columns interleaved; head h must fill "
            "the block of columns h*d_head:(h+1)*d_head.",
        ),
        Mistake(
            "stacked-along-T",
            """
            def merge_heads(H):
                return np.concatenate([H[..., h, :, :] for h in range(H.shape[-3])], axis=-2)
            """,
            says=("last axis",),
            message="`merge_heads` stacks the heads along T; put them side by side along the "
            "last axis: [..., T, n_heads*d_head].",
        ),
        Mistake(
            "assumes-a-batch-axis",
            """
            def merge_heads(H):
                B, n_heads, T, d_head = H.shape
                return H.transpose(0, 2, 1, 3).reshape(B, T, n_heads * d_head)
            """,
            says=("no batch axes or several", "*lead, n_heads, T, d_head = H.shape"),
            caught_by="visible",  # it raises: the hidden check reports the error itself
        ),
    ],
    alternatives=[
        Alternative(
            "concatenate",
            """
            def merge_heads(H):
                return np.concatenate([H[..., h, :, :] for h in range(H.shape[-3])], axis=-1)
            """,
        ),
        Alternative(
            "loops",
            """
            def merge_heads(H):
                *lead, n_heads, T, d_head = H.shape
                out = np.zeros((*lead, T, n_heads * d_head))
                for h in range(n_heads):
                    for t in range(T):
                        out[..., t, h * d_head:(h + 1) * d_head] = H[..., h, t, :]
                return out
            """,
        ),
    ],
)
def merge_heads(H: Array) -> Array:
    *lead, n_heads, T, d_head = H.shape
    return np.swapaxes(H, -2, -3).reshape(*lead, T, n_heads * d_head)  # [..., T, d_model]


# --------------------------------------------------------------------------- multi_head_attention

# The answer most of its mistakes slip in, each named by the one edit that makes it.
_MHA = """
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    Q, K, V = (split_heads(X @ W.T, n_heads) for W in (W_Q, W_K, W_V))
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = S + mask
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    A = E / E.sum(axis=-1, keepdims=True)
    return merge_heads(A @ V) @ W_O.T, A
"""
# The same answer without the notebook's split_heads and merge_heads, which the mistakes in
# cutting the heads apart (or putting them back) slip in.
_MHA_INLINE = """
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    *lead, T, d_model = X.shape
    d_head = d_model // n_heads
    def cut(Z):  # [..., T, d_model] -> [..., n_heads, T, d_head]
        return np.swapaxes(Z.reshape(*lead, T, n_heads, d_head), -2, -3)
    Q, K, V = (cut(X @ W.T) for W in (W_Q, W_K, W_V))
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_head)
    if mask is not None:
        S = S + mask
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    A = E / E.sum(axis=-1, keepdims=True)
    out = np.swapaxes(A @ V, -2, -3).reshape(*lead, T, d_model)
    return out @ W_O.T, A
"""
_CUT = "np.swapaxes(Z.reshape(*lead, T, n_heads, d_head), -2, -3)"
_MERGE = "np.swapaxes(A @ V, -2, -3).reshape"
_MASK_SCORES = "    if mask is not None:\n        S = S + mask\n"
_RETURN = "return merge_heads(A @ V) @ W_O.T, A"


def _mha_cases(
    rng: np.random.Generator,
) -> Iterator[tuple[Array, Array, Array, Array, Array, int, Array | None]]:
    for lead, T, d_model, n_heads, mask in [
        ((), 5, 8, 2, "causal"),
        ((), 6, 12, 3, None),
        ((2,), 4, 8, 4, "causal"),
        ((), 7, 6, 2, "random"),
        ((2, 2), 3, 8, 2, "random"),
        ((), 4, 16, 1, "causal"),
        ((), 5, 8, 2, None),
    ]:
        X = rng.normal(size=(*lead, T, d_model))
        W_Q, W_K, W_V, W_O = rng.normal(size=(4, d_model, d_model)) / np.sqrt(d_model) * 2
        M = {None: None, "causal": _causal(T), "random": _random_mask(rng, T)}[mask]
        yield X, W_Q, W_K, W_V, W_O, n_heads, M


@exercise(
    "multi_head_attention",
    cases=_mha_cases,
    shortcuts={**MODEL_HEADS, "torch": TORCH_ATTENTION},
    mistakes=[
        Mistake(
            "reshape-no-transpose",
            edited(
                _MHA_INLINE,
                (_CUT, "Z.reshape(*lead, n_heads, T, d_head)"),
                (_MERGE, "(A @ V).reshape"),
            ),
            says=("transpose",),
            message="`multi_head_attention` reshapes [T, d_model] straight to [n_heads, T, "
            "d_head], which mixes positions: reshape to [..., T, n_heads, d_head], then "
            "transpose (or use your `split_heads` and `merge_heads`).",
        ),
        Mistake(
            "interleaved",
            edited(
                _MHA_INLINE,
                (_CUT, "np.moveaxis(Z.reshape(*lead, T, d_head, n_heads), -1, -3)  # h::n_heads"),
                (_MERGE, "np.moveaxis(A @ V, -3, -1).reshape"),
            ),
            says=("interleaved",),
            message="`multi_head_attention` gives head h every n_heads-th column of Q, K and "
            "V (interleaved columns); head h is the block of columns h*d_head:(h+1)*d_head.",
        ),
        Mistake(
            "sqrt-d-model",
            edited(_MHA, ("np.sqrt(Q.shape[-1])", "np.sqrt(X.shape[-1])")),
            says=("√d_model", "√d_head"),
            message="`multi_head_attention` divides the scores by √d_model; each head "
            "divides by √d_head, the size of its own queries and keys.",
        ),
        Mistake(
            "unscaled",
            edited(_MHA, (" / np.sqrt(Q.shape[-1])", "")),
            says=("√d_head",),
            message="`multi_head_attention` does not scale the scores: divide each head's "
            "scores by √d_head.",
        ),
        Mistake(
            "no-W_O",
            edited(_MHA, (_RETURN, "return merge_heads(A @ V), A")),
            says=("W_O",),
            message="`multi_head_attention` forgets W_O: after merging the heads, mix them "
            "with `@ W_O.T`.",
        ),
        Mistake(
            "one-softmax",
            edited(
                _MHA,
                ("S.max(axis=-1,", "S.max(axis=(-3, -1),"),
                ("E.sum(axis=-1,", "E.sum(axis=(-3, -1),"),
            ),
            says=("across all heads",),
            message="`multi_head_attention` takes one softmax across all heads; each head's "
            "rows must sum to 1 on their own (softmax over the last axis).",
        ),
        Mistake(
            "softmax-over-queries",
            edited(
                _MHA,
                (
                    "S.max(axis=-1, keepdims=True))",
                    "S.max(axis=1, keepdims=True))  # axis=1, as for one [T, T] head",
                ),
                ("E.sum(axis=-1,", "E.sum(axis=1,"),
            ),
            says=("columns sum to 1", "axis=-1"),
            message="`multi_head_attention` takes the softmax over the wrong axis: each "
            "head's columns sum to 1, not its rows. Normalise over the keys, axis=-1 (axis=1 "
            "is the queries once the heads come first).",
        ),
        Mistake(
            "mask-added-after-softmax",
            edited(
                _MHA,
                (_MASK_SCORES, ""),
                (_RETURN, "if mask is not None:\n        A = A + mask\n    " + _RETURN),
            ),
            says=("after the softmax", "before the softmax"),
            message="`multi_head_attention` adds the mask after the softmax, so the weights "
            "hold -inf where it blocks: add it to the scores before the softmax (the blocked "
            "weights then come out exactly 0).",
        ),
        Mistake(
            "mask-zeroes-after-softmax",
            edited(
                _MHA,
                (_MASK_SCORES, ""),
                (
                    _RETURN,
                    "if mask is not None:\n"
                    "        A = A * (mask == 0)  # blocked weights set to 0 after the softmax\n"
                    "    " + _RETURN,
                ),
            ),
            says=("after the softmax", "before the softmax"),
            message="`multi_head_attention` zeroes the blocked weights after the softmax, so "
            "the rows no longer sum to 1: add the mask to the scores before the softmax, "
            "which then spreads each row over the keys it may see.",
        ),
        Mistake(
            "mask-ignored",
            edited(_MHA, (_MASK_SCORES, "")),
            says=("mask",),
            message="`multi_head_attention` ignores the mask: add it to every head's scores "
            "before the softmax.",
        ),
        Mistake(
            "no-transpose-of-W",
            edited(_MHA, ("X @ W.T", "X @ W"), ("W_O.T, A", "W_O, A")),
            says=("X @ W.T",),
            message="`multi_head_attention` uses X @ W; the weights are [out, in], as in "
            "nn.Linear: use X @ W.T (and @ W_O.T).",
        ),
        Mistake(
            "weights-heads-after-T",
            edited(_MHA, ("W_O.T, A", "W_O.T, np.swapaxes(A, -3, -2)")),
            says=("axis",),
            message="`multi_head_attention` returns the weights as [..., T, n_heads, T]: the "
            "heads axis comes first, [..., n_heads, T, T].",
        ),
        Mistake(
            "weights-averaged",
            edited(_MHA, ("W_O.T, A", "W_O.T, A.mean(axis=-3)")),
            says=("every head",),
            message="`multi_head_attention` returns the weights averaged over the heads; "
            "return every head's weights, [..., n_heads, T, T].",
        ),
    ],
    alternatives=[
        Alternative(
            "loop-over-heads",
            """
            def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
                d_head = X.shape[-1] // n_heads
                outs, weights = [], []
                for h in range(n_heads):
                    rows = slice(h * d_head, (h + 1) * d_head)  # head h's rows of each W
                    Q, K, V = X @ W_Q[rows].T, X @ W_K[rows].T, X @ W_V[rows].T
                    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_head)
                    if mask is not None:
                        S = S + mask
                    E = np.exp(S - S.max(axis=-1, keepdims=True))
                    A = E / E.sum(axis=-1, keepdims=True)
                    outs.append(A @ V)
                    weights.append(A)
                return np.concatenate(outs, axis=-1) @ W_O.T, np.stack(weights, axis=-3)
            """,
        ),
        Alternative(
            "einsum",
            """
            def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
                Q, K, V = (split_heads(np.einsum("...td,od->...to", X, W), n_heads)
                           for W in (W_Q, W_K, W_V))
                S = np.einsum("...hqd,...hkd->...hqk", Q, K) / np.sqrt(Q.shape[-1])
                if mask is not None:
                    S = S + mask
                E = np.exp(S - S.max(axis=-1, keepdims=True))
                A = E / E.sum(axis=-1, keepdims=True)
                out = merge_heads(np.einsum("...hqk,...hkd->...hqd", A, V))
                return np.einsum("...td,od->...to", out, W_O), A
            """,
        ),
        Alternative(
            "torch-softmax",
            """
            def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
                import torch

                Q, K, V = (split_heads(X @ W.T, n_heads) for W in (W_Q, W_K, W_V))
                S = torch.from_numpy(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
                if mask is not None:
                    S = S + torch.from_numpy(np.asarray(mask, dtype=float))
                A = torch.softmax(S, dim=-1).numpy()
                return merge_heads(A @ V) @ W_O.T, A
            """,
        ),
    ],
)
def multi_head_attention(
    X: Array,
    W_Q: Array,
    W_K: Array,
    W_V: Array,
    W_O: Array,
    n_heads: int,
    mask: Array | None = None,
) -> tuple[Array, Array]:
    Q, K, V = (split_heads(X @ W.T, n_heads) for W in (W_Q, W_K, W_V))  # [..., h, T, d_head]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # [..., h, T, T]
    if mask is not None:
        S = S + mask  # [T, T], the same for every head
    A = _softmax(S)  # [..., h, T, T]
    return merge_heads(A @ V) @ W_O.T, A  # [..., T, d_model], [..., h, T, T]
