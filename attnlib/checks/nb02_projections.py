"""Visible checks for notebook 02 (projections): hand-worked examples, no reference solution."""

import numpy as np

from attnlib.checks._core import (
    CheckFailed,
    call,
    crash_hints,
    expect_close,
    expect_shape,
    passed,
)

# X's rows are the unit vectors e_0, e_1, so row t of X Wᵀ is column t of W, read off by hand.
_X = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # [T=2, d_model=3]
_W = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [0.0, -1.0, 2.0]])  # [4, 3]
_XW_T = np.array([[1.0, 4.0, 7.0, 0.0], [2.0, 5.0, 8.0, -1.0]])  # [T=2, d_out=4]
# W @ X.T is [d_out, T] = [[1, 2], [4, 5], [7, 8], [0, -1]]; reshaped to [T, d_out] it reads:
_RESHAPED = np.array([[1.0, 2.0, 4.0, 5.0], [7.0, 8.0, 0.0, -1.0]])


_ROWS_AT_ONCE = (
    "the shapes don't fit a matrix product: X is [T, d_model] and W is [d_out, d_model], so "
    "all rows at once are X @ W.T ([T, d_model] @ [d_model, d_out] -> [T, d_out])"
)
crash_hints("project", {"mismatch": _ROWS_AT_ONCE})
crash_hints(
    "qkv",
    {
        "mismatch": "the shapes don't fit a matrix product: X is [T, d_model] and each W is "
        "[d_out, d_model], so Q = X @ W_Q.T ([T, d_model] @ [d_model, d_k]), likewise K and V",
        "same shape": "return the three arrays as a tuple `(Q, K, V)`: V may be wider than Q "
        "and K (d_v is not d_k), so they cannot be stacked into one array",
    },
)


def check_project(project):
    name = "project"
    out = call(project, _X, _W, name=name)
    out = np.asarray(out) if not hasattr(out, "detach") else out
    if getattr(out, "shape", None) == (4, 2):
        raise CheckFailed(
            "`project` returned shape (4, 2) = [d_out, T]: that is W @ X.T. Rows "
            "must be positions: return X @ W.T, shape [T, d_out]."
        )
    out = expect_shape(
        out,
        (2, 4),
        name,
        hint="X is [T, d_model] and W is [d_out, d_model]: the result is [T, d_out].",
    )
    if np.allclose(out, _RESHAPED):
        raise CheckFailed(
            "`project` reshaped W @ X.T ([d_out, T]) into [T, d_out]: a reshape keeps the "
            "numbers in reading order, a transpose moves them. Return X @ W.T."
        )
    offset = out - _XW_T
    if np.allclose(offset, offset.flat[0]) and not np.isclose(offset.flat[0], 0):
        raise CheckFailed(
            f"`project` adds {offset.flat[0]:g} to every entry: these projections have no bias, "
            "return X @ W.T."
        )
    expect_close(out, _XW_T, name, hint="Row t must be W @ X[t].")

    # A square W, where X @ W has the right shape but the wrong numbers.
    W_sq = np.array([[1.0, 2.0], [0.0, 1.0]])  # [2, 2], not symmetric
    X_sq = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # [T=3, 2]
    out = expect_shape(call(project, X_sq, W_sq, name=name), (3, 2), name)
    if np.allclose(out, X_sq @ W_sq):
        raise CheckFailed(
            "`project` computed X @ W. With q = W x for each row x, all rows at "
            "once are X @ W.T (the two only agree when W is symmetric)."
        )
    expect_close(
        out, np.array([[1.0, 0.0], [2.0, 1.0], [3.0, 1.0]]), name, hint="Row t must be W @ X[t]."
    )

    # One position alone is a [1, d_model] sequence; its row must be W @ x.
    x = np.array([[2.0, -1.0, 0.5]])  # [1, 3]
    out = expect_shape(call(project, x, _W, name=name), (1, 4), name)
    expect_close(out[0], np.array([1.5, 6.0, 10.5, 2.0]), name, hint="W @ x for x = [2, -1, 0.5].")
    passed(name)


def check_qkv(qkv):
    name = "qkv"
    W_Q = _W[:2]  # [d_k=2, 3]
    W_K = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # [d_k=2, 3]
    W_V = _W[1:]  # [d_v=3, 3]
    Q_want = np.array([[1.0, 4.0], [2.0, 5.0]])  # column t of W_Q, by hand
    K_want = np.array([[0.0, 1.0], [1.0, 0.0]])
    V_want = np.array([[4.0, 7.0, 0.0], [5.0, 8.0, -1.0]])
    out = call(qkv, _X, W_Q, W_K, W_V, name=name)
    if not (isinstance(out, (tuple, list)) and len(out) == 3):
        raise CheckFailed(
            "`qkv` should return three arrays `(Q, K, V)`, got "
            f"{type(out).__name__}"
            + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else "")
            + "."
        )
    parts = [np.asarray(p) for p in out]
    named = {"Q": Q_want, "K": K_want, "V": V_want}
    for label, got in zip("QKV", parts, strict=True):
        for other, want in named.items():
            if other != label and got.shape == want.shape and np.allclose(got, want):
                raise CheckFailed(
                    f"`qkv`'s output in the {label} place looks like {other}: "
                    "return them in the order (Q, K, V), each from its own matrix."
                )
    Q = expect_shape(parts[0], (2, 2), name, "Q is [T, d_k].", what="Q")
    K = expect_shape(parts[1], (2, 2), name, "K is [T, d_k].", what="K")
    V = expect_shape(parts[2], (2, 3), name, "V is [T, d_v].", what="V")
    for label, got, want in (("Q", Q, Q_want), ("K", K, K_want), ("V", V, V_want)):
        hint = f"{label} = X @ W_{label}.T: row t is W_{label} @ X[t]."
        expect_close(got, want, name, hint=hint, what=label)
    passed(name)


def check_design_keys_values(design_keys_values):
    name = "design_keys_values"
    query = np.array([2.0, 0.0, 1.0])  # [d=3]
    items = np.array([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0], [-1.0, 2.0]])  # [n=4, d_v=2]
    weights = np.array([0.5, 0.25, 0.15, 0.1])  # the blend to retrieve; sums to 1
    out = call(design_keys_values, query, items, weights, name=name)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise CheckFailed("`design_keys_values` should return a pair `(keys, values)`.")
    keys = expect_shape(
        out[0], (4, 3), name, "One key per item, each the size of the query: [n, d].", "keys"
    )
    values = expect_shape(out[1], (4, 2), name, "One value per item: [n, d_v].", "values")
    if not np.allclose(values, items):
        raise CheckFailed(
            "Each slot must hand over its item unchanged: `values` should be the "
            "items (row i = item i). The blend comes from the keys' scores."
        )
    scores = keys @ query  # [n]
    centred = scores - scores.mean()
    want = np.log(weights) - np.log(weights).mean()
    if np.allclose(centred, want, atol=1e-6):
        passed(name)
        return
    if np.allclose(centred, 0):
        raise CheckFailed(
            "Every key scores the same against the query, so the weights are "
            "uniform: give the keys different dot products with the query."
        )
    if np.allclose(centred, weights - weights.mean()):
        raise CheckFailed(
            "Your scores equal the weights, but softmax exponentiates them: the "
            "scores must be log(weights) (plus any constant)."
        )
    if np.allclose(centred, -want):
        raise CheckFailed(
            "Your scores have the wrong sign: the item with the largest weight "
            "needs the largest score."
        )
    ratio = centred @ want / (want @ want)
    if np.allclose(centred, ratio * want):
        raise CheckFailed(
            f"Your scores are log(weights) times {ratio:.3g}: divide by what the "
            "query adds (query · query) so the scores are exactly log(weights)."
        )
    raise CheckFailed(
        "softmax(keys @ query) does not give the requested weights: the "
        "score differences must equal differences of log(weights)."
    )
