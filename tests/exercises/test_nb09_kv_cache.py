"""Notebook 09's exercises: the catalogue's mistakes are named, its alternatives pass, and the
checks hold the properties the notebook's prose relies on."""

import numpy as np
import pytest
from catalogue import catalogue_tests

from attnlib.checks import CheckFailed
from attnlib.checks import nb09_kv_cache as checks
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
