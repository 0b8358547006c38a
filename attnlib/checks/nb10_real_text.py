"""Visible checks for notebook 10 (the patterns on real text, and how far back they
reach: sliding windows).

No reference solution: hand-worked examples (with Q = 0 every weight in a window is equal,
so the output is a rolling mean of the values; scores chosen so the weights are simple
fractions), and properties of the learner's own function (a window of 1 returns V, a window
as long as the sequence is plain causal attention, later positions never change earlier
outputs).
"""

import numpy as np

from attnlib.checks._core import (
    CheckFailed,
    call,
    crash_hints,
    expect_close,
    expect_finite,
    expect_shape,
    passed,
    reject_known,
)
from attnlib.checks._worked import LN3, window_means


def _zeroed_after_softmax(V, window, spread):
    """With Q = 0 (every score 0): the output when the weights outside the window are set to
    0 after a softmax that spread query t's row evenly over ``spread`` keys (t + 1 when the
    causal mask came first, T when it did not)."""
    kept = np.minimum(np.arange(len(V)), window - 1) + 1  # keys in query t's window
    return window_means(V, window) * (kept / spread)[:, None]


def _normalised_over_queries(V, window):
    """With Q = 0 (every score 0): the output when the softmax runs over axis 0, so each
    key's column sums to 1: row t sums v_j / (the number of queries whose window holds j)."""
    T = len(V)
    seen_by = np.minimum(window, T - np.arange(T))  # queries j … j + window − 1 see key j
    return np.array(
        [(V / seen_by[:, None])[max(0, t - window + 1) : t + 1].sum(0) for t in range(T)]
    )


# ---------------------------------------------------------------- sliding_window_attention
crash_hints(
    "sliding_window_attention",
    {
        "could not be broadcast": "Q and K are [T, d_k], V is [T, d_v]: the scores are "
        "Q @ K.T, [T, T], and the output is weights @ V, [T, d_v].",
    },
)


def _window(fn, Q, K, V, window):
    name = "sliding_window_attention"
    out = call(fn, Q, K, V, window, name=name)
    T, d_v = V.shape
    return expect_shape(
        out,
        (T, d_v),
        name,
        hint="Return the attention output, one value-sized row per query: weights @ V."
        if np.shape(out) == (T, T)
        else "",
    )


def _check_causal(fn, Q, K, V, out, rng):
    """Later positions never change earlier outputs; the answer that masks after the
    softmax (a row then spreads over future keys too) is named."""
    name = "sliding_window_attention"
    later = Q.copy(), K.copy(), V.copy()
    for a in later:
        a[4:] = rng.normal(size=a[4:].shape)
    if not np.allclose(_window(fn, *later, 3)[:4], out[:4]):
        reject_known(
            _window(fn, np.zeros_like(Q), K, V, 3),
            [
                (
                    _normalised_over_queries(V, 3),
                    "the softmax runs over axis 0, the queries, so each key's column sums to 1 "
                    "and later queries change earlier rows: take it over the keys, the last "
                    "axis (axis=-1), so each query's row sums to 1.",
                ),
                (
                    _zeroed_after_softmax(V, 3, spread=len(V)),
                    "both masks are applied after the softmax (the weights of future keys "
                    "and of keys outside the window set to 0), so each softmax still spreads "
                    "over every key and a row no longer sums to 1: mask the scores with "
                    "-np.inf before the softmax, for the causal mask and the window alike.",
                ),
            ],
            name,
            "with Q = 0 (every score 0)",
        )
        raise CheckFailed(
            f"`{name}`: changing positions 4… changed the outputs of positions 0–3. "
            "Query t may only see keys j ≤ t (add the causal mask)."
        )


def check_sliding_window_attention(sliding_window_attention):
    name = "sliding_window_attention"
    fn = sliding_window_attention
    rng = np.random.default_rng(10)
    T, d_k, d_v = 7, 4, 3  # all different, so a swapped axis shows in the shape
    Q, K, V = rng.normal(size=(T, d_k)), rng.normal(size=(T, d_k)), rng.normal(size=(T, d_v))

    out = _window(fn, Q, K, V, 3)
    expect_finite(out, name)
    _check_causal(fn, Q, K, V, out, rng)

    # Q = 0: every score is 0, so query t averages the values its window holds.
    flat = _window(fn, np.zeros_like(Q), K, V, 3)
    reject_known(
        flat,
        [
            (
                window_means(V, 4),
                "query t sees window + 1 keys (4 with window = 3): keep the keys with "
                "t − j < window (t itself and the window − 1 before it).",
            ),
            (
                np.vstack([V[:1], window_means(V, 3)[:-1]]),
                "query t misses itself: its window is t − window + 1 … t, t included.",
            ),
            (
                np.array([V[max(0, t - 2) : t + 3].mean(0) for t in range(T)]),
                "the window reaches into the future: keep only keys j ≤ t.",
            ),
            (
                _zeroed_after_softmax(V, 3, spread=np.arange(T) + 1),
                "the weights outside the window are set to 0 after the softmax, so a row no "
                "longer sums to 1: mask the scores with -np.inf before the softmax.",
            ),
        ],
        name,
        "with Q = 0 (every score 0)",
    )
    expect_close(
        flat,
        window_means(V, 3),
        name,
        hint="With Q = 0 every score is 0, so query t's output is the plain mean of the "
        "values in its window, v_{t−2} … v_t for window = 3.",
    )
    expect_close(
        _window(fn, Q, K, V, 1),
        V,
        name,
        hint="With window = 1 each query sees only its own key, so its output is its own "
        "value: the window counts the query's own position.",
    )
    expect_close(
        _window(fn, Q, K, V, T),
        _window(fn, Q, K, V, 10 * T),
        name,
        hint="A window at least as long as the sequence is plain causal attention: a larger "
        "window cannot change it.",
    )

    # Worked by hand: d_k = 4; key 1 scores 2 ln 3 more than key 0 for query 1, ln 3 once
    # divided by √d_k = 2: weights [1/4, 3/4].
    Q2, K2 = np.zeros((2, 4)), np.zeros((2, 4))
    Q2[1, 0], K2[1, 0] = 2 * LN3, 1.0
    V2 = np.array([[0.0, 4.0], [4.0, 0.0]])
    row = _window(fn, Q2, K2, V2, 2)[1]
    reject_known(
        row,
        [
            (np.array([4 * 0.9, 4 * 0.1]), "the scores are not scaled: divide by np.sqrt(d_k)."),
            (np.array([2.0, 2.0]), "query 1 weighs its two keys equally: are the scores used?"),
        ],
        name,
        "on a hand-worked example (d_k = 4)",
    )
    expect_close(
        row,
        np.array([3.0, 1.0]),
        name,
        hint="Scores divided by √d_k = 2 are [0, ln 3], so the weights are [1/4, 3/4].",
    )
    big = _window(fn, 30.0 * Q, 30.0 * K, V, 3)
    expect_finite(
        big, name, hint="Large scores overflow np.exp: subtract the largest score of the row."
    )
    passed(name)
