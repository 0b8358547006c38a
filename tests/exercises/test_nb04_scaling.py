"""Notebook 04: the checks of the scaling exercises, and attnlib.saturation."""

import numpy as np
import pytest
import torch

from attnlib import saturation
from attnlib.checks import nb04_scaling as checks
from attnlib.checks._core import CheckFailed
from grader.hidden import verify

NB = "04_scaling"
EXERCISES = ["scaled_scores", "softmax_entropy", "near_one_hot_share"]


def both(name, fn):
    """The visible check, then the hidden one, as the graded notebook runs them."""
    getattr(checks, f"check_{name}")(fn)
    verify(name, fn)


# --------------------------------------------------------------------------- scaled_scores


def _scaled_loops(Q, K):
    d_k = len(Q[0])
    return np.array(
        [[sum(q * k for q, k in zip(qi, kj, strict=True)) / d_k**0.5 for kj in K] for qi in Q]
    )


@pytest.mark.parametrize(
    "fn",
    [
        _scaled_loops,
        lambda Q, K: np.einsum("id,jd->ij", Q / np.sqrt(Q.shape[1]), K),
        lambda Q, K: (torch.from_numpy(Q) @ torch.from_numpy(K).T / Q.shape[-1] ** 0.5).numpy(),
        lambda Q, K: (Q / Q.shape[-1] ** 0.25) @ (K / K.shape[-1] ** 0.25).T,
    ],
    ids=["loops", "einsum", "torch", "split_root"],
)
def test_correct_alternatives_pass_scaled_scores(fn):
    both("scaled_scores", fn)


@pytest.mark.parametrize(
    "fn, visible, hidden",
    [
        (lambda Q, K: Q @ K.T, "forgot to scale", "forgot to scale"),
        (
            lambda Q, K: Q @ K.T / Q.shape[-1],
            r"divided by d_k instead of √d_k",
            r"divides by d_k instead of √d_k",
        ),
        (
            lambda Q, K: Q @ K.T / np.sqrt(K.shape[0]),
            r"√T \(the number of keys\)",
            r"√T \(the number of keys\)",
        ),
        (
            lambda Q, K: Q @ K.T / np.sqrt(Q.shape[0]),
            r"√T \(the number of queries\)",
            r"√T \(the number of queries\)",
        ),
        (lambda Q, K: K @ Q.T / np.sqrt(Q.shape[-1]), r"K Qᵀ instead of Q Kᵀ", "transposed"),
        (lambda Q, K: Q @ K.T * np.sqrt(Q.shape[-1]), "multiplied by √d_k", "multiplies by √d_k"),
    ],
    ids=["unscaled", "by_d_k", "by_sqrt_T_keys", "by_sqrt_T_queries", "transposed", "times"],
)
def test_checks_name_scaled_scores_mistakes(fn, visible, hidden):
    with pytest.raises(CheckFailed, match=visible):
        checks.check_scaled_scores(fn)
    with pytest.raises(CheckFailed, match="Hidden check: .*" + hidden):
        verify("scaled_scores", fn)


def test_visible_check_names_a_fixed_d_model_divisor():
    d_model = 512

    def by_d_model(Q, K):
        return Q @ K.T / np.sqrt(d_model)

    with pytest.raises(CheckFailed, match=r"fixed √512.*d_model"):
        checks.check_scaled_scores(by_d_model)
    with pytest.raises(CheckFailed, match="Hidden check"):
        verify("scaled_scores", by_d_model)


# --------------------------------------------------------------------------- softmax_entropy


def _entropy_loops(A):
    out = []
    for row in A:
        out.append(-sum(float(p) * np.log(float(p)) for p in row if p > 0))
    return np.array(out)


@pytest.mark.parametrize(
    "fn",
    [
        _entropy_loops,
        lambda A: -np.sum(A * np.log(A + 1e-300), axis=-1),
        lambda A: -np.nansum(A * np.log(A), axis=1),
        lambda A: (
            torch.special.entr(torch.from_numpy(np.asarray(A, dtype=np.float64))).sum(-1).numpy()
        ),
    ],
    ids=["loops", "epsilon", "nansum", "torch_entr"],
)
def test_correct_alternatives_pass_softmax_entropy(fn):
    with np.errstate(divide="ignore", invalid="ignore"):
        both("softmax_entropy", fn)


@pytest.mark.parametrize(
    "fn, visible, hidden",
    [
        (
            lambda A: -np.sum(A * np.log2(np.where(A > 0, A, 1)), axis=-1),
            "log base 2",
            "log base 2",
        ),
        (lambda A: np.sum(A * np.log(np.where(A > 0, A, 1)), axis=-1), "wrong sign", "wrong sign"),
        (
            lambda A: -np.sum(A * np.log(np.where(A > 0, A, 1)), axis=0),
            "one value per column",
            "axis 0",
        ),
        (lambda A: -np.sum(A * np.log(np.where(A > 0, A, 1))), "single number", "whole array"),
        (lambda A: -np.mean(A * np.log(np.where(A > 0, A, 1)), axis=-1), "H = −Σ", "averages over"),
    ],
    ids=["log2", "sign", "axis0", "whole", "mean"],
)
def test_checks_name_softmax_entropy_mistakes(fn, visible, hidden):
    with pytest.raises(CheckFailed, match=visible):
        checks.check_softmax_entropy(fn)
    with pytest.raises(CheckFailed, match="Hidden check: .*" + hidden):
        verify("softmax_entropy", fn)


def test_visible_check_names_nan_from_zero_weights():
    def naive(A):
        return -np.sum(A * np.log(A), axis=-1)

    with np.errstate(divide="ignore", invalid="ignore"):
        with pytest.raises(CheckFailed, match=r"0 · log 0"):
            checks.check_softmax_entropy(naive)
        with pytest.raises(CheckFailed, match="Hidden check"):
            verify("softmax_entropy", naive)


# --------------------------------------------------------------------------- near_one_hot_share


def _share_loops(A, threshold=0.9):
    hits = 0
    for row in A:
        if max(row) > threshold:
            hits += 1
    return hits / len(A)


@pytest.mark.parametrize(
    "fn",
    [
        _share_loops,
        lambda A, threshold=0.9: np.count_nonzero(np.any(A > threshold, axis=1)) / A.shape[0],
        lambda A, threshold=0.9: (torch.from_numpy(A).amax(-1) > threshold).double().mean().numpy(),
        lambda A, threshold=0.9: np.mean(np.max(A, axis=-1) > threshold, keepdims=True)[0],
    ],
    ids=["loops", "any", "torch_0d", "numpy_scalar"],
)
def test_correct_alternatives_pass_near_one_hot_share(fn):
    both("near_one_hot_share", fn)


@pytest.mark.parametrize(
    "fn, visible, hidden",
    [
        (lambda A, threshold=0.9: np.sum(A.max(axis=-1) > threshold), "count", "count"),
        (lambda A, threshold=0.9: np.mean(A > threshold), "all N·T", "all N·T"),
        (lambda A, threshold=0.9: np.mean(A.max(axis=0) > threshold), "axis 0", "axis 0"),
        (lambda A, threshold=0.9: np.mean(A.max(axis=-1) > 0.9), "threshold", "ignores the"),
        (
            lambda A, threshold=0.9: np.sum(A > threshold) / len(A),
            "counted every weight",
            "counts every weight",
        ),
    ],
    ids=["count", "all_entries", "axis0", "fixed_threshold", "entries_per_row"],
)
def test_checks_name_near_one_hot_share_mistakes(fn, visible, hidden):
    with pytest.raises(CheckFailed, match=visible):
        checks.check_near_one_hot_share(fn)
    with pytest.raises(CheckFailed, match="Hidden check: .*" + hidden):
        verify("near_one_hot_share", fn)


def test_near_one_hot_share_must_return_one_number():
    with pytest.raises(CheckFailed, match="one number"):
        checks.check_near_one_hot_share(lambda A, threshold=0.9: A.max(axis=-1) > threshold)


# --------------------------------------------------------------------------- attnlib.saturation


@pytest.mark.parametrize("T", [2, 16, 64])
def test_jacobian_norm_of_a_uniform_softmax_matches_the_closed_form(T):
    J = saturation.jacobian_norms(np.zeros((3, T)))
    np.testing.assert_allclose(J, np.sqrt(T - 1) / T, rtol=1e-12)
    assert saturation.uniform_jacobian_norm(T) == pytest.approx(np.sqrt(T - 1) / T)


def test_jacobian_norm_of_one_hot_rows_is_about_zero():
    S = np.array([[80.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 120.0]])
    assert np.all(saturation.jacobian_norms(S) < 1e-30)


def test_jacobian_norm_matches_diag_minus_outer_product():
    S = np.random.default_rng(0).normal(size=(5, 7)) * 3  # [5, 7]
    A = saturation.softmax_weights(S)
    expected = [np.linalg.norm(np.diag(a) - np.outer(a, a)) for a in A]
    np.testing.assert_allclose(saturation.jacobian_norms(S), expected, rtol=1e-10)


def test_two_tied_keys_give_a_jacobian_norm_of_one_half():
    S = np.array([[50.0, 50.0, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(saturation.jacobian_norms(S), [0.5], rtol=1e-9)


def test_softmax_weights_survive_huge_scores():
    A = saturation.softmax_weights(np.array([[1000.0, 0.0], [0.0, 0.0]]))
    np.testing.assert_allclose(A, [[1.0, 0.0], [0.5, 0.5]])


def test_sample_scores_blocks_share_keys_and_are_reproducible():
    seen = []

    def record(Q, K):
        seen.append((Q.shape, K.shape))
        return Q @ K.T

    S = saturation.sample_scores(record, d_k=8, T=5, n_rows=120, seed=3, block=50)
    assert S.shape == (120, 5)
    assert seen == [((50, 8), (5, 8)), ((50, 8), (5, 8)), ((20, 8), (5, 8))]
    again = saturation.sample_scores(lambda Q, K: Q @ K.T, d_k=8, T=5, n_rows=120, seed=3)
    np.testing.assert_array_equal(S, again)


def test_sweep_uses_the_learners_functions_and_separates_scaled_from_unscaled(solution):
    fns = solution(NB)
    score_fns = {
        "scaled": fns["scaled_scores"],
        "unscaled": lambda Q, K: fns["scaled_scores"](Q, K) * np.sqrt(Q.shape[-1]),
    }
    rows = saturation.sweep(
        score_fns,
        [8, 256],
        T=32,
        n_rows=300,
        entropy=fns["softmax_entropy"],
        one_hot_share=fns["near_one_hot_share"],
    )
    by = {(r["d_k"], r["scores"]): r for r in rows}
    for d_k in (8, 256):
        assert by[d_k, "scaled"]["std_scores"] == pytest.approx(1.0, abs=0.1)
        assert by[d_k, "unscaled"]["std_scores"] == pytest.approx(np.sqrt(d_k), rel=0.1)
    assert by[256, "unscaled"]["one_hot_share"] > 0.5 > by[256, "scaled"]["one_hot_share"]
    assert by[256, "unscaled"]["tiny_J_share"] > 0.2 and by[256, "scaled"]["tiny_J_share"] == 0
    assert by[256, "unscaled"]["mean_entropy"] < 1.0 < by[256, "scaled"]["mean_entropy"]
    # the research note's nuance: at small d_k unscaled rows have the larger median gradient
    assert by[8, "unscaled"]["median_J"] > by[8, "scaled"]["median_J"]
    table = saturation.format_table(rows)
    assert len(table.splitlines()) == 5 and "median‖J‖" in table


def test_sweep_reports_what_the_statistic_functions_return():
    rows = saturation.sweep(
        {"raw": lambda Q, K: Q @ K.T},
        [4],
        T=8,
        n_rows=10,
        entropy=lambda A: np.full(len(A), 7.0),
        one_hot_share=lambda A, threshold: threshold,
    )
    assert rows[0]["mean_entropy"] == 7.0 and rows[0]["one_hot_share"] == 0.9


def test_saturation_leaves_torch_thread_count_alone():
    before = torch.get_num_threads()
    saturation.jacobian_norms(np.zeros((2, 3)))
    saturation.softmax_weights(np.zeros((2, 3)))
    assert torch.get_num_threads() == before


def test_short_training_run_learns_only_when_scaled():
    scaled = saturation.train_to_imitate(True, steps=40)
    unscaled = saturation.train_to_imitate(False, steps=40)
    assert len(scaled["loss"]) == 40
    assert scaled["one_hot_start"] == 0.0 and unscaled["one_hot_start"] > 0.3
    drop = {k: r["loss"][0] / r["loss"][-1] for k, r in (("s", scaled), ("u", unscaled))}
    assert drop["s"] > 1.5 and drop["s"] > drop["u"], drop


def test_short_training_run_is_deterministic():
    a, b = (saturation.train_to_imitate(False, steps=5, seed=3) for _ in range(2))
    assert np.array_equal(a["loss"], b["loss"])


def test_written_out_adam_matches_torch_optim():
    torch.manual_seed(0)
    start = torch.randn(4, 3)
    mine, ref = start.clone().requires_grad_(), start.clone().requires_grad_()
    moments = [(torch.zeros_like(mine), torch.zeros_like(mine))]
    optimiser = torch.optim.Adam([ref], lr=0.01)
    for t in range(1, 6):
        (mine**3).sum().backward()
        saturation._adam_step([mine], moments, t, lr=0.01)
        optimiser.zero_grad()
        (ref**3).sum().backward()
        optimiser.step()
    assert torch.allclose(mine, ref, atol=1e-6)
