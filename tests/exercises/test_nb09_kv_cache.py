"""Notebook 09's exercises: the catalogue's mistakes are named, its alternatives pass, the
checks hold the properties the notebook's prose relies on, and the prose states only what
the cells compute."""

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from catalogue import catalogue_tests, gap_test, notebook_cells, notebook_prose

from grader.hidden import spec

NB = "09_kv_cache"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


def test_solution_matches_the_full_causal_pass_to_1e12(solution):
    """The notebook says cached decoding equals the full causal pass to rounding error."""
    fns = solution(NB)
    rng = np.random.default_rng(0)
    X, W_V = rng.normal(size=(40, 6)), rng.normal(size=(3, 6))
    W_Q, W_K = rng.normal(size=(2, 5, 6))
    got = fns["decode_with_cache"](X, W_Q, W_K, W_V)
    assert np.abs(got - spec("decode_with_cache").reference(X, W_Q, W_K, W_V)).max() < 1e-12


# ---------------------------------------------------------------- grouped_query_attention
def _gqa_inputs(rng, T, n_heads, n_kv_heads, d_head):
    d_model = n_heads * d_head
    W_Q, W_O = rng.normal(size=(2, d_model, d_model)) / np.sqrt(d_model)
    W_K, W_V = rng.normal(size=(2, n_kv_heads * d_head, d_model)) / np.sqrt(d_model)
    return rng.normal(size=(T, d_model)), W_Q, W_K, W_V, W_O


@pytest.mark.parametrize("masked", [True, False])
def test_grouped_query_attention_is_notebook_07s_when_every_head_has_its_keys(solution, masked):
    """n_kv_heads = n_heads is multi-head attention, weights shaped as in notebook 07."""
    rng = np.random.default_rng(7)
    X, W_Q, W_K, W_V, W_O = _gqa_inputs(rng, 6, 4, 4, 3)
    mask = np.triu(np.full((6, 6), -np.inf), 1) if masked else None
    got = solution(NB)["grouped_query_attention"](X, W_Q, W_K, W_V, W_O, 4, 4, mask)
    want, _ = solution("07_heads")["multi_head_attention"](X, W_Q, W_K, W_V, W_O, 4, mask=mask)
    assert np.abs(got - want).max() < 1e-12


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1])
def test_grouped_query_attention_matches_torch_enable_gqa(solution, n_kv_heads):
    """The notebook's comparison: torch shares KV head g with query heads g·group … too."""
    rng = np.random.default_rng(n_kv_heads)
    X, W_Q, W_K, W_V, W_O = _gqa_inputs(rng, 7, 4, n_kv_heads, 2)
    got = solution(NB)["grouped_query_attention"](
        X, W_Q, W_K, W_V, W_O, 4, n_kv_heads, np.triu(np.full((7, 7), -np.inf), 1)
    )
    Q, K, V = (torch.from_numpy(X @ W.T).view(7, -1, 2).transpose(0, 1) for W in (W_Q, W_K, W_V))
    H = F.scaled_dot_product_attention(Q, K, V, is_causal=True, enable_gqa=True)
    want = H.transpose(0, 1).reshape(7, 8).numpy() @ W_O.T
    assert np.abs(got - want).max() < 1e-12


# ---------------------------------------------------------------- the checks agree with the cells
def _decode_comparison(fn):
    """Notebook 09's comparison cell: the answer against the full causal pass, T = 64."""
    rng = np.random.default_rng(0)
    W_Q, W_K = rng.normal(size=(2, 4, 8))
    W_V = rng.normal(size=(3, 8))
    rng.normal(size=(7, 8))
    X_long = rng.normal(size=(64, 8))
    return fn(X_long, W_Q, W_K, W_V), spec("decode_with_cache").reference(X_long, W_Q, W_K, W_V)


def _gqa_comparison(fn):
    rng = np.random.default_rng(0)
    X, W_Q, W_K, W_V, W_O = _gqa_inputs(rng, 6, 4, 2, 2)
    mask = np.triu(np.full((6, 6), -np.inf), 1)
    args = (X, W_Q, W_K, W_V, W_O, 4, 2, mask)
    return fn(*args), spec("grouped_query_attention").reference(*args)


COMPARISONS = {
    "decode_with_cache": _decode_comparison,
    "grouped_query_attention": _gqa_comparison,
}


test_no_mistake_passes_the_check_and_shows_a_gap_in_the_next_cell = gap_test(NB, COMPARISONS)


# ---------------------------------------------------------------- prose against output
def test_the_summary_names_the_takeover_position_a_cell_prints():
    """Issue 24: the summary said "about a thousand positions"; the cells printed 4–8 thousand."""
    prose, code = "\n".join(notebook_cells(NB, "markdown").values()), notebook_cells(NB, "code")
    assert "a thousand positions" not in prose
    assert any("t_takeover = " in source for source in code.values())
    *_, summary_cell = code.values()
    assert "t_takeover" in summary_cell and "position printed below" in prose


def test_the_decode_hint_scales_the_scores_it_writes():
    """Issue 24: the hint wrote the scores without / √d_k."""
    (hint,) = [s for s in notebook_cells(NB, "markdown").values() if "Exercise 9.1" in s]
    scores = re.findall(r"`K_cache @ q_t[^`]*`", hint)
    assert scores and all(s.endswith("/ np.sqrt(d_k)`") for s in scores), scores


def test_the_prose_ranks_no_generation_lengths_the_noise_can_reorder():
    """Issue 24: "at T = 64 the cache gains least" was false in 3 of 11 runs."""
    prose = "\n".join(notebook_cells(NB, "markdown").values())
    assert "gains least" not in prose and "largest at the largest T" not in prose
    assert "read them\nas sizes, not as a trend" in prose


def test_the_kv_heads_factor_is_in_the_formula_and_the_bytes_are_printed():
    """Issue 24: the formula lacked n_kv_heads (4–8× too large for grouped-query models)."""
    prose = notebook_prose(NB)
    code = "\n".join(notebook_cells(NB, "code").values())
    wrong = "2 · layers · heads · d_head"  # named once, as the formula that overstates
    assert prose.count(wrong) == prose.count(f"without the KV-heads factor, {wrong}") == 1
    assert prose.count("2 · layers · KV heads · d_head") == 2  # the section and the summary
    for printed in ("multi-head / grouped-query = {gqa_saving", "llama70['grouped-query']"):
        assert printed in code


def test_figures_use_decimal_ticks_readable_legends_and_no_bare_slopes():
    """Issue 24: power-of-two ticks, a 7 pt legend, a "slope 0.37" legend read as sub-linear."""
    code = "\n".join(notebook_cells(NB, "code").values())
    assert "base=2" not in code and "fontsize=7" not in code
    assert not re.search(r"label=f?\"[^\"]*slope", code)
    assert len(re.findall(r"^\s*decimal_log_ticks\(ax, ", code, re.M)) == 1  # its figure
