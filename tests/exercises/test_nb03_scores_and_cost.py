"""Notebook 03: the catalogue of `attention_scores` and `score_matrix_bytes`, and attnlib.cost."""

import numpy as np
import pytest
from catalogue import catalogue_tests

from attnlib import cost

NB = "03_scores_and_cost"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


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
