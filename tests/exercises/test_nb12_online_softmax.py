"""Notebook 12's exercise: the catalogue's mistakes are named, its alternatives pass, the
checks hold the properties the notebook's prose relies on, and the prose states only what
the cells compute."""

import re

import numpy as np
import pytest
from catalogue import catalogue_tests, gap_test, notebook_cells

from attnlib.checks import CheckFailed
from attnlib.checks import nb12_online_softmax as checks
from grader.hidden import spec

NB = "12_online_softmax"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


@pytest.mark.parametrize("block_size", [1, 7, 64, 500])
def test_blocked_attention_is_exact_for_every_block_size(solution, block_size):
    fns = solution(NB)
    rng = np.random.default_rng(block_size)
    Q, K, V = rng.normal(size=(9, 4)) * 4, rng.normal(size=(300, 4)) * 4, rng.normal(size=(300, 2))
    S = Q @ K.T / 2.0
    P = np.exp(S - S.max(axis=1, keepdims=True))
    want = P @ V / P.sum(axis=1, keepdims=True)
    got = fns["online_softmax_attention"](Q, K, V, block_size)
    assert np.abs(got - want).max() < 1e-12


def test_hidden_cases_put_the_maximum_in_a_late_block():
    """Issue 12: some hidden input's largest score lies beyond the first block."""
    late = []
    for Q, K, _, block in spec("online_softmax_attention").cases(np.random.default_rng(0)):
        S = Q @ K.T / np.sqrt(Q.shape[1])
        first = S[:, :block].max(axis=1)
        late.append(np.max(S.max(axis=1) - first))
    assert max(late) > 709  # exp of the difference overflows unless the maximum is updated


def test_memory_check_tells_blocks_from_the_whole_matrix():
    def whole(Q, K, V, block_size=64):
        S = Q @ K.T / np.sqrt(Q.shape[1])
        P = np.exp(S - S.max(axis=1, keepdims=True))
        return P @ V / P.sum(axis=1, keepdims=True)

    with pytest.raises(CheckFailed, match=r"whole \[T_q, T_k\] score matrix"):
        checks.check_online_softmax_attention(whole)


def _online_comparison(fn):
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(3, 1000, 32))
    return fn(Q, K, V, 64), spec("online_softmax_attention").reference(Q, K, V, 64)


COMPARISONS = {"online_softmax_attention": _online_comparison}


test_no_mistake_passes_the_check_and_shows_a_gap_in_the_next_cell = gap_test(NB, COMPARISONS)


# ---------------------------------------------------------------- prose against output
def test_online_softmax_history_credits_each_paper_with_its_part():
    prose = "\n".join(notebook_cells(NB, "markdown").values())
    assert "running maximum and running sum are Milakov & Gimelshein's" in prose
    assert "running output along with them, over chunks of keys and values, is Rabe & Staats's" in (
        prose.replace("\n", " ")
    )


def test_the_figure_uses_decimal_ticks_readable_legends_and_no_bare_slopes():
    """Issue 24: power-of-two ticks, a 7 pt legend, a "slope 0.37" legend read as sub-linear."""
    code = "\n".join(notebook_cells(NB, "code").values())
    assert "base=2" not in code and "fontsize=7" not in code
    assert not re.search(r"label=f?\"[^\"]*slope", code)
    assert len(re.findall(r"^\s*decimal_log_ticks\(ax, ", code, re.M)) == 1
