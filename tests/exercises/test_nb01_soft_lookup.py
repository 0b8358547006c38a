"""Notebook 01's exercises: the catalogue's mistakes are named, its alternatives pass, the
solution copes with float32 inputs, and the memory comparison's prose states what its cells
measure."""

import nbformat
import numpy as np
from catalogue import catalogue_tests

from attnlib import recall
from grader.course import source_path

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


# ---------------------------------------------------------------- prose against output
def _cells(kind):
    nb = nbformat.read(source_path(NB), as_version=4)
    return {c.get("id"): c.source for c in nb.cells if c.cell_type == kind}


def test_spread_keys_overlap_as_little_as_d_dimensions_allow():
    """Orthonormal up to T = d; beyond, summed squared overlaps at Welch's bound T²/d."""
    for T in (4, 32, 64, 128):
        K = recall.spread_keys(T, 32)
        np.testing.assert_allclose(np.linalg.norm(K, axis=1), 1.0)
        np.testing.assert_allclose(((K @ K.T) ** 2).sum(), max(T, T * T / 32))


def test_the_memory_comparison_measures_overlap_and_capacity_apart(solution):
    """Issue 24: 01's memory comparison mixed overlapping random keys with capacity."""
    lengths = [4, 32, 64, 128]
    hard = solution(NB)["hard_lookup"]
    random_err, _ = recall.recall_errors(hard, lengths, trials=2)
    spread_err, direct_err = recall.recall_errors(hard, lengths, trials=2, spread=True)
    # up to T = d = 32 spread keys lose nothing: the random keys' error there is overlap
    assert max(spread_err[:2]) < 1e-12 and min(random_err[:2]) > 0.1
    # past T = d what is left is capacity, at the printed floor sqrt(T/d - 1)
    for T, err in zip(lengths[2:], spread_err[2:], strict=True):
        assert abs(err - recall.capacity_floor(T, 32)) < 0.02 * recall.capacity_floor(T, 32)
    assert max(direct_err) == 0


def test_the_prose_claims_only_what_the_memory_cells_print():
    prose = " ".join("\n".join(_cells("markdown").values()).split())
    code = _cells("code")
    assert "cannot keep an unbounded number of items exactly" not in prose
    assert "*Overlap*" in prose and "*Capacity*" in prose
    assert "all of the random keys' error comes from overlap" in prose
    assert any("spread=True" in s and "capacity_floor" in s for s in code.values())
    *_, summary = code.values()
    assert "spread_err" in summary and "floor" in summary
