"""Notebook 02's exercises: the catalogue's mistakes are named, its alternatives pass, and the
solution copes with float32 inputs."""

import numpy as np
from catalogue import catalogue_tests

NB = "02_projections"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


def test_solution_accepts_float32_inputs(solution):
    fns = solution(NB)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 4)).astype(np.float32)
    Ws = [rng.normal(size=s).astype(np.float32) for s in [(3, 4), (3, 4), (2, 4)]]
    for got, W in zip(fns["qkv"](X, *Ws), Ws, strict=True):
        np.testing.assert_allclose(got, X.astype(float) @ W.T.astype(float), rtol=1e-5)
