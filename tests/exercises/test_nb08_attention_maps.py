"""Notebook 08: the checks accept right answers and name the wrong ones."""

import numpy as np
import pytest

from attnlib.checks import nb08_attention_maps as checks
from attnlib.checks._core import CheckFailed
from grader.hidden import verify

NB = "08_attention_maps"
EXERCISES = [
    "self_score",
    "previous_token_score",
    "sink_score",
    "induction_score",
    "sliding_window_mask",
]


@pytest.fixture(autouse=True)
def _seeded(monkeypatch):
    monkeypatch.setenv("ATTN_GRADER_SEED", "7")


def _visible(name, fn):
    getattr(checks, f"check_{name}")(fn)


# ---------------------------------------------------------------- mistakes, by exercise
def _t(A):
    return np.arange(1, len(A))


WRONG = {
    "self_score": [
        (lambda A: float(np.mean(np.diag(A))), "includes t = 0"),
        (lambda A: float(np.sum(np.diag(A)[1:])), "sum"),
        (lambda A: float(np.mean(np.diag(A)[2:])), "starts at t = 2"),
        (lambda A: float(np.mean(np.diag(A, -1))), "previous-token stripe"),
    ],
    "previous_token_score": [
        (lambda A: float(np.mean(np.diag(A, 1))), "row and column swapped|A\\[t−1, t\\]"),
        (lambda A: float(np.mean(np.diag(A)[1:])), "diagonal"),
        (lambda A: float(np.mean(np.diag(A, -2))), "two steps back|t−2"),
        (lambda A: float(A[np.arange(len(A)), np.arange(len(A)) - 1].mean()), "wraps round"),
        (lambda A: float(np.mean(np.diag(A, -1)[1:])), "starts at t = 2"),
    ],
    "sink_score": [
        (lambda A: float(A[:, 0].mean()), "includes t = 0"),
        (lambda A: float(A[0, 1:].mean()), "row 0"),
        (lambda A: float(A[1:, 1].mean()), "column 1"),
        (lambda A: float(A[1:, 0].sum()), "sum"),
    ],
    "induction_score": [
        (
            lambda A, L: float(A[np.arange(L + 1, 2 * L + 1), np.arange(1, L + 1)].mean()),
            "earlier copy of the current token",
        ),
        (
            lambda A, L: float(A[np.arange(L + 1, 2 * L + 1), np.arange(3, L + 3)].mean()),
            "one column too far",
        ),
        (
            lambda A, L: float(A[np.arange(L, 2 * L + 1), np.arange(1, L + 2)].mean()),
            "includes t = L",
        ),
        (
            lambda A, L: float(A[np.arange(L + 1, 2 * L), np.arange(2, L + 1)].mean()),
            "stops at t = 2L−1",
        ),
        (
            lambda A, L: float(A[np.arange(2, L + 2), np.arange(L + 1, 2 * L + 1)].mean()),
            "row and column swapped|swaps row and column",
        ),
    ],
}


def _mask(allowed):
    return np.where(allowed, 0.0, -np.inf)


def _grid(T):
    return np.arange(T)[:, None], np.arange(T)[None, :]


def _wide(T, window, n_sink=0):
    i, j = _grid(T)
    return _mask((j <= i) & ((i - j <= window) | (j < n_sink)))


def _narrow(T, window, n_sink=0):
    i, j = _grid(T)
    return _mask((j <= i) & ((i - j < window - 1) | (j < n_sink)))


def _two_sided(T, window, n_sink=0):
    i, j = _grid(T)
    return _mask((np.abs(i - j) < window) | ((j < n_sink) & (j <= i)))


def _sink_sees_future(T, window, n_sink=0):
    i, j = _grid(T)
    return _mask(((j <= i) & (i - j < window)) | (j < n_sink))


def _no_sinks(T, window, n_sink=0):
    i, j = _grid(T)
    return _mask((j <= i) & (i - j < window))


def _boolean(T, window, n_sink=0):
    i, j = _grid(T)
    return ((j <= i) & ((i - j < window) | (j < n_sink))).astype(float)


WRONG["sliding_window_mask"] = [
    (_wide, "one too many|window \\+ 1 keys"),
    (_narrow, "one too few|window − 1 keys"),
    (_two_sided, "future"),
    (_sink_sees_future, "future|sink"),
    (_no_sinks, "ignores n_sink"),
    (_boolean, "additive|1/0"),
]

CASES = [(name, wrong, message) for name, items in WRONG.items() for wrong, message in items]


@pytest.mark.parametrize("name, wrong, message", CASES)
def test_visible_check_names_the_mistake(name, wrong, message):
    with pytest.raises(CheckFailed, match=message):
        _visible(name, wrong)


@pytest.mark.parametrize("name, wrong, message", CASES)
def test_hidden_check_names_the_mistake(name, wrong, message):
    with pytest.raises(CheckFailed, match="Hidden check: .*(" + message + ")"):
        verify(name, wrong)


def test_every_exercise_has_three_named_mistakes():
    assert all(len(WRONG[name]) >= 3 for name in EXERCISES)


# ---------------------------------------------------------------- correct alternatives
def _self_loop(A):
    return sum(A[t, t] for t in range(1, len(A))) / (len(A) - 1)


def _prev_loop(A):
    return float(np.mean([A[t, t - 1] for t in range(1, len(A))]))


def _induction_diag(A, period):
    return float(np.diagonal(A, offset=1 - period)[-period:].mean())  # last L: the second copy


def _induction_loop(A, period):
    return float(np.mean([A[t, t - period + 1] for t in range(period + 1, 2 * period + 1)]))


def _window_loops(T, window, n_sink=0):
    M = np.full((T, T), -np.inf)
    for i in range(T):
        for j in range(i + 1):
            if i - j < window or j < n_sink:
                M[i, j] = 0.0
    return M


def _window_tri(T, window, n_sink=0):
    ones = np.ones((T, T), dtype=bool)
    band = np.tril(ones) & ~np.tril(ones, -window)
    band[:, :n_sink] |= np.tril(ones)[:, :n_sink]
    return np.where(band, 0.0, float("-inf"))


RIGHT = {
    "self_score": [_self_loop, lambda A: np.trace(A[1:, 1:]) / (len(A) - 1)],
    "previous_token_score": [_prev_loop, lambda A: np.diag(A, k=-1).mean()],
    "sink_score": [lambda A: np.mean(A[1:, 0]), lambda A: A[:, 0][1:].sum() / (A.shape[0] - 1)],
    "induction_score": [_induction_diag, _induction_loop],
    "sliding_window_mask": [_window_loops, _window_tri],
}


@pytest.mark.parametrize("name, right", [(n, f) for n, fs in RIGHT.items() for f in fs])
def test_correct_alternatives_pass(name, right):
    _visible(name, right)
    verify(name, right)


def test_score_must_be_one_number():
    with pytest.raises(CheckFailed, match="one number"):
        _visible("self_score", lambda A: np.diag(A)[1:])
