"""Visible checks for notebook 08 (reading attention maps).

The patterns below are small, hand-made attention maps (rows are queries, each row sums
to 1, zeros above the diagonal). The expected scores were worked out by hand in the
comments; the wrong values name the mistake that produces them.
"""

import numpy as np

from attnlib.checks._core import CheckFailed, as_array, as_number, call, expect_shape, passed

# A 4x4 causal pattern with distinct entries. Row t is where query t looks. A message that
# names no mistake shows it, so the learner can try their function on it.
A4 = np.array(
    [
        [1.0, 0.0, 0.0, 0.0],
        [0.5, 0.5, 0.0, 0.0],
        [0.2, 0.3, 0.5, 0.0],
        [0.1, 0.2, 0.3, 0.4],
    ]
)
_A4_SHOWN = (
    "the 4×4 pattern A = np.array([[1, 0, 0, 0], [.5, .5, 0, 0], [.2, .3, .5, 0], "
    "[.1, .2, .3, .4]]) (rows are queries): try your function on it"
)


def _by_t(entries):
    """The message for a mean over t = 1 … 3 of A4 divided by T = 4."""
    return (
        "that divides by T = 4, but t = 1 … T−1 are T−1 = 3 queries: divide by T−1 (or take "
        f"the mean of {entries})."
    )


def _score(fn, name, *args):
    """Call ``fn`` and insist on one number (a float or a 0-d array)."""
    return as_number(call(fn, *args, name=name), name, hint=" Did you forget to take the mean?")


def _expect(got, want, name, known, pattern=_A4_SHOWN):
    """Compare with the hand-worked value; name the mistake when ``got`` is a known wrong one."""
    if np.isclose(got, want, atol=1e-9):
        return
    for wrong, message in known:
        if np.isclose(got, wrong, atol=1e-9):
            raise CheckFailed(f"`{name}` gave {got:.4g}, expected {want:.4g}: {message}")
    raise CheckFailed(f"`{name}` gave {got:.4g}, expected {want:.4g} on {pattern}.")


def _uniform(T):
    """Causal uniform attention: query t spreads 1/(t+1) over keys 0..t."""
    return np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]


def _shifted(T, offset):
    """Every query t ≥ offset looks only at t − offset; earlier queries look at key 0."""
    A = np.zeros((T, T))
    for t in range(T):
        A[t, t - offset if t >= offset else 0] = 1.0
    return A


def check_self_score(self_score):
    name = "self_score"
    # diagonal for t >= 1: 0.5, 0.5, 0.4 -> 1.4 / 3
    _expect(
        _score(self_score, name, A4.copy()),
        1.4 / 3,
        name,
        [
            (2.4 / 4, "that includes t = 0, whose only choice is itself: start at t = 1."),
            (1.4, "that is the sum; the score is the mean over t ≥ 1."),
            (0.9 / 2, "that starts at t = 2; start at t = 1."),
            (1.1 / 3, "that is the previous-token stripe A[t, t−1], not the diagonal A[t, t]."),
            (1.4 / 4, _by_t("those entries")),
        ],
    )
    if not np.isclose(_score(self_score, name, np.eye(6)), 1.0):
        raise CheckFailed(f"`{name}` should give 1.0 when every query looks only at itself.")
    if not np.isclose(_score(self_score, name, _uniform(5)), (1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 4):
        raise CheckFailed(
            f"`{name}` is wrong on uniform causal attention (row t gives 1/(t+1) "
            "to itself), 5 positions."
        )
    passed(name)


def check_previous_token_score(previous_token_score):
    name = "previous_token_score"
    # A[t, t-1] for t >= 1: 0.5, 0.3, 0.3 -> 1.1 / 3
    _expect(
        _score(previous_token_score, name, A4.copy()),
        1.1 / 3,
        name,
        [
            (
                0.0,
                "that reads above the diagonal, A[t−1, t] (row and column swapped?): query t is "
                "the row, the previous token t−1 is the column.",
            ),
            (
                1.4 / 3,
                "that is the diagonal A[t, t] (offset 0); the previous token is one column "
                "to the left.",
            ),
            (0.4 / 2, "that is two steps back, A[t, t−2]; use t−1."),
            (0.6 / 2, "that starts at t = 2; t = 1 has a previous token too (t−1 = 0)."),
            (1.1, "that is the sum; the score is the mean over t ≥ 1."),
            (
                1.1 / 4,  # A[0, −1] is 0 on a causal pattern: both mistakes give this
                "that divides by T = 4, one too many: either t = 0 is included (its t−1 = −1 "
                "wraps round to the last column) or the sum over t = 1 … T−1 is divided by T. "
                "Average over the T−1 = 3 queries t ≥ 1.",
            ),
        ],
    )
    if not np.isclose(_score(previous_token_score, name, _shifted(6, 1)), 1.0):
        raise CheckFailed(f"`{name}` should give 1.0 when every query t ≥ 1 looks only at t−1.")
    if not np.isclose(_score(previous_token_score, name, np.eye(6)), 0.0):
        raise CheckFailed(f"`{name}` should give 0.0 when every query looks only at itself.")
    passed(name)


def check_sink_score(sink_score):
    name = "sink_score"
    # column 0 for t >= 1: 0.5, 0.2, 0.1 -> 0.8 / 3
    _expect(
        _score(sink_score, name, A4.copy()),
        0.8 / 3,
        name,
        [
            (1.8 / 4, "that includes t = 0, which can only look at key 0 anyway: start at t = 1."),
            (
                0.0,
                "that reads row 0 (A[0, t]); the sink is column 0: A[t, 0], how much each query "
                "t puts on the first key.",
            ),
            (0.25, "that is the mean of row 0; the sink is column 0, A[t, 0]."),
            (0.8, "that is the sum; the score is the mean over t ≥ 1."),
            (1.0 / 3, "that reads column 1; the first token is column 0."),
            (
                0.4 / 3,
                "that reads the last column, A[t, −1], the newest key; the sink is the first "
                "token, column 0: A[t, 0].",
            ),
            (0.8 / 4, _by_t("A[1:, 0]")),
        ],
    )
    all_on_first = np.zeros((5, 5))
    all_on_first[:, 0] = 1.0
    if not np.isclose(_score(sink_score, name, all_on_first), 1.0):
        raise CheckFailed(f"`{name}` should give 1.0 when every query looks only at key 0.")
    passed(name)


def _repeat_pattern():
    """[BOS] + r + r with L = 4 (T = 9), so every offset below is a different column.
    Second-copy queries t = 5 … 8 put w_t on the induction target t−3 (= t−L+1), 0.1 on the
    earlier copy of their own token t−4, 0.05 on t−2, 0.02 on t−1 (the previous token) and
    0.03 on t−5 (the token before the earlier copy); the rest goes to BOS. Query 4 (the end
    of the first copy) puts 0.3 on key 1."""
    A = np.zeros((9, 9))
    A[0, 0] = 1.0
    A[1, :2] = [0.5, 0.5]
    A[2, :3] = [0.4, 0.3, 0.3]
    A[3, :4] = [0.4, 0.2, 0.2, 0.2]
    A[4, :5] = [0.3, 0.3, 0.2, 0.1, 0.1]
    for t, w in zip((5, 6, 7, 8), (0.5, 0.6, 0.7, 0.8), strict=True):
        A[t, t - 3] += w
        A[t, t - 4] += 0.1
        A[t, t - 2] += 0.05
        A[t, t - 1] += 0.02
        A[t, t - 5] += 0.03
        A[t, 0] += 1.0 - A[t].sum()
    return A


def check_induction_score(induction_score):
    name = "induction_score"
    A = _repeat_pattern()
    out = _score(induction_score, name, A.copy(), 4)
    # A[t, t-L+1] for t = 5 … 8 (L = 4): 0.5, 0.6, 0.7, 0.8 -> 0.65
    _expect(
        out,
        0.65,
        name,
        [
            (
                0.1,
                "that is A[t, t−L], the earlier copy of the current token; an induction head "
                "looks one step further, at the token that came AFTER it: t−L+1.",
            ),
            (0.05, "that is A[t, t−L+2], one column too far right; use t−L+1."),
            (
                0.42 / 4,  # A[5, 0] (BOS) is 0.33; A[t, t−5] is 0.03 for t = 6 … 8
                "that is A[t, t−L−1], the token before the earlier copy of the current one; an "
                "induction head looks at the token after it, t−L+1.",
            ),
            (
                0.02,
                "that is A[t, t−1], the previous token; an induction head looks at the token "
                "after the earlier copy of the current one: t−L+1.",
            ),
            (
                2.9 / 5,
                "that includes t = L (the last query of the first copy); the second copy "
                "is t = L+1 … 2L.",
            ),
            (1.8 / 3, "that stops at t = 2L−1; the second copy runs up to t = 2L inclusive."),
            (2.1 / 3, "that starts at t = L+2; the second copy starts at t = L+1."),
            (
                2.1 / 4,
                "that reads rows L … 2L−1, one too early: position 0 is [BOS], so the second "
                "copy is t = L+1 … 2L.",
            ),
            (0.0, "that reads above the diagonal (row and column swapped?): query t is the row."),
            (2.6, "that is the sum; the score is the mean over the second copy."),
        ],
        pattern="a [BOS] + r + r pattern with L = 4 (T = 9) whose second-copy queries "
        "t = 5 … 8 put 0.5, 0.6, 0.7, 0.8 on t−L+1",
    )
    for L in (2, 5):  # a perfect induction head scores 1.0 whatever the period
        T = 2 * L + 1
        perfect = np.zeros((T, T))
        perfect[: L + 1, 0] = 1.0
        for t in range(L + 1, T):
            perfect[t, t - L + 1] = 1.0
        got = _score(induction_score, name, perfect, L)
        if not np.isclose(got, 1.0):
            raise CheckFailed(
                f"`{name}` gave {got:.4g} for a perfect induction head with period "
                f"{L} (expected 1.0). Did you hard-code the period?"
            )
    passed(name)


def _show(M):
    return "\n".join(" ".join("  0 " if v == 0 else "-inf" for v in row) for row in M)


def _keys(n):
    return f"{n} key" if n == 1 else f"{n} keys"


def _values_mistake(M, call_text) -> str | None:
    """What is wrong with the entries themselves, if they are not all 0.0 or -np.inf."""
    if np.any(np.isnan(M)):
        return (
            f"`{call_text}` contains NaN (0 * -np.inf?): use 0.0 where a query may look and "
            "-np.inf where it may not, e.g. np.where(allowed, 0.0, -np.inf)."
        )
    blocked = M[M != 0]
    if np.all((M == 0) | np.isneginf(M)):
        return None
    if np.all(blocked == 1):
        return (
            f"`{call_text}` returned a 1/0 mask: the mask is additive, 0.0 where a query may "
            "look and -np.inf where it may not."
        )
    if np.all(np.isfinite(blocked)) and np.all(blocked < -1):
        return (
            f"`{call_text}` uses {blocked.max():g} where a query may not look: use -np.inf "
            "exactly, so the masked weights are exactly 0."
        )
    return (
        f"`{call_text}` should contain only 0.0 (may look) and -np.inf (may not look): it is "
        "added to the scores before the softmax."
    )


def _mask_ok(M, want, name, call_text):
    M = expect_shape(M, want.shape, name)
    if problem := _values_mistake(M, call_text):
        raise CheckFailed(problem)
    seen, allowed = M == 0, want == 0
    if np.array_equal(seen, allowed):
        return
    T = len(M)
    i, j = np.nonzero(seen != allowed)
    first = f"query {i[0]} and key {j[0]}"
    if np.any(seen & ~np.tril(np.ones((T, T), dtype=bool))):
        qi, kj = np.argwhere(seen & ~np.tril(np.ones((T, T), dtype=bool)))[0]
        raise CheckFailed(
            f"`{call_text}` lets query {qi} see key {kj}, a future position: "
            "every key must satisfy j ≤ i, the sink columns included."
        )
    per_row = seen.sum(1)[-1], allowed.sum(1)[-1]
    if per_row[0] == per_row[1] + 1:
        raise CheckFailed(
            f"`{call_text}`: the last query sees {_keys(per_row[0])}, one too many. "
            "A window of w keys includes the query itself: i − j < window."
        )
    if per_row[0] == per_row[1] - 1:
        raise CheckFailed(
            f"`{call_text}`: the last query sees {_keys(per_row[0])}, one too few. "
            "A window of w keys includes the query itself: i − j < window."
        )
    raise CheckFailed(f"`{call_text}` is wrong at {first}. Expected\n{_show(want)}")


def _mask(out, name, call_text):
    """The learner's mask as a float array; True/False gets its own message."""
    if isinstance(out, np.ndarray) and out.dtype == bool:
        raise CheckFailed(
            f"`{call_text}` returned True/False: the mask is additive, 0.0 where a query may "
            "look and -np.inf where it may not (np.where(allowed, 0.0, -np.inf))."
        )
    return as_array(out, name, "the mask")


def check_sliding_window_mask(sliding_window_mask):
    name = "sliding_window_mask"
    o, x = 0.0, -np.inf
    # T = 5, window = 2: each query sees itself and the key just before it
    want = np.array(
        [
            [o, x, x, x, x],
            [o, o, x, x, x],
            [x, o, o, x, x],
            [x, x, o, o, x],
            [x, x, x, o, o],
        ]
    )
    M = _mask(call(sliding_window_mask, 5, 2, name=name), name, "sliding_window_mask(5, 2)")
    _mask_ok(M, want, name, "sliding_window_mask(5, 2)")
    # n_sink = 1: key 0 stays visible to every query
    no_sink = want.copy()
    want[2:, 0] = o
    M = _mask(call(sliding_window_mask, 5, 2, 1, name=name), name, "sliding_window_mask(5, 2, 1)")
    if M.shape == want.shape and np.array_equal(M == 0, no_sink == 0):
        raise CheckFailed(
            "`sliding_window_mask(5, 2, 1)` ignores n_sink: the first n_sink keys "
            "stay visible to every later query."
        )
    _mask_ok(M, want, name, "sliding_window_mask(5, 2, 1)")
    # n_sink = 2 must still be causal: query 0 may not see key 1
    M = _mask(call(sliding_window_mask, 4, 1, 2, name=name), name, "sliding_window_mask(4, 1, 2)")
    want = np.array(
        [
            [o, x, x, x],
            [o, o, x, x],
            [o, o, o, x],
            [o, o, x, o],
        ]
    )
    _mask_ok(M, want, name, "sliding_window_mask(4, 1, 2)")
    # a window as long as the sequence is the plain causal mask
    M = _mask(call(sliding_window_mask, 6, 6, name=name), name, "sliding_window_mask(6, 6)")
    _mask_ok(
        M, np.where(np.tril(np.ones((6, 6))) > 0, 0.0, -np.inf), name, "sliding_window_mask(6, 6)"
    )
    passed(name)
