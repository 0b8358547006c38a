"""Visible checks for notebook 04 (why divide by √d_k)."""

import numbers

import numpy as np

from attnlib.checks._core import (
    CheckFailed,
    as_number,
    call,
    expect_close,
    expect_finite,
    expect_shape,
    passed,
)

# Hand-worked: d_k = 4, so √d_k = 2; T_q = 3 queries and T_k = 2 keys (every wrong divisor
# below gives different numbers: d_k = 4, √T_k = √2, √T_q = √3).
_Q = np.array([[1.0, 1.0, 1.0, 1.0], [2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])  # [3, 4]
_K = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]])  # [2, 4]
_RAW = np.array([[4.0, 1.0], [2.0, 2.0], [1.0, 0.0]])  # Q Kᵀ, [3, 2]


def _name_the_divisor(out, raw, d_k, T_q, T_k, name):
    """Compare with raw / √d_k, after checking the divisors people reach for by mistake."""
    expect_finite(out, name)
    if (
        raw.shape == raw.T.shape
        and np.allclose(out, raw.T / np.sqrt(d_k))
        and not np.allclose(raw, raw.T)
    ):
        raise CheckFailed(f"`{name}` is transposed: rows must be queries (Q Kᵀ, not K Qᵀ).")
    wrong = [
        (raw, "forgot to scale: divide Q Kᵀ by √d_k."),
        (raw / d_k, "divided by d_k instead of √d_k (the spread of q·k grows like √d_k)."),
        (raw / np.sqrt(T_k), "divided by √T (the number of keys): use √d_k, d_k = Q.shape[-1]."),
        (raw / np.sqrt(T_q), "divided by √T (the number of queries): use √d_k, d_k = Q.shape[-1]."),
        (raw * np.sqrt(d_k), "multiplied by √d_k: divide instead."),
    ]
    for candidate, why in wrong:
        if np.allclose(out, candidate) and not np.allclose(out, raw / np.sqrt(d_k)):
            raise CheckFailed(f"`{name}` {why}")
    nonzero = np.abs(out) > 1e-12
    if nonzero.any():
        ratio = raw[nonzero] / out[nonzero]
        if np.allclose(ratio, ratio[0]) and not np.isclose(ratio[0], np.sqrt(d_k)):
            c2 = ratio[0] ** 2
            raise CheckFailed(
                f"`{name}` divided by a fixed √{c2:.4g} instead of √d_k = √{d_k}. "
                "Is that d_model or a hard-coded size? Read d_k from the inputs "
                "(Q.shape[-1])."
            )
    expect_close(out, raw / np.sqrt(d_k), name, hint="scaled scores = Q Kᵀ / √d_k.")


def check_scaled_scores(scaled_scores):
    name = "scaled_scores"
    out = call(scaled_scores, _Q, _K, name=name)
    if getattr(out, "shape", None) == (2, 3):
        raise CheckFailed(
            f"`{name}` returned shape (2, 3), expected (3, 2): rows must be "
            "queries. Did you compute K Qᵀ instead of Q Kᵀ?"
        )
    out = expect_shape(
        out, (3, 2), name, hint="Q is [T_q, d_k], K is [T_k, d_k]: scores are [T_q, T_k]."
    )
    _name_the_divisor(out, _RAW, 4, 3, 2, name)

    # d_k = 9 (√d_k = 3): catches a divisor that does not follow the inputs.
    Q9, K9 = np.ones((2, 9)), np.ones((3, 9))  # every raw score is 9
    out = expect_shape(call(scaled_scores, Q9, K9, name=name), (2, 3), name)
    _name_the_divisor(out, np.full((2, 3), 9.0), 9, 2, 3, name)

    # Property: unit-variance q and k give scaled scores of standard deviation about 1.
    rng = np.random.default_rng(4)
    Q, K = rng.standard_normal((200, 256)), rng.standard_normal((100, 256))  # d_k = 256
    out = expect_shape(call(scaled_scores, Q, K, name=name), (200, 100), name)
    std = float(np.std(out))
    if not 0.85 < std < 1.15:
        raise CheckFailed(
            f"`{name}` on unit-variance Q, K with d_k = 256 gave scores with "
            f"std {std:.3g}; dividing by √d_k should bring it to about 1."
        )
    out32 = call(scaled_scores, Q.astype(np.float32), K.astype(np.float32), name=name)
    expect_close(out32, out, name, atol=1e-4, rtol=1e-4, what="the scores of float32 inputs")
    passed(name)


def check_softmax_entropy(softmax_entropy):
    name = "softmax_entropy"
    A = np.array(
        [  # [N=3, T=4] rows of attention weights
            [0.25, 0.25, 0.25, 0.25],  # uniform: ln 4
            [0.5, 0.5, 0.0, 0.0],  # two keys: ln 2
            [0.7, 0.1, 0.1, 0.1],  # -(0.7 ln 0.7 + 0.3 ln 0.1)
        ]
    )
    want = np.array([np.log(4), np.log(2), -(0.7 * np.log(0.7) + 0.3 * np.log(0.1))])
    out = call(softmax_entropy, A, name=name)
    shape = getattr(out, "shape", None)
    if shape == (4,):
        raise CheckFailed(
            f"`{name}` returned shape (4,) for 3 rows of 4 weights: that is one "
            "value per column. Sum over the keys (axis=-1), one entropy per row."
        )
    if shape == () or isinstance(out, numbers.Real):
        raise CheckFailed(
            f"`{name}` returned a single number for 3 rows: sum over the last "
            "axis only (axis=-1), one entropy per row."
        )
    out = expect_shape(out, (3,), name, hint="One entropy per row: [N, T] -> [N].")
    if np.isnan(out[1]) and not np.isnan(out[0]):
        raise CheckFailed(
            f"`{name}` gave NaN for a row with zero weights: 0 · log 0 is NaN in "
            "NumPy but counts as 0 in the entropy (np.where, or skip p = 0)."
        )
    expect_finite(out, name)
    if np.allclose(out, want / np.log(2)):
        raise CheckFailed(
            f"`{name}` used log base 2 (bits). This course measures entropy in "
            "nats, with the natural log np.log (uniform over T keys gives ln T)."
        )
    if np.allclose(out, -want):
        raise CheckFailed(f"`{name}` has the wrong sign: entropy is −Σ p log p (always ≥ 0).")
    if np.allclose(out, want / A.shape[-1]):
        raise CheckFailed(
            f"`{name}` averaged over the 4 keys instead of summing: H = −Σ_j p_j ln p_j."
        )
    expect_close(out, want, name, hint="H = −Σ_j p_j ln p_j over each row, in nats.")

    one_hot = np.eye(5)[[0, 3]]  # [2, 5]: all weight on one key
    out = expect_shape(call(softmax_entropy, one_hot, name=name), (2,), name)
    if np.isnan(out).any():
        raise CheckFailed(
            f"`{name}` gave NaN for a one-hot row: 0 · log 0 is NaN in NumPy but "
            "counts as 0 in the entropy."
        )
    expect_close(
        out, np.zeros(2), name, hint="A one-hot row has entropy 0.", what="two one-hot rows"
    )
    uniform = np.full((1, 64), 1 / 64)
    expect_close(
        call(softmax_entropy, uniform, name=name),
        np.array([np.log(64)]),
        name,
        hint="Uniform over T keys gives ln T.",
        what="a row uniform over 64 keys",
    )
    passed(name)


def _share(out, name):
    return as_number(out, name, "one number, the share of rows (between 0 and 1)")


def check_near_one_hot_share(near_one_hot_share):
    name = "near_one_hot_share"
    A = np.array(
        [  # [N=4, T=3]; row maxima 0.95, 0.5, 0.7, 1.0; column maxima 0.95, 0.7, 1.0
            [0.95, 0.05, 0.0],
            [0.5, 0.5, 0.0],
            [0.2, 0.7, 0.1],
            [0.0, 0.0, 1.0],
        ]
    )
    got = _share(call(near_one_hot_share, A, name=name), name)
    if np.isclose(got, 2):
        raise CheckFailed(
            f"`{name}` returned a count (2): divide by the number of rows to get a share."
        )
    if np.isclose(got, 2 / 12):
        raise CheckFailed(
            f"`{name}` averaged over all N·T weights: the share is over rows, "
            "using each row's largest weight."
        )
    if np.isclose(got, 2 / 3):
        raise CheckFailed(
            f"`{name}` took the maximum over axis 0 (each key's column): use each "
            "row's maximum, axis=-1."
        )
    if not np.isclose(got, 0.5):
        raise CheckFailed(
            f"`{name}` gave {got:.4g}, expected 0.5: 2 of the 4 rows have a largest "
            "weight above 0.9."
        )
    got = _share(call(near_one_hot_share, A, 0.6, name=name), name)
    if np.isclose(got, 0.5):
        raise CheckFailed(
            f"`{name}(A, 0.6)` gave 0.5, the answer for 0.9: use the `threshold` argument."
        )
    if not np.isclose(got, 0.75):
        raise CheckFailed(
            f"`{name}(A, 0.6)` gave {got:.4g}, expected 0.75 (3 of 4 row maxima are above 0.6)."
        )
    got = _share(call(near_one_hot_share, A, 0.5, name=name), name)
    if np.isclose(got, 1.0):  # row 1's largest weight is exactly 0.5
        raise CheckFailed(
            f"`{name}(A, 0.5)` gave 1.0: it counted the row [0.5, 0.5, 0] whose largest "
            "weight equals the threshold. Above means `>`, not `>=`: expected 0.75."
        )
    if not np.isclose(got, 0.75):
        raise CheckFailed(
            f"`{name}(A, 0.5)` gave {got:.4g}, expected 0.75 (3 of 4 row maxima are above 0.5)."
        )
    got = _share(call(near_one_hot_share, A, threshold=0.3, name=name), name)
    if np.isclose(got, 5 / 4):
        raise CheckFailed(
            f"`{name}(A, 0.3)` gave 1.25: it counted every weight above the "
            "threshold. Count rows whose largest weight is above it."
        )
    if not np.isclose(got, 1.0):
        raise CheckFailed(
            f"`{name}(A, 0.3)` gave {got:.4g}, expected 1.0 (every row maximum is above 0.3)."
        )
    passed(name)
