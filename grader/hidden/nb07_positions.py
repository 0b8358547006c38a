"""Hidden checks and the mistake catalogue for notebook 07_positions (RoPE)."""

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from grader.hidden import Alternative, Array, Mistake, edited, exercise
from grader.hidden.nb07_heads import MODEL_HEADS

# --------------------------------------------------------------------------- rope


def _rope_cases(
    rng: np.random.Generator,
) -> Iterator[tuple[Array, npt.NDArray[np.integer], float]]:
    for lead, T, d, positions, base in [
        ((), 5, 8, "arange", 10000.0),
        ((), 6, 4, "random", 10000.0),
        ((2,), 4, 6, "shifted", 100.0),
        ((2, 3), 3, 8, "random", 10.0),
        ((), 4, 2, "random", 10000.0),
        ((), 7, 16, "arange", 500.0),
    ]:
        pos = {
            "arange": np.arange(T),
            "random": rng.integers(0, 200, size=T),
            "shifted": np.arange(T) + 1000,
        }[positions]
        yield rng.normal(size=(*lead, T, d)), pos, base


# The answer its mistakes slip in, each named by the edit that makes it.
_ROPE = """
def rope(X, positions, base=10000.0):
    d = X.shape[-1]
    theta = base ** (-np.arange(0, d, 2) / d)  # [d/2]
    angle = np.asarray(positions, dtype=float)[:, None] * theta  # [T, d/2]
    cos, sin = np.cos(angle), np.sin(angle)
    out = np.empty(X.shape)
    out[..., 0::2] = X[..., 0::2] * cos - X[..., 1::2] * sin
    out[..., 1::2] = X[..., 0::2] * sin + X[..., 1::2] * cos
    return out
"""
_ROTATE_EVEN = "out[..., 0::2] = X[..., 0::2] * cos - X[..., 1::2] * sin"
_ROTATE_ODD = "out[..., 1::2] = X[..., 0::2] * sin + X[..., 1::2] * cos"
_FREQUENCIES = "-np.arange(0, d, 2) / d"


@exercise(
    "rope",
    cases=_rope_cases,
    shortcuts={**MODEL_HEADS, "attnlib": {"rope", *MODEL_HEADS["attnlib"]}},
    mistakes=[
        Mistake(
            "halves",
            edited(
                _ROPE,
                (
                    f"    out = np.empty(X.shape)\n    {_ROTATE_EVEN}\n    {_ROTATE_ODD}\n"
                    "    return out",
                    "    x1, x2 = X[..., : d // 2], X[..., d // 2 :]  # pairs (i, i + d/2)\n"
                    "    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)",
                ),
            ),
            says=("halves", "neighbours"),
            message="`rope` rotates the pairs (i, i + d/2), the halves convention "
            "(rotate_half, as GPT-NeoX and many LLaMA codes): this course pairs neighbours "
            "(2i, 2i+1), as `attnlib.model.rope`.",
        ),
        Mistake(
            "wrong-direction",
            edited(
                _ROPE,
                (_ROTATE_EVEN, "out[..., 0::2] = X[..., 0::2] * cos + X[..., 1::2] * sin"),
                (_ROTATE_ODD, "out[..., 1::2] = -X[..., 0::2] * sin + X[..., 1::2] * cos"),
            ),
            says=("direction",),
            message="`rope` rotates in the wrong direction: out₂ᵢ = x₂ᵢ cos − x₂ᵢ₊₁ sin, "
            "out₂ᵢ₊₁ = x₂ᵢ sin + x₂ᵢ₊₁ cos.",
        ),
        Mistake(
            "ignores-base",
            edited(_ROPE, ("theta = base **", "theta = 10000.0 **")),
            says=("ignores `base`",),
            message="`rope` ignores `base`: it turns the pairs at 10000 ** (-2i/d) whatever "
            "base it is given. Use the argument: θᵢ = base ** (-2i/d).",
        ),
        Mistake(
            "exponent-i-over-d",
            edited(_ROPE, (_FREQUENCIES, "-np.arange(d // 2) / d")),
            says=("exponent",),
            message="`rope` uses the wrong frequency exponent: pair i turns at "
            "base ** (-2i/d), i = 0 … d/2 − 1.",
        ),
        Mistake(
            "exponent-positive",
            edited(_ROPE, (_FREQUENCIES, "np.arange(0, d, 2) / d")),
            says=("exponent",),
            message="`rope` uses the wrong frequency exponent (base ** (+2i/d)): pair i turns "
            "at base ** (-2i/d), slower for larger i.",
        ),
        Mistake(
            "positions-ignored",
            edited(_ROPE, ("np.asarray(positions, dtype=float)", "np.arange(X.shape[-2])")),
            says=("positions",),
            message="`rope` ignores `positions` (it rotates row t by t): use positions[t].",
        ),
    ],
    alternatives=[
        Alternative(
            "complex-numbers",
            """
            def rope(X, positions, base=10000.0):
                d = X.shape[-1]
                z = X[..., 0::2] + 1j * X[..., 1::2]  # pair i as one complex number
                theta = base ** (-np.arange(0, d, 2) / d)
                z = z * np.exp(1j * np.outer(positions, theta))  # turn by the angle
                return np.stack([z.real, z.imag], axis=-1).reshape(X.shape)
            """,
        ),
        Alternative(
            "loops",
            """
            def rope(X, positions, base=10000.0):
                import math

                d = X.shape[-1]
                out = np.array(X, dtype=float)
                for t, p in enumerate(positions):
                    for i in range(d // 2):
                        a = p * base ** (-2 * i / d)
                        x, y = X[..., t, 2 * i], X[..., t, 2 * i + 1]
                        out[..., t, 2 * i] = x * math.cos(a) - y * math.sin(a)
                        out[..., t, 2 * i + 1] = x * math.sin(a) + y * math.cos(a)
                return out
            """,
        ),
        Alternative(
            "rotation-matrices",
            """
            def rope(X, positions, base=10000.0):
                d = X.shape[-1]
                angle = np.outer(positions, base ** (-np.arange(0, d, 2) / d))  # [T, d/2]
                c, s = np.cos(angle), np.sin(angle)
                R = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)  # [T, d/2, 2, 2]
                pairs = X.reshape(*X.shape[:-1], d // 2, 2)
                return np.einsum("tiab,...tib->...tia", R, pairs).reshape(X.shape)
            """,
        ),
    ],
)
def rope(X: Array, positions: npt.ArrayLike, base: float = 10000.0) -> Array:
    d = X.shape[-1]
    angle = np.asarray(positions, dtype=float)[:, None] * base ** (-np.arange(0, d, 2) / d)
    cos, sin = np.cos(angle), np.sin(angle)  # [T, d/2]
    x_even, x_odd = X[..., 0::2], X[..., 1::2]  # the pairs (x_2i, x_2i+1)
    out = np.empty(np.shape(X))
    out[..., 0::2] = x_even * cos - x_odd * sin
    out[..., 1::2] = x_even * sin + x_odd * cos
    return out
