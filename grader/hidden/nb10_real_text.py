"""Hidden checks and the mistake catalogue for notebook 10 (the patterns on real text,
and how far back they reach: sliding-window attention)."""

from collections.abc import Iterator

import numpy as np

from grader.hidden import TORCH_ATTENTION, Alternative, Array, Mistake, edited, exercise


def _window_cases(rng: np.random.Generator) -> Iterator[tuple[Array, Array, Array, int]]:
    """Sizes that all differ, windows of 1, inside and beyond T, one position alone, and
    scores that overflow an unshifted exp."""
    for T, d_k, d_v, window in [
        (6, 4, 3, 2),
        (9, 5, 2, 4),
        (8, 3, 3, 1),
        (5, 2, 4, 7),
        (1, 3, 2, 3),
    ]:
        yield (
            rng.normal(size=(T, d_k)),
            rng.normal(size=(T, d_k)),
            rng.normal(size=(T, d_v)),
            window,
        )
    yield rng.normal(size=(10, 4)) * 30, rng.normal(size=(10, 4)) * 30, rng.normal(size=(10, 3)), 3


# The answer its mistakes slip in, each named by the edit that makes it.
_BAND = "(j <= i) & (i - j < window)"
_WINDOW = f"""
def sliding_window_attention(Q, K, V, window):
    T = len(Q)
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    S = Q @ K.T / np.sqrt(Q.shape[1])
    S = np.where({_BAND}, S, -np.inf)
    E = np.exp(S - S.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True) @ V
"""


@exercise(
    "sliding_window_attention",
    cases=_window_cases,
    atol=1e-9,
    rtol=1e-7,
    shortcuts={"torch": TORCH_ATTENTION},
    mistakes=[
        Mistake(
            "window-one-too-wide",
            edited(_WINDOW, ("i - j < window", "i - j <= window")),
            says=("window + 1 keys", "t − j < window"),
            message="`sliding_window_attention` lets query t see window + 1 keys: keep the "
            "keys with t − j < window (t itself and the window − 1 before it).",
        ),
        Mistake(
            "misses-itself",
            edited(_WINDOW, (_BAND, "((j < i) & (i - j <= window)) | ((i == 0) & (j == 0))")),
            says=("misses itself",),
            message="`sliding_window_attention`: query t misses itself; its window is "
            "t − window + 1 … t, t included.",
        ),
        Mistake(
            "softmax-over-queries",
            edited(
                _WINDOW,
                ("S.max(axis=1, keepdims=True)", "S.max(axis=0, keepdims=True)"),
                ("E.sum(axis=1, keepdims=True)", "E.sum(axis=0, keepdims=True)"),
            ),
            says=("axis 0", "axis=-1"),
            message="`sliding_window_attention` takes the softmax over axis 0, the queries, so "
            "each key's column sums to 1: take it over the keys, the last axis (axis=-1), so "
            "each query's row sums to 1.",
        ),
        Mistake(
            "no-causal-mask",
            edited(_WINDOW, (_BAND, "np.abs(i - j) < window")),
            says=("j ≤ t",),
            message="`sliding_window_attention` lets query t see keys after it: keep only "
            "keys j ≤ t (the causal mask) inside the window.",
        ),
        Mistake(
            "zeroes-after-softmax",
            edited(
                _WINDOW,
                (_BAND, "j <= i"),
                (
                    "return E / E.sum(axis=1, keepdims=True) @ V",
                    "A = E / E.sum(axis=1, keepdims=True)\n"
                    "    return np.where(i - j < window, A, 0.0) @ V",
                ),
            ),
            says=("sums to 1", "before the softmax"),
            message="`sliding_window_attention` zeroes the weights outside the window after "
            "the softmax, so a row no longer sums to 1: mask the scores with -np.inf "
            "before the softmax.",
        ),
        Mistake(
            "masks-after-softmax",
            edited(
                _WINDOW,
                (f"    S = np.where({_BAND}, S, -np.inf)\n", ""),
                (
                    "return E / E.sum(axis=1, keepdims=True) @ V",
                    "A = E / E.sum(axis=1, keepdims=True)\n"
                    f"    return np.where({_BAND}, A, 0.0) @ V",
                ),
            ),
            says=("both masks", "before the softmax"),
            message="`sliding_window_attention` applies both masks after the softmax (it "
            "zeroes the weights of future keys and of keys outside the window), so each "
            "softmax still spreads over every key and a row no longer sums to 1: mask the "
            "scores with -np.inf before the softmax, for the causal mask and the window alike.",
        ),
        Mistake(
            "no-scaling",
            edited(
                _WINDOW,
                ("    S = Q @ K.T / np.sqrt(Q.shape[1])\n", ""),
                (", S, -np.inf)", ", Q @ K.T, -np.inf)"),
            ),
            says=("np.sqrt(d_k)",),
            message="`sliding_window_attention` does not scale the scores: divide by np.sqrt(d_k).",
        ),
        Mistake(
            "unstable-softmax",
            edited(
                _WINDOW,
                (
                    f"S = np.where({_BAND}, S, -np.inf)\n"
                    "    E = np.exp(S - S.max(axis=1, keepdims=True))",
                    f"E = np.where({_BAND}, np.exp(S), 0.0)",
                ),
            ),
            says=("NaN or infinite",),
            caught_by="visible",  # the hidden check reports a wrong result on large scores
        ),
    ],
    alternatives=[
        Alternative(
            "a-loop-over-queries",
            """
            def sliding_window_attention(Q, K, V, window):
                out = np.zeros((len(Q), V.shape[1]))
                for t in range(len(Q)):
                    lo = max(0, t - window + 1)
                    s = K[lo : t + 1] @ Q[t] / np.sqrt(Q.shape[1])
                    w = np.exp(s - s.max())
                    out[t] = w / w.sum() @ V[lo : t + 1]
                return out
            """,
        ),
        Alternative(
            "tril-and-triu",
            """
            def sliding_window_attention(Q, K, V, window):
                T = len(Q)
                band = np.tril(np.ones((T, T)), 0) - np.tril(np.ones((T, T)), -window)
                S = np.where(band > 0, Q @ K.T / np.sqrt(Q.shape[1]), -np.inf)
                E = np.exp(S - S.max(axis=-1, keepdims=True))
                return (E / E.sum(axis=-1, keepdims=True)) @ V
            """,
        ),
    ],
)
def sliding_window_attention(Q: Array, K: Array, V: Array, window: int) -> Array:
    T = len(Q)
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    S = np.where((j <= i) & (i - j < window), Q @ K.T / np.sqrt(Q.shape[1]), -np.inf)
    E = np.exp(S - S.max(axis=1, keepdims=True))
    out: Array = E / E.sum(axis=1, keepdims=True) @ V  # [T, d_v]
    return out
