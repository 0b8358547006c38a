"""Hidden checks and the mistake catalogue for notebook 08 (reading attention maps)."""

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from grader.hidden import Alternative, Array, Mistake, edited, exercise

# The course's own scorers of attention patterns (attnlib.patterns) solve these exercises.
_SCORE_TEMPLATES = {
    "attnlib.patterns": {"template_score", "offset_template", "column_template", "repeat_templates"}
}


def _pattern(rng: np.random.Generator, T: int) -> Array:
    """A random causal attention pattern [T, T]: rows sum to 1, zeros above the diagonal."""
    S = rng.normal(size=(T, T)) * rng.uniform(0.5, 3.0)
    S[np.triu_indices(T, 1)] = -np.inf
    E = np.exp(S - S.max(axis=1, keepdims=True))
    A: Array = E / E.sum(axis=1, keepdims=True)
    return A


def _pattern_cases(rng: np.random.Generator) -> Iterator[tuple[Array]]:
    for T in (3, 7, int(rng.integers(10, 40))):
        yield (_pattern(rng, T),)


def _score_mistake(
    name: str,
    label: str,
    body: str,
    says: tuple[str, ...],
    message: str | None = None,
    args: str = "A",
) -> Mistake:
    """A scorer whose body is ``body`` (it may use ``t = np.arange(1, len(A))``)."""
    return Mistake(
        label,
        f"""
        def {name}({args}):
            t = np.arange(1, len(A))
            return {body}
        """,
        says=says,
        message=message,
    )


_ONE_NUMBER = ("one number",)
_BY_T = ("divides by T", "T−1")
# On a causal pattern A[0, −1] is 0, so including t = 0 of the previous-token stripe (t − 1
# wraps round) and dividing the stripe's sum by T give the same number: one message for both.
_PREVIOUS_BY_T = (
    "`previous_token_score` divides by T, one too many: either t = 0 is included (its "
    "t−1 = −1 wraps round to the last column) or the sum over t = 1 … T−1 is divided by T. "
    "Average over the T−1 queries t ≥ 1."
)


@exercise(
    "self_score",
    shortcuts=_SCORE_TEMPLATES,
    cases=_pattern_cases,
    mistakes=[
        _score_mistake(
            "self_score",
            "includes-t-0",
            "float(np.mean(np.diag(A)))",
            ("start at t = 1",),
            "`self_score` includes t = 0 (query 0 can only look at itself): start at t = 1.",
        ),
        _score_mistake(
            "self_score",
            "sum",
            "float(np.sum(np.diag(A)[1:]))",
            ("the mean",),
            "`self_score` returns the sum of the diagonal; the score is the mean over t ≥ 1.",
        ),
        _score_mistake(
            "self_score",
            "from-t-2",
            "float(np.mean(np.diag(A)[2:]))",
            ("starts at t = 2",),
            "`self_score` starts at t = 2; start at t = 1.",
        ),
        _score_mistake(
            "self_score",
            "previous-token",
            "float(np.mean(np.diag(A, -1)))",
            ("previous-token stripe",),
            "`self_score` reads the previous-token stripe A[t, t−1], not the diagonal A[t, t].",
        ),
        _score_mistake(
            "self_score",
            "divides-by-T",
            "float(A[t, t].sum() / len(A))",
            _BY_T,
            "`self_score` divides by T, but t = 1 … T−1 are T−1 queries: divide by T−1 (or "
            "take the mean of those entries).",
        ),
        _score_mistake("self_score", "array", "np.diag(A)[1:]", _ONE_NUMBER),
    ],
    alternatives=[
        Alternative(
            "loop",
            """
            def self_score(A):
                return sum(A[t, t] for t in range(1, len(A))) / (len(A) - 1)
            """,
        ),
        Alternative(
            "trace",
            """
            def self_score(A):
                return np.trace(A[1:, 1:]) / (len(A) - 1)
            """,
        ),
    ],
)
def self_score(A: Array) -> float:
    t = np.arange(1, len(A))
    return float(A[t, t].mean())


@exercise(
    "previous_token_score",
    shortcuts=_SCORE_TEMPLATES,
    cases=_pattern_cases,
    mistakes=[
        _score_mistake(
            "previous_token_score",
            "swapped",
            "float(np.mean(np.diag(A, 1)))",
            ("row and column swapped",),
            "`previous_token_score` reads A[t−1, t], above the diagonal (row and column "
            "swapped?): the query t is the row, the previous token t−1 the column.",
        ),
        _score_mistake(
            "previous_token_score",
            "diagonal",
            "float(np.mean(np.diag(A)[1:]))",
            ("the diagonal",),
            "`previous_token_score` reads the diagonal A[t, t]; the previous token is A[t, t−1].",
        ),
        _score_mistake(
            "previous_token_score",
            "two-back",
            "float(np.mean(np.diag(A, -2)))",
            ("t−2",),
            "`previous_token_score` looks two steps back (A[t, t−2]); use t−1.",
        ),
        _score_mistake(
            "previous_token_score",
            "from-t-2",
            "float(np.mean(np.diag(A, -1)[1:]))",
            ("starts at t = 2",),
            "`previous_token_score` starts at t = 2; t = 1 has a previous token too.",
        ),
        _score_mistake(
            "previous_token_score",
            "wraps-round",
            "float(A[np.arange(len(A)), np.arange(len(A)) - 1].mean())",
            ("wraps round",),
            _PREVIOUS_BY_T,
        ),
        _score_mistake(
            "previous_token_score",
            "divides-by-T",
            "float(A[t, t - 1].sum() / len(A))",
            _BY_T,
            _PREVIOUS_BY_T,
        ),
        _score_mistake(
            "previous_token_score",
            "sum",
            "float(np.sum(np.diag(A, -1)))",
            ("the mean",),
            "`previous_token_score` returns a sum; the score is the mean over t ≥ 1.",
        ),
    ],
    alternatives=[
        Alternative(
            "loop",
            """
            def previous_token_score(A):
                return float(np.mean([A[t, t - 1] for t in range(1, len(A))]))
            """,
        ),
        Alternative(
            "diag",
            """
            def previous_token_score(A):
                return np.diag(A, k=-1).mean()
            """,
        ),
    ],
)
def previous_token_score(A: Array) -> float:
    t = np.arange(1, len(A))
    return float(A[t, t - 1].mean())


@exercise(
    "sink_score",
    shortcuts=_SCORE_TEMPLATES,
    cases=_pattern_cases,
    mistakes=[
        _score_mistake(
            "sink_score",
            "includes-t-0",
            "float(A[:, 0].mean())",
            ("start at t = 1",),
            "`sink_score` includes t = 0, which can only look at key 0: start at t = 1.",
        ),
        _score_mistake(
            "sink_score",
            "row-0",
            "float(A[0, 1:].mean())",
            ("column 0",),
            "`sink_score` reads row 0; the sink is column 0, A[t, 0].",
        ),
        _score_mistake(
            "sink_score",
            "mean-of-row-0",
            "float(A[0].mean())",
            ("column 0",),
            "`sink_score` averages row 0; the sink is column 0, A[t, 0].",
        ),
        _score_mistake(
            "sink_score",
            "sum",
            "float(A[1:, 0].sum())",
            ("the mean",),
            "`sink_score` returns a sum; the score is the mean over t ≥ 1.",
        ),
        _score_mistake(
            "sink_score",
            "column-1",
            "float(A[1:, 1].mean())",
            ("column 1",),
            "`sink_score` reads column 1; the first token is column 0.",
        ),
        _score_mistake(
            "sink_score",
            "last-column",
            "float(A[1:, -1].mean())",
            ("last column", "column 0"),
            "`sink_score` reads the last column, A[t, −1], the newest key; the sink is the "
            "first token, column 0: A[t, 0].",
        ),
        _score_mistake(
            "sink_score",
            "divides-by-T",
            "float(A[1:, 0].sum() / len(A))",
            _BY_T,
            "`sink_score` divides by T, but t = 1 … T−1 are T−1 queries: divide by T−1 (or "
            "take the mean of A[1:, 0]).",
        ),
    ],
    alternatives=[
        Alternative(
            "mean",
            """
            def sink_score(A):
                return np.mean(A[1:, 0])
            """,
        ),
        Alternative(
            "sum-over-count",
            """
            def sink_score(A):
                return A[:, 0][1:].sum() / (A.shape[0] - 1)
            """,
        ),
    ],
)
def sink_score(A: Array) -> float:
    return float(A[1:, 0].mean())


def _induction_cases(rng: np.random.Generator) -> Iterator[tuple[Array, int]]:
    for L in (4, 2, 3, int(rng.integers(5, 20))):  # L = 4 first: t−1, t−L+2, t−L all differ
        yield (_pattern(rng, 2 * L + 1), L)


def _induction_mistake(
    label: str,
    rows: str,
    cols: str,
    says: tuple[str, ...],
    message: str | None = None,
    reduce: str = "mean",
) -> Mistake:
    """An induction score that reads A[rows, cols] (``t`` is the second copy, L the period)."""
    return Mistake(
        label,
        f"""
        def induction_score(A, period):
            L = period
            t = np.arange(L + 1, 2 * L + 1)
            return float(A[{rows}, {cols}].{reduce}())
        """,
        says=says,
        message=message,
    )


@exercise(
    "induction_score",
    shortcuts=_SCORE_TEMPLATES,
    cases=_induction_cases,
    mistakes=[
        _induction_mistake(
            "earlier-copy",
            "t",
            "t - L",
            ("earlier copy of the current token",),
            "`induction_score` reads A[t, t−L], the earlier copy of the current token; an "
            "induction head attends to the token after it, t−L+1.",
        ),
        _induction_mistake(
            "before-the-earlier-copy",
            "t",
            "t - L - 1",
            ("t−L−1", "t−L+1"),
            "`induction_score` reads A[t, t−L−1], the token before the earlier copy of the "
            "current one; an induction head looks at the token after it, t−L+1.",
        ),
        _induction_mistake(
            "one-too-far-right",
            "t",
            "t - L + 2",
            ("one column too far",),
            "`induction_score` reads A[t, t−L+2], one column too far right; use t−L+1.",
        ),
        _induction_mistake(
            "previous-token",
            "t",
            "t - 1",
            ("the previous token",),
            "`induction_score` reads A[t, t−1], the previous token; an induction head looks at "
            "the token after the earlier copy of the current one: t−L+1.",
        ),
        _induction_mistake(
            "includes-t-L",
            "np.arange(L, 2 * L + 1)",
            "np.arange(L, 2 * L + 1) - L + 1",
            ("includes t = L",),
            "`induction_score` includes t = L, the last query of the first copy; the second "
            "copy is t = L+1 … 2L.",
        ),
        _induction_mistake(
            "second-copy-from-L",
            "np.arange(L, 2 * L)",
            "np.arange(L, 2 * L) - L + 1",
            ("L … 2L−1", "[BOS]"),
            "`induction_score` reads rows L … 2L−1, one too early: position 0 is [BOS], so the "
            "second copy is t = L+1 … 2L.",
        ),
        _induction_mistake(
            "stops-early",
            "t[:-1]",
            "t[:-1] - L + 1",
            ("stops at t = 2L−1",),
            "`induction_score` stops at t = 2L−1; the second copy runs to t = 2L inclusive.",
        ),
        _induction_mistake(
            "starts-late",
            "t[1:]",
            "t[1:] - L + 1",
            ("starts at t = L+2",),
            "`induction_score` starts at t = L+2; the second copy starts at t = L+1.",
        ),
        _induction_mistake(
            "swapped",
            "t - L + 1",
            "t",
            ("row and column swapped",),
            "`induction_score` reads above the diagonal (row and column swapped?): the query "
            "t is the row, A[t, t−L+1].",
        ),
        _induction_mistake(
            "sum",
            "t",
            "t - L + 1",
            ("the sum",),
            "`induction_score` returns the sum; the score is the mean over the second copy.",
            reduce="sum",
        ),
    ],
    alternatives=[
        Alternative(
            "diagonal",
            """
            def induction_score(A, period):
                return float(np.diagonal(A, offset=1 - period)[-period:].mean())
            """,
        ),
        Alternative(
            "loop",
            """
            def induction_score(A, period):
                return float(
                    np.mean([A[t, t - period + 1] for t in range(period + 1, 2 * period + 1)])
                )
            """,
        ),
    ],
)
def induction_score(A: Array, period: int) -> float:
    t = np.arange(period + 1, 2 * period + 1)
    return float(A[t, t - period + 1].mean())


def _mask_cases(rng: np.random.Generator) -> Iterator[tuple[int, int] | tuple[int, int, int]]:
    yield (6, 2)
    yield (7, 3, 1)
    yield (5, 1, 2)
    T = int(rng.integers(8, 30))
    yield (T, int(rng.integers(1, T)), int(rng.integers(0, 4)))
    yield (T, T + 3)


def _mask_from(allowed: npt.NDArray[np.bool_]) -> Array:
    return np.where(allowed, 0.0, -np.inf)


def _ij(T: int) -> tuple[npt.NDArray[np.integer], npt.NDArray[np.integer]]:
    return np.arange(T)[:, None], np.arange(T)[None, :]


# The answer its mistakes slip in: each changes which keys are allowed or what is returned.
_ALLOWED = "(j <= i) & ((i - j < window) | (j < n_sink))"
_MASK_RETURN = "np.where(allowed, 0.0, -np.inf)"
_MASK = f"""
def sliding_window_mask(T, window, n_sink=0):
    i = np.arange(T)[:, None]
    j = np.arange(T)[None, :]
    allowed = {_ALLOWED}
    return {_MASK_RETURN}
"""


def _window_mistake(
    label: str,
    allowed: str,
    says: tuple[str, ...],
    message: str | None = None,
    fill: str = "-np.inf",
    returned: str | None = None,
) -> Mistake:
    """The window mask with ``allowed`` (source text, over index grids i and j) and what it
    returns (``returned``, or the additive mask filled with ``fill``) in place of the answer's."""
    returned = returned or f"np.where(allowed, 0.0, {fill})"
    changes = ((_ALLOWED, allowed), (_MASK_RETURN, returned))
    source = edited(_MASK, *((old, new) for old, new in changes if old != new))
    return Mistake(label, source, says=says, message=message)


@exercise(
    "sliding_window_mask",
    cases=_mask_cases,
    mistakes=[
        _window_mistake(
            "too-wide",
            "(j <= i) & ((i - j <= window) | (j < n_sink))",
            ("includes the query itself",),
            "`sliding_window_mask` lets each query see window + 1 keys (i − j ≤ window); the "
            "window includes the query itself: i − j < window.",
        ),
        _window_mistake(
            "too-narrow",
            "(j <= i) & ((i - j < window - 1) | (j < n_sink))",
            ("includes the query itself",),
            "`sliding_window_mask` lets each query see window − 1 keys; the window includes "
            "the query itself: i − j < window.",
        ),
        _window_mistake(
            "not-causal",
            "(np.abs(i - j) < window) | ((j < n_sink) & (j <= i))",
            ("j ≤ i",),
            "`sliding_window_mask` lets queries see future keys: also require j ≤ i.",
        ),
        _window_mistake(
            "sinks-not-causal",
            "((j <= i) & (i - j < window)) | (j < n_sink)",
            ("j ≤ i",),
            "`sliding_window_mask` shows the sink keys to earlier queries (query 0 sees key "
            "1): the sink columns must stay causal, j ≤ i.",
        ),
        _window_mistake(
            "sinks-ignored",
            "(j <= i) & (i - j < window)",
            ("ignores n_sink",),
            "`sliding_window_mask` ignores n_sink: the first n_sink keys stay visible to every "
            "later query.",
        ),
        _window_mistake(
            "one-zero",
            _ALLOWED,
            ("1/0",),
            "`sliding_window_mask` returned a 1/0 (True/False) mask; the mask is additive: "
            "0.0 where a query may look, -np.inf where it may not.",
            returned="allowed.astype(float)",
        ),
        _window_mistake("boolean", _ALLOWED, ("additive",), returned="allowed"),
        _window_mistake(
            "minus-1e9",
            _ALLOWED,
            ("-np.inf exactly",),
            "`sliding_window_mask` uses -1e+09 where a query may not look; use -np.inf exactly.",
            fill="-1e9",
        ),
    ],
    alternatives=[
        Alternative(
            "loops",
            """
            def sliding_window_mask(T, window, n_sink=0):
                M = np.full((T, T), -np.inf)
                for i in range(T):
                    for j in range(i + 1):
                        if i - j < window or j < n_sink:
                            M[i, j] = 0.0
                return M
            """,
        ),
        Alternative(
            "triangles",
            """
            def sliding_window_mask(T, window, n_sink=0):
                ones = np.ones((T, T), dtype=bool)
                band = np.tril(ones) & ~np.tril(ones, -window)
                band[:, :n_sink] |= np.tril(ones)[:, :n_sink]
                return np.where(band, 0.0, float("-inf"))
            """,
        ),
    ],
)
def sliding_window_mask(T: int, window: int, n_sink: int = 0) -> Array:
    i, j = _ij(T)
    return _mask_from((j <= i) & ((i - j < window) | (j < n_sink)))
