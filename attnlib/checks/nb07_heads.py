"""Visible checks for notebook 07_heads (several heads).

Hand-worked examples and properties only: literal expected arrays for small inputs, score
gaps chosen so the weights come out as simple fractions, and properties such as "a head
only reads its own block of columns".
"""

import re

import numpy as np

from attnlib.checks._core import (
    CheckFailed,
    as_array,
    call,
    crash_hints,
    expect_close,
    expect_finite,
    expect_shape,
    passed,
)
from attnlib.checks._worked import gap_weight

# ----------------------------------------------------------------------------- split_heads


# The checks call split_heads and merge_heads without batch axes first: code written for a
# fixed number of axes crashes there (or on the batch), with NumPy's words only.
def _any_leading_axes(shape: str, unpack: str) -> dict[str, str]:
    hint = (
        f"it may get no batch axes or several, {shape}: unpack from the end "
        f"(`{unpack}`) and swap axes -2 and -3, never fixed axes"
    )
    return {"values to unpack": hint, "axes don't match": hint, "cannot reshape": hint}


crash_hints("split_heads", _any_leading_axes("[..., T, d_model]", "*lead, T, d_model = X.shape"))
crash_hints(
    "merge_heads",
    _any_leading_axes("[..., n_heads, T, d_head]", "*lead, n_heads, T, d_head = H.shape"),
)

# X = arange(18).reshape(3, 6): T = 3 positions, d_model = 6, two heads of d_head = 3.
_X = np.arange(18.0).reshape(3, 6)
_SPLIT = np.array(  # head h is the block of columns h*3:(h+1)*3, positions kept as rows
    [
        [[0, 1, 2], [6, 7, 8], [12, 13, 14]],
        [[3, 4, 5], [9, 10, 11], [15, 16, 17]],
    ],
    dtype=float,
)
_SPLIT_SHAPE_HINTS = {
    (3, 2, 3): "That is [T, n_heads, d_head]: put the heads axis before T "
    "(transpose after the reshape), [n_heads, T, d_head].",
    (2, 9): "Keep the positions apart: [n_heads, T, d_head], not [n_heads, T*d_head].",
    (6, 3): "Keep the heads apart: [n_heads, T, d_head], not [n_heads*T, d_head].",
}


def check_split_heads(split_heads):
    name = "split_heads"
    out = as_array(call(split_heads, _X.copy(), 2, name=name), name)
    expect_shape(out, (2, 3, 3), name, hint=_SPLIT_SHAPE_HINTS.get(out.shape, ""))
    if np.array_equal(out, _X.reshape(2, 3, 3)):
        raise CheckFailed(
            "`split_heads` reshapes straight to [n_heads, T, d_head], which mixes positions "
            "(head 0 got rows 0 and 1 of X as its positions): reshape to [T, n_heads, d_head], "
            "then transpose the heads axis in front of T."
        )
    if np.array_equal(out, np.moveaxis(_X.reshape(3, 3, 2), -1, 0)):
        raise CheckFailed(
            "`split_heads` gives head h every n_heads-th column (interleaved columns: head 0 "
            "got columns 0, 2, 4): head h is the block of columns h*d_head:(h+1)*d_head."
        )
    expect_close(
        out,
        _SPLIT,
        name,
        hint="Head h of row t must be X[t, h*d_head:(h+1)*d_head].",
    )

    # Leading batch dimensions: each sequence is split on its own.
    batch = np.stack([_X, -_X, _X[::-1]])  # [3, T, d_model]
    out = expect_shape(
        call(split_heads, batch.copy(), 2, name=name),
        (3, 2, 3, 3),
        name,
        hint="With X [B, T, d_model] the result is [B, n_heads, T, d_head]: index from the "
        "end (axis -1, -2), not from the front.",
    )
    for b in range(3):
        expect_close(
            out[b],
            call(split_heads, batch[b].copy(), 2, name=name),
            name + f"(X)[{b}]",
            hint="Sequence b of a batch must be split exactly as it would be on its own.",
        )

    # One head per column: d_head = 1.
    expect_close(
        call(split_heads, _X.copy(), 6, name=name),
        _X.T[:, :, None],
        name + "(X, n_heads=d_model)",
        hint="With d_head = 1, head h is column h of X.",
    )
    _expect_divisibility_error(split_heads)
    passed(name)


def _expect_divisibility_error(split_heads):
    """n_heads = 4 does not divide d_model = 6: a ValueError naming both numbers."""
    try:
        got = split_heads(np.zeros((3, 6)), 4)
    except Exception as err:  # a replayed error is not the builtin class: judge it by name
        if type(err).__name__ != "ValueError":
            raise CheckFailed(
                f"`split_heads(X, 4)` with d_model = 6 raised {type(err).__name__}; raise "
                "ValueError when n_heads does not divide d_model."
            ) from None
        numbers = set(re.findall(r"\d+", str(err)))
        if not {"4", "6"} <= numbers:
            raise CheckFailed(
                "`split_heads(X, 4)` with d_model = 6 raised a ValueError that does not name "
                f"both numbers (d_model = 6, n_heads = 4): {str(err)[:120]!r}. Raise your own "
                "ValueError, e.g. f'n_heads = {n_heads} does not divide d_model = {d_model}'."
            ) from None
        return
    raise CheckFailed(
        "`split_heads(X, 4)` with d_model = 6 returned "
        f"{'shape ' + str(np.shape(got)) if hasattr(got, 'shape') else type(got).__name__}: "
        "4 heads cannot share 6 columns equally. Raise a ValueError that names both numbers."
    )


# ----------------------------------------------------------------------------- merge_heads

# H [n_heads = 2, T = 3, d_head = 2]; row t of the result is [H[0, t], H[1, t]].
_H = np.arange(12.0).reshape(2, 3, 2)
_MERGED = np.array([[0, 1, 6, 7], [2, 3, 8, 9], [4, 5, 10, 11]], dtype=float)
_MERGE_SHAPE_HINTS = {
    (6, 2): "That stacks the heads along T: put them side by side along the last axis, "
    "[T, n_heads*d_head].",
    (2, 6): "That is [n_heads, T*d_head]: the result has one row per position, "
    "[T, n_heads*d_head].",
    (3, 2, 2): "Merge the heads axis into the last one: [T, n_heads*d_head].",
}


def check_merge_heads(merge_heads):
    name = "merge_heads"
    out = as_array(call(merge_heads, _H.copy(), name=name), name)
    expect_shape(out, (3, 4), name, hint=_MERGE_SHAPE_HINTS.get(out.shape, ""))
    if np.array_equal(out, _H.reshape(3, 4)):
        raise CheckFailed(
            "`merge_heads` reshapes [n_heads, T, d_head] straight to [T, n_heads*d_head], "
            "which mixes positions: transpose to [T, n_heads, d_head] first, then reshape."
        )
    if np.array_equal(out, np.moveaxis(_H, 0, -1).reshape(3, 4)):
        raise CheckFailed(
            "`merge_heads` leaves the heads' columns interleaved: head h must fill the block "
            "of columns h*d_head:(h+1)*d_head, [H[0, t], H[1, t]] side by side."
        )
    expect_close(out, _MERGED, name, hint="Row t must be H[0, t], H[1, t], … side by side.")

    batch = np.stack([_H, 2 * _H])  # [B, n_heads, T, d_head]
    out = expect_shape(
        call(merge_heads, batch.copy(), name=name),
        (2, 3, 4),
        name,
        hint="With H [B, n_heads, T, d_head] the result is [B, T, n_heads*d_head]: index "
        "from the end.",
    )
    expect_close(out, np.stack([_MERGED, 2 * _MERGED]), name, hint="Merge each sequence alone.")
    passed(name)


# ----------------------------------------------------------------------------- multi_head_attention

_CUMMEAN = np.array([[1.0, 2, 3, 4], [3, 4, 5, 6], [5, 6, 7, 8]])  # running means of X rows
_X3 = np.array([[1.0, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]])  # [T = 3, d_model = 4]
_SHIFT = np.roll(np.eye(4), 1, axis=0)  # x @ _SHIFT.T moves column j to j + 1 (cyclically)
_SUMS = np.triu(np.ones((4, 4)))  # x @ _SUMS.T: entry j is x_j + … + x_3
_CAUSAL3 = np.where(np.triu(np.ones((3, 3), dtype=bool), 1), -np.inf, 0.0)
_UNIFORM_CAUSAL = np.array([[1, 0, 0], [1 / 2, 1 / 2, 0], [1 / 3, 1 / 3, 1 / 3]])


def _mha_call(fn, *args, name):
    out = call(fn, *args, name=name)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise CheckFailed(f"`{name}` should return a pair `(output, weights)`.")
    return as_array(out[0], name, "the output"), as_array(out[1], name, "the weights")


def check_multi_head_attention(multi_head_attention):
    name = "multi_head_attention"
    zero = np.zeros((4, 4))
    # Zero queries and keys: every score is 0, so each head spreads its weight evenly over
    # the keys the mask allows. W_V = _SHIFT and W_O = _SUMS: the output is the running mean
    # of X, shifted, then summed from each column to the end.
    args = (_X3.copy(), zero, zero, _SHIFT.copy(), _SUMS.copy(), 2, _CAUSAL3.copy())
    out, weights = _mha_call(multi_head_attention, *args, name=name)
    expect_shape(
        weights,
        (2, 3, 3),
        name + " weights",
        hint={
            (3, 3): "Return every head's weights, [n_heads, T, T] (not their average).",
            (3, 2, 3): "That is [T, n_heads, T]: the heads axis comes first, [n_heads, T, T].",
        }.get(weights.shape, ""),
    )
    expect_shape(
        out,
        (3, 4),
        name + " output",
        hint="Merge the heads back to [T, d_model] and apply W_O."
        if out.shape == (2, 3, 2)
        else "",
    )
    if np.allclose(weights.sum(axis=(0, 2)), 1) and not np.allclose(weights.sum(axis=-1), 1):
        raise CheckFailed(
            "Each head's rows sum to 1/n_heads: you take one softmax across all heads. Each "
            "head's rows must sum to 1 on their own (softmax over the last axis, per head)."
        )
    if np.allclose(weights, 1 / 3):
        raise CheckFailed(
            "The weights put 1/3 on every key, the future included: the mask is ignored. Add "
            "`mask` to every head's scores before the softmax."
        )
    _check_mask_before_softmax(weights)
    if np.allclose(weights.sum(axis=-2), 1) and not np.allclose(weights.sum(axis=-1), 1):
        raise CheckFailed(
            "Each head's columns sum to 1, not its rows: the softmax runs over the queries "
            "(axis=1 is the queries once the heads come first). Normalise over the keys, "
            "axis=-1."
        )
    expect_close(
        weights,
        np.stack([_UNIFORM_CAUSAL] * 2),
        name + " weights",
        hint="With zero queries and keys every score is 0: row t spreads 1/(t+1) over keys ≤ t.",
    )
    if np.allclose(out, _CUMMEAN @ _SHIFT.T):
        raise CheckFailed(
            "`multi_head_attention` forgets W_O: after merging the heads, mix them with `@ W_O.T`."
        )
    if np.allclose(out, _CUMMEAN @ _SHIFT @ _SUMS):
        raise CheckFailed(
            "`multi_head_attention` uses X @ W; the weights are [out, in], as in nn.Linear: "
            "use X @ W.T (and @ W_O.T)."
        )
    _check_per_head_scores(multi_head_attention, name)
    expect_close(
        out,
        _CUMMEAN @ _SHIFT.T @ _SUMS.T,
        name + " output",
        hint="Output = merged heads @ W_O.T, with V = X @ W_V.T.",
    )
    _check_batches(multi_head_attention, name)
    passed(name)


def _check_mask_before_softmax(weights):
    """The weights of the first case (every score 0, causal mask, T = 3): a mask used after
    the softmax leaves -inf in them, or zeroes blocked weights without renormalising."""
    if np.any(np.isneginf(weights)):
        raise CheckFailed(
            "The weights hold -inf where the mask blocks: the mask is added after the "
            "softmax. Add it to the scores before the softmax, so the blocked weights come "
            "out exactly 0."
        )
    if np.allclose(weights, np.tril(np.full((3, 3), 1 / 3))):
        raise CheckFailed(
            "Row 0 puts 1/3 on key 0 and 0 elsewhere, so it sums to 1/3: the blocked weights "
            "are zeroed after the softmax. Add the mask to the scores before the softmax, "
            "which then spreads each row over the keys it may see."
        )


# Two positions, d_model = 8, two heads of d_head = 4. Every query is [1, 0, 0, 0] in its
# head; key 1 is [ln 9, 0, 0, 0] in head 0 and [ln 4, 0, 0, 0] in head 1, key 0 is zero. With
# the √d_head = 2 scaling the score gaps are ln 3 and ln 2: weights [1/4, 3/4] and [1/3, 2/3].
_X2 = np.eye(2, 8) + np.eye(2, 8, k=6)  # rows e0 + e6, e1 + e7
_WQ2 = np.zeros((8, 8))
_WQ2[[0, 4], 0] = _WQ2[[0, 4], 1] = 1.0
_WK2 = np.zeros((8, 8))
_WK2[0, 1], _WK2[4, 1] = np.log(9.0), np.log(4.0)
_WEIGHTS2 = np.array([[[1 / 4, 3 / 4]] * 2, [[1 / 3, 2 / 3]] * 2])
# Head 0 hands over X[:, 0:4] (e0 or e1), head 1 X[:, 4:8] (e2 or e3 of its block).
_OUT2 = np.array([[1 / 4, 3 / 4, 0, 0, 0, 0, 1 / 3, 2 / 3]] * 2)


def _check_per_head_scores(multi_head_attention, name):
    eye = np.eye(8)
    args = (_X2.copy(), _WQ2.copy(), _WK2.copy(), eye.copy(), eye.copy(), 2)
    out, weights = _mha_call(multi_head_attention, *args, name=name)
    expect_shape(weights, (2, 2, 2), name + " weights")
    head0 = weights[0, 1, 1]
    for scale, wrong in [(np.sqrt(8.0), "√d_model"), (1.0, "no scaling")]:
        if np.isclose(head0, gap_weight(np.log(9.0) / scale), atol=1e-6):
            raise CheckFailed(
                f"Head 0's weights match {wrong} ({head0:.3f} on key 1): each head divides "
                "its scores by √d_head, the size of its own queries and keys (here √4 = 2)."
            )
    _check_heads_read_their_own_columns(multi_head_attention, name)
    expect_close(
        weights,
        _WEIGHTS2,
        name + " weights",
        hint="Score gaps ln 9 and ln 4, divided by √d_head = 2, give [1/4, 3/4] and [1/3, 2/3].",
    )
    expect_close(out, _OUT2, name + " output", hint="Each head blends its own block of V.")


def _check_heads_read_their_own_columns(multi_head_attention, name):
    """Changing head 1's rows of W_K must leave head 0's weights alone."""
    rng = np.random.default_rng(0)
    X, W_Q, W_K = rng.normal(size=(2, 8)), rng.normal(size=(8, 8)), rng.normal(size=(8, 8))
    noise = rng.normal(size=(4, 8))
    weights = {}
    for label, rows in [("none", slice(0, 0)), ("block", slice(4, 8)), ("odd", slice(1, 8, 2))]:
        moved = W_K.copy()
        moved[rows] += noise[: len(moved[rows])]
        args = (X.copy(), W_Q.copy(), moved, np.eye(8), np.eye(8), 2)
        weights[label] = _mha_call(multi_head_attention, *args, name=name)[1]
    head0 = weights["none"][0]
    if np.allclose(weights["block"][0], head0):
        return
    if np.allclose(weights["odd"][0], head0):
        raise CheckFailed(
            "Head 0 reads the columns 0, 2, 4, … of Q and K (interleaved columns): head h is "
            "the block of columns h*d_head:(h+1)*d_head (use your `split_heads`)."
        )
    raise CheckFailed(
        "Changing head 1's rows of W_K changed head 0's weights: each head must use only its "
        "own block of columns of Q, K and V. A reshape straight to [n_heads, T, d_head] "
        "mixes positions: reshape to [T, n_heads, d_head], then transpose (or use your "
        "`split_heads`)."
    )


def _check_batches(multi_head_attention, name):
    """X [B, T, d_model] with one [T, T] mask for every sequence and head."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2, 3, 4))
    Ws = [rng.normal(size=(4, 4)) for _ in range(4)]
    out, weights = _mha_call(multi_head_attention, X.copy(), *Ws, 2, _CAUSAL3.copy(), name=name)
    expect_shape(out, (2, 3, 4), name + " output", hint="X [B, T, d_model] -> [B, T, d_model].")
    expect_shape(
        weights, (2, 2, 3, 3), name + " weights", hint="Weights for a batch: [B, n_heads, T, T]."
    )
    expect_finite(out, name, hint="Add the mask before the softmax, and subtract the row max.")
    for b in range(2):
        one_out, one_weights = _mha_call(
            multi_head_attention, X[b].copy(), *Ws, 2, _CAUSAL3.copy(), name=name
        )
        expect_close(
            out[b],
            one_out,
            name + f" output[{b}]",
            hint="Sequence b of a batch must give what it gives on its own: use axis -1 and "
            "np.swapaxes(K, -1, -2), never K.T.",
        )
        expect_close(weights[b], one_weights, name + f" weights[{b}]")
