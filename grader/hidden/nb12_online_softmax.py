"""Hidden checks and the mistake catalogue for notebook 12 (attention without the T×T
matrix: online softmax)."""

from collections.abc import Iterator

import numpy as np

from grader.hidden import TORCH_ATTENTION, Alternative, Array, Mistake, edited, exercise


def _online_cases(rng: np.random.Generator) -> Iterator[tuple[Array, Array, Array, int]]:
    """Uneven last blocks, one block holding every key, a block larger than T_k, scores
    whose maximum grows block after block, and a maximum far above the first blocks'
    (exp of the stale difference overflows unless the maximum is updated)."""
    for T_q, T_k, d_k, d_v, block in [(5, 130, 8, 3, 64), (7, 64, 4, 5, 64), (3, 50, 6, 2, 7)]:
        Q, K, V = (rng.normal(size=s) for s in [(T_q, d_k), (T_k, d_k), (T_k, d_v)])
        yield Q, K, V, block
    yield rng.normal(size=(4, 3)), rng.normal(size=(9, 3)), rng.normal(size=(9, 3)), 100
    Q, V = rng.normal(size=(6, 4)), rng.normal(size=(40, 2))
    growing = np.linspace(0.0, 6.0, 40)[:, None] * np.sign(Q.sum(0))  # [40, 4]
    yield Q, growing + 0.1 * rng.normal(size=(40, 4)), V, 8
    Q = np.abs(rng.normal(size=(3, 4))) + 0.5
    K = rng.normal(size=(70, 4)) * 0.3
    K[-6:] = 400.0  # in the last block, scores far above everything before
    yield Q, K, rng.normal(size=(70, 5)), 16
    yield rng.normal(size=(5, 8)) * 6, rng.normal(size=(33, 8)) * 6, rng.normal(size=(33, 4)), 5


# The answer its mistakes slip in, each named by the edit that makes it.
_ONLINE = """
def online_softmax_attention(Q, K, V, block_size=64):
    m = np.full(len(Q), -np.inf)
    l = np.zeros(len(Q))
    acc = np.zeros((len(Q), V.shape[1]))
    for s in range(0, len(K), block_size):
        S = Q @ K[s : s + block_size].T / np.sqrt(Q.shape[1])
        m_new = np.maximum(m, S.max(axis=1))
        P = np.exp(S - m_new[:, None])
        l = l * np.exp(m - m_new) + P.sum(axis=1)
        acc = acc * np.exp(m - m_new)[:, None] + P @ V[s : s + block_size]
        m = m_new
    return acc / l[:, None]
"""
_RESCALE_SUM = ("l = l * np.exp(m - m_new) +", "l = l +")
_RESCALE_OUTPUT = ("acc = acc * np.exp(m - m_new)[:, None] +", "acc = acc +")


@exercise(
    "online_softmax_attention",
    cases=_online_cases,
    atol=1e-9,
    rtol=1e-7,
    shortcuts={"torch": TORCH_ATTENTION, "attnlib": {"CausalSelfAttention"}},
    mistakes=[
        Mistake(
            "no-rescaling",
            edited(_ONLINE, _RESCALE_SUM, _RESCALE_OUTPUT),
            says=("rescale", "exp(m_old − m_new)"),
            message="`online_softmax_attention` does not rescale when the running maximum "
            "grows: multiply the running sum and the accumulated output by exp(m_old − m_new).",
        ),
        Mistake(
            "rescales-the-sum-only",
            edited(_ONLINE, _RESCALE_OUTPUT),
            says=("accumulated output",),
            message="`online_softmax_attention` rescales the running sum but not the "
            "accumulated output when the maximum grows: multiply both by exp(m_old − m_new).",
        ),
        Mistake(
            "rescales-the-output-only",
            edited(_ONLINE, _RESCALE_SUM),
            says=("not the running sum",),
            message="`online_softmax_attention` rescales the accumulated output but not the "
            "running sum when the maximum grows: multiply both by exp(m_old − m_new).",
        ),
        Mistake(
            "averages-normalised-blocks",
            """
            def online_softmax_attention(Q, K, V, block_size=64):
                outs = []
                for s in range(0, len(K), block_size):
                    S = Q @ K[s : s + block_size].T / np.sqrt(Q.shape[1])
                    P = np.exp(S - S.max(axis=1, keepdims=True))
                    outs.append(P / P.sum(axis=1, keepdims=True) @ V[s : s + block_size])
                return np.mean(outs, axis=0)
            """,
            says=("each block on its own", "averages"),
            message="`online_softmax_attention` normalises each block on its own and "
            "averages the blocks; keep one running sum over all blocks and divide at the end.",
        ),
        Mistake(
            "no-scaling",
            edited(_ONLINE, (" / np.sqrt(Q.shape[1])", "")),
            says=("np.sqrt(d_k)",),
            message="`online_softmax_attention` does not scale the scores: divide Q Kᵀ by "
            "np.sqrt(d_k).",
        ),
        Mistake(
            "drops-the-last-block",
            edited(
                _ONLINE,
                (
                    "for s in range(0, len(K), block_size):",
                    "for b in range(max(1, len(K) // block_size)):\n        s = b * block_size",
                ),
            ),
            says=("last block", "range(0, T_k, block_size)"),
            message="`online_softmax_attention` drops the shorter last block: "
            "`range(0, T_k, block_size)` visits every block, the short last one included.",
        ),
        Mistake(
            "keeps-the-first-maximum",
            edited(
                _ONLINE,
                (
                    "m = np.full(len(Q), -np.inf)",
                    "m = (Q @ K[:block_size].T / np.sqrt(Q.shape[1])).max(1)",
                ),
                ("m_new = np.maximum(m, S.max(axis=1))", "m_new = m  # never updated"),
            ),
            says=("overflow", "running maximum"),
            message="`online_softmax_attention` overflows when a later block holds much "
            "larger scores: update the running maximum block by block (and rescale).",
        ),
        Mistake(
            "whole-score-matrix",
            """
            def online_softmax_attention(Q, K, V, block_size=64):
                S = Q @ K.T / np.sqrt(Q.shape[1])
                P = np.exp(S - S.max(axis=1, keepdims=True))
                return P @ V / P.sum(axis=1, keepdims=True)
            """,
            says=("whole [T_q, T_k] score matrix",),
            caught_by="visible",  # exact, so only its memory gives it away (in the kernel)
        ),
    ],
    alternatives=[
        Alternative(
            "per-query-scalars",
            """
            def online_softmax_attention(Q, K, V, block_size=64):
                out = np.empty((len(Q), V.shape[1]))
                for i, q in enumerate(Q):
                    m, l, acc = -np.inf, 0.0, np.zeros(V.shape[1])
                    for s in range(0, len(K), block_size):
                        scores = K[s : s + block_size] @ q / np.sqrt(len(q))
                        m_new = max(m, float(scores.max()))
                        p = np.exp(scores - m_new)
                        l = l * np.exp(m - m_new) + p.sum()
                        acc = acc * np.exp(m - m_new) + p @ V[s : s + block_size]
                        m = m_new
                    out[i] = acc / l
                return out
            """,
        ),
        Alternative(
            "two-passes",
            """
            def online_softmax_attention(Q, K, V, block_size=64):
                blocks = range(0, len(K), block_size)
                scale = np.sqrt(Q.shape[1])
                m = np.max([(Q @ K[s : s + block_size].T).max(1) for s in blocks], 0) / scale
                l, acc = 0.0, 0.0
                for s in blocks:
                    P = np.exp(Q @ K[s : s + block_size].T / scale - m[:, None])
                    l, acc = l + P.sum(1), acc + P @ V[s : s + block_size]
                return acc / l[:, None]
            """,
        ),
        Alternative(
            "einsum-and-splits",
            """
            def online_softmax_attention(Q, K, V, block_size=64):
                n_blocks = -(-len(K) // block_size)
                m = np.full(len(Q), -np.inf)
                l, acc = np.zeros(len(Q)), np.zeros((len(Q), V.shape[-1]))
                for Kb, Vb in zip(np.array_split(K, n_blocks), np.array_split(V, n_blocks)):
                    S = np.einsum("qd,kd->qk", Q, Kb) / np.sqrt(Q.shape[-1])
                    m_new = np.maximum(m, S.max(-1))
                    P = np.exp(S - m_new[:, None])
                    l = np.exp(m - m_new) * l + P.sum(-1)
                    acc = np.exp(m - m_new)[:, None] * acc + np.einsum("qk,kv->qv", P, Vb)
                    m = m_new
                return acc / l[:, None]
            """,
        ),
    ],
)
def online_softmax_attention(Q: Array, K: Array, V: Array, block_size: int = 64) -> Array:
    m = np.full(len(Q), -np.inf)  # [T_q] running maximum
    row_sum = np.zeros(len(Q))  # [T_q] running sum of exp(score − m)
    acc = np.zeros((len(Q), V.shape[1]))  # [T_q, d_v]
    for s in range(0, len(K), block_size):
        S = Q @ K[s : s + block_size].T / np.sqrt(Q.shape[1])  # [T_q, block]
        m_new = np.maximum(m, S.max(axis=1))
        P = np.exp(S - m_new[:, None])
        row_sum = row_sum * np.exp(m - m_new) + P.sum(axis=1)
        acc = acc * np.exp(m - m_new)[:, None] + P @ V[s : s + block_size]
        m = m_new
    return acc / row_sum[:, None]
