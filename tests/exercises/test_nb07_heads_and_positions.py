"""Notebook 07's exercises: the catalogue's mistakes are named, its alternatives pass, and the
solution agrees with the library code and PyTorch module the notebook compares it with."""

import numpy as np
import pytest
import torch
from catalogue import catalogue_tests

from attnlib.checks import CheckFailed
from attnlib.checks import nb07_heads_and_positions as checks
from attnlib.model import rope as model_rope

NB = "07_heads_and_positions"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


@pytest.mark.parametrize(("d_model", "n_heads"), [(6, 4), (10, 3), (7, 2)])
def test_split_heads_error_names_both_numbers(solution, d_model, n_heads):
    with pytest.raises(ValueError) as err:
        solution(NB)["split_heads"](np.zeros((2, d_model)), n_heads)
    assert str(d_model) in str(err.value) and str(n_heads) in str(err.value)


def _raises(exc):
    def split_heads(X, n_heads):
        if X.shape[-1] % n_heads:
            raise exc
        *lead, T, d = X.shape
        return np.swapaxes(X.reshape(*lead, T, n_heads, d // n_heads), -2, -3)

    return split_heads


def test_split_heads_check_accepts_a_replayed_value_error():
    """The grader replays a recorded error as a new class that is only *named* ValueError."""
    replayed = type("ValueError", (Exception,), {})
    checks.check_split_heads(_raises(replayed("n_heads = 4 does not divide d_model = 6")))


@pytest.mark.parametrize(
    ("exc", "says"),
    [
        (TypeError("n_heads = 4 does not divide d_model = 6"), "raised TypeError"),
        (ValueError("cannot split the columns"), "both numbers"),
    ],
)
def test_split_heads_check_wants_a_value_error_with_both_numbers(exc, says):
    with pytest.raises(CheckFailed, match=says):
        checks.check_split_heads(_raises(exc))


def test_solution_rope_matches_the_model_convention(solution):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2, 3, 7, 16))  # [B, heads, T, d]
    positions = rng.integers(0, 500, size=7)
    theirs = model_rope(torch.from_numpy(X), torch.from_numpy(positions)).numpy()
    np.testing.assert_allclose(solution(NB)["rope"](X, positions), theirs, atol=1e-4)


def test_solution_matches_torch_multihead_attention(solution):
    rng = np.random.default_rng(1)
    B, T, d_model, n_heads = 2, 5, 12, 3
    X = rng.normal(size=(B, T, d_model))
    W_Q, W_K, W_V, W_O = rng.normal(size=(4, d_model, d_model)) / np.sqrt(d_model)
    M = np.triu(np.full((T, T), -np.inf), k=1)
    out, weights = solution(NB)["multi_head_attention"](X, W_Q, W_K, W_V, W_O, n_heads, mask=M)
    mha = torch.nn.MultiheadAttention(
        d_model, n_heads, bias=False, batch_first=True, dtype=torch.float64
    )
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([W_Q, W_K, W_V])))
        mha.out_proj.weight.copy_(torch.from_numpy(W_O))
        x = torch.from_numpy(X)
        ref, ref_w = mha(x, x, x, attn_mask=torch.from_numpy(M), average_attn_weights=False)
    np.testing.assert_allclose(out, ref.numpy(), atol=1e-10)
    np.testing.assert_allclose(weights, ref_w.numpy(), atol=1e-10)


def test_solution_accepts_float32_and_integer_positions(solution):
    fns = solution(NB)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(4, 8)).astype(np.float32)
    Ws = rng.normal(size=(4, 8, 8)).astype(np.float32)
    out, weights = fns["multi_head_attention"](X, *Ws, 2)
    assert out.shape == (4, 8) and np.allclose(weights.sum(-1), 1, atol=1e-5)
    rotated = fns["rope"](X, np.arange(4, dtype=np.int64))
    np.testing.assert_allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(X, axis=-1), 1e-5)
