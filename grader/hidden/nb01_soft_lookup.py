"""Hidden checks for notebook 01 (soft lookup)."""

import numpy as np

from grader.hidden import exercise


def _softmax_cases(rng):
    yield (rng.normal(size=7) * 3,)
    yield (rng.normal(size=(4, 6)) * 5,)
    yield (rng.normal(size=(2, 3, 5)) * 10 + 900,)
    yield (rng.normal(size=(5, 4)), 0)


def _naive(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def _wrong_axis(x, axis=-1):
    return softmax(x, axis=0 if axis != 0 else -1)


def _whole_array(x, axis=-1):
    e = np.exp(x - x.max())
    return e / e.sum()


@exercise(
    "softmax",
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
    cases=_softmax_cases,
    mistakes=[
        (
            _wrong_axis,
            "`softmax` normalises over the wrong axis: rows of weights must sum to 1 along `axis`.",
        ),
        (_whole_array, "`softmax` normalises the whole array at once instead of along `axis`."),
        (_naive, "`softmax` overflows for large scores: subtract the maximum first."),
    ],
)
def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _stable_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _lookup_cases(rng):
    """Tables whose sizes differ (n, d, d_v) and whose keys have different lengths, so the
    closest key and the best-scoring key usually differ."""
    for n, d, d_v in [(5, 3, 4), (8, 6, 2), (4, 4, 4), (12, 5, 7), (3, 2, 6)]:
        keys = rng.normal(size=(n, d)) * rng.uniform(0.3, 3.0, size=(n, 1))
        yield rng.normal(size=d), keys, rng.normal(size=(n, d_v))


@exercise(
    "hard_lookup",
    cases=_lookup_cases,
    mistakes=[
        (
            lambda q, K, V: K[np.argmax(K @ q)],
            "`hard_lookup` returned the winning KEY; return its VALUE (`values[i]`).",
        ),
        (
            lambda q, K, V: V[np.argmin(K @ q)],
            "`hard_lookup` picked the key with the smallest dot product: use argmax.",
        ),
        (
            lambda q, K, V: V[np.argmin(np.linalg.norm(K - q, axis=1))],
            "`hard_lookup` picked the key closest to the query by distance; attention scores "
            "keys by dot product (`keys @ query`).",
        ),
        (
            lambda q, K, V: np.argmax(K @ q),
            "`hard_lookup` returned the index of the best key; return the value row itself.",
        ),
        (
            lambda q, K, V: V[:, np.argmax(K @ q)] if np.argmax(K @ q) < V.shape[1] else None,
            "`hard_lookup` returned a column of `values`; return the row `values[i]`.",
        ),
    ],
)
def hard_lookup(query, keys, values):
    return values[np.argmax(keys @ query)]


def _soft_cases(rng):
    yield from _lookup_cases(rng)
    n, d, d_v = 6, 4, 3
    yield rng.normal(size=d) * 300, rng.normal(size=(n, d)), rng.normal(size=(n, d_v))


@exercise(
    "soft_lookup",
    cases=_soft_cases,
    mistakes=[
        (
            lambda q, K, V: (K @ q) @ V,
            "`soft_lookup` blends the values with the raw scores: apply softmax to them first.",
        ),
        (
            lambda q, K, V: _stable_softmax(K @ q),
            "`soft_lookup` returned the weights; return the blend `weights @ values`.",
        ),
        (
            lambda q, K, V: _stable_softmax(K @ q / np.sqrt(len(q))) @ V,
            "`soft_lookup` divides the scores by √d: no scaling yet, use softmax(keys @ query).",
        ),
        (
            lambda q, K, V: _stable_softmax(K @ q) @ K,
            "`soft_lookup` blends the keys; blend the `values`.",
        ),
        (
            lambda q, K, V: (_stable_softmax(K * q, axis=-1).sum(axis=-1)) @ V,
            "`soft_lookup` normalises over the d features of each key instead of over the n keys.",
        ),
        (
            lambda q, K, V: V[np.argmax(K @ q)],
            "`soft_lookup` returned only the best value (a hard lookup): blend all of them.",
        ),
        (
            lambda q, K, V: _naive(K @ q) @ V,
            "`soft_lookup` overflows for large scores: use your stable `softmax`.",
        ),
    ],
)
def soft_lookup(query, keys, values):
    return _stable_softmax(keys @ query) @ values


def _design_cases(rng):
    for n, d, d_v in [(3, 4, 2), (5, 3, 6), (6, 8, 3), (2, 2, 2)]:
        query = rng.normal(size=d)
        items = rng.normal(size=(n, d_v))
        weights = rng.dirichlet(np.ones(n)) * 0.98 + 0.02 / n  # no weight too close to 0
        yield query, items, weights


def _retrieved(result, args):
    """What the learner's design does: the soft lookup of the query, and what slots hold."""
    query, items, _ = args
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise TypeError("something other than a pair (keys, values)")
    keys, values = (np.asarray(r, dtype=np.float64) for r in result)
    if keys.shape != (len(items), len(query)) or values.shape != items.shape:
        return np.full(1, np.nan), values  # wrong shapes never match
    return soft_lookup(query, keys, values), values


def _design_scaled(q, items, w):
    return np.outer(np.log(w), q), items


@exercise(
    "design_keys_values",
    cases=_design_cases,
    outcome=_retrieved,
    mistakes=[
        (
            lambda q, items, w: (np.outer(w, q) / (q @ q), items),
            "`design_keys_values` makes the scores equal to the weights, but softmax "
            "exponentiates: the scores must be log(weights).",
        ),
        (
            _design_scaled,
            "`design_keys_values` makes the scores log(weights) × (query · query): divide by "
            "query · query.",
        ),
        (
            lambda q, items, w: (np.zeros((len(w), len(q))), np.tile(w @ items, (len(w), 1))),
            "`design_keys_values` puts the blend in every value; each value must hand over its own "
            "item, and the keys must produce the weights.",
        ),
        (
            lambda q, items, w: (np.outer(-np.log(w), q) / (q @ q), items),
            "`design_keys_values` gives the scores the wrong sign: the heaviest item needs the "
            "largest score.",
        ),
    ],
)
def design_keys_values(query, items, weights):
    return np.outer(np.log(weights), query) / (query @ query), items
