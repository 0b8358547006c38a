"""Hidden checks and the mistake catalogue for notebook 11 (attention at scale: key and
value heads pooled for grouped-query attention)."""

from collections.abc import Iterator

import numpy as np

from grader.hidden import Alternative, Array, Mistake, exercise


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
