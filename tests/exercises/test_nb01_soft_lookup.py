"""Notebook 01's exercises: the catalogue's mistakes are named, its alternatives pass, and the
solution copes with float32 inputs."""

import numpy as np
from catalogue import catalogue_tests

NB = "01_soft_lookup"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


def _sm(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_solution_accepts_float32_inputs(solution):
    fns = solution(NB)
    rng = np.random.default_rng(0)
    q, K, V = (rng.normal(size=s).astype(np.float32) for s in [(3,), (5, 3), (5, 4)])
    want = _sm(K.astype(float) @ q) @ V
    np.testing.assert_allclose(fns["soft_lookup"](q, K, V), want, rtol=1e-5)
    np.testing.assert_array_equal(fns["hard_lookup"](q, K, V), V[np.argmax(K @ q)])
    keys, values = fns["design_keys_values"](q, V, np.float32([0.1, 0.2, 0.3, 0.15, 0.25]))
    np.testing.assert_allclose(_sm(keys @ q), [0.1, 0.2, 0.3, 0.15, 0.25], rtol=1e-5)
