"""Hidden checks for notebook 05 (the causal mask)."""

import numpy as np

from grader.hidden import exercise

# ------------------------------------------------------------------ causal_mask


def _mask_cases(rng):
    yield (1,)
    yield (2,)
    for T in rng.integers(3, 12, size=3):
        yield (int(T),)
    yield (int(rng.integers(16, 40)),)


def _future(T):
    return np.triu(np.ones((T, T), dtype=bool), k=1)  # j > i


def _diagonal_masked(T):
    return np.where(np.triu(np.ones((T, T), dtype=bool)), -np.inf, 0.0)


def _transposed(T):
    return np.where(_future(T).T, -np.inf, 0.0)


def _keep_ones(T):
    return np.tril(np.ones((T, T)))


def _block_ones(T):
    return _future(T).astype(float)


def _large_negative(value):
    return lambda T: np.where(_future(T), value, 0.0)


@exercise(
    "causal_mask",
    shortcuts={"attnlib": {"causal_mask"}},
    cases=_mask_cases,
    mistakes=[
        (
            _diagonal_masked,
            "`causal_mask` masks the diagonal (j ≥ i); a position may look at itself, "
            "only j > i is -inf.",
        ),
        (
            _transposed,
            "`causal_mask` is transposed: it masks the past (j < i) instead of the future.",
        ),
        (
            _keep_ones,
            "`causal_mask` returned a 0/1 (multiplicative) mask; it must be additive: 0 where "
            "j ≤ i, -inf where j > i.",
        ),
        (
            _block_ones,
            "`causal_mask` puts 1 on the future entries; it must be additive: -inf there, "
            "0 elsewhere.",
        ),
    ]
    + [
        (_large_negative(v), f"`causal_mask` uses {v:g} for the future; expected -np.inf exactly.")
        for v in (
            -1e4,
            -1e6,
            -1e9,
            -1e10,
            -1e12,
            -1e20,
            -1e30,
            np.finfo(np.float64).min,
            np.finfo(np.float32).min,
        )
    ],
)
def causal_mask(T):
    return np.where(_future(T), -np.inf, 0.0)


# ------------------------------------------------------------------ future_leak


class _Fn:
    """A sequence function the hidden cases pass to future_leak."""

    def __init__(self, fn, label):
        self.fn, self.label = fn, label

    def __call__(self, X):
        return np.array(self.fn(np.asarray(X, dtype=float)), dtype=float)  # fresh, contiguous

    def __repr__(self):
        return self.label


def _causal_attention(rng, d):
    """Random single-head causal attention on X [T, d] (exactly causal)."""
    W = rng.normal(size=(3, d, d)) / np.sqrt(d)

    def f(X):
        Q, K, V = X @ W[0], X @ W[1], X @ W[2]
        S = Q @ K.T / np.sqrt(d)
        S = np.where(_future(len(X)), -np.inf, S)
        A = np.exp(S - S.max(axis=-1, keepdims=True))
        return (A / A.sum(axis=-1, keepdims=True)) @ V

    return f


def _functions(rng, d):
    k = int(rng.integers(1, 3))
    return [
        _Fn(_causal_attention(rng, d), "causal attention"),
        _Fn(lambda X: np.cumsum(X, axis=0), "running sum"),
        _Fn(lambda X: np.roll(X, -k, axis=0) * 1.5, f"reads {k} position(s) ahead"),
        _Fn(lambda X: np.broadcast_to(X.mean(axis=0), X.shape) + X, "adds the global mean"),
        _Fn(lambda X: np.cumsum(X[::-1], axis=0)[::-1], "suffix sum"),
    ]


def _leak_cases(rng):
    for _ in range(2):
        T, d = int(rng.integers(4, 10)), int(rng.integers(2, 5))
        for f in _functions(rng, d):
            X, X_alt = rng.normal(size=(T, d)), rng.normal(size=(T, d)) + 1
            yield (f, X, X_alt, int(rng.integers(1, T)))
    T, d = int(rng.integers(4, 10)), int(rng.integers(1, 4))
    mean = _Fn(lambda X: np.broadcast_to(X.mean(axis=0), X.shape), "the global mean")
    for shift in (3.0, -3.0):  # every earlier output moves the same way: signs matter
        X = rng.normal(size=(T, d))
        yield (mean, X, X + shift, int(rng.integers(1, T)))
    T = int(rng.integers(5, 12))  # 1-D token ids
    tokens, other = rng.integers(0, 20, size=T), rng.integers(0, 20, size=T)
    yield (_Fn(lambda X: np.cumsum(X[::-1])[::-1], "suffix sum of tokens"), tokens, other, T // 2)


def _changed(X, X_alt, t):
    X2 = X.copy()
    X2[t:] = X_alt[t:]
    return X2


def _upto_t(f, X, X_alt, t):
    return np.abs(f(X) - f(_changed(X, X_alt, t)))[: t + 1].max()


def _all_positions(f, X, X_alt, t):
    return np.abs(f(X) - f(_changed(X, X_alt, t))).max()


def _replaced_past(f, X, X_alt, t):
    X2 = X.copy()
    X2[:t] = X_alt[:t]
    return np.abs(f(X) - f(X2))[:t].max()


def _signed(f, X, X_alt, t):
    return (f(X) - f(_changed(X, X_alt, t)))[:t].max()


def _signed_other_way(f, X, X_alt, t):
    return (f(_changed(X, X_alt, t)) - f(X))[:t].max()


def _mean(f, X, X_alt, t):
    return np.abs(f(X) - f(_changed(X, X_alt, t)))[:t].mean()


def _aliased(f, X, X_alt, t):
    return 0.0  # X2 = X; X2[t:] = ...: both calls see the same array


@exercise(
    "future_leak",
    cases=_leak_cases,
    mistakes=[
        (_aliased, "`future_leak` always finds 0: did `X2 = X` change X itself? Use X.copy()."),
        (
            _upto_t,
            "`future_leak` compares position t too; only positions before t (rows [:t]) count.",
        ),
        (_all_positions, "`future_leak` compares every position; only positions before t count."),
        (_replaced_past, "`future_leak` replaces the rows before t; keep X[:t], take X_alt[t:]."),
        (_signed, "`future_leak` forgets the absolute value of the differences."),
        (_signed_other_way, "`future_leak` forgets the absolute value of the differences."),
        (_mean, "`future_leak` averages the changes; return the largest one (max)."),
    ],
)
def future_leak(f, X, X_alt, t):
    return float(np.abs(f(X) - f(_changed(X, X_alt, t)))[:t].max())
