"""Hidden checks and the mistake catalogue for notebook 09 (the KV cache, and keys and
values shared between heads: grouped-query attention)."""

import textwrap
from collections.abc import Iterator

import numpy as np

from grader.hidden import TORCH_ATTENTION, Alternative, Array, Mistake, edited, exercise


def _decode_cases(rng: np.random.Generator) -> Iterator[tuple[Array, Array, Array, Array]]:
    """A square case first (W and Wᵀ both fit, so a transposed projection is named), then
    sizes that all differ, one position alone, and scores that overflow an unshifted exp."""
    for T, d_model, d_k, d_v in [(5, 4, 4, 4), (7, 5, 4, 3), (12, 6, 8, 2), (1, 3, 2, 5)]:
        X = rng.normal(size=(T, d_model))
        W_Q, W_K = rng.normal(size=(2, d_k, d_model))
        yield X, W_Q, W_K, rng.normal(size=(d_v, d_model))
    X = rng.normal(size=(9, 6)) * 12
    yield X, rng.normal(size=(4, 6)) * 3, rng.normal(size=(4, 6)) * 3, rng.normal(size=(3, 6))


# The answers its mistakes slip in, each named by the edit that makes it: a cache kept in
# lists, and one preallocated for all T positions.
_DECODE = """
def decode_with_cache(X, W_Q, W_K, W_V):
    d_k = W_Q.shape[0]
    keys, values, out = [], [], []
    for x in X:
        q = W_Q @ x
        keys.append(W_K @ x)
        values.append(W_V @ x)
        s = np.array(keys) @ q / np.sqrt(d_k)
        w = np.exp(s - s.max())
        out.append(w / w.sum() @ np.array(values))
    return np.array(out)
"""
_APPEND = "        keys.append(W_K @ x)\n        values.append(W_V @ x)\n"
_ATTEND = (
    "        s = np.array(keys) @ q / np.sqrt(d_k)\n"
    "        w = np.exp(s - s.max())\n"
    "        out.append(w / w.sum() @ np.array(values))\n"
)
_EMPTY_CACHE = "keys, values, out = [], [], []"
_PREALLOCATED = """
def decode_with_cache(X, W_Q, W_K, W_V):
    T, d_k = len(X), W_Q.shape[0]
    K_cache = np.zeros((T, d_k))
    V_cache = np.zeros((T, W_V.shape[0]))
    out = np.empty((T, W_V.shape[0]))
    for t in range(T):
        K_cache[t], V_cache[t] = W_K @ X[t], W_V @ X[t]
        s = K_cache[: t + 1] @ (W_Q @ X[t]) / np.sqrt(d_k)
        w = np.exp(s - s.max())
        out[t] = w @ V_cache[: t + 1] / w.sum()
    return out
"""


@exercise(
    "decode_with_cache",
    cases=_decode_cases,
    atol=1e-9,
    rtol=1e-7,
    shortcuts={
        "torch": TORCH_ATTENTION,
        "attnlib": {"CachedDecoder", "LayerCache", "CausalSelfAttention"},
    },
    mistakes=[
        Mistake(
            "appends-after-attending",
            edited(
                _DECODE,
                (_EMPTY_CACHE, "keys, values, out = [W_K @ X[0]], [W_V @ X[0]], [W_V @ X[0]]"),
                ("for x in X:", "for x in X[1:]:"),
                (_APPEND, ""),
                (_ATTEND, _ATTEND + _APPEND),
            ),
            says=("misses itself", "before attending"),
            message="`decode_with_cache` attends before appending, so position t misses "
            "itself: append k_t and v_t to the cache before attending from q_t.",
        ),
        Mistake(
            "attends-first-zero-at-position-0",
            edited(
                _DECODE,
                (_APPEND, ""),
                (
                    _ATTEND,
                    "        if keys:\n"
                    + textwrap.indent(_ATTEND, "    ")
                    + "        else:\n            out.append(np.zeros(len(W_V)))\n"
                    + _APPEND,
                ),
            ),
            says=("misses itself", "before attending"),
            message="`decode_with_cache` attends before appending, so position t misses "
            "itself (position 0 sees nothing): append k_t and v_t to the cache before "
            "attending from q_t.",
        ),
        Mistake(
            "attends-to-an-empty-cache",
            edited(_DECODE, (_APPEND, ""), (_ATTEND, _ATTEND + _APPEND)),
            says=("append, then attend",),
            caught_by="visible",  # it raises: the hidden check reports the error itself
        ),
        Mistake(
            "no-scaling",
            edited(_DECODE, (" / np.sqrt(d_k)", "")),
            says=("np.sqrt(d_k)",),
            message="`decode_with_cache` does not scale the scores: divide q · k by np.sqrt(d_k).",
        ),
        Mistake(
            "scales-by-d_v",
            edited(_DECODE, ("np.sqrt(d_k)", "np.sqrt(len(W_V))")),
            says=("√d_v", "np.sqrt(d_k)"),
            message="`decode_with_cache` divides the scores by √d_v, the size of a value: "
            "the scores are dot products of q and k, so divide by np.sqrt(d_k).",
        ),
        Mistake(
            "no-causality",
            edited(
                _DECODE,
                (_EMPTY_CACHE, "keys, values, out = list(X @ W_K.T), list(X @ W_V.T), []"),
                (_APPEND, ""),
            ),
            says=("no causality",),
            message="`decode_with_cache` lets every position attend to every position (no "
            "causality): position t may only see the cache of positions ≤ t.",
        ),
        Mistake(
            "overflows",
            edited(_DECODE, ("np.exp(s - s.max())", "np.exp(s)")),
            says=("overflow", "largest score"),
            message="`decode_with_cache` overflows for large scores: subtract the largest "
            "score of the row before np.exp.",
        ),
        Mistake(
            "transposed-projections",
            edited(_DECODE, ("W_Q @ x", "x @ W_Q"), ("W_K @ x", "x @ W_K"), ("W_V @ x", "x @ W_V")),
            says=("X @ W_Q.T",),
            message="`decode_with_cache` multiplies by Wᵀ (x @ W): projections are "
            "q = W_Q x, i.e. X @ W_Q.T for all rows.",
        ),
        Mistake(
            "attends-over-empty-slots",
            edited(_PREALLOCATED, ("K_cache[: t + 1]", "K_cache"), ("V_cache[: t + 1]", "V_cache")),
            says=("empty slots", "K_cache[: t + 1]"),
            message="`decode_with_cache` attends over all T slots of the preallocated cache, "
            "the empty slots after t included (each takes weight and adds a zero value): "
            "attend from q_t over the filled slots only, K_cache[: t + 1] and V_cache[: t + 1].",
        ),
    ],
    alternatives=[
        Alternative("preallocated-cache", _PREALLOCATED),
        Alternative(
            "scalar-loops",
            """
            def decode_with_cache(X, W_Q, W_K, W_V):
                import math

                d_k = len(W_Q)
                keys, values, out = [], [], []
                for x in X:
                    q = [float(w @ x) for w in W_Q]
                    keys.append([float(w @ x) for w in W_K])
                    values.append([float(w @ x) for w in W_V])
                    s = [sum(a * b for a, b in zip(q, k)) / math.sqrt(d_k) for k in keys]
                    e = [math.exp(v - max(s)) for v in s]
                    out.append([sum(e[j] * values[j][i] for j in range(len(e))) / sum(e)
                                for i in range(len(W_V))])
                return np.array(out)
            """,
        ),
        Alternative(
            "projections-first",
            """
            def decode_with_cache(X, W_Q, W_K, W_V):
                Q, K, V = X @ W_Q.T, X @ W_K.T, X @ W_V.T
                rows = []
                for t in range(len(X)):
                    s = K[: t + 1] @ Q[t] / np.sqrt(Q.shape[1])
                    w = np.exp(s - np.max(s))
                    rows.append((w / np.sum(w)) @ V[: t + 1])
                return np.stack(rows)
            """,
        ),
    ],
)
def decode_with_cache(X: Array, W_Q: Array, W_K: Array, W_V: Array) -> Array:
    Q, K, V = X @ W_Q.T, X @ W_K.T, X @ W_V.T  # [T, d_k], [T, d_k], [T, d_v]
    S = Q @ K.T / np.sqrt(W_Q.shape[0]) + np.triu(np.full((len(X),) * 2, -np.inf), 1)
    E = np.exp(S - S.max(axis=1, keepdims=True))
    out: Array = E / E.sum(axis=1, keepdims=True) @ V  # [T, d_v]
    return out


def _gqa_cases(
    rng: np.random.Generator,
) -> Iterator[tuple[Array, Array, Array, Array, Array, int, int, Array | None]]:
    """Grouped (2 query heads per KV head), multi-query (1 KV head) and multi-head (as many
    KV heads as query heads) layouts, with and without a causal mask."""
    for T, n_heads, n_kv_heads, d_head, causal in [
        (5, 4, 2, 3, True),
        (6, 4, 1, 2, False),
        (4, 3, 3, 2, True),
        (7, 8, 2, 2, True),
    ]:
        d_model = n_heads * d_head
        W_Q, W_O = rng.normal(size=(2, d_model, d_model)) / np.sqrt(d_model)
        W_K, W_V = rng.normal(size=(2, n_kv_heads * d_head, d_model)) / np.sqrt(d_model)
        mask = np.triu(np.full((T, T), -np.inf), 1) if causal else None
        yield rng.normal(size=(T, d_model)), W_Q, W_K, W_V, W_O, n_heads, n_kv_heads, mask


# The answer its mistakes slip in, each named by the edit that makes it.
_GQA = """
def grouped_query_attention(X, W_Q, W_K, W_V, W_O, n_heads, n_kv_heads, mask=None):
    T, d_model = X.shape
    d_head = d_model // n_heads
    Q = (X @ W_Q.T).reshape(T, n_heads, d_head).transpose(1, 0, 2)
    K = (X @ W_K.T).reshape(T, n_kv_heads, d_head).transpose(1, 0, 2)
    V = (X @ W_V.T).reshape(T, n_kv_heads, d_head).transpose(1, 0, 2)
    group = n_heads // n_kv_heads
    K, V = np.repeat(K, group, axis=0), np.repeat(V, group, axis=0)
    S = Q @ K.transpose(0, 2, 1) / np.sqrt(d_head)
    if mask is not None:
        S = S + mask
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    H = E / E.sum(axis=-1, keepdims=True) @ V
    return H.transpose(1, 0, 2).reshape(T, d_model) @ W_O.T
"""
_REPEAT = "K, V = np.repeat(K, group, axis=0), np.repeat(V, group, axis=0)"


@exercise(
    "grouped_query_attention",
    cases=_gqa_cases,
    atol=1e-9,
    rtol=1e-7,
    shortcuts={"torch": TORCH_ATTENTION, "attnlib": {"CausalSelfAttention"}},
    mistakes=[
        Mistake(
            "pairs-heads-round-robin",
            edited(_GQA, (_REPEAT, "K, V = np.tile(K, (group, 1, 1)), np.tile(V, (group, 1, 1))")),
            says=("h // (n_heads // n_kv_heads)", "np.repeat"),
            message="`grouped_query_attention` pairs query head h with KV head h % n_kv_heads "
            "(round robin, as np.tile does); neighbouring query heads share a KV head: head h "
            "reads KV head h // (n_heads // n_kv_heads) (np.repeat, not np.tile).",
        ),
        Mistake(
            "scales-by-d_model",
            edited(_GQA, ("np.sqrt(d_head)", "np.sqrt(d_model)")),
            says=("np.sqrt(d_head)",),
            message="`grouped_query_attention` divides the scores by √d_model: each head "
            "compares vectors of d_head numbers, so divide by np.sqrt(d_head).",
        ),
        Mistake(
            "forgets-W_O",
            edited(_GQA, (".reshape(T, d_model) @ W_O.T", ".reshape(T, d_model)")),
            says=("W_O",),
            message="`grouped_query_attention` forgets W_O: after merging the heads, mix them "
            "with `@ W_O.T`.",
        ),
        Mistake(
            "ignores-the-mask",
            edited(_GQA, ("    if mask is not None:\n        S = S + mask\n", "")),
            says=("mask",),
            message="`grouped_query_attention` ignores `mask`: add it to every head's scores "
            "before the softmax.",
        ),
        Mistake(
            "splits-keys-into-n_heads",
            edited(
                _GQA,
                ("K = (X @ W_K.T).reshape(T, n_kv_heads,", "K = (X @ W_K.T).reshape(T, n_heads,"),
                ("V = (X @ W_V.T).reshape(T, n_kv_heads,", "V = (X @ W_V.T).reshape(T, n_heads,"),
                (f"    group = n_heads // n_kv_heads\n    {_REPEAT}\n", ""),
            ),
            says=("n_kv_heads heads",),
            caught_by="visible",  # it raises: the hidden check reports the error itself
        ),
    ],
    alternatives=[
        Alternative(
            "loop-over-query-heads",
            """
            def grouped_query_attention(X, W_Q, W_K, W_V, W_O, n_heads, n_kv_heads, mask=None):
                d_head = W_Q.shape[0] // n_heads
                Q, K, V = X @ W_Q.T, X @ W_K.T, X @ W_V.T
                heads = []
                for h in range(n_heads):
                    g = h * n_kv_heads // n_heads  # the KV head of query head h
                    q = Q[:, h * d_head : (h + 1) * d_head]
                    k = K[:, g * d_head : (g + 1) * d_head]
                    v = V[:, g * d_head : (g + 1) * d_head]
                    S = q @ k.T / np.sqrt(d_head) + (0.0 if mask is None else mask)
                    E = np.exp(S - S.max(axis=1, keepdims=True))
                    heads.append(E / E.sum(axis=1, keepdims=True) @ v)
                return np.concatenate(heads, axis=1) @ W_O.T
            """,
        ),
        Alternative(
            "repeated-weights",
            """
            def grouped_query_attention(X, W_Q, W_K, W_V, W_O, n_heads, n_kv_heads, mask=None):
                d_model = X.shape[1]
                d_head = d_model // n_heads
                group = n_heads // n_kv_heads
                W_K = np.repeat(W_K.reshape(n_kv_heads, d_head, d_model), group, 0)
                W_V = np.repeat(W_V.reshape(n_kv_heads, d_head, d_model), group, 0)
                Q = np.einsum("td,hed->hte", X, W_Q.reshape(n_heads, d_head, d_model))
                K = np.einsum("td,hed->hte", X, W_K)
                V = np.einsum("td,hed->hte", X, W_V)
                S = np.einsum("hqe,hke->hqk", Q, K) / np.sqrt(d_head)
                if mask is not None:
                    S = S + mask
                A = np.exp(S - S.max(-1, keepdims=True))
                A = A / A.sum(-1, keepdims=True)
                H = np.einsum("hqk,hke->qhe", A, V).reshape(len(X), d_model)
                return H @ W_O.T
            """,
        ),
    ],
)
def grouped_query_attention(
    X: Array,
    W_Q: Array,
    W_K: Array,
    W_V: Array,
    W_O: Array,
    n_heads: int,
    n_kv_heads: int,
    mask: Array | None = None,
) -> Array:
    T, d_model = X.shape
    d_head = d_model // n_heads
    Q = (X @ W_Q.T).reshape(T, n_heads, d_head).transpose(1, 0, 2)  # [h, T, d_head]
    K, V = ((X @ W.T).reshape(T, n_kv_heads, d_head).transpose(1, 0, 2) for W in (W_K, W_V))
    group = n_heads // n_kv_heads  # query heads per KV head: head h reads KV head h // group
    K, V = np.repeat(K, group, axis=0), np.repeat(V, group, axis=0)  # [h, T, d_head]
    S = Q @ K.transpose(0, 2, 1) / np.sqrt(d_head)  # [h, T, T]
    if mask is not None:
        S = S + mask
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    H = E / E.sum(axis=-1, keepdims=True) @ V  # [h, T, d_head]
    out: Array = H.transpose(1, 0, 2).reshape(T, d_model) @ W_O.T  # [T, d_model]
    return out
