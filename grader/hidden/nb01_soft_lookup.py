"""Hidden checks and the mistake catalogue for notebook 01 (soft lookup)."""

from collections.abc import Iterator

import numpy as np

from grader.hidden import Alternative, Array, Mistake, exercise


def _softmax_cases(rng: np.random.Generator) -> Iterator[tuple[Array] | tuple[Array, int]]:
    yield (rng.normal(size=7) * 3,)
    yield (rng.normal(size=(4, 6)) * 5,)
    yield (rng.normal(size=(2, 3, 5)) * 10 + 900,)
    yield (rng.normal(size=(5, 4)), 0)
    spread = rng.normal(size=(3, 6))
    spread[:, 0] += 1000.0  # one score far above the rest and one far below: only the
    spread[:, -1] -= 1000.0  # row maximum keeps every exponent finite
    yield (rng.permuted(spread, axis=1),)
    yield (rng.normal(size=(3, 5)) + np.array([[0.0], [900.0], [-900.0]]),)  # rows far apart


@exercise(
    "softmax",
    cases=_softmax_cases,
    shortcuts={
        "torch": {
            "softmax",
            "log_softmax",
            "_softmax",
            "_log_softmax",
            "special_softmax",
            "special_log_softmax",
            "Softmax",
            "LogSoftmax",
        },
        "scipy.special": {"softmax", "log_softmax"},
        "attnlib": {"softmax_weights"},
    },
    mistakes=[
        Mistake(
            "wrong-axis",
            """
            def softmax(x, axis=-1):
                e = np.exp(x - x.max(axis=0, keepdims=True))
                return e / e.sum(axis=0, keepdims=True)
            """,
            says=("axis",),
            message="`softmax` normalises over the wrong axis: rows of weights must sum to 1 "
            "along `axis`.",
        ),
        Mistake(
            "whole-array",
            """
            def softmax(x, axis=-1):
                e = np.exp(x - x.max())
                return e / e.sum()
            """,
            says=("whole array",),
            message="`softmax` normalises the whole array at once instead of along `axis`.",
        ),
        Mistake(
            "subtracts-minimum",
            """
            def softmax(x, axis=-1):
                e = np.exp(x - x.min(axis=axis, keepdims=True))
                return e / e.sum(axis=axis, keepdims=True)
            """,
            says=("each row's maximum",),
            message="`softmax` subtracts each row's minimum, so exp overflows when a row's "
            "scores are far apart: subtract each row's maximum.",
        ),
        Mistake(
            "subtracts-mean",
            """
            def softmax(x, axis=-1):
                e = np.exp(x - x.mean(axis=axis, keepdims=True))
                return e / e.sum(axis=axis, keepdims=True)
            """,
            says=("each row's maximum",),
            message="`softmax` subtracts each row's mean, so exp overflows when a row's "
            "scores are far apart: subtract each row's maximum.",
        ),
        Mistake(
            "overflows",
            """
            def softmax(x, axis=-1):
                e = np.exp(x)
                return e / e.sum(axis=axis, keepdims=True)
            """,
            says=("overflow", "maximum"),
            message="`softmax` overflows for large scores: subtract each row's maximum first.",
        ),
        Mistake(
            "global-maximum",
            """
            def softmax(x, axis=-1):
                e = np.exp(x - x.max())
                return e / e.sum(axis=axis, keepdims=True)
            """,
            says=("each row's own maximum",),
            message="`softmax` subtracts the maximum of the whole array: a row far below it "
            "underflows to 0/0 = NaN. Subtract each row's own maximum.",
        ),
        Mistake(
            "no-keepdims",
            """
            def softmax(x, axis=-1):
                e = np.exp(x - x.max(axis=axis, keepdims=True))
                return e / e.sum(axis=axis)
            """,
            says=("keepdims=True",),
        ),
        Mistake(
            "divides-by-maximum",
            """
            def softmax(x, axis=-1):
                e = np.exp(x - x.max(axis=axis, keepdims=True))
                return e / e.max(axis=axis, keepdims=True)
            """,
            says=("by their sum",),
            message="`softmax` divides by the largest exponential: divide the exponentials "
            "by their sum along `axis`, so the weights sum to 1.",
        ),
        Mistake(
            "float32",
            """
            def softmax(x, axis=-1):
                x = np.asarray(x, dtype=np.float32)
                e = np.exp(x - x.max(axis=axis, keepdims=True))
                return e / e.sum(axis=axis, keepdims=True)
            """,
            says=("float32", "keep float64"),
        ),
    ],
    alternatives=[
        Alternative(
            "loops",
            """
            def softmax(x, axis=-1):
                x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
                out = np.empty_like(x)
                for idx in np.ndindex(x.shape[:-1]):
                    row = x[idx]
                    m = max(row)
                    e = [np.exp(v - m) for v in row]
                    out[idx] = [v / sum(e) for v in e]
                return np.moveaxis(out, -1, axis)
            """,
        ),
        Alternative(
            "torch",
            """
            def softmax(x, axis=-1):
                import torch

                t = torch.from_numpy(np.asarray(x, dtype=np.float64))
                e = torch.exp(t - t.amax(dim=axis, keepdim=True))
                return (e / e.sum(dim=axis, keepdim=True)).numpy()
            """,
        ),
    ],
)
def softmax(x: Array, axis: int = -1) -> Array:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    weights: Array = e / e.sum(axis=axis, keepdims=True)
    return weights


def _telling_table(rng: np.random.Generator) -> tuple[Array, Array, Array]:
    """A table where the best-scoring, the worst-scoring and the closest key are three
    different keys (3q, -q, and q nudged sideways), in a random order: the first hidden
    case, so each slip of `hard_lookup` is named by the key it picks."""
    query = rng.normal(size=3)
    side = np.cross(query, rng.normal(size=3))  # orthogonal to the query
    side *= 0.1 * np.linalg.norm(query) / np.linalg.norm(side)
    keys = np.stack(
        [3 * query, -query, query + side, 0.2 * query - 3 * side, 0.2 * query + 3 * side]
    )
    order = rng.permutation(len(keys))
    return query, keys[order], rng.normal(size=(len(keys), 4))


def _lookup_cases(rng: np.random.Generator) -> Iterator[tuple[Array, Array, Array]]:
    """Tables whose sizes differ (n, d, d_v) and whose keys have different lengths, so the
    closest key and the best-scoring key usually differ."""
    yield _telling_table(rng)
    for n, d, d_v in [(5, 3, 4), (8, 6, 2), (4, 4, 4), (12, 5, 7), (3, 2, 6)]:
        keys = rng.normal(size=(n, d)) * rng.uniform(0.3, 3.0, size=(n, 1))
        yield rng.normal(size=d), keys, rng.normal(size=(n, d_v))


@exercise(
    "hard_lookup",
    cases=_lookup_cases,
    mistakes=[
        Mistake(
            "returns-key",
            """
            def hard_lookup(query, keys, values):
                return keys[np.argmax(keys @ query)]
            """,
            says=("key",),
            message="`hard_lookup` returned the winning KEY; return its VALUE (`values[i]`).",
        ),
        Mistake(
            "argmin",
            """
            def hard_lookup(query, keys, values):
                return values[np.argmin(keys @ query)]
            """,
            says=("smallest",),
            message="`hard_lookup` picked the key with the smallest dot product: use argmax.",
        ),
        Mistake(
            "by-distance",
            """
            def hard_lookup(query, keys, values):
                return values[np.argmin(np.linalg.norm(keys - query, axis=1))]
            """,
            says=("distance",),
            message="`hard_lookup` picked the key closest to the query by distance; attention "
            "scores keys by dot product (`keys @ query`).",
        ),
        Mistake(
            "returns-index",
            """
            def hard_lookup(query, keys, values):
                return np.argmax(keys @ query)
            """,
            says=("index",),
            message="`hard_lookup` returned the index of the best key; return the value row "
            "itself.",
        ),
        Mistake(
            "returns-column",
            """
            def hard_lookup(query, keys, values):
                return values[:, np.argmax(keys @ query)]
            """,
            says=("row `values[i]`",),  # hidden: it raises IndexError when n > d_v
            message="`hard_lookup` returned a column of `values`; return the row `values[i]`.",
        ),
        Mistake(
            "scores-the-values",
            """
            def hard_lookup(query, keys, values):
                return values[np.argmax(values @ query)]
            """,
            says=("`keys @ query`",),
        ),
        Mistake(
            "query-times-keys",
            """
            def hard_lookup(query, keys, values):
                return values[np.argmax(query @ keys)]
            """,
            says=("`keys @ query`",),
        ),
        Mistake(
            "float32",
            """
            def hard_lookup(query, keys, values):
                return values[np.argmax(keys @ query)].astype(np.float32)
            """,
            says=("float32", "keep float64"),
        ),
    ],
    alternatives=[
        Alternative(
            "loop",
            """
            def hard_lookup(query, keys, values):
                return values[max(range(len(keys)), key=lambda i: float(keys[i] @ query))]
            """,
        ),
        Alternative(
            "einsum",
            """
            def hard_lookup(query, keys, values):
                return values[np.einsum("nd,d->n", keys, query).argmax()]
            """,
        ),
    ],
)
def hard_lookup(query: Array, keys: Array, values: Array) -> Array:
    best: Array = values[np.argmax(keys @ query)]  # [d_v]
    return best


def _soft_cases(rng: np.random.Generator) -> Iterator[tuple[Array, Array, Array]]:
    yield from _lookup_cases(rng)
    n, d, d_v = 6, 4, 3
    keys, query = rng.normal(size=(n, d)), rng.normal(size=d)
    query *= 1000.0 / (keys @ query).max()  # the best score is 1000: exp overflows unless shifted
    yield query, keys, rng.normal(size=(n, d_v))


@exercise(
    "soft_lookup",
    cases=_soft_cases,
    mistakes=[
        Mistake(
            "no-softmax",
            """
            def soft_lookup(query, keys, values):
                return (keys @ query) @ values
            """,
            says=("raw scores", "softmax"),
            message="`soft_lookup` blends the values with the raw scores: apply softmax to "
            "them first.",
        ),
        Mistake(
            "returns-weights",
            """
            def soft_lookup(query, keys, values):
                return softmax(keys @ query)
            """,
            says=("weights",),
            message="`soft_lookup` returned the weights; return the blend `weights @ values`.",
        ),
        Mistake(
            "scaled",
            """
            def soft_lookup(query, keys, values):
                return softmax(keys @ query / np.sqrt(len(query))) @ values
            """,
            says=("√d",),
            message="`soft_lookup` divides the scores by √d: no scaling yet, use "
            "softmax(keys @ query).",
        ),
        Mistake(
            "blends-keys",
            """
            def soft_lookup(query, keys, values):
                return softmax(keys @ query) @ keys
            """,
            says=("keys",),
            message="`soft_lookup` blends the keys; blend the `values`.",
        ),
        Mistake(
            "normalises-over-d",
            """
            def soft_lookup(query, keys, values):
                return softmax(keys * query, axis=-1).sum(axis=-1) @ values
            """,
            says=("n keys",),
            message="`soft_lookup` normalises over the d features of each key instead of over "
            "the n keys.",
        ),
        Mistake(
            "hard",
            """
            def soft_lookup(query, keys, values):
                return values[np.argmax(keys @ query)]
            """,
            says=("hard lookup",),
            message="`soft_lookup` returned only the best value (a hard lookup): blend all of "
            "them.",
        ),
        Mistake(
            "overflows",
            """
            def soft_lookup(query, keys, values):
                e = np.exp(keys @ query)
                return e / e.sum() @ values
            """,
            says=("overflow", "stable `softmax`"),
            message="`soft_lookup` overflows for large scores: use your stable `softmax` "
            "(it subtracts each row's maximum).",
        ),
        Mistake(
            "scores-the-values",
            """
            def soft_lookup(query, keys, values):
                return softmax(values @ query) @ values
            """,
            says=("`keys @ query`",),
        ),
        Mistake(
            "values-times-weights",
            """
            def soft_lookup(query, keys, values):
                return values @ softmax(keys @ query)
            """,
            says=("`weights @ values`",),
        ),
        Mistake(
            "sums-over-d_v",
            """
            def soft_lookup(query, keys, values):
                return (softmax(keys @ query)[:, None] * values).sum(axis=1)
            """,
            says=("one number per key",),
            message="`soft_lookup` returned one number per key: sum the weighted value rows "
            "over the n keys (axis 0), not over d_v.",
        ),
        Mistake(
            "float32",
            """
            def soft_lookup(query, keys, values):
                scores = keys.astype(np.float32) @ query.astype(np.float32)
                return softmax(scores) @ values.astype(np.float32)
            """,
            says=("float32", "keep float64"),
        ),
    ],
    alternatives=[
        Alternative(
            "einsum",
            """
            def soft_lookup(query, keys, values):
                return np.einsum("n,nv->v", softmax(np.einsum("nd,d->n", keys, query)), values)
            """,
        ),
        Alternative(
            "torch",
            """
            def soft_lookup(query, keys, values):
                import torch

                weights = torch.softmax(torch.from_numpy(keys @ query), 0)
                return (weights @ torch.from_numpy(values)).numpy()
            """,
        ),
    ],
)
def soft_lookup(query: Array, keys: Array, values: Array) -> Array:
    return softmax(keys @ query) @ values
