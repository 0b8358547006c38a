"""Grading on a Dask cluster: throughput with 1 and 2 workers, and its cost over the local pool.

The synthetic class of ``p2_grading`` (``ATTN_BENCH_STUDENTS`` students × every notebook; two
in three type in the solution's answers) is graded three ways through the real CLI, every
kernel in its OS sandbox:

1. the local pool, ``python -m grader autograde ... --jobs 2``;
2. ``--scheduler`` on a ``LocalCluster`` of 2 single-threaded worker processes on this
   machine;
3. the same with 1 worker;
4. the same with 1 worker, the cluster and the grader confined to one core
   (``sched_setaffinity``: kernels, judging processes, scheduler and the main process inherit it).

Each cluster is started fresh before its run (untimed: instructors grade on a cluster that
is already up); its workers are new processes, as the local pool's are. Rows: the speed-up
(4) / (2) (target ≥ 1.8×): each worker with one core of its own, as a worker added to a
cluster brings its own cores; the speed-up (3) / (2), where the lone worker of (3) also has
the second core for its judging processes, the main process and the scheduler (no target:
on 2 cores that second core is the one the added worker needs); and the overhead (2) / (1)
at equal workers (target ≤ 1.10×). All from wall times, with the machine's load average
during each run (other work on the machine makes these numbers noisy).
"""

import os
import sys
import tempfile
from pathlib import Path

from bench.p2_grading import _grade, _warm, make_class
from grader.course import assignments


def _on_cluster(subs: Path, out: Path, workers: int, cores: int = 0) -> tuple[float, float, float]:
    """``_grade`` on a fresh LocalCluster; with ``cores``, everything runs on that many."""
    every = os.sched_getaffinity(0)
    if cores:
        os.sched_setaffinity(0, sorted(every)[:cores])  # children inherit it
    try:
        return _grade_on_local_cluster(subs, out, workers)
    finally:
        os.sched_setaffinity(0, every)


def _grade_on_local_cluster(subs: Path, out: Path, workers: int) -> tuple[float, float, float]:
    import dask
    from dask.distributed import LocalCluster

    settings = {
        "distributed.worker.daemon": False,  # grading starts a judging process per notebook
        "distributed.scheduler.worker-saturation": 1.0,
    }
    with dask.config.set(settings):
        with LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster:
            return _grade(subs, out, "--scheduler", cluster.scheduler_address)


def run() -> list[tuple[str, str, str]]:
    students = int(os.environ.get("ATTN_BENCH_STUDENTS", 30))
    with tempfile.TemporaryDirectory(prefix="attn-bench-") as tmp:
        tmp = Path(tmp)
        n = len(make_class(tmp / "submissions", students))
        _warm(tmp / "warm")
        pool, _, pool_load = _grade(tmp / "submissions", tmp / "out-pool", "--jobs", "2")
        print(f"local pool, 2 workers: {pool:.1f} s", file=sys.stderr)
        two, _, two_load = _on_cluster(tmp / "submissions", tmp / "out-dask-2", 2)
        print(f"Dask, 2 workers: {two:.1f} s", file=sys.stderr)
        one, _, one_load = _on_cluster(tmp / "submissions", tmp / "out-dask-1", 1)
        print(f"Dask, 1 worker: {one:.1f} s", file=sys.stderr)
        alone, _, alone_load = _on_cluster(tmp / "submissions", tmp / "out-dask-1-core", 1, 1)
        print(f"Dask, 1 worker on 1 core: {alone:.1f} s", file=sys.stderr)
        same = all(
            (tmp / out / "grades.csv").read_text() == (tmp / "out-pool" / "grades.csv").read_text()
            for out in ("out-dask-1", "out-dask-2", "out-dask-1-core")
        )

    def wall(seconds, workers):
        return f"{seconds:.1f} s ({n / seconds * 60:.1f} notebooks/min, {workers})"

    return [
        ("p7 class graded", f"{students} students × {len(assignments())} notebooks = {n}", ""),
        ("p7 local pool, 2 workers, wall time", wall(pool, "2 workers"), ""),
        ("p7 Dask LocalCluster, 1 worker, wall time", wall(one, "1 worker"), ""),
        (
            "p7 Dask LocalCluster, 1 worker, everything on 1 core, wall time",
            wall(alone, "1 worker, 1 core"),
            "",
        ),
        ("p7 Dask LocalCluster, 2 workers, wall time", wall(two, "2 workers"), ""),
        (
            "p7 Dask throughput, 2 workers on 2 cores / 1 worker on 1 core",
            f"{alone / two:.2f}×",
            "≥ 1.8×",
        ),
        ("p7 Dask throughput, 2 workers / 1 worker, both on 2 cores", f"{one / two:.2f}×", ""),
        ("p7 Dask overhead over the local pool, 2 workers each", f"{two / pool:.2f}×", "≤ 1.10×"),
        ("p7 grades.csv of every Dask run identical to the local pool's", str(same), "True"),
        (
            "p7 load average during the pool / Dask-2 / Dask-1 / Dask-1 on 1 core runs",
            f"{pool_load:.1f} / {two_load:.1f} / {one_load:.1f} / {alone_load:.1f} "
            f"({os.cpu_count()} cores)",
            "",
        ),
    ]


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row))
