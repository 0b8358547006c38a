"""Notebook 03: the checks of `attention_scores` and `score_matrix_bytes`, and attnlib.cost."""

import numpy as np
import pytest
import torch

from attnlib import cost
from attnlib.checks import nb03_scores_and_cost as checks
from attnlib.checks._core import CheckFailed
from grader.hidden import verify

NB = "03_scores_and_cost"


def both(name, fn):
    """The visible check, then the hidden one, as the graded notebook runs them."""
    getattr(checks, f"check_{name}")(fn)
    verify(name, fn)


# --------------------------------------------------------------------------- attention_scores


def _loops(Q, K):
    S = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(Q.shape[0]):
        for j in range(K.shape[0]):
            S[i, j] = sum(Q[i, c] * K[j, c] for c in range(Q.shape[1]))
    return S


@pytest.mark.parametrize(
    "fn",
    [
        _loops,
        lambda Q, K: np.einsum("id,jd->ij", Q, K),
        lambda Q, K: (torch.from_numpy(np.asarray(Q)) @ torch.from_numpy(np.asarray(K)).T).numpy(),
        lambda Q, K: np.dot(np.asarray(Q, dtype=np.float32), np.asarray(K, dtype=np.float32).T),
    ],
    ids=["loops", "einsum", "torch", "float32"],
)
def test_correct_alternatives_pass_attention_scores(fn):
    both("attention_scores", fn)


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda Q, K: K @ Q.T, r"K Qᵀ instead of Q Kᵀ"),
        (lambda Q, K: Q.T @ K, r"\[d_k, d_k\].*Qᵀ K"),
        (lambda Q, K: Q @ K.T / np.sqrt(Q.shape[-1]), r"divided by √d_k.*unscaled"),
        (lambda Q, K: Q @ K.T / Q.shape[-1], r"divided by d_k.*unscaled"),
        (lambda Q, K: torch.from_numpy(Q) @ torch.from_numpy(K).T, r"torch tensor.*\.numpy\(\)"),
    ],
    ids=["K_Qt", "Qt_K", "scaled_sqrt", "scaled_dk", "torch_tensor"],
)
def test_visible_check_names_attention_scores_mistakes(fn, message):
    with pytest.raises(CheckFailed, match=message):
        checks.check_attention_scores(fn)


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda Q, K: K @ Q.T, r"computes K Qᵀ"),
        (lambda Q, K: Q @ K.T / np.sqrt(Q.shape[-1]), r"divides by √d_k"),
        (lambda Q, K: Q @ K.T / Q.shape[-1], r"divides by d_k"),
    ],
    ids=["K_Qt", "scaled_sqrt", "scaled_dk"],
)
def test_hidden_check_names_attention_scores_mistakes(fn, message):
    with pytest.raises(CheckFailed, match="Hidden check: .*" + message):
        verify("attention_scores", fn)


def test_visible_check_catches_a_wrong_single_entry():
    def off_by_one(Q, K):
        S = Q @ K.T
        S[0, 0] += 1.0
        return S

    with pytest.raises(CheckFailed, match="query i with key j"):
        checks.check_attention_scores(off_by_one)


# --------------------------------------------------------------------------- score_matrix_bytes


@pytest.mark.parametrize(
    "fn",
    [
        lambda T, dtype_bytes=4: np.zeros((T, T), dtype=f"V{dtype_bytes}").nbytes,
        lambda T, dtype_bytes=4: np.int64(T) ** 2 * dtype_bytes,
        lambda T, dtype_bytes=4: float(T * T * dtype_bytes),
    ],
    ids=["nbytes", "numpy_int", "float"],
)
def test_correct_alternatives_pass_score_matrix_bytes(fn):
    both("score_matrix_bytes", fn)


@pytest.mark.parametrize(
    "fn, visible, hidden",
    [
        (lambda T, dtype_bytes=4: T * dtype_bytes, "linearly", "linearly"),
        (lambda T, dtype_bytes=4: T * T, "number of entries", "number of entries"),
        (lambda T, dtype_bytes=4: T * T * dtype_bytes * 8, "bits", "bits"),
        (lambda T, dtype_bytes=4: T * T * 4, "dtype_bytes", "ignores `dtype_bytes`"),
    ],
    ids=["linear", "entries", "bits", "fixed_4"],
)
def test_checks_name_score_matrix_bytes_mistakes(fn, visible, hidden):
    with pytest.raises(CheckFailed, match=visible):
        checks.check_score_matrix_bytes(fn)
    with pytest.raises(CheckFailed, match="Hidden check: .*" + hidden):
        verify("score_matrix_bytes", fn)


def test_score_matrix_bytes_must_return_a_number():
    with pytest.raises(CheckFailed, match="number of bytes"):
        checks.check_score_matrix_bytes(lambda T, dtype_bytes=4: "16")


# --------------------------------------------------------------------------- attnlib.cost


def test_memory_of_a_float32_score_matrix_is_4_T_squared():
    rows = cost.measure_score_cost(lambda Q, K: Q @ K.T, Ts=(64, 128, 256), d_k=8, reps=1)
    assert [r.nbytes for r in rows] == [4 * T * T for T in (64, 128, 256)]
    assert [r.shape for r in rows] == [(T, T) for T in (64, 128, 256)]
    assert all(r.dtype == "float32" and r.seconds > 0 for r in rows)
    # tracemalloc sees the matrix itself being allocated
    assert all(r.nbytes <= r.peak_bytes < r.nbytes + 64 * 1024 for r in rows)
    assert list(cost.per_doubling([r.nbytes for r in rows])) == [4.0, 4.0]


def test_cost_follows_the_dtype_the_function_returns():
    (row,) = cost.measure_score_cost(lambda Q, K: (Q @ K.T).astype(np.float64), Ts=(32,), reps=1)
    assert row.nbytes == 8 * 32 * 32 and row.dtype == "float64"


def test_peak_bytes_sees_a_temporary_allocation():
    def makes_a_big_temporary():
        np.ones(1_000_000)  # 8 MB, freed at once
        return 0

    assert cost.peak_bytes(makes_a_big_temporary) >= 8_000_000


def test_measure_stops_when_a_call_exceeds_the_budget():
    calls = []

    def slow_for_big(Q, K):
        calls.append(len(Q))
        if len(Q) > 64:
            import time

            time.sleep(0.05)
        return Q @ K.T

    rows = cost.measure_score_cost(
        slow_for_big, Ts=(32, 64, 128, 256), d_k=4, reps=1, budget_s=0.01
    )
    assert [r.T for r in rows] == [32, 64]
    assert 256 not in calls


def test_loglog_slope_recovers_a_power_law():
    T = np.array([256, 512, 1024, 2048])
    assert cost.loglog_slope(T, 3.0 * T**2.0) == pytest.approx(2.0)
    assert cost.loglog_slope(T, 0.5 * T**1.5) == pytest.approx(1.5)


def test_blas_threads_sets_and_restores_the_thread_count():
    found = cost._openblas()
    if found is None:
        with cost.blas_threads(1) as used:
            assert used is None
        return
    get, put = found
    before = get()
    put(2)
    try:
        with cost.blas_threads(1) as used:
            assert used == 1 and get() == 1
        assert get() == 2
    finally:
        put(before)
