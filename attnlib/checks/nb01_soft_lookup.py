"""Visible checks for notebook 01 (soft lookup)."""

import numpy as np

from attnlib.checks._core import (
    CheckFailed,
    call,
    crash_hints,
    expect_close,
    expect_finite,
    expect_shape,
    passed,
)

_SCORES_AND_BLEND = (
    "the shapes don't fit a matrix product: the scores are `keys @ query` ([n, d] @ [d] -> "
    "[n]), and the blend is `weights @ values` ([n] @ [n, d_v] -> [d_v])"
)
crash_hints(
    "softmax",
    {
        "could not be broadcast": "keep the reduced axis, `x.max(axis=axis, keepdims=True)` "
        "and `e.sum(axis=axis, keepdims=True)`, so the row maxima and sums broadcast against x"
    },
)
crash_hints(
    "hard_lookup",
    {
        "mismatch": "the shapes don't fit a matrix product: score the keys with `keys @ "
        "query` ([n, d] @ [d] -> [n]); the values [n, d_v] are only read, at the best index",
        "out of bounds for axis 1": "it reads a column of `values`; the value of key i is "
        "the row `values[i]`",
    },
)
crash_hints("soft_lookup", {"mismatch": _SCORES_AND_BLEND})


def check_softmax(softmax):
    name = "softmax"
    x = np.array([0.0, np.log(2.0), np.log(3.0)])  # softmax = [1, 2, 3] / 6
    out = expect_shape(call(softmax, x, name=name), (3,), name)
    if not np.isclose(out.sum(), 1.0):
        raise CheckFailed(
            f"`softmax([0, ln 2, ln 3])` sums to {out.sum():.4g}, not 1: divide the "
            "exponentials by their sum along `axis`."
        )
    expect_close(
        out, np.array([1, 2, 3]) / 6, name, hint="softmax(x)_i = exp(x_i) / sum_j exp(x_j)."
    )

    rows = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])  # [2, 3]
    out = expect_shape(
        call(softmax, rows, name=name),
        (2, 3),
        name,
        hint="The output must have the same shape as the input.",
    )
    if np.allclose(out.sum(axis=0), 1) and not np.allclose(out.sum(axis=-1), 1):
        raise CheckFailed(
            "Columns sum to 1 but rows don't: did you normalise over axis 0 "
            "instead of the last axis (`axis=-1`)?"
        )
    if np.isclose(out.sum(), 1):
        raise CheckFailed(
            "The whole array sums to 1: normalise each row separately "
            "(sum with `axis=axis, keepdims=True`)."
        )
    expect_close(
        out.sum(axis=-1),
        np.ones(2),
        name,
        hint="Each row of weights must sum to 1.",
        what="row sums",
    )

    big = np.array([1000.0, 1001.0, 1002.0])
    out = call(softmax, big, name=name)
    expect_finite(
        out, name, hint="exp(1000) overflows: subtract each row's maximum before exponentiating."
    )
    expect_close(
        out,
        call(softmax, big - 1000.0, name=name),
        name,
        hint="Adding a constant to every score must not change the weights.",
    )
    spread = call(softmax, np.array([-1000.0, 0.0, 1000.0]), name=name)  # 2000 apart
    if not np.all(np.isfinite(spread)):
        raise CheckFailed(
            "`softmax([-1000, 0, 1000])` overflowed to NaN or inf: subtract each row's "
            "maximum (then the largest exponent is exactly 0), not its minimum or mean."
        )
    far_apart = np.array([[0.0, 1.0, 2.0], [1000.0, 1001.0, 1002.0]])  # rows of unlike scale
    if not np.all(np.isfinite(call(softmax, far_apart, name=name))):
        raise CheckFailed(
            "`softmax` gave NaN for the row [0, 1, 2] next to the row [1000, 1001, 1002]: "
            "subtract each row's own maximum (`x.max(axis=axis, keepdims=True)`), not the "
            "maximum of the whole array (0/0 where a row underflows)."
        )

    cols = call(softmax, rows.T, axis=0, name=name)
    expect_close(
        np.asarray(cols).sum(axis=0),
        np.ones(2),
        name,
        hint="Use the `axis` argument instead of always normalising the last axis.",
        what="column sums of softmax(x, axis=0)",
    )
    passed(name)


def _shape_hint(out, name, shape, hints):
    """Shape first; ``hints`` maps a wrong shape to the mistake that usually produces it."""
    out = np.asarray(out) if isinstance(out, (int, float, np.integer, np.floating)) else out
    shape_of = getattr(out, "shape", None)
    return expect_shape(out, shape, name, hint=hints.get(shape_of, ""))


# A hand-worked table: n = 3 keys of size d = 2, values of size d_v = 4 (all sizes differ,
# so returning a key, a weight vector or a column shows up as a wrong shape).
_KEYS = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])  # [n=3, d=2]
_VALUES = np.array(
    [[10.0, 11.0, 12.0, 13.0], [20.0, 21.0, 22.0, 23.0], [30.0, 31.0, 32.0, 33.0]]
)  # [n=3, d_v=4]


def check_hard_lookup(hard_lookup):
    name = "hard_lookup"
    hints = {
        (2,): "That is the size of a key: return the matching row of `values`, not of `keys`.",
        (3,): "That is one number per key (scores or a column of `values`?): return a row "
        "`values[i]`.",
        (): "That is a single number (the index?): return the row `values[i]`.",
        (1, 4): "Return one row of shape [d_v], not a [1, d_v] block.",
    }
    query = np.array([0.2, 0.9])  # scores 0.2, 0.9, -0.2: key 1 wins
    out = _shape_hint(call(hard_lookup, query, _KEYS, _VALUES, name=name), name, (4,), hints)
    if np.allclose(out, _VALUES[2]):
        raise CheckFailed(
            "`hard_lookup` returned the value of the key with the SMALLEST dot "
            "product: use argmax, not argmin."
        )
    expect_close(
        out,
        _VALUES[1],
        name,
        hint="Score each key with a dot product (`keys @ query`) and return the value "
        "row of the best one.",
    )

    # Dot product, not distance: key 1 is farther from the query but has the larger dot product.
    keys = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0]])  # [3, 2]
    out = _shape_hint(
        call(hard_lookup, np.array([1.0, 0.0]), keys, _VALUES, name=name), name, (4,), hints
    )
    if np.allclose(out, _VALUES[0]):
        raise CheckFailed(
            "`hard_lookup` picked the key CLOSEST to the query (distance); "
            "attention scores keys by dot product, so the longer key 1 wins."
        )
    expect_close(
        out, _VALUES[1], name, hint="The best key is the one with the largest `keys @ query`."
    )

    # Keys and values are different arrays: with keys == values the mistake would be invisible.
    values = np.arange(12.0).reshape(3, 4) * -1.0
    out = _shape_hint(
        call(hard_lookup, np.array([-1.0, 0.1]), _KEYS, values, name=name), name, (4,), hints
    )
    expect_close(out, values[2], name, hint="Look up in the `values` you were given.")
    passed(name)


def check_soft_lookup(soft_lookup):
    name = "soft_lookup"
    hints = {
        (3,): "That is one number per key (the weights, or a sum over the wrong axis): blend "
        "the value rows with the weights, `weights @ values` ([n] @ [n, d_v] -> [d_v]).",
        (2,): "That is the size of a key: blend the `values`, not the `keys`.",
        (3, 4): "Return one blended row [d_v]: sum the weighted value rows over the n keys.",
    }
    # Scores keys @ query = [0, ln 2, ln 3], so the weights are [1, 2, 3] / 6 by hand.
    query = np.array([1.0, 0.0])
    keys = np.array([[0.0, 0.0], [np.log(2.0), 0.0], [np.log(3.0), 5.0]])  # [n=3, d=2]
    values = np.array(
        [[6.0, 0.0, 0.0, 1.0], [0.0, 6.0, 0.0, 1.0], [0.0, 0.0, 6.0, 1.0]]
    )  # [n=3, d_v=4]
    out = _shape_hint(call(soft_lookup, query, keys, values, name=name), name, (4,), hints)
    if np.allclose(out, np.log([1.0, 2.0, 3.0]) @ values):
        raise CheckFailed(
            "`soft_lookup` blends the values with the raw scores: turn the scores "
            "into weights with `softmax` first."
        )
    if np.allclose(out, values[2]):
        raise CheckFailed(
            "`soft_lookup` returned only the best value (a hard lookup): blend "
            "ALL values, weighted by softmax(keys @ query)."
        )
    scaled = np.array([1.0, 2.0, 3.0]) ** (1 / np.sqrt(2.0))  # exp(score / √d), d = 2
    if np.allclose(out, scaled / scaled.sum() @ values):
        raise CheckFailed(
            "`soft_lookup` divides the scores by √d: no scaling yet in this "
            "notebook, use softmax(keys @ query)."
        )

    # Property: if every key hands over the same value c, the blend is c (weights sum to 1).
    same = np.tile([2.0, -1.0, 0.5, 3.0], (3, 1))  # [3, 4]
    blend = _shape_hint(call(soft_lookup, query, keys, same, name=name), name, (4,), hints)
    if not np.allclose(blend, same[0]):
        raise CheckFailed(
            "When every value is the same vector, a soft lookup must return it: "
            "your weights don't sum to 1 over the n keys. Normalise over the n "
            "scores (axis of length n), not over the d features."
        )
    expect_close(
        out,
        np.array([1.0, 2.0, 3.0, 1.0]),
        name,
        hint="weights = softmax(keys @ query) over the n keys; result = weights @ values.",
    )

    # Large scores must not overflow.
    out = _shape_hint(call(soft_lookup, query * 1000.0, keys, values, name=name), name, (4,), hints)
    expect_finite(out, name, hint="Scores near 1000 overflow exp(): use your stable `softmax`.")
    expect_close(
        out,
        values[2],
        name,
        hint="With scores this large the best key should get almost all the weight.",
    )
    passed(name)
