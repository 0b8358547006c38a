"""Hidden checks for notebook 08 (reading attention maps)."""

import numpy as np

from grader.hidden import exercise

# The course's own scorers of attention patterns (attnlib.patterns) solve these exercises.
_SCORE_TEMPLATES = {
    "attnlib.patterns": {"template_score", "offset_template", "column_template", "repeat_templates"}
}


def _pattern(rng, T):
    """A random causal attention pattern [T, T]: rows sum to 1, zeros above the diagonal."""
    S = rng.normal(size=(T, T)) * rng.uniform(0.5, 3.0)
    S[np.triu_indices(T, 1)] = -np.inf
    A = np.exp(S - S.max(axis=1, keepdims=True))
    return A / A.sum(axis=1, keepdims=True)


def _pattern_cases(rng):
    for T in (3, 7, int(rng.integers(10, 40))):
        yield (_pattern(rng, T),)


def _rows(A):
    return np.arange(1, len(A))


def _self_incl_zero(A):
    return float(np.mean(np.diag(A)))


def _self_sum(A):
    return float(np.sum(np.diag(A)[1:]))


def _self_from_two(A):
    return float(np.mean(np.diag(A)[2:]))


@exercise(
    "self_score",
    shortcuts=_SCORE_TEMPLATES,
    cases=_pattern_cases,
    mistakes=[
        (
            _self_incl_zero,
            "`self_score` includes t = 0 (query 0 can only look at itself): average over t ≥ 1.",
        ),
        (
            _self_sum,
            "`self_score` returns the sum of the diagonal; the score is its mean over t ≥ 1.",
        ),
        (_self_from_two, "`self_score` starts at t = 2; start at t = 1."),
        (
            lambda A: float(np.mean(np.diag(A, -1))),
            "`self_score` reads the previous-token stripe A[t, t−1], not the diagonal A[t, t].",
        ),
    ],
)
def self_score(A):
    t = _rows(A)
    return float(A[t, t].mean())


def _prev_swapped(A):
    return float(np.mean(np.diag(A, 1)))  # A[t-1, t]: above the diagonal


def _prev_two_back(A):
    return float(np.mean(np.diag(A, -2)))


def _prev_from_two(A):
    return float(np.mean(np.diag(A, -1)[1:]))


def _prev_wraps(A):
    t = np.arange(len(A))
    return float(A[t, t - 1].mean())


@exercise(
    "previous_token_score",
    shortcuts=_SCORE_TEMPLATES,
    cases=_pattern_cases,
    mistakes=[
        (
            _prev_swapped,
            "`previous_token_score` reads A[t−1, t], above the diagonal: the query t "
            "is the row, the previous token t−1 the column.",
        ),
        (
            lambda A: float(np.mean(np.diag(A)[1:])),
            "`previous_token_score` reads the diagonal A[t, t]; the previous token is A[t, t−1].",
        ),
        (_prev_two_back, "`previous_token_score` looks two steps back (A[t, t−2]); use t−1."),
        (_prev_from_two, "`previous_token_score` starts at t = 2; t = 1 has a previous token too."),
        (
            _prev_wraps,
            "`previous_token_score` includes t = 0, where t−1 = −1 wraps round to the "
            "last column: start at t = 1.",
        ),
        (
            lambda A: float(np.sum(np.diag(A, -1))),
            "`previous_token_score` returns a sum; the score is the mean over t ≥ 1.",
        ),
    ],
)
def previous_token_score(A):
    t = _rows(A)
    return float(A[t, t - 1].mean())


@exercise(
    "sink_score",
    shortcuts=_SCORE_TEMPLATES,
    cases=_pattern_cases,
    mistakes=[
        (
            lambda A: float(A[:, 0].mean()),
            "`sink_score` includes t = 0, which can only look at key 0: average over t ≥ 1.",
        ),
        (
            lambda A: float(A[0, 1:].mean()),
            "`sink_score` reads row 0; the sink is column 0, A[t, 0].",
        ),
        (
            lambda A: float(A[0].mean()),
            "`sink_score` averages row 0; the sink is column 0, A[t, 0].",
        ),
        (lambda A: float(A[1:, 0].sum()), "`sink_score` returns a sum; the score is the mean."),
        (
            lambda A: float(A[1:, 1].mean()),
            "`sink_score` reads column 1; the first token is column 0.",
        ),
    ],
)
def sink_score(A):
    return float(A[1:, 0].mean())


def _induction_cases(rng):
    for L in (2, 3, int(rng.integers(5, 20))):
        yield (_pattern(rng, 2 * L + 1), L)


def _second_copy(L):
    return np.arange(L + 1, 2 * L + 1)


@exercise(
    "induction_score",
    shortcuts=_SCORE_TEMPLATES,
    cases=_induction_cases,
    mistakes=[
        (
            lambda A, L: float(A[_second_copy(L), _second_copy(L) - L].mean()),
            "`induction_score` reads A[t, t−L], the earlier copy of the current token; an "
            "induction head attends to the token after it, t−L+1.",
        ),
        (
            lambda A, L: float(A[_second_copy(L), _second_copy(L) - L + 2].mean()),
            "`induction_score` reads A[t, t−L+2], one column too far right; use t−L+1.",
        ),
        (
            lambda A, L: float(A[np.arange(L, 2 * L + 1), np.arange(L, 2 * L + 1) - L + 1].mean()),
            "`induction_score` includes t = L, the last query of the first copy; the second copy "
            "is t = L+1 … 2L.",
        ),
        (
            lambda A, L: float(A[np.arange(L + 1, 2 * L), np.arange(L + 1, 2 * L) - L + 1].mean()),
            "`induction_score` stops at t = 2L−1; the second copy runs to t = 2L inclusive.",
        ),
        (
            lambda A, L: float(
                A[np.arange(L + 2, 2 * L + 1), np.arange(L + 2, 2 * L + 1) - L + 1].mean()
            ),
            "`induction_score` starts at t = L+2; the second copy starts at t = L+1.",
        ),
        (
            lambda A, L: float(A[_second_copy(L) - L + 1, _second_copy(L)].mean()),
            "`induction_score` swaps row and column: the query t is the row, A[t, t−L+1].",
        ),
        (
            lambda A, L: float(A[_second_copy(L), _second_copy(L) - L + 1].sum()),
            "`induction_score` returns a sum; the score is the mean over the second copy.",
        ),
    ],
)
def induction_score(A, period):
    t = _second_copy(period)
    return float(A[t, t - period + 1].mean())


def _mask_cases(rng):
    yield (6, 2)
    yield (7, 3, 1)
    yield (5, 1, 2)
    T = int(rng.integers(8, 30))
    yield (T, int(rng.integers(1, T)), int(rng.integers(0, 4)))
    yield (T, T + 3)


def _mask_from(allowed):
    return np.where(allowed, 0.0, -np.inf)


def _ij(T):
    return np.arange(T)[:, None], np.arange(T)[None, :]


def _window_too_wide(T, window, n_sink=0):
    i, j = _ij(T)
    return _mask_from((j <= i) & ((i - j <= window) | (j < n_sink)))


def _window_too_narrow(T, window, n_sink=0):
    i, j = _ij(T)
    return _mask_from((j <= i) & ((i - j < window - 1) | (j < n_sink)))


def _window_not_causal(T, window, n_sink=0):
    i, j = _ij(T)
    return _mask_from((np.abs(i - j) < window) | ((j < n_sink) & (j <= i)))


def _sinks_not_causal(T, window, n_sink=0):
    i, j = _ij(T)
    return _mask_from(((j <= i) & (i - j < window)) | (j < n_sink))


def _sinks_ignored(T, window, n_sink=0):
    i, j = _ij(T)
    return _mask_from((j <= i) & (i - j < window))


def _boolean(T, window, n_sink=0):
    i, j = _ij(T)
    return ((j <= i) & ((i - j < window) | (j < n_sink))).astype(float)


@exercise(
    "sliding_window_mask",
    cases=_mask_cases,
    mistakes=[
        (
            _window_too_wide,
            "`sliding_window_mask` lets each query see window + 1 keys (i − j ≤ "
            "window); the window includes the query itself: i − j < window.",
        ),
        (
            _window_too_narrow,
            "`sliding_window_mask` lets each query see window − 1 keys; the window "
            "includes the query itself: i − j < window.",
        ),
        (
            _window_not_causal,
            "`sliding_window_mask` lets queries see future keys: also require j ≤ i.",
        ),
        (
            _sinks_not_causal,
            "`sliding_window_mask` shows the sink keys to earlier queries (query 0 "
            "sees key 1): the sink columns must stay causal, j ≤ i.",
        ),
        (
            _sinks_ignored,
            "`sliding_window_mask` ignores n_sink: the first n_sink keys stay visible "
            "to every later query.",
        ),
        (
            _boolean,
            "`sliding_window_mask` returns 1/0 (True/False); the mask is additive: 0.0 where "
            "a query may look, -np.inf where it may not.",
        ),
    ],
)
def sliding_window_mask(T, window, n_sink=0):
    i, j = _ij(T)
    return _mask_from((j <= i) & ((i - j < window) | (j < n_sink)))
