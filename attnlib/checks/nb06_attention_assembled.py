"""Visible checks for notebook 06 (attention, assembled).

One example worked by hand (d_k = 4, T = 3, a single nonzero score), then
properties on the learner's own function: rows sum to 1, masked weights are
exactly 0, batches match their slices, permuting keys and values together.
"""

import numpy as np

from attnlib.checks._core import CheckFailed, as_array, call, crash_hints, expect_close, passed

_LN2 = np.log(2.0)
# Worked by hand: only q_0 · k_1 = 2 ln 2 is nonzero, and √d_k = 2, so the scaled score
# row 0 is [0, ln 2, 0] and softmax gives [1, 2, 1] / 4; queries 1 and 2 are zero vectors,
# so their rows are uniform.
_Q = np.zeros((3, 4))
_Q[0, 0] = 2.0
_K = np.zeros((3, 4))
_K[1, 0] = _LN2
_V = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 8.0]])  # [T, d_v] = [3, 2]
_A = np.array([[0.25, 0.5, 0.25], [1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 3, 1 / 3]])
_OUT = np.array([[2.0, 2.0], [4 / 3, 8 / 3], [4 / 3, 8 / 3]])
_M = np.array([[0.0, -np.inf, -np.inf], [0.0, 0.0, -np.inf], [0.0, 0.0, 0.0]])
_A_CAUSAL = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]])
_OUT_CAUSAL = np.array([[0.0, 0.0], [2.0, 0.0], [4 / 3, 8 / 3]])


def _row(x):
    """Softmax of the scaled score row [0, x, 0], worked out: [1, e^x, 1] / (2 + e^x)."""
    return np.array([1.0, np.exp(x), 1.0]) / (2.0 + np.exp(x))


_WRONG_ROW0 = [  # row 0 of the weights for the usual scaling slips
    (_row(2 * _LN2), "the scores are not scaled: divide Q Kᵀ by np.sqrt(d_k)."),
    (_row(_LN2 / 2), "the scores are divided by d_k; divide by np.sqrt(d_k) instead."),
    (
        _row(2 * _LN2 / np.sqrt(3)),
        "the scores are divided by √T (the number of positions); "
        "divide by np.sqrt(d_k), with d_k = Q.shape[-1].",
    ),
]


crash_hints(
    "attention",
    {
        "NoneType": "with mask=None there is no mask: add it only `if mask is not None`",
        "mismatch": "the shapes don't fit a matrix product: the scores are "
        "Q @ np.swapaxes(K, -1, -2) ([..., T_q, d_k] @ [..., d_k, T_k]; K.T reverses every "
        "axis, which breaks batches), the output weights @ V",
        "could not be broadcast": "the shapes don't broadcast: transpose only the last two axes "
        "of K (np.swapaxes(K, -1, -2)), and reduce with axis=-1, keepdims=True",
    },
)


def _run(attention, *args, hint=None):
    """Call attention (``hint``: what a crash on these inputs likely means); insist on an
    (output, weights) pair of arrays."""
    out = call(attention, *args, name="attention", hint=hint)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise CheckFailed(
            f"`attention` should return a pair `(output, weights)`, got {type(out).__name__}."
        )
    return (
        as_array(out[0], "attention", "the output"),
        as_array(out[1], "attention", "the weights"),
    )


def _shapes(output, weights, out_shape, w_shape, hint=""):
    if output.shape == w_shape and weights.shape == out_shape and out_shape != w_shape:
        raise CheckFailed(
            "`attention` returned (weights, output): return the output first, "
            "`return output, weights`."
        )
    if weights.shape != w_shape:
        raise CheckFailed(
            f"`attention` returned weights of shape {weights.shape}, expected "
            f"{w_shape}: one row per query, one column per key. {hint}".strip()
        )
    if output.shape != out_shape:
        raise CheckFailed(
            f"`attention` returned an output of shape {output.shape}, expected "
            f"{out_shape}: one row per query, one column per value feature. "
            f"{hint}".strip()
        )


def _check_rows(weights, what):
    if np.isnan(weights).any():
        raise CheckFailed(
            f"`attention` gave NaN weights {what}: exp of huge scores overflows "
            "(subtract each row's max before np.exp), or a -inf was multiplied "
            "by 0 (add the mask, never multiply by it)."
        )
    if np.isinf(weights).any():
        raise CheckFailed(
            f"`attention` gave infinite weights {what}: add the mask to the scores "
            "BEFORE the softmax, not to the weights after it."
        )
    rows, cols = weights.sum(axis=-1), weights.sum(axis=-2)
    if not np.allclose(rows, 1.0):
        if np.allclose(cols, 1.0):
            raise CheckFailed(
                f"`attention`: the columns of the weights sum to 1, not the rows "
                f"({what}): take the softmax over the keys, the last axis."
            )
        if np.isclose(weights.sum(), 1.0):
            raise CheckFailed(
                "`attention` normalised the whole score matrix at once: take the "
                "softmax of each row separately (over the last axis)."
            )
        raise CheckFailed(
            f"`attention`: each row of weights must sum to 1 ({what}); "
            f"got row sums {np.round(rows.ravel()[:4], 4)}."
        )


def _check_worked_example(attention):
    output, weights = _run(attention, _Q, _K, _V)
    _shapes(output, weights, (3, 2), (3, 3))
    _check_rows(weights, "without a mask")
    if not np.allclose(weights, _A, atol=1e-6):
        if np.allclose(weights[0], 1 / 3) and np.allclose(weights[1], [0.5, 0.25, 0.25]):
            raise CheckFailed(
                "`attention` computed K Qᵀ instead of Q Kᵀ: row i of the scores "
                "must hold query i dotted with every key."
            )
        for row0, message in _WRONG_ROW0:
            if np.allclose(weights[0], row0):
                raise CheckFailed(f"`attention`: {message}")
        expect_close(
            weights,
            _A,
            "attention",
            what="the weights",
            hint="Example: only q_0·k_1 = 2 ln 2 is nonzero and d_k = 4, so row 0 is "
            "softmax([0, ln 2, 0]) = [1/4, 1/2, 1/4].",
        )
    if not np.allclose(output, _OUT, atol=1e-6):
        if np.allclose(output, weights.T @ _V):
            raise CheckFailed(
                "`attention` multiplied weights.T @ V; the output is weights @ V "
                "(row i averages the value rows with row i's weights)."
            )
        expect_close(
            output,
            _OUT,
            "attention",
            what="the output",
            hint="Output row i is the weighted average Σ_j weights[i, j] · V[j]: weights @ V.",
        )


def _check_causal_example(attention):
    output, weights = _run(attention, _Q, _K, _V, _M)
    _shapes(output, weights, (3, 2), (3, 3))
    future = _M == -np.inf
    if np.isnan(weights).any():  # and none without the mask: the mask made them
        raise CheckFailed(
            "`attention` gave NaN weights with the causal mask, none without it: add the mask "
            "to the scores (S + mask), never multiply by it (0 · −inf is NaN)."
        )
    if np.isinf(weights).any():
        _check_rows(weights, "with the causal mask")
    if np.allclose(weights, _A):
        raise CheckFailed(
            "`attention` ignored the mask: add `mask` to the scaled scores "
            "(when it is not None) before the softmax."
        )
    if np.all(weights[future] == 0) and not np.allclose(weights.sum(axis=-1), 1.0):
        raise CheckFailed(
            "`attention` zeroed the masked weights after the softmax, so the rows "
            "no longer sum to 1: add the mask to the scores BEFORE the softmax."
        )
    _check_rows(weights, "with the causal mask")
    if not np.all(weights[future] == 0):
        worst = weights[future].max()
        raise CheckFailed(
            f"`attention`: with the causal mask the future weights must be exactly "
            f"0; the largest is {worst:.3g}. Add the mask before the softmax."
        )
    expect_close(
        weights,
        _A_CAUSAL,
        "attention",
        what="the causal weights",
        hint="Row 0 sees only key 0; row 1 sees keys 0 and 1 with equal scores.",
    )
    expect_close(
        output,
        _OUT_CAUSAL,
        "attention",
        what="the causal output",
        hint="With the mask, output row 0 is exactly V[0].",
    )

    # Any additive mask, not only 0/−inf: with zero queries the weights are softmax(mask).
    prior = np.array([[1.0, 2.0, 1.0], [1.0, 1.0, 2.0], [2.0, 1.0, 1.0]])
    _, weights = _run(attention, np.zeros((3, 4)), _K, _V, np.log(prior))
    expect_close(
        weights,
        prior / 4,
        "attention",
        what="the weights with a finite mask",
        hint="The mask is added to the scores whatever its values: with zero queries "
        "the weights are softmax(mask) row by row.",
    )


def _check_batches(attention):
    rng = np.random.default_rng(5)
    Q, K, V = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 2))
    hint = (
        "Batched inputs [..., T, d_k]: transpose only the last two axes of K "
        "(np.swapaxes(K, -1, -2)); K.T reverses every axis."
    )
    output, weights = _run(attention, Q, K, V, _M, hint=hint)
    _shapes(output, weights, (2, 3, 2), (2, 3, 3), hint=hint)
    for b in range(2):
        out_b, w_b = _run(attention, Q[b], K[b], V[b], _M)
        if not (np.allclose(weights[b], w_b) and np.allclose(output[b], out_b)):
            raise CheckFailed(
                f"`attention` on a batch differs from attention on batch element {b} alone. {hint}"
            )
    Q4 = rng.normal(size=(2, 2, 3, 4))
    output, weights = _run(attention, Q4, Q4, Q4, hint=hint)
    _shapes(output, weights, (2, 2, 3, 4), (2, 2, 3, 3), hint=hint)
    _check_rows(weights, "for a [2, 2, 3, 4] batch")


def _check_properties(attention):
    rng = np.random.default_rng(6)
    T, d_k, d_v = 5, 3, 2
    Q, K, V = rng.normal(size=(T, d_k)), rng.normal(size=(T, d_k)), rng.normal(size=(T, d_v))
    output, weights = _run(attention, Q * 100, K * 100, V)
    _check_rows(weights, "for large scores (q·k ~ 10⁴)")

    output, weights = _run(attention, Q, K, V)
    p = rng.permutation(T)
    out_p, w_p = _run(attention, Q, K[p], V[p])
    if not (np.allclose(out_p, output) and np.allclose(w_p, weights[:, p])):
        raise CheckFailed(
            "`attention`: shuffling the keys and values together must leave the "
            "output unchanged and shuffle the weight columns the same way."
        )
    out_p, w_p = _run(attention, Q[p], K, V)
    if not (np.allclose(out_p, output[p]) and np.allclose(w_p, weights[p])):
        raise CheckFailed(
            "`attention`: shuffling the queries must shuffle the output rows the "
            "same way (each query is handled independently)."
        )
    Q2, K2, V2 = rng.normal(size=(2, 6)), rng.normal(size=(4, 6)), rng.normal(size=(4, 3))
    output, weights = _run(
        attention, Q2, K2, V2, hint="Queries and keys may differ in number (T_q = 2, T_k = 4)."
    )
    _shapes(output, weights, (2, 3), (2, 4))
    _check_rows(weights, "with 2 queries and 4 keys")


def check_attention(attention):
    _check_worked_example(attention)
    _check_causal_example(attention)
    _check_batches(attention)
    _check_properties(attention)
    passed("attention")
