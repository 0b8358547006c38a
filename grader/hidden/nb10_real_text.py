"""Hidden checks and the mistake catalogue for notebook 10 (the patterns on real text;
sliding-window attention, key and value heads pooled for grouped-query attention)."""

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


def _pool_cases(rng: np.random.Generator) -> Iterator[tuple[Array, int, int]]:
    """(n_heads, n_kv_heads, d_head, d_model): groups of 2, 3 and 4, no sharing, one KV head."""
    for n_heads, n_kv, d_head, d_model in [
        (4, 2, 3, 5),
        (6, 2, 2, 7),
        (8, 2, 4, 3),
        (4, 4, 2, 6),
        (6, 1, 3, 4),
        (6, 3, 2, 5),
    ]:
        yield rng.normal(size=(n_heads * d_head, d_model)), n_heads, n_kv


@exercise(
    "mean_pool_kv_heads",
    cases=_pool_cases,
    atol=1e-12,
    rtol=1e-9,
    mistakes=[
        Mistake(
            "round-robin-groups",
            """
            def mean_pool_kv_heads(W, n_heads, n_kv_heads):
                heads = W.reshape(n_heads, -1, W.shape[1])
                pooled = heads.reshape(-1, n_kv_heads, *heads.shape[1:]).mean(0)
                return pooled.reshape(-1, W.shape[1])
            """,
            says=("round robin", "neighbouring"),
            message="`mean_pool_kv_heads` groups the heads round robin (head h with h + "
            "n_kv_heads …): KV head g pools the neighbouring query heads g·group … "
            "(g+1)·group − 1, as np.repeat hands them out in notebook 09.",
        ),
        Mistake(
            "sums-instead-of-mean",
            """
            def mean_pool_kv_heads(W, n_heads, n_kv_heads):
                group = n_heads // n_kv_heads
                return W.reshape(n_kv_heads, group, -1, W.shape[1]).sum(1).reshape(-1, W.shape[1])
            """,
            says=("mean",),
            message="`mean_pool_kv_heads` sums the heads of a group: take their mean.",
        ),
        Mistake(
            "interleaved-head-rows",
            """
            def mean_pool_kv_heads(W, n_heads, n_kv_heads):
                d_head = W.shape[0] // n_heads
                heads = W.reshape(d_head, n_heads, W.shape[1]).transpose(1, 0, 2)
                pooled = heads.reshape(n_kv_heads, -1, d_head, W.shape[1]).mean(1)
                return pooled.reshape(-1, W.shape[1])
            """,
            says=("consecutive rows",),
            message="`mean_pool_kv_heads` takes head h's rows as every n_heads-th row: head h "
            "is the block of d_head consecutive rows h·d_head … (h+1)·d_head − 1.",
        ),
        Mistake(
            "keeps-the-repeated-shape",
            """
            def mean_pool_kv_heads(W, n_heads, n_kv_heads):
                group = n_heads // n_kv_heads
                pooled = W.reshape(n_kv_heads, group, -1, W.shape[1]).mean(1, keepdims=True)
                return np.repeat(pooled, group, axis=1).reshape(W.shape)
            """,
            says=("shape",),
        ),
    ],
    alternatives=[
        Alternative(
            "a-loop-over-groups",
            """
            def mean_pool_kv_heads(W, n_heads, n_kv_heads):
                d_head, group = W.shape[0] // n_heads, n_heads // n_kv_heads
                blocks = []
                for g in range(n_kv_heads):
                    rows = W[g * group * d_head : (g + 1) * group * d_head]
                    blocks.append(rows.reshape(group, d_head, -1).mean(axis=0))
                return np.concatenate(blocks)
            """,
        ),
    ],
)
def mean_pool_kv_heads(W: Array, n_heads: int, n_kv_heads: int) -> Array:
    group = n_heads // n_kv_heads
    pooled: Array = W.reshape(n_kv_heads, group, -1, W.shape[1]).mean(1)  # [n_kv, d_head, d_model]
    return pooled.reshape(-1, W.shape[1])
