"""The sandbox's system-call filter (``grader.run.seccomp``): what it costs grading.

1. Grading: a sample of the synthetic class of ``p2_grading`` (``ATTN_BENCH_SECCOMP_STUDENTS``
   students, 4 by default, two notebooks) graded four times in turn, with the filter, without
   it (``--GraderSettings.seccomp=False``), without, with, so that a change in the machine's
   load weighs on both sides; the row is the mean time a notebook took in a worker, filtered
   over unfiltered (target ≤ 1.02×).
2. One system call: a million ``getppid`` in a sandbox, with and without the filter; the row
   is the extra time per call (no target: it says why (1) is small, a kernel spends its time
   computing, not in system calls).
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.p2_grading import _grade, make_class
from grader.run import sandbox, seccomp

NOTEBOOKS = ("01_soft_lookup", "05_causal_mask")
CALLS = 1_000_000
LOOP = f"import os, time\nt = time.perf_counter()\nfor _ in range({CALLS}): os.getppid()\n"
LOOP += "print(time.perf_counter() - t)"


def _per_notebook(subs: Path, root: Path, filtered: bool, n: int) -> float:
    off = [] if filtered else ["--GraderSettings.seccomp=False"]
    out = root / f"out-{n}-{'on' if filtered else 'off'}"
    return _grade(subs, out, "--notebooks", *NOTEBOOKS, *off)[1]


def _grading(root: Path) -> tuple[float, float]:
    """(mean s per notebook filtered, unfiltered) over the four runs."""
    students = int(os.environ.get("ATTN_BENCH_SECCOMP_STUDENTS", "4"))
    subs = root / "subs"
    make_class(subs, students)
    times = {True: [], False: []}
    for n, filtered in enumerate((True, False, False, True)):
        times[filtered].append(_per_notebook(subs, root, filtered, n))
    return statistics.mean(times[True]), statistics.mean(times[False])


def _per_call(filtered: bool) -> float:
    """Seconds per getppid in a sandbox (the best of three runs of the loop)."""
    with tempfile.TemporaryDirectory() as ipc, tempfile.TemporaryDirectory() as private:
        os.chmod(ipc, 0o777)
        args = sandbox.command(
            [sys.executable, "-c", LOOP], scratch="/home/student", ipc=ipc, files={},
            folders=[], uid=61999 if os.geteuid() == 0 else None, scratch_mb=16,
            seccomp=seccomp.write(private) if filtered else None,
        )  # fmt: skip
        runs = [subprocess.run(args, capture_output=True, text=True, check=True) for _ in "abc"]
    return min(float(r.stdout) for r in runs) / CALLS


def run() -> list[tuple[str, str, str]]:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as root:
        filtered, unfiltered = _grading(Path(root))
    extra = _per_call(True) - _per_call(False)
    return [
        (
            f"seccomp filter, grading {len(NOTEBOOKS)} notebooks × a sample, per notebook "
            f"(filtered / unfiltered, {filtered:.2f} s / {unfiltered:.2f} s, "
            f"{time.perf_counter() - start:.0f} s in all)",
            f"{filtered / unfiltered:.3f}×",
            "≤ 1.02×",
        ),
        ("seccomp filter, one system call (getppid), extra time", f"{extra * 1e9:.0f} ns", ""),
    ]
