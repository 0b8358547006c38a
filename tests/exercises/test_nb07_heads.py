"""Notebook 07_heads' exercises: the catalogue's mistakes are named, its alternatives pass, and
the solution agrees with the PyTorch module the notebook compares it with."""

import numpy as np
import pytest
import torch
from catalogue import catalogue_tests

from attnlib.checks import CheckFailed
from attnlib.checks import nb07_heads as checks

NB = "07_heads"

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


def _split_two_axes_only(X, n_heads):
    T, d_model = X.shape  # a batch [B, T, d_model]: too many values to unpack
    return X.reshape(T, n_heads, d_model // n_heads).transpose(1, 0, 2)


def _split_reshape_to_t(X, n_heads):
    T, d_model = X.shape[-2:]  # a batch: cannot reshape B·T·d_model numbers into T rows
    return X.reshape(T, n_heads, d_model // n_heads).transpose(1, 0, 2)


def _split_fixed_transpose(X, n_heads):
    H = X.reshape(*X.shape[:-1], n_heads, X.shape[-1] // n_heads)
    return H.transpose(0, 2, 1, 3)  # without a batch axis: axes don't match array


def _merge_two_axes_only(H):
    n_heads, T, d_head = H.shape
    return H.transpose(1, 0, 2).reshape(T, n_heads * d_head)


@pytest.mark.parametrize(
    ("check", "wrong"),
    [
        (checks.check_split_heads, _split_two_axes_only),
        (checks.check_split_heads, _split_reshape_to_t),
        (checks.check_split_heads, _split_fixed_transpose),
        (checks.check_merge_heads, _merge_two_axes_only),
    ],
    ids=lambda v: v.__name__,
)
def test_code_for_a_fixed_number_of_axes_is_told_to_unpack_from_the_end(check, wrong):
    """Issue 24: without (or with) batch axes such code crashed with NumPy's words only."""
    with pytest.raises(CheckFailed, match=r"no batch axes or several.*unpack from the end"):
        check(wrong)


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


def test_solution_accepts_float32(solution):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(4, 8)).astype(np.float32)
    Ws = rng.normal(size=(4, 8, 8)).astype(np.float32)
    out, weights = solution(NB)["multi_head_attention"](X, *Ws, 2)
    assert out.shape == (4, 8) and np.allclose(weights.sum(-1), 1, atol=1e-5)
