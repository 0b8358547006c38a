"""Visible checks for notebook 12 (attention without the T×T matrix: online softmax).

No reference solution: hand-worked examples (scores chosen so the softmax weights are
simple fractions), and properties of the learner's own function (the block size does not
change the result, the memory of one call stays far below the whole score matrix).
"""

import numpy as np

from attnlib.checks._core import (
    CheckFailed,
    as_array,
    call,
    expect_close,
    expect_finite,
    expect_shape,
    passed,
    reject_known,
)
from attnlib.checks._worked import LN3
from attnlib.cost import peak_bytes


# ---------------------------------------------------------------- online_softmax_attention
def _online(fn, Q, K, V, block_size):
    name = "online_softmax_attention"
    out = call(fn, Q, K, V, block_size, name=name)
    return expect_shape(
        out,
        (len(Q), V.shape[1]),
        name,
        hint={
            (len(Q), len(K)): "That is [T_q, T_k], the weights: return them @ V.",
            (V.shape[1],): "That is one row: return one output row per query.",
        }.get(np.shape(as_array(out, name)), ""),
    )


def _block_means(V, block_size):
    return np.mean([V[s : s + block_size].mean(0) for s in range(0, len(V), block_size)], 0)


def check_online_softmax_attention(online_softmax_attention):
    name = "online_softmax_attention"
    fn = online_softmax_attention
    rng = np.random.default_rng(9)
    T_q, T_k, d_k, d_v = 3, 10, 4, 2  # blocks of 4: 4 + 4 + 2 keys

    # K = 0: every score is 0, every query averages all values.
    V = rng.normal(size=(T_k, d_v))
    flat = _online(fn, rng.normal(size=(T_q, d_k)), np.zeros((T_k, d_k)), V, 4)
    reject_known(
        flat,
        [
            (
                np.tile(_block_means(V, 4), (T_q, 1)),
                "normalises each block on its own and averages the blocks; keep one running "
                "sum over all blocks and divide once at the end.",
            ),
            (
                np.tile(V[:8].mean(0), (T_q, 1)),
                "drops the shorter last block (keys 8–9): `range(0, T_k, block_size)` visits "
                "every block, the short last one included.",
            ),
        ],
        name,
        "with K = 0 (every score 0), blocks of 4 over 10 keys",
    )
    expect_close(
        flat,
        np.tile(V.mean(0), (T_q, 1)),
        name,
        hint="With every score 0 each query's output is the mean of all 10 value rows.",
    )

    # Worked by hand: scaled scores [0, 0 | ln 3, ln 3] in blocks of 2, so the weights are
    # [1, 1, 3, 3] / 8 and the output [2, 6] / 8. The maximum grows in the second block.
    q = np.array([[1.0, 0.0, 0.0, 0.0]])
    K = np.zeros((4, 4))
    K[2:, 0] = 2 * LN3  # q · k = 2 ln 3, divided by √4
    V2 = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    late = _online(fn, q, K, V2, 2)
    reject_known(
        late,
        [
            (
                np.array([[0.5, 0.5]]),
                "the maximum grew in the second block but what was summed under the old "
                "maximum was not rescaled: multiply the running sum and the accumulated "
                "output by exp(m_old − m_new).",
            ),
            (
                np.array([[1 / 6, 0.5]]),
                "rescales the accumulated output but not the running sum when the maximum "
                "grows: multiply both by exp(m_old − m_new).",
            ),
            (
                np.array([[0.75, 0.75]]),
                "rescales the running sum but not the accumulated output when the maximum "
                "grows: multiply both by exp(m_old − m_new).",
            ),
            (np.array([[0.1, 0.9]]), "the scores are not scaled: divide Q Kᵀ by np.sqrt(d_k)."),
        ],
        name,
        "on scores that grow in a later block",
    )
    expect_close(
        late,
        np.array([[0.25, 0.75]]),
        name,
        hint="Scaled scores [0, 0, ln 3, ln 3] give weights [1, 1, 3, 3] / 8.",
    )
    K[2:, 0] = 1600.0  # scaled scores [0, 0, 800, 800]: all the weight on the second block
    huge = _online(fn, q, K, V2, 2)
    expect_finite(
        huge,
        name,
        hint="The second block's scores are 800 above the first's: np.exp overflows unless "
        "you subtract the running maximum, updated block by block.",
    )
    expect_close(huge, np.array([[0.0, 1.0]]), name, hint="exp(−800) is 0 in float64.")

    Q3, K3, V3 = rng.normal(size=(5, 3)), rng.normal(size=(T_k, 3)), rng.normal(size=(T_k, 2))
    by_block = {b: _online(fn, Q3, K3, V3, b) for b in (1, 3, 10, 64)}
    for b, out in by_block.items():
        expect_close(
            out,
            by_block[10],
            name + f" with block_size={b}",
            hint="The result must not depend on the block size (block_size=10 is one block "
            "holding every key).",
            atol=1e-9,
            rtol=1e-9,
        )
    expect_finite(
        _online(fn, 30.0 * Q3, 30.0 * K3, V3, 4),
        name,
        hint="Large scores overflow np.exp: exponentiate scores minus the running maximum.",
    )

    # The score matrix must dwarf the inputs and the output (4 MiB against 70 KiB), so that
    # whatever else a call allocates, such as copies of Q, K, V, cannot look like it.
    T_q, T_k = 256, 2048
    Q4, K4, V4 = rng.normal(size=(T_q, 2)), rng.normal(size=(T_k, 2)), rng.normal(size=(T_k, 2))
    used, whole = peak_bytes(fn, Q4, K4, V4, 64), T_q * T_k * 8
    if used > whole / 2:
        raise CheckFailed(
            f"`{name}` allocated {used / 1024:.0f} KiB for {T_q} queries and {T_k} keys, as "
            f"much as the whole [T_q, T_k] score matrix ({whole / 1024:.0f} KiB): compute the "
            "scores one block of keys at a time, never all at once."
        )
    passed(name)
