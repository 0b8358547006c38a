"""Visible checks for notebook 11 (attention at scale: key and value heads pooled for
grouped-query attention).

No reference solution: hand-worked examples (heads filled with constants, whose means are
known).
"""

import numpy as np

from attnlib.checks._core import (
    call,
    crash_hints,
    expect_close,
    expect_shape,
    passed,
    reject_known,
)

# ---------------------------------------------------------------- mean_pool_kv_heads
crash_hints(
    "mean_pool_kv_heads",
    {
        "cannot reshape": "W holds n_heads blocks of d_head = W.shape[0] // n_heads rows: "
        "reshape to [n_kv_heads, group, d_head, d_model] with group = n_heads // n_kv_heads.",
    },
)


def _heads(values, d_head, d_model):
    """W whose head h's block of ``d_head`` rows is filled with ``values[h]``."""
    return np.repeat(np.asarray(values, dtype=float), d_head)[:, None] * np.ones((1, d_model))


def check_mean_pool_kv_heads(mean_pool_kv_heads):
    name = "mean_pool_kv_heads"
    fn = mean_pool_kv_heads
    d_head, d_model = 3, 5
    W = _heads([1.0, 3.0, 10.0, 30.0], d_head, d_model)  # 4 heads, [12, 5]
    pooled = call(fn, W, 4, 2, name=name)
    pooled = expect_shape(
        pooled,
        (2 * d_head, d_model),
        name,
        hint="Return n_kv_heads heads of d_head rows each: [n_kv_heads·d_head, d_model]."
        if np.shape(pooled) != W.shape
        else "That is n_heads heads: average each group into one KV head.",
    )
    reject_known(
        pooled,
        [
            (
                _heads([5.5, 16.5], d_head, d_model),
                "heads are grouped round robin (0 with 2, 1 with 3): KV head g pools the "
                "neighbouring query heads g·group … (g+1)·group − 1, as np.repeat hands them "
                "out in notebook 09.",
            ),
            (_heads([4.0, 40.0], d_head, d_model), "sums the heads of a group: take their mean."),
        ],
        name,
        "with heads filled with 1, 3, 10, 30 (n_heads = 4, n_kv_heads = 2)",
    )
    expect_close(
        pooled,
        _heads([2.0, 20.0], d_head, d_model),
        name,
        hint="KV head 0 is the mean of heads 0 and 1 (1 and 3 → 2), KV head 1 of heads 2 "
        "and 3 (10 and 30 → 20). Heads are blocks of d_head consecutive rows.",
    )
    rng = np.random.default_rng(10)
    W = rng.normal(size=(4 * d_head, d_model))
    expect_close(
        call(fn, W, 4, 4, name=name),
        W,
        name,
        hint="With n_kv_heads = n_heads every group holds one head: W comes back unchanged.",
    )
    expect_close(
        call(fn, W, 4, 1, name=name),
        W.reshape(4, d_head, d_model).mean(0),
        name,
        hint="With n_kv_heads = 1 (multi-query) the one KV head is the mean of all heads.",
    )
    passed(name)
