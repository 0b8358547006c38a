"""Measure what a score matrix costs: wall time and memory as the sequence length T grows.

The score function is passed in (a notebook passes the learner's own ``attention_scores``;
a benchmark can pass anything with the same signature), so this module holds no answer.

    rows = measure_score_cost(attention_scores, Ts=(256, 512, 1024), d_k=64)
    loglog_slope([r.T for r in rows], [r.seconds for r in rows])  # about 2 for a T×T matrix
"""

import ctypes
import glob
import os
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

ScoreFn = Callable[[npt.NDArray[Any], npt.NDArray[Any]], npt.ArrayLike]
ThreadsFn = Callable[..., int]


@dataclass
class CostRow:
    """One measured length: median time of a call and the bytes of the matrix it returned."""

    T: int
    d_k: int
    seconds: float  # best wall time of one call (see time_call)
    nbytes: int  # size of the returned array (its .nbytes)
    peak_bytes: int  # largest extra allocation traced by tracemalloc during one call
    dtype: str
    shape: tuple[int, ...]
    blas_threads: int | None  # BLAS threads used for timing (None: the library's default)


def _openblas() -> tuple[ThreadsFn, ThreadsFn] | None:
    """NumPy's bundled OpenBLAS (pip wheels), or None (e.g. macOS Accelerate, MKL builds)."""
    import numpy

    pattern = os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs", "*openblas*")
    for path in glob.glob(pattern):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    return get, put
    return None


@contextmanager
def blas_threads(n: int) -> Iterator[int | None]:
    """Run NumPy's matrix products on ``n`` threads inside the block, where that can be set.

    Yields ``n`` if it was set, else None. With several threads, every call on a busy shared
    machine waits for a free core, which hides the cost of the computation itself.
    """
    found = _openblas()
    if found is None:
        yield None
        return
    get, put = found
    before = get()
    put(n)
    try:
        yield n
    finally:
        put(before)


def time_call(
    fn: Callable[..., object],
    *args: object,
    reps: int = 5,
    min_total: float = 0.2,
    max_reps: int = 100,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Best (smallest) wall time in seconds of one call ``fn(*args)``, after a warm-up.

    Calls at least ``reps`` times and keeps going until ``min_total`` seconds have been spent
    (at most ``max_reps`` calls). On a shared machine many calls wait for a busy CPU core;
    the best one is the least disturbed, so it is the cost of the computation itself.
    ``clock=time.thread_time`` counts this thread's CPU time instead, which leaves the waiting
    out altogether (for work done on the calling thread: one BLAS or torch thread).
    """
    fn(*args)
    times: list[float] = []
    while len(times) < reps or (sum(times) < min_total and len(times) < max_reps):
        start = clock()
        fn(*args)
        times.append(clock() - start)
    return float(np.min(times))


def peak_bytes(fn: Callable[..., object], *args: object) -> int:
    """Peak memory allocated during ``fn(*args)`` (NumPy reports its buffers to tracemalloc)."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        out = fn(*args)
        peak = tracemalloc.get_traced_memory()[1] - before
        del out
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return int(peak)


def measure_score_cost(
    scores: ScoreFn,
    Ts: Sequence[int] = (256, 512, 1024, 2048, 4096),
    d_k: int = 64,
    reps: int = 5,
    dtype: npt.DTypeLike = np.float32,
    seed: int = 0,
    budget_s: float = 2.0,
    threads: int | None = 1,
) -> list[CostRow]:
    """Time and size of ``scores(Q, K)`` for Q, K of shape [T, d_k], for each T in ``Ts``.

    Timing runs on ``threads`` BLAS threads where NumPy lets us set it (``None``: leave the
    default). Stops early (returning the rows measured so far) once one call takes longer
    than ``budget_s`` seconds, so a slow loop implementation cannot hang a notebook.
    """
    if threads is None:
        return _measure(scores, Ts, d_k, reps, dtype, seed, budget_s, None)
    with blas_threads(threads) as used:
        return _measure(scores, Ts, d_k, reps, dtype, seed, budget_s, used)


def _measure(
    scores: ScoreFn,
    Ts: Sequence[int],
    d_k: int,
    reps: int,
    dtype: npt.DTypeLike,
    seed: int,
    budget_s: float,
    used_threads: int | None,
) -> list[CostRow]:
    rng = np.random.default_rng(seed)
    rows: list[CostRow] = []
    for T in Ts:
        Q = rng.standard_normal((T, d_k)).astype(dtype)  # [T, d_k]
        K = rng.standard_normal((T, d_k)).astype(dtype)  # [T, d_k]
        start = time.perf_counter()
        S = np.asarray(scores(Q, K))  # [T, T]
        first = time.perf_counter() - start
        if first > budget_s:
            break
        rows.append(
            CostRow(
                T=T,
                d_k=d_k,
                seconds=time_call(scores, Q, K, reps=reps),
                nbytes=int(S.nbytes),
                peak_bytes=peak_bytes(scores, Q, K),
                dtype=str(S.dtype),
                shape=tuple(S.shape),
                blas_threads=used_threads,
            )
        )
        del S
    return rows


def loglog_slope(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Slope of the least-squares line through (log x, log y): y ∝ x**slope."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def per_doubling(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Ratio of each value to the one before it (×4 per doubling of T means quadratic)."""
    v = np.asarray(values, dtype=float)
    ratios: npt.NDArray[np.float64] = v[1:] / v[:-1]
    return ratios
