"""Notebook 01's exercises: the solution passes, the stub says so, mistakes are named,
and correct answers written differently pass too."""

import re

import numpy as np
import pytest
import torch

from attnlib.checks import nb01_soft_lookup as checks

NB = "01_soft_lookup"
CHECKS = {
    "softmax": checks.check_softmax,
    "hard_lookup": checks.check_hard_lookup,
    "soft_lookup": checks.check_soft_lookup,
    "design_keys_values": checks.check_design_keys_values,
}


def _sm(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


WRONG = {
    # softmax
    "softmax-overflows": (
        "softmax",
        lambda x, axis=-1: np.exp(x) / np.exp(x).sum(axis, keepdims=True),
        r"overflow|NaN or infinite",
    ),
    "softmax-axis-0": ("softmax", lambda x, axis=-1: _sm(x, axis=0), r"axis"),
    "softmax-whole-array": (
        "softmax",
        lambda x, axis=-1: np.exp(x - x.max()) / np.exp(x - x.max()).sum(),
        r"whole array",
    ),
    # hard_lookup
    "hard-returns-key": ("hard_lookup", lambda q, K, V: K[np.argmax(K @ q)], r"size of a key|KEY"),
    "hard-argmin": ("hard_lookup", lambda q, K, V: V[np.argmin(K @ q)], r"argmax|SMALLEST"),
    "hard-by-distance": (
        "hard_lookup",
        lambda q, K, V: V[np.argmin(np.linalg.norm(K - q, axis=1))],
        r"CLOSEST|distance",
    ),
    "hard-returns-index": ("hard_lookup", lambda q, K, V: np.argmax(K @ q), r"index"),
    # soft_lookup
    "soft-no-softmax": ("soft_lookup", lambda q, K, V: (K @ q) @ V, r"raw scores|softmax"),
    "soft-returns-weights": ("soft_lookup", lambda q, K, V: _sm(K @ q), r"weights"),
    "soft-normalises-over-d": (
        "soft_lookup",
        lambda q, K, V: _sm(K * q, axis=-1).sum(-1) @ V,
        r"n keys",
    ),
    "soft-scaled": ("soft_lookup", lambda q, K, V: _sm(K @ q / np.sqrt(len(q))) @ V, r"√d"),
    "soft-is-hard": ("soft_lookup", lambda q, K, V: V[np.argmax(K @ q)], r"hard lookup"),
    "soft-blends-keys": ("soft_lookup", lambda q, K, V: _sm(K @ q) @ K, r"size of a key|blend"),
    # design_keys_values
    "design-weights-not-log": (
        "design_keys_values",
        lambda q, items, w: (np.outer(w, q) / (q @ q), items),
        r"softmax exponentiates",
    ),
    "design-not-divided": (
        "design_keys_values",
        lambda q, items, w: (np.outer(np.log(w), q), items),
        r"query · query",
    ),
    "design-blend-in-values": (
        "design_keys_values",
        lambda q, items, w: (np.zeros((len(w), len(q))), np.tile(w @ items, (len(w), 1))),
        r"hand over its item",
    ),
    "design-wrong-sign": (
        "design_keys_values",
        lambda q, items, w: (-np.outer(np.log(w), q) / (q @ q), items),
        r"wrong sign",
    ),
}


@pytest.mark.parametrize("case", list(WRONG))
def test_wrong_answer_fails_naming_the_mistake(case, check_failures):
    name, fn, pattern = WRONG[case]
    messages = check_failures(CHECKS[name], name, fn)
    assert messages, f"{case}: no check failed"
    assert any(re.search(pattern, m) for m in messages), messages


def _softmax_loops(x, axis=-1):
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        row = x[idx]
        m = max(row)
        e = [np.exp(v - m) for v in row]
        out[idx] = [v / sum(e) for v in e]
    return np.moveaxis(out, -1, axis)


def _design_other(q, items, w):
    """A different valid design: constant shift plus a part orthogonal to the query."""
    ortho = np.ones_like(q) - (np.ones_like(q) @ q) / (q @ q) * q  # q · ortho = 0
    keys = np.outer(np.log(w) + 3.0, q) / (q @ q) + np.outer(np.arange(len(w)), ortho)
    return [keys, items.copy()]


def _softmax_float32(x, axis=-1):
    """Shift in the input's precision, then work in float32 (returns float32)."""
    e = np.exp((x - x.max(axis=axis, keepdims=True)).astype(np.float32))
    return e / e.sum(axis=axis, keepdims=True)


RIGHT = {
    "softmax-loops": ("softmax", _softmax_loops),
    "softmax-torch": (
        "softmax",
        lambda x, axis=-1: torch.softmax(torch.from_numpy(x), dim=axis).numpy(),
    ),
    "softmax-float32": ("softmax", _softmax_float32),
    "hard-loop": (
        "hard_lookup",
        lambda q, K, V: V[max(range(len(K)), key=lambda i: float(K[i] @ q))],
    ),
    "hard-einsum": ("hard_lookup", lambda q, K, V: V[np.einsum("nd,d->n", K, q).argmax()]),
    "soft-einsum": (
        "soft_lookup",
        lambda q, K, V: np.einsum("n,nv->v", _sm(np.einsum("nd,d->n", K, q)), V),
    ),
    "soft-torch": (
        "soft_lookup",
        lambda q, K, V: (torch.softmax(torch.from_numpy(K @ q), 0) @ torch.from_numpy(V)).numpy(),
    ),
    "soft-float32": (
        "soft_lookup",
        lambda q, K, V: _sm(K.astype(np.float32) @ q.astype(np.float32)) @ V.astype(np.float32),
    ),
    "design-shifted-orthogonal": ("design_keys_values", _design_other),
    "design-loop": (
        "design_keys_values",
        lambda q, items, w: (np.stack([np.log(wi) * q / (q @ q) for wi in w]), items),
    ),
}


@pytest.mark.parametrize("case", list(RIGHT))
def test_correct_variant_passes(case, check_failures):
    name, fn = RIGHT[case]
    assert check_failures(CHECKS[name], name, fn) == []


def test_solution_accepts_float32_inputs(solution):
    fns = solution(NB)
    rng = np.random.default_rng(0)
    q, K, V = (rng.normal(size=s).astype(np.float32) for s in [(3,), (5, 3), (5, 4)])
    want = _sm(K.astype(float) @ q) @ V
    np.testing.assert_allclose(fns["soft_lookup"](q, K, V), want, rtol=1e-5)
    np.testing.assert_array_equal(fns["hard_lookup"](q, K, V), V[np.argmax(K @ q)])
    keys, values = fns["design_keys_values"](q, V, np.float32([0.1, 0.2, 0.3, 0.15, 0.25]))
    np.testing.assert_allclose(_sm(keys @ q), [0.1, 0.2, 0.3, 0.15, 0.25], rtol=1e-5)
