"""Visible checks for notebook 07_positions (RoPE).

Hand-worked rotations and properties only: angles chosen so the turned vectors come out as
simple numbers, and "scores depend on the offset only".
"""

import numpy as np

from attnlib.checks._core import (
    CheckFailed,
    as_array,
    call,
    expect_close,
    expect_shape,
    passed,
)

# ----------------------------------------------------------------------------- rope


def check_rope(rope):
    name = "rope"
    # d = 2: one pair, turning at base ** 0 = 1 radian per unit of position.
    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [3.0, 4.0]])  # [T = 4, d = 2]
    positions = np.array([0.0, np.pi / 2, np.pi / 2, np.pi])
    out = expect_shape(
        call(rope, X.copy(), positions.copy(), name=name),
        (4, 2),
        name,
        hint="The result has the shape of X.",
    )
    expect_close(
        out[0],
        X[0],
        name + " at position 0",
        hint="At position 0 the angle is 0: the vector must come back unchanged.",
    )
    if np.allclose(out[1], [0.0, -1.0], atol=1e-6):
        raise CheckFailed(
            "`rope` rotates in the wrong direction: (1, 0) at angle π/2 must become (0, 1). "
            "out₂ᵢ = x₂ᵢ cos − x₂ᵢ₊₁ sin, out₂ᵢ₊₁ = x₂ᵢ sin + x₂ᵢ₊₁ cos."
        )
    if np.allclose(out[1], [np.cos(1.0), np.sin(1.0)], atol=1e-6):
        raise CheckFailed(
            "`rope` ignores `positions` (row 1 was turned by 1 radian, its index): the angle "
            "of row t is positions[t] × frequency."
        )
    expect_close(
        out,
        np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [-3.0, -4.0]]),
        name,
        hint="(1, 0) turned by π/2 is (0, 1); (0, 1) turned by π/2 is (−1, 0); turning by π "
        "flips the sign.",
    )
    _check_pairs_and_frequencies(rope, name)
    _check_offsets_only(rope, name)
    passed(name)


def _check_pairs_and_frequencies(rope, name):
    # d = 4, base = 100: pair 0 turns at 1 rad per position, pair 1 at 100 ** (-2/4) = 0.1.
    out = expect_shape(
        call(rope, np.array([[0.0, 1.0, 0.0, 0.0]]), np.array([np.pi / 2]), 100.0, name=name),
        (1, 4),
        name,
    )
    if abs(out[0, 3]) > 1e-6 or abs(out[0, 2]) > 1e-6:
        raise CheckFailed(
            "`rope` mixes coordinate 1 with coordinate 3: that pairs (i, i + d/2), the halves "
            "convention (rotate_half, as GPT-NeoX and many LLaMA codes). This course pairs "
            "neighbours (2i, 2i+1), as `attnlib.model.rope`."
        )
    X = np.array([[1.0, 0.0, 1.0, 0.0]])  # one vector in each pair
    out = expect_shape(call(rope, X.copy(), np.array([5 * np.pi]), 100.0, name=name), (1, 4), name)
    turned = float(np.arctan2(out[0, 3], out[0, 2]))  # pair 1's angle, mod 2π
    expected = [-1.0, 0.0, 0.0, 1.0]  # pair 0 turned by 5π, pair 1 by 0.5π
    if not np.allclose(out[0], expected, atol=1e-6):
        if np.isclose(turned, np.angle(np.exp(1j * 5 * np.pi * 10000**-0.5))):
            raise CheckFailed(
                "`rope` ignores `base`: called with base = 100 it turned pair 1 at "
                "10000 ** (-2/4) = 0.01 rad per position, the default's rate. Use the "
                "argument: θᵢ = base ** (-2i/d), here 100 ** (-2/4) = 0.1."
            )
        if np.isclose(turned, np.angle(np.exp(1j * 5 * np.pi * 100**-0.25))):
            detail = "base ** (-i/d) with i the pair index"
        elif np.isclose(turned, np.angle(np.exp(1j * 5 * np.pi * 10.0))):
            detail = "base ** (+2i/d)"
        else:
            detail = f"pair 1 turned by {turned:.3f} rad (mod 2π) at position 5π"
        raise CheckFailed(
            f"`rope` uses the wrong frequency exponent ({detail}): pair i turns at "
            "base ** (-2i/d), i = 0 … d/2 − 1; with base 100 and d = 4, pair 1 turns at 0.1 "
            "rad per position, so (1, 0) at position 5π becomes (0, 1)."
        )


def _check_offsets_only(rope, name):
    """Scores of rotated queries and keys depend on positions only through their offset."""
    rng = np.random.default_rng(0)
    Q, K = rng.normal(size=(5, 8)), rng.normal(size=(5, 8))  # [T, d]
    positions = np.array([0, 3, 4, 9, 20])
    scores = {}
    for shift in (0, 100):
        Qr = as_array(call(rope, Q.copy(), positions + shift, name=name), name)
        Kr = as_array(call(rope, K.copy(), positions + shift, name=name), name)
        scores[shift] = Qr @ Kr.T  # [T, T]
    expect_close(
        scores[100],
        scores[0],
        name + " scores after shifting every position by 100",
        hint="Rotating q by angle m·θ and k by n·θ leaves q·k depending on m − n only: use the "
        "same frequencies for every row, and positions[t] for row t.",
    )
    norms = np.linalg.norm(call(rope, Q.copy(), positions, name=name), axis=-1)
    expect_close(
        norms,
        np.linalg.norm(Q, axis=-1),
        name + " vector lengths",
        hint="A rotation keeps every vector's length: x cos − y sin and x sin + y cos.",
    )
    batch = np.stack([Q, K])  # [2, T, d]: one set of positions for every sequence
    out = expect_shape(call(rope, batch.copy(), positions, name=name), (2, 5, 8), name)
    expect_close(
        out[1],
        call(rope, K.copy(), positions, name=name),
        name + "(X)[1]",
        hint="Leading batch dimensions: index the pairs with X[..., 0::2] and X[..., 1::2].",
    )
