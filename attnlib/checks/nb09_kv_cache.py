"""Visible checks for notebook 09 (the KV cache, grouped-query attention).

No reference solution: hand-worked examples (scores chosen so the softmax weights are
simple fractions), and properties of the learner's own function (position 0 sees only
itself, earlier rows ignore later positions, sharing a KV head equals multi-head attention
with that head's weights repeated).
"""

import numpy as np

from attnlib.checks._core import (
    CheckFailed,
    as_array,
    call,
    crash_hints,
    expect_close,
    expect_finite,
    expect_shape,
    passed,
    reject_known,
)
from attnlib.checks._worked import LN3, gap_weight, window_means

_PROJECT_HINT = "Projections are `q = W_Q x` (as `project`): for all rows at once, `X @ W_Q.T`."


# ---------------------------------------------------------------- decode_with_cache
def _decode(fn, X, W_Q, W_K, W_V):
    name = "decode_with_cache"
    try:
        out = call(fn, X, W_Q, W_K, W_V, name=name)
    except CheckFailed as err:
        if "isn't written yet" in str(err):
            raise
        raise CheckFailed(
            f"{err} At position 0 the cache must already hold k_0 and v_0 (append, then "
            f"attend). {_PROJECT_HINT}"
        ) from None
    T, d_v = len(X), len(W_V)
    return expect_shape(
        out,
        (T, d_v),
        name,
        hint={
            (T, len(W_Q)): "That is one query or key per position: return the attention "
            "output, one value-sized row per position.",
            (d_v,): "That is one row: return every position's output, [T, d_v].",
            (T, T): "That is a [T, T] matrix (the weights?): return weights @ values.",
        }.get(np.shape(out), ""),
    )


def _check_causal_and_self(fn, X, W_Q, W_K, W_V, out, rng):
    """Later positions never change earlier outputs, and position 0's output is v_0; an
    answer that attends over a preallocated cache's empty slots is named."""
    name = "decode_with_cache"
    T, V = len(X), X @ W_V.T  # [T, d_v]
    later = X.copy()
    later[3:] = rng.normal(size=(T - 3, X.shape[1]))
    if not np.allclose(_decode(fn, later, W_Q, W_K, W_V)[:3], out[:3]):
        raise CheckFailed(
            f"`{name}`: changing positions 3… changed the outputs of positions 0–2. "
            "Position t may only attend to the cache of positions ≤ t (no causality?)."
        )
    if not np.allclose(out[0], V[0]):
        reject_known(  # W_Q = 0: every slot scores 0, and an empty slot's value is 0
            _decode(fn, X, np.zeros_like(W_Q), W_K, W_V),
            [
                (
                    np.cumsum(V, axis=0) / T,
                    "position t attends over all T slots of a preallocated cache, the empty "
                    "slots after t included (each takes weight and adds a zero value): attend "
                    "from q_t over the filled slots only, K_cache[: t + 1] and V_cache[: t + 1].",
                ),
            ],
            name,
            "with W_Q = 0 (every score 0)",
        )
        raise CheckFailed(
            f"`{name}`: position 0 can only see itself, so its output must be its own value "
            "v_0 = W_V x_0. If position t misses itself, append k_t and v_t to the cache "
            "before attending from q_t."
        )


def check_decode_with_cache(decode_with_cache):
    name = "decode_with_cache"
    rng = np.random.default_rng(9)
    T, d_model, d_k, d_v = 6, 5, 4, 3  # all different, so a swapped axis shows in the shape
    X = rng.normal(size=(T, d_model))  # [T, d_model]
    W_Q, W_K = rng.normal(size=(2, d_k, d_model))  # [d_k, d_model] each
    W_V = rng.normal(size=(d_v, d_model))  # [d_v, d_model]
    V = X @ W_V.T  # [T, d_v]: every position's value

    out = _decode(decode_with_cache, X, W_Q, W_K, W_V)
    expect_finite(out, name)
    _check_causal_and_self(decode_with_cache, X, W_Q, W_K, W_V, out, rng)

    # W_Q = 0: every score is 0, so position t averages v_0 … v_t.
    flat = _decode(decode_with_cache, X, np.zeros_like(W_Q), W_K, W_V)
    misses_self = np.vstack([V[:1], window_means(V, len(V))[:-1]])
    reject_known(
        flat,
        [
            (
                misses_self,
                "position t sees only positions < t, it misses itself. Append k_t and v_t "
                "to the cache before attending from q_t.",
            ),
            (np.tile(V.mean(0), (T, 1)), "attends to every position (no causality)."),
        ],
        name,
        "with W_Q = 0 (every score 0)",
    )
    expect_close(
        flat,
        window_means(V, len(V)),
        name,
        hint="With W_Q = 0 every score is 0, so position t's output is the plain mean of "
        "v_0 … v_t.",
    )

    # Worked by hand: d_model = 6, d_k = 4, d_v = 9 (all different), x_0 = 0 and x_1 = a·e_0
    # with a² = 2 ln 3; the projections keep the first coordinates. Query 1 scores
    # [0, 2 ln 3]; divided by √d_k = 2 that is [0, ln 3]: weights [1/4, 3/4], out_1 = ¾ W_V x_1.
    X2 = np.zeros((2, 6))
    X2[1, 0] = np.sqrt(2 * LN3)
    W_QK2, W_V2 = np.eye(4, 6), np.eye(9, 6)
    v_1 = W_V2 @ X2[1]
    out2 = _decode(decode_with_cache, X2, W_QK2, W_QK2, W_V2)
    reject_known(
        out2[1],
        [
            (
                gap_weight(2 * LN3) * v_1,
                "the scores are not scaled: divide q · k by np.sqrt(d_k).",
            ),
            (
                gap_weight(2 * LN3 / 3) * v_1,
                "the scores are divided by √d_v = 3, the size of a value: they are dot "
                "products of q and k, so divide by np.sqrt(d_k) = 2.",
            ),
            (
                gap_weight(LN3 / 2) * v_1,
                "the scores are divided by d_k; divide by np.sqrt(d_k) instead.",
            ),
            (0.5 * v_1, "position 1 weighs its two keys equally: are the scores used?"),
        ],
        name,
        "on a hand-worked example (d_k = 4, d_v = 9)",
    )
    expect_close(
        out2[1],
        0.75 * v_1,
        name,
        hint="Scores divided by √d_k = 2 are [0, ln 3], so the weights are [1/4, 3/4].",
    )

    big = _decode(decode_with_cache, 40.0 * X, W_Q, W_K, W_V)
    expect_finite(
        big,
        name,
        hint="Large scores overflow np.exp: subtract the largest score of the row first.",
    )
    passed(name)


# ---------------------------------------------------------------- grouped_query_attention
crash_hints(
    "grouped_query_attention",
    {
        "cannot reshape": "Q splits into n_heads heads of d_head = d_model // n_heads numbers; "
        "K and V into n_kv_heads heads of the same d_head (W_K and W_V are "
        "[n_kv_heads·d_head, d_model]).",
        "mismatch": "Each query head needs its KV head's keys: repeat every KV head "
        "n_heads // n_kv_heads times (np.repeat along the heads axis) before Q Kᵀ.",
    },
)


def _gqa(fn, X, *args):
    name = "grouped_query_attention"
    out = call(fn, X, *args, name=name)
    if isinstance(out, tuple):
        raise CheckFailed(f"`{name}` should return the output alone, [T, d_model].")
    T, d_model = X.shape
    n_heads = args[4]
    return expect_shape(
        out,
        (T, d_model),
        name,
        hint={
            (n_heads, T, d_model // n_heads): "That is one output per head: merge the heads "
            "back to [T, d_model], then apply W_O.",
            (T, n_heads, d_model // n_heads): "Merge the heads axis into the last one: "
            "[T, n_heads·d_head] = [T, d_model], then apply W_O.",
        }.get(np.shape(as_array(out, name)), ""),
    )


# Two positions, two heads of d_head = 2 (d_model = 4), identity projections, W_O swaps the
# heads' blocks. x_0 = 0, x_1 = [a, 0, b, 0] with a² = √2 ln 3 and b² = √2 ln 7: query 1's
# score gaps, divided by √d_head = √2, are ln 3 in head 0 and ln 7 in head 1, so its weights
# on key 1 are 3/4 and 7/8. Position 0 sees only x_0 = 0.
_A, _B = np.sqrt(np.sqrt(2) * LN3), np.sqrt(np.sqrt(2) * np.log(7.0))
_X_HEADS = np.array([[0.0, 0, 0, 0], [_A, 0, _B, 0]])
_SWAP_HEADS = np.roll(np.eye(4), 2, axis=0)
_CAUSAL2 = np.array([[0.0, -np.inf], [0.0, 0.0]])


def _heads_row_1(scale, mix=_SWAP_HEADS):
    """Output row 1 of the two-head example with the scores divided by ``scale``."""
    merged = np.array([gap_weight(_A**2 / scale) * _A, 0, gap_weight(_B**2 / scale) * _B, 0])
    return mix @ merged


def _repeat_kv(W, n_kv_heads, n_heads, how):
    """W_K or W_V of n_kv_heads heads as n_heads heads: KV head g's rows handed to the query
    heads that share it (``np.repeat``: g·group … (g+1)·group − 1) or round robin (``np.tile``)."""
    blocks = W.reshape(n_kv_heads, -1, W.shape[1])
    return how(blocks, n_heads // n_kv_heads, axis=0).reshape(-1, W.shape[1])


def _tile(blocks, reps, axis):
    return np.concatenate([blocks] * reps, axis=axis)


def check_grouped_query_attention(grouped_query_attention):
    name = "grouped_query_attention"
    fn = grouped_query_attention
    eye = np.eye(4)
    out = _gqa(fn, _X_HEADS.copy(), eye, eye, eye, _SWAP_HEADS.copy(), 2, 2, _CAUSAL2.copy())
    expect_finite(out, name)
    if not np.allclose(out[0], 0.0):
        raise CheckFailed(
            f"`{name}`: with the causal mask position 0 sees only x_0 = 0, so its output must "
            "be 0. Is `mask` added to every head's scores before the softmax?"
        )
    reject_known(
        out[1],
        [
            (
                _heads_row_1(np.sqrt(2), eye),
                "forgets W_O: after merging the heads, apply `@ W_O.T`.",
            ),
            (
                _heads_row_1(2.0),
                "divides the scores by √d_model = 2: each head compares vectors of d_head "
                "numbers, so divide by np.sqrt(d_head) = √2.",
            ),
            (_heads_row_1(1.0), "the scores are not scaled: divide by np.sqrt(d_head)."),
        ],
        name,
        "on a hand-worked example with n_kv_heads = n_heads = 2",
    )
    expect_close(
        out[1],
        _heads_row_1(np.sqrt(2)),
        name,
        hint="With n_kv_heads = n_heads this is multi-head attention: each head takes its own "
        "block of d_head columns, divides its scores by √d_head, and W_O mixes the merged heads.",
    )
    _check_groups(fn, name)
    passed(name)


def _check_groups(fn, name):
    """Sharing a KV head is multi-head attention with that head's weights repeated."""
    rng = np.random.default_rng(9)
    T, d_model, n_heads = 5, 8, 4
    X = rng.normal(size=(T, d_model))
    W_Q, W_O = rng.normal(size=(2, d_model, d_model)) / np.sqrt(d_model)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for n_kv_heads in (2, 1):
        W_K, W_V = rng.normal(size=(2, n_kv_heads * 2, d_model)) / np.sqrt(d_model)
        grouped = _gqa(fn, X, W_Q, W_K, W_V, W_O, n_heads, n_kv_heads, mask)

        def as_heads(how, W_K=W_K, W_V=W_V, n_kv_heads=n_kv_heads):
            K, V = (_repeat_kv(W, n_kv_heads, n_heads, how) for W in (W_K, W_V))
            return _gqa(fn, X, W_Q, K, V, W_O, n_heads, n_heads, mask)

        shared = f"with {n_heads} query heads and {n_kv_heads} KV head(s)"
        if n_kv_heads > 1 and np.allclose(grouped, as_heads(_tile)):
            raise CheckFailed(
                f"`{name}` {shared} pairs query head h with KV head h % n_kv_heads (round "
                "robin, as np.tile does); neighbouring query heads share a KV head: head h "
                "reads KV head h // (n_heads // n_kv_heads) (np.repeat, not np.tile)."
            )
        expect_close(
            grouped,
            as_heads(np.repeat),
            name,
            hint=f"{shared.capitalize()}, query head h reads KV head "
            "h // (n_heads // n_kv_heads): the result must equal your own function with "
            "n_kv_heads = n_heads and each KV head's rows of W_K and W_V repeated for the "
            "query heads that share it.",
        )
