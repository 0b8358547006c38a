"""Notebook 05: the checks pass the solution, fail the stub, and name the usual mistakes."""

import numpy as np
import pytest

from attnlib.checks import nb05_causal_mask as checks
from attnlib.checks._core import CheckFailed
from grader.hidden import verify

NB = "05_causal_mask"


# ------------------------------------------------------------------ causal_mask


def _diagonal_masked(T):
    return np.triu(np.full((T, T), -np.inf))


def _transposed(T):
    return np.tril(np.full((T, T), -np.inf), k=-1)


def _multiplicative(T):
    return np.tril(np.ones((T, T)))


def _large_negative(T):
    return np.triu(np.full((T, T), -1e9), k=1)


def _boolean(T):
    return np.triu(np.ones((T, T), dtype=bool), k=1)


def _nan_from_multiplying(T):
    with np.errstate(invalid="ignore"):
        return (1 - np.tril(np.ones((T, T)))) * -np.inf  # 0 * -inf = NaN where allowed


def _fixed_size(T):
    return np.triu(np.full((4, 4), -np.inf), k=1)


@pytest.mark.parametrize(
    "wrong, visible, hidden",
    [
        (_diagonal_masked, "masks the diagonal", "masks the diagonal"),
        (_transposed, "is transposed", "is transposed"),
        (_multiplicative, "0/1 mask", "multiplicative"),
        (_large_negative, r"large negative number -1e\+09.*-np.inf exactly", r"-1e\+09.*-np.inf"),
        (_boolean, "boolean array", "puts 1 on the future entries"),
        (_nan_from_multiplying, r"NaN: 0 \* \(-np.inf\)", "wrong result"),
        (_fixed_size, r"shape \(4, 4\), expected \(1, 1\)", "wrong result"),
    ],
)
def test_mistakes_are_named(wrong, visible, hidden):
    with pytest.raises(CheckFailed, match=visible):
        checks.check_causal_mask(wrong)
    with pytest.raises(CheckFailed, match=hidden):
        verify("causal_mask", wrong)


def _loops(T):
    M = np.zeros((T, T))
    for i in range(T):
        for j in range(T):
            if j > i:
                M[i, j] = -np.inf
    return M


def _where(T):
    i, j = np.indices((T, T))
    return np.where(j > i, -np.inf, 0.0)


def _from_torch(T):
    import torch

    return torch.full((T, T), float("-inf")).triu(1).double().numpy()


@pytest.mark.parametrize("alternative", [_loops, _where, _from_torch])
def test_correct_alternatives_pass(alternative):
    checks.check_causal_mask(alternative)
    verify("causal_mask", alternative)


# ------------------------------------------------------------------ future_leak


def _includes_t(f, X, X_alt, t):
    X2 = X.copy()
    X2[t:] = X_alt[t:]
    return float(np.abs(f(X) - f(X2))[: t + 1].max())


def _aliased(f, X, X_alt, t):
    X2 = X
    X2[t:] = X_alt[t:]
    return float(np.abs(f(X) - f(X2))[:t].max())


def _replaces_past(f, X, X_alt, t):
    X2 = X.copy()
    X2[:t] = X_alt[:t]
    return float(np.abs(f(X) - f(X2))[:t].max())


def _signed(f, X, X_alt, t):
    X2 = X.copy()
    X2[t:] = X_alt[t:]
    return float((f(X2) - f(X))[:t].max())


def _mean(f, X, X_alt, t):
    X2 = X.copy()
    X2[t:] = X_alt[t:]
    return float(np.abs(f(X) - f(X2))[:t].mean())


def _array(f, X, X_alt, t):
    X2 = X.copy()
    X2[t:] = X_alt[t:]
    return np.abs(f(X) - f(X2))[:t]


@pytest.mark.parametrize(
    "wrong, visible, hidden",
    [
        (_includes_t, "only positions BEFORE t count", "compares position t too"),
        (_aliased, "changed its input arrays in place", "X.copy()"),
        (_replaces_past, "replaced the rows BEFORE t", "replaces the rows before t"),
        (_signed, "negative number.*np.abs", "absolute value"),
        (_mean, "not a mean", "averages the changes"),
        (_array, "should return one number", "wrong result|returned"),
    ],
)
def test_future_leak_mistakes_are_named(wrong, visible, hidden):
    with pytest.raises(CheckFailed, match=visible):
        checks.check_future_leak(wrong)
    with pytest.raises(CheckFailed, match=hidden):
        verify("future_leak", wrong)


def _loop_over_positions(f, X, X_alt, t):
    changed = np.concatenate([X[:t], X_alt[t:]])
    before, after = f(X), f(changed)
    return max(float(np.max(np.abs(before[i] - after[i]))) for i in range(t))


def _torch_based(f, X, X_alt, t):
    import torch

    X2 = np.array(X, copy=True)
    X2[t:] = X_alt[t:]
    diff = torch.from_numpy(np.asarray(f(X), float)) - torch.from_numpy(np.asarray(f(X2), float))
    return diff[:t].abs().max().item()


@pytest.mark.parametrize("alternative", [_loop_over_positions, _torch_based])
def test_future_leak_alternatives_pass(alternative):
    checks.check_future_leak(alternative)
    verify("future_leak", alternative)
