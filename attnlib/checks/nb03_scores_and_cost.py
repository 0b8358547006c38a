"""Visible checks for notebook 03 (scores and their cost)."""

import numpy as np

from attnlib.checks._core import (
    CheckFailed,
    as_number,
    call,
    crash_hints,
    expect_close,
    expect_finite,
    expect_shape,
    is_whole,
    passed,
)

crash_hints(
    "attention_scores",
    {
        "mismatch": "the shapes don't fit a matrix product: Q is [T_q, d_k] and K is "
        "[T_k, d_k], so every query against every key is Q @ K.T ([T_q, d_k] @ [d_k, T_k]); "
        "Qᵀ K would sum over the positions"
    },
)

# Hand-worked: 3 queries and 2 keys with d_k = 2, so Q Kᵀ is [3, 2] and every mix-up of
# rows, columns and transposes has a different shape or different values.
_Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # [T_q=3, d_k=2]
_K = np.array([[1.0, 2.0], [3.0, 4.0]])  # [T_k=2, d_k=2]
_S = np.array([[1.0, 3.0], [2.0, 4.0], [3.0, 7.0]])  # [3, 2]: entry (i, j) = query i · key j


def _scores_shape(out, T_q, T_k, d_k, name):
    shape = getattr(out, "shape", None)
    if shape == (T_k, T_q) and T_q != T_k:
        raise CheckFailed(
            f"`{name}` returned shape {shape}, expected ({T_q}, {T_k}): rows must be "
            "queries and columns keys. Did you compute K Qᵀ instead of Q Kᵀ?"
        )
    if shape == (d_k, d_k) and d_k not in (T_q, T_k):
        raise CheckFailed(
            f"`{name}` returned shape {shape}, that is [d_k, d_k]: you summed over "
            "the positions (Qᵀ K). Sum over d_k instead: every query · every key."
        )
    return expect_shape(
        out,
        (T_q, T_k),
        name,
        hint="Q is [T_q, d_k] and K is [T_k, d_k]; the scores are [T_q, T_k].",
    )


def _compare(out, S, d_k, name):
    """Values, after naming the likely mix-ups: transposed or already scaled."""
    expect_finite(out, name)
    if S.shape == S.T.shape and np.allclose(out, S.T) and not np.allclose(S, S.T):
        raise CheckFailed(
            f"`{name}` is transposed: row i must hold query i's scores against "
            "every key. Did you compute K Qᵀ instead of Q Kᵀ?"
        )
    for wrong, why in [(S / np.sqrt(d_k), "divided by √d_k"), (S / d_k, "divided by d_k")]:
        if np.allclose(out, wrong):
            raise CheckFailed(
                f"`{name}` {why}: here we want the raw, unscaled scores Q Kᵀ "
                "(the scaling is notebook 04's topic)."
            )
    expect_close(out, S, name, hint="Entry (i, j) is the dot product of query i with key j.")


def check_attention_scores(attention_scores):
    name = "attention_scores"
    # Square case first: Qᵀ K runs here (and is [d_k, d_k]); K Qᵀ has the right shape, so only
    # the values can give it away.
    Q2 = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 1.0]])  # [2, 3]
    K2 = np.array([[1.0, 0.0, 0.0], [2.0, 0.0, 3.0]])  # [2, 3]
    S2 = np.array([[1.0, 2.0], [0.0, 3.0]])  # Q2 K2ᵀ
    out = _scores_shape(call(attention_scores, Q2, K2, name=name), 2, 2, 3, name)
    _compare(out, S2, 3, name)
    out = _scores_shape(call(attention_scores, _Q, _K, name=name), 3, 2, 2, name)
    _compare(out, _S, 2, name)

    # Properties on random inputs: rows belong to queries, columns to keys.
    rng = np.random.default_rng(3)
    Q, K = rng.standard_normal((5, 4)), rng.standard_normal((7, 4))  # T_q=5, T_k=7, d_k=4
    full = _scores_shape(call(attention_scores, Q, K, name=name), 5, 7, 4, name)
    expect_close(
        call(attention_scores, Q[2:3], K, name=name),
        full[2:3],
        name,
        hint="Query i's scores must be row i, whatever else is in Q.",
        what="the scores of one query, Q[2:3],",
    )
    expect_close(
        call(attention_scores, Q, K[4:6], name=name),
        full[:, 4:6],
        name,
        hint="Key j's scores must be column j.",
        what="the scores against two keys, K[4:6],",
    )
    expect_close(
        call(attention_scores, 2.0 * Q, K, name=name),
        2.0 * full,
        name,
        hint="Doubling every query doubles every score.",
        what="the scores of 2Q",
    )
    out32 = call(attention_scores, Q.astype(np.float32), K.astype(np.float32), name=name)
    expect_close(out32, full, name, atol=1e-4, rtol=1e-4, what="the scores of float32 inputs")
    passed(name)


_BYTES = "a number of bytes"


def _bytes(out, name, call_text):
    """The learner's answer as a number; a number of bytes is whole, so it must be an int."""
    got = as_number(out, name, _BYTES)
    if not is_whole(out):
        kind = type(out).__name__ if isinstance(out, float) else np.asarray(out).dtype
        raise CheckFailed(
            f"`{call_text}` returned {got!r} as a {kind}: a number of bytes is whole, so "
            "return an int (no `/`, or wrap the result in `int(...)`)."
        )
    return int(got)


def check_score_matrix_bytes(score_matrix_bytes):
    name = "score_matrix_bytes"
    got = _bytes(call(score_matrix_bytes, 2, name=name), name, f"{name}(2)")
    # T = 2 with float32: 2 × 2 entries × 4 bytes = 16 bytes.
    if got == 4 * 2:
        raise CheckFailed(
            f"`{name}(2)` gave {got}: that grows linearly in T. The score matrix has "
            "T × T entries (every query against every key)."
        )
    if got == 2 * 2:
        raise CheckFailed(
            f"`{name}(2)` gave {got}: that is the number of entries; each one "
            "takes `dtype_bytes` bytes."
        )
    if got == 2 * 2 * 32:
        raise CheckFailed(
            f"`{name}(2)` gave {got}: that counts bits. Bytes, please (a float32 is 4 bytes)."
        )
    if got != 16:
        raise CheckFailed(f"`{name}(2)` gave {got}, expected 16 (2 × 2 entries × 4 bytes).")
    got = _bytes(call(score_matrix_bytes, 3, 8, name=name), name, f"{name}(3, 8)")
    if got == 3 * 3 * 4:
        raise CheckFailed(
            f"`{name}(3, 8)` gave {got}: use the `dtype_bytes` argument instead of always 4 bytes."
        )
    if got != 72:
        raise CheckFailed(f"`{name}(3, 8)` gave {got}, expected 72 (3 × 3 entries × 8 bytes).")
    small = _bytes(call(score_matrix_bytes, 1024, name=name), name, f"{name}(1024)")
    big = _bytes(call(score_matrix_bytes, 2048, name=name), name, f"{name}(2048)")
    if small != 4 * 2**20 or big != 4 * small:
        raise CheckFailed(
            f"`{name}` gave {small} for T=1024 and {big} for T=2048; expected "
            "4 MiB (4194304) and 4 times that: doubling T quadruples the matrix."
        )
    passed(name)
