"""Notebook 04: the catalogue of the scaling exercises, and attnlib.saturation."""

import numpy as np
import pytest
import torch
from catalogue import catalogue_tests

from attnlib import saturation

NB = "04_scaling"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


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
