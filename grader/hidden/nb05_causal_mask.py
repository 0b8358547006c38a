"""Hidden checks for notebook 05 (the causal mask)."""

from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

from grader.hidden import Alternative, Array, Mistake, exercise

Inputs = npt.NDArray[np.float64 | np.int64]  # a sequence: X [T, d], or token ids [T]

# ------------------------------------------------------------------ causal_mask


def _mask_cases(rng: np.random.Generator) -> Iterator[tuple[int]]:
    yield (1,)
    yield (2,)
    for T in rng.integers(3, 12, size=3):
        yield (int(T),)
    yield (int(rng.integers(16, 40)),)


def _future(T: int) -> npt.NDArray[np.bool_]:
    return np.triu(np.ones((T, T), dtype=bool), k=1)  # j > i


def _large_negative(label: str, fill: str, value: float) -> Mistake:
    """A mask with the large negative ``fill`` (source text, worth ``value``) for −∞."""
    return Mistake(
        label,
        f"""
        def causal_mask(T):
            return np.triu(np.full((T, T), {fill}), k=1)
        """,
        says=("-np.inf exactly",),
        message=f"`causal_mask` uses {value:g} for the future; expected -np.inf exactly.",
    )


@exercise(
    "causal_mask",
    shortcuts={"attnlib": {"causal_mask"}},
    cases=_mask_cases,
    mistakes=[
        Mistake(
            "diagonal-masked",
            """
            def causal_mask(T):
                return np.triu(np.full((T, T), -np.inf))
            """,
            says=("masks the diagonal",),
            message="`causal_mask` masks the diagonal (j ≥ i); a position may look at itself, "
            "only j > i is -inf.",
        ),
        Mistake(
            "transposed",
            """
            def causal_mask(T):
                return np.tril(np.full((T, T), -np.inf), k=-1)
            """,
            says=("transposed",),
            message="`causal_mask` is transposed: it masks the past (j < i) instead of the future.",
        ),
        Mistake(
            "multiplicative",
            """
            def causal_mask(T):
                return np.tril(np.ones((T, T)))
            """,
            says=("0/1", "additive"),
            message="`causal_mask` returned a 0/1 (multiplicative) mask; it must be additive: "
            "0 where j ≤ i, -inf where j > i.",
        ),
        Mistake(
            "boolean",
            """
            def causal_mask(T):
                return np.triu(np.ones((T, T), dtype=bool), k=1)
            """,
            says=("additive",),
            message="`causal_mask` puts 1 (True) on the future entries; it must be additive: "
            "-inf there, 0 elsewhere.",
        ),
        _large_negative("minus-1e9", "-1e9", -1e9),
        _large_negative("minus-1e4", "-1e4", -1e4),
        _large_negative("float64-min", "np.finfo(np.float64).min", np.finfo(np.float64).min),
        Mistake(
            "nan-from-multiplying",
            """
            def causal_mask(T):
                return (1 - np.tril(np.ones((T, T)))) * -np.inf
            """,
            says=("0 * (-np.inf)",),
            message="`causal_mask` contains NaN: 0 * (-np.inf) is NaN, so build the mask with "
            "np.where(...) or np.triu(...) instead of multiplying by -np.inf.",
        ),
        Mistake(
            "fixed-size",
            """
            def causal_mask(T):
                return np.triu(np.full((4, 4), -np.inf), k=1)
            """,
            says=("shape (4, 4)",),
        ),
    ],
    alternatives=[
        Alternative(
            "loops",
            """
            def causal_mask(T):
                M = np.zeros((T, T))
                for i in range(T):
                    for j in range(T):
                        if j > i:
                            M[i, j] = -np.inf
                return M
            """,
        ),
        Alternative(
            "where",
            """
            def causal_mask(T):
                i, j = np.indices((T, T))
                return np.where(j > i, -np.inf, 0.0)
            """,
        ),
        Alternative(
            "torch",
            """
            def causal_mask(T):
                import torch

                return torch.full((T, T), float("-inf")).triu(1).double().numpy()
            """,
        ),
    ],
)
def causal_mask(T: int) -> Array:
    return np.where(_future(T), -np.inf, 0.0)


# ------------------------------------------------------------------ future_leak


class _Fn:
    """A sequence function the hidden cases pass to future_leak."""

    def __init__(self, fn: Callable[[Array], npt.ArrayLike], label: str) -> None:
        self.fn, self.label = fn, label

    def __call__(self, X: npt.ArrayLike) -> Array:
        return np.array(self.fn(np.asarray(X, dtype=float)), dtype=float)  # fresh, contiguous

    def __repr__(self) -> str:
        return self.label


def _causal_attention(rng: np.random.Generator, d: int) -> Callable[[Array], Array]:
    """Random single-head causal attention on X [T, d] (exactly causal)."""
    W = rng.normal(size=(3, d, d)) / np.sqrt(d)

    def f(X: Array) -> Array:
        Q, K, V = X @ W[0], X @ W[1], X @ W[2]
        S = Q @ K.T / np.sqrt(d)
        S = np.where(_future(len(X)), -np.inf, S)
        A = np.exp(S - S.max(axis=-1, keepdims=True))
        out: Array = (A / A.sum(axis=-1, keepdims=True)) @ V
        return out

    return f


def _functions(rng: np.random.Generator, d: int) -> list[_Fn]:
    k = int(rng.integers(1, 3))
    return [
        _Fn(_causal_attention(rng, d), "causal attention"),
        _Fn(lambda X: np.cumsum(X, axis=0), "running sum"),
        _Fn(lambda X: np.roll(X, -k, axis=0) * 1.5, f"reads {k} position(s) ahead"),
        _Fn(lambda X: np.broadcast_to(X.mean(axis=0), X.shape) + X, "adds the global mean"),
        _Fn(lambda X: np.cumsum(X[::-1], axis=0)[::-1], "suffix sum"),
    ]


def _reads_row(offset: int, t: int) -> _Fn:
    return _Fn(lambda X: np.broadcast_to(X[t + offset], X.shape), f"reads position {t + offset}")


def _leak_cases(rng: np.random.Generator) -> Iterator[tuple[_Fn, Inputs, Inputs, int]]:
    """Three cases first that tell the slips apart (each slip fails first where its answer
    differs from every slip listed before it in the catalogue), then random functions. The
    future only ever grows (X_alt > X), so a forgotten abs shows only where signs matter."""
    T, d = int(rng.integers(5, 10)), int(rng.integers(2, 5))
    t = int(rng.integers(2, T - 1))  # 2 ≤ t ≤ T − 2: rows t − 1 and t + 1 exist
    X = rng.normal(size=(T, d))
    yield (_Fn(lambda X: X, "f(X) = X"), X, rng.normal(size=(T, d)) + 1, t)
    for offset in (1, 0):  # every output reads row t + 1, then row t
        yield (_reads_row(offset, t), X, X + rng.uniform(0.5, 2.0, size=(T, d)), t)
    for _ in range(2):
        T, d = int(rng.integers(4, 10)), int(rng.integers(2, 5))
        for f in _functions(rng, d):
            X = rng.normal(size=(T, d))
            yield (f, X, X + rng.uniform(0.5, 2.0, size=(T, d)), int(rng.integers(1, T)))
    T, d = int(rng.integers(4, 10)), int(rng.integers(1, 4))
    mean = _Fn(lambda X: np.broadcast_to(X.mean(axis=0), X.shape), "the global mean")
    for shift in (3.0, -3.0):  # every earlier output moves the same way: signs matter
        X = rng.normal(size=(T, d))
        yield (mean, X, X + shift, int(rng.integers(1, T)))
    T = int(rng.integers(5, 12))  # 1-D token ids
    tokens, other = rng.integers(0, 20, size=T), rng.integers(0, 20, size=T)
    yield (_Fn(lambda X: np.cumsum(X[::-1])[::-1], "suffix sum of tokens"), tokens, other, T // 2)


def _changed(X: Inputs, X_alt: Inputs, t: int) -> Inputs:
    X2 = X.copy()
    X2[t:] = X_alt[t:]
    return X2


def _leak_mistake(
    label: str,
    changed: str,
    compared: str,
    says: tuple[str, ...],
    message: str | None = None,
    caught_by: str = "both",
) -> Mistake:
    """A future_leak that builds X2 with ``changed`` and returns ``compared``, as a learner
    would write it."""
    return Mistake(
        label,
        f"""
        def future_leak(f, X, X_alt, t):
            {changed}
            return {compared}
        """,
        says=says,
        message=message,
        caught_by=caught_by,
    )


_COPY = "X2 = X.copy()\n            X2[t:] = X_alt[t:]"


@exercise(
    "future_leak",
    cases=_leak_cases,
    mistakes=[
        _leak_mistake(
            "includes-t",
            _COPY,
            "float(np.abs(f(X) - f(X2))[: t + 1].max())",
            says=("rows [:t]",),
            message="`future_leak` compares position t too; only positions before t count, "
            "rows [:t].",
        ),
        _leak_mistake(
            "every-position",
            _COPY,
            "float(np.abs(f(X) - f(X2)).max())",
            says=("rows [:t]",),
            message="`future_leak` compares every position; only positions before t count, "
            "rows [:t].",
        ),
        _leak_mistake(
            "misses-t-minus-1",
            _COPY,
            "float(np.abs(f(X) - f(X2))[: t - 1].max())",
            says=("rows [:t]",),
            message="`future_leak` compares only the positions before t−1: position t−1 "
            "counts too, rows [:t].",
        ),
        _leak_mistake(
            "replaces-after-t",
            "X2 = X.copy()\n            X2[t + 1 :] = X_alt[t + 1 :]",
            "float(np.abs(f(X) - f(X2))[:t].max())",
            says=("X2[t:] = X_alt[t:]",),
            message="`future_leak` keeps row t from X: the future starts at t itself, "
            "X2[t:] = X_alt[t:].",
        ),
        _leak_mistake(
            "aliased",
            "X2 = X\n            X2[t:] = X_alt[t:]",
            "float(np.abs(f(X) - f(X2))[:t].max())",
            says=("in place",),
            message="`future_leak` always finds 0: `X2 = X` changes X in place too, so f sees "
            "the same sequence twice. Use X2 = X.copy().",
        ),
        _leak_mistake(
            "replaces-past",
            "X2 = X.copy()\n            X2[:t] = X_alt[:t]",
            "float(np.abs(f(X) - f(X2))[:t].max())",
            says=("keep X[:t]",),
            message="`future_leak` replaces the rows before t; keep X[:t] and take the future "
            "rows X[t:] from X_alt.",
        ),
        _leak_mistake(
            "no-abs",
            _COPY,
            "float((f(X2) - f(X))[:t].max())",
            says=("np.abs",),
            message="`future_leak` forgets the absolute value of the differences: a change "
            "counts in either direction, np.abs(...).",
        ),
        _leak_mistake(
            "no-abs-other-way",
            _COPY,
            "float((f(X) - f(X2))[:t].max())",
            says=("np.abs",),
            message="`future_leak` forgets the absolute value of the differences: a change "
            "counts in either direction, np.abs(...).",
        ),
        _leak_mistake(
            "mean",
            _COPY,
            "float(np.abs(f(X) - f(X2))[:t].mean())",
            says=("largest",),
            message="`future_leak` averages the changes; return the largest one (`.max()`).",
        ),
        _leak_mistake(
            "sum",
            _COPY,
            "float(np.abs(f(X) - f(X2))[:t].sum())",
            says=("largest",),
            message="`future_leak` adds up the changes; return the largest one (`.max()`).",
        ),
        _leak_mistake(
            "array",
            _COPY,
            "np.abs(f(X) - f(X2))[:t]",
            says=("one number",),
        ),
    ],
    alternatives=[
        Alternative(
            "loop-over-positions",
            """
            def future_leak(f, X, X_alt, t):
                changed = np.concatenate([X[:t], X_alt[t:]])
                before, after = f(X), f(changed)
                return max(float(np.max(np.abs(before[i] - after[i]))) for i in range(t))
            """,
        ),
        Alternative(
            "torch",
            """
            def future_leak(f, X, X_alt, t):
                import torch

                X2 = np.array(X, copy=True)
                X2[t:] = X_alt[t:]
                diff = torch.from_numpy(np.asarray(f(X), float)) - torch.from_numpy(
                    np.asarray(f(X2), float)
                )
                return diff[:t].abs().max().item()
            """,
        ),
    ],
)
def future_leak(f: Callable[[Inputs], Array], X: Inputs, X_alt: Inputs, t: int) -> float:
    return float(np.abs(f(X) - f(_changed(X, X_alt, t)))[:t].max())
