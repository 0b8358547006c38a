"""Visible checks for notebook 05 (the causal mask).

Hand-worked examples and properties only: the expected masks are written out for
tiny T, and ``future_leak`` is tried on small functions whose leaks are known.
"""

import numpy as np

from attnlib.checks._core import CheckFailed, as_array, call, crash_hints, expect_shape, passed

crash_hints(
    "future_leak",
    {
        "zero-size array": "it compared no positions: the positions before t are rows [:t] "
        "(with t = 1, just row 0)"
    },
)

_HOW = "the mask is additive: 0 where query i may look at key j (j ≤ i), -np.inf where j > i"


def _mask_mistake(M):
    """Name the likely mistake in a [T, T] mask that is not the causal mask (T ≥ 3)."""
    T = M.shape[0]
    upper = M[np.triu_indices(T, 1)]  # the future: j > i
    lower = M[np.tril_indices(T, -1)]  # the past: j < i
    diag = np.diag(M)
    if np.isnan(M).any():
        return (
            "`causal_mask` contains NaN: 0 * (-np.inf) is NaN, so a mask built by multiplying "
            "a 0/1 array by -np.inf breaks. Build it with np.where(...) or np.triu(...)."
        )
    if np.isin(M, (0.0, 1.0)).all():
        return (
            "`causal_mask` returned a 0/1 mask. That is a multiplicative mask; attention adds "
            f"the mask to the scores before the softmax, so {_HOW}."
        )
    if np.all(lower == -np.inf) and np.all(upper == 0):
        return (
            "`causal_mask` is transposed: it masks the past (j < i) and shows the future. "
            "Row i is the query, column j the key; mask the entries with j > i "
            "(above the diagonal)."
        )
    if np.all(diag == -np.inf) and np.all(upper == -np.inf):
        return (
            "`causal_mask` masks the diagonal too (j ≥ i): a position may look at itself, "
            "so only the entries with j > i are -np.inf (np.triu(..., k=1))."
        )
    finite_upper = upper[np.isfinite(upper)]
    if finite_upper.size and np.all(finite_upper < -1):
        return (
            f"`causal_mask` uses the large negative number {finite_upper.min():g} for the "
            "future; expected -np.inf exactly, so the masked weights come out exactly 0 "
            "whatever the scores are."
        )
    if not np.all(upper == -np.inf):
        return (
            "`causal_mask`: the entries above the diagonal (j > i, the future) must be "
            f"-np.inf; {_HOW}."
        )
    return (
        "`causal_mask`: the entries on and below the diagonal (j ≤ i) must be exactly 0, so "
        "adding the mask leaves the allowed scores unchanged."
    )


def check_causal_mask(causal_mask):
    name = "causal_mask"
    out = call(causal_mask, 4, name=name)
    if isinstance(out, np.ndarray) and out.dtype == bool:
        raise CheckFailed(
            f"`causal_mask` returned a boolean array; {_HOW} "
            "(e.g. np.where(allowed, 0.0, -np.inf))."
        )
    M = expect_shape(out, (4, 4), name, hint="One row per query position, one column per key.")
    expected = np.array(
        [
            [0.0, -np.inf, -np.inf, -np.inf],
            [0.0, 0.0, -np.inf, -np.inf],
            [0.0, 0.0, 0.0, -np.inf],
            [0.0, 0.0, 0.0, 0.0],
        ]
    )  # worked by hand for T = 4
    if not np.array_equal(M, expected):
        raise CheckFailed(_mask_mistake(M))
    for T in (1, 7):
        M = expect_shape(
            call(causal_mask, T, name=name),
            (T, T),
            name,
            hint="causal_mask(T) is [T, T] for every T.",
        )
        future = np.triu(np.ones((T, T), dtype=bool), 1)
        if not (np.all(M[future] == -np.inf) and np.all(M[~future] == 0)):
            raise CheckFailed(
                f"`causal_mask({T})` is wrong although causal_mask(4) is right: "
                "build the mask from T, not from fixed numbers."
            )
    passed(name)


class _Fn:
    """A small sequence function with a readable name (for messages)."""

    def __init__(self, fn, label):
        self.fn, self.label = fn, label

    def __call__(self, X):
        return np.array(self.fn(np.asarray(X)), dtype=float)  # a fresh, contiguous array

    def __repr__(self):
        return self.label


_identity = _Fn(lambda X: X.astype(float), "f(X) = X")
_peek_ahead = _Fn(
    lambda X: np.concatenate([X[1:], np.zeros_like(X[:1])]).astype(float), "f(X)[i] = X[i+1]"
)
_global_mean = _Fn(
    lambda X: np.broadcast_to(X.mean(axis=0), X.shape).astype(float), "f(X)[i] = mean of all rows"
)
_suffix_sum = _Fn(
    lambda X: np.cumsum(X[::-1], axis=0)[::-1].astype(float), "f(X)[i] = X[i] + … + X[T−1]"
)
_prefix_sum = _Fn(lambda X: np.cumsum(X, axis=0).astype(float), "f(X)[i] = X[0] + … + X[i]")
_reads_row_2 = _Fn(lambda X: np.broadcast_to(X[2], X.shape).astype(float), "f(X)[i] = X[2]")


def _leak(future_leak, f, X, X_alt, t, name):
    """Call future_leak on copies; complain if it changed its inputs; return a float."""
    X_in, X_alt_in = X.copy(), X_alt.copy()
    out = call(future_leak, f, X_in, X_alt_in, t, name=name)
    if not np.array_equal(X_in, X) or not np.array_equal(X_alt_in, X_alt):
        raise CheckFailed(
            "`future_leak` changed its input arrays in place: `X2 = X` gives the same "
            "array a second name; make the changed sequence with `X.copy()`."
        )
    out = as_array(np.asarray(out) if np.isscalar(out) else out, name, "the largest change")
    if out.ndim != 0:
        raise CheckFailed(
            f"`future_leak` should return one number (the largest change), "
            f"got an array of shape {out.shape}: take .max() of the differences."
        )
    if out < 0:
        raise CheckFailed(
            f"`future_leak` returned {float(out):g}, a negative number: a change counts "
            "in either direction, take np.abs(...) of the differences."
        )
    return float(out)


def check_future_leak(future_leak):
    name = "future_leak"
    X = np.zeros((4, 2))
    X_alt = np.array([[-2.0, -2.0], [-2.0, -2.0], [-5.0, -5.0], [-5.0, -5.0]])

    got = _leak(future_leak, _identity, X, X_alt, 2, name)
    if np.isclose(got, 2.0):  # rows 0 and 1 swapped instead of rows 2 and 3
        raise CheckFailed(
            "`future_leak` replaced the rows BEFORE t; keep X[:t] and take the "
            "future rows X[t:] from X_alt."
        )
    if got != 0:
        raise CheckFailed(
            "`future_leak` reports a leak for f(X) = X, which never looks ahead: only "
            "positions BEFORE t count (rows [:t]); position t itself changed, so its "
            "output may change."
        )

    # Every output reads X[2], and X_alt changes it from 0 to −5: each earlier output moves by 5.
    got = _leak(future_leak, _reads_row_2, X, X_alt, 2, name)
    if got == 0:
        raise CheckFailed(
            f"`future_leak` found no leak in {_reads_row_2!r} with t = 2, although X_alt "
            "changes X[2]: build X2 with X2[t:] = X_alt[t:] (row t included) and compare "
            "f(X) with f(X2)."
        )
    if np.isclose(got, 20.0):  # 2 positions × 2 features, each changed by 5
        raise CheckFailed(
            f"`future_leak` gave 20 for {_reads_row_2!r} (X = 0, X_alt[2] = −5, t = 2): "
            "that is the sum of the changes; return the largest one (`.max()`), here 5."
        )
    if not np.isclose(got, 5.0):
        raise CheckFailed(
            f"`future_leak` gave {got:g} for {_reads_row_2!r} with X = 0, X_alt[2] = −5, "
            "t = 2; expected 5 (every earlier output changes by 5)."
        )

    for sign in (1, -1):  # every earlier output moves by sign · 1
        got = _leak(
            future_leak, _global_mean, np.zeros((4, 1)), sign * 4 * np.ones((4, 1)), 3, name
        )
        if np.isclose(got, 3.0):
            raise CheckFailed(
                f"`future_leak` gave 3 for {_global_mean!r} with t = 3: that is the sum of "
                "the changes of the 3 earlier outputs; return the largest one (`.max()`), 1."
            )
        if not np.isclose(got, 1.0):
            raise CheckFailed(
                f"`future_leak` gave {got:g} for {_global_mean!r} with X = 0, "
                f"X_alt = {4 * sign}, T = 4, t = 3; expected 1 (only row 3 changes, "
                "so the mean moves by 4/4)."
            )

    got = _leak(future_leak, _peek_ahead, X, X_alt, 2, name)
    if got == 0:
        raise CheckFailed(
            f"`future_leak` found no leak in {_peek_ahead!r}, where position t−1 = 1 reads "
            "X[2], which changed: compare every position before t, rows [:t] (t−1 included)."
        )
    if np.isclose(got, 2.5):
        raise CheckFailed(
            f"`future_leak` gave 2.5 for {_peek_ahead!r} (X = 0, X_alt rows [−2, −2, −5, −5], "
            "t = 2): that is a mean of the changes; return the largest one (`.max()`), 5."
        )
    if not np.isclose(got, 5.0):
        raise CheckFailed(
            f"`future_leak` gave {got:g} for {_peek_ahead!r} with X = 0, X_alt rows "
            "[−2, −2, −5, −5], t = 2; expected 5 (position 1 reads X[2], which "
            "changed from 0 to −5): the largest change, not a mean or a sum."
        )

    tokens, other = np.array([3, 1, 4, 1, 5]), np.array([9, 9, 9, 9, 9])  # 1-D token ids
    if _leak(future_leak, _prefix_sum, tokens, other, 3, name) != 0:
        raise CheckFailed(
            "`future_leak` reports a leak for a running sum, which never looks ahead "
            "(1-D token ids, t = 3)."
        )
    got = _leak(future_leak, _suffix_sum, tokens, other, 3, name)
    if not np.isclose(got, 12.0):
        raise CheckFailed(
            f"`future_leak` gave {got:g} for {_suffix_sum!r} on tokens [3 1 4 1 5] "
            "vs [9 9 9 9 9], t = 3; expected 12 (the largest change)."
        )
    passed(name)
