"""Notebook 02's exercises: the catalogue's mistakes are named, its alternatives pass, the
solution copes with float32 inputs, and section 4's prose states what its cells measure."""

import nbformat
import numpy as np
import pytest
from catalogue import catalogue_tests

from grader.course import source_path

NB = "02_projections"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


def test_solution_accepts_float32_inputs(solution):
    fns = solution(NB)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 4)).astype(np.float32)
    Ws = [rng.normal(size=s).astype(np.float32) for s in [(3, 4), (3, 4), (2, 4)]]
    for got, W in zip(fns["qkv"](X, *Ws), Ws, strict=True):
        np.testing.assert_allclose(got, X.astype(float) @ W.T.astype(float), rtol=1e-5)
    q, V, w = X[0], rng.normal(size=(5, 3)).astype(np.float32), [0.1, 0.2, 0.3, 0.15, 0.25]
    keys, values = fns["design_keys_values"](q, V, np.float32(w))
    np.testing.assert_allclose(_softmax(keys @ q), w, rtol=1e-5)
    np.testing.assert_array_equal(values, V)


# ---------------------------------------------------------------- prose against output
def _cells(kind):
    nb = nbformat.read(source_path(NB), as_version=4)
    return [c.source for c in nb.cells if c.cell_type == kind]


def _built_shared_head(T, s):
    """Section 4's shared W on one-hot positions: q_t = s^t (e_t + e_{t+1}), keys = queries."""
    q_len = s ** np.arange(T)
    Q = ((np.eye(T + 1, T) + np.eye(T + 1, T, k=-1)) * q_len).T  # X = I, so Q = W_sharedᵀ
    return Q @ Q.T + np.triu(np.full((T, T), -np.inf), k=1), Q  # S + M, Q


def _softmax(S):
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("T", [6, 20])
@pytest.mark.parametrize("s", [0.1, 0.4, 0.49])
def test_a_shared_weight_head_picks_the_previous_token_with_margins_below_q0_squared(T, s):
    """Issue 24: 02 argued an impossibility from 2000 random W; a built shared W does it."""
    S, Q = _built_shared_head(T, s)
    rows = np.arange(1, T)
    assert np.array_equal(S[1:].argmax(axis=1), rows - 1)
    margin = S[rows, rows - 1] - S[rows, rows]
    assert np.all(margin > 0) and np.all(np.diff(margin) < 0)
    assert margin.sum() < Q[0] @ Q[0]


def test_every_shared_w_margin_is_bounded_by_the_shrinking_query_length():
    """The bound the prose sums: q_t·q_{t-1} − |q_t|² <= |q_t| (|q_{t-1}| − |q_t|), any W."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        Q = rng.normal(size=(6, 6))
        n = np.linalg.norm(Q, axis=1)
        margin = (Q[1:] * Q[:-1]).sum(axis=1) - n[1:] ** 2
        assert np.all(margin <= n[1:] * (n[:-1] - n[1:]) + 1e-12)


def test_the_notebook_builds_that_head_and_its_weights_fade_as_the_prose_says():
    code = "\n".join(_cells("code"))
    assert "s = 0.4" in code
    assert "W_shared = (np.eye(T + 1, T) + np.eye(T + 1, T, k=-1)) * q_len" in code
    S, _ = _built_shared_head(6, 0.4)
    A = _softmax(100 * S)
    assert A[1, 0] > 0.995  # "the built head's first row puts weight 1.00 on t − 1"
    assert abs(A[5, 4] - 1 / 6) < 0.005  # "... and its last row the uniform 1/(t + 1)"
    S_sep = np.eye(6, k=-1) + np.triu(np.full((6, 6), -np.inf), k=1)
    assert _softmax(10 * S_sep)[np.arange(1, 6), np.arange(5)].min() > 0.995  # "from β = 10"


def test_the_prose_corrects_the_impossibility_and_teaches_the_mask_before_using_it():
    markdown = _cells("markdown")
    prose = " ".join("\n".join(markdown).split())
    for gone in ("none of the 2000 random W managed it", "can no longer learn", "cannot arrange"):
        assert gone not in prose
    assert "not an impossibility" in prose and "not a proof" in prose
    first_mask = next(cell for cell in markdown if "mask" in cell)
    assert "**causal mask**" in first_mask and "`M[i, j] = 0` for j ≤ i" in first_mask


def test_figures_scale_each_panel_and_label_every_score_map():
    """Issue 24: the W_Q panel was washed out on X's scale; a score map had no colour label."""
    code = "\n".join(_cells("code"))
    assert "vmin=-2.5" not in code and "limit = np.abs(A).max()" in code
    assert "heatmap(S_shown, tokens=tokens, ax=ax, title=title, label=label" in code
    assert code.count('"score"') >= 1 and '"weight"' in code
