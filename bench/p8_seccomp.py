"""The sandbox's system-call filter (``grader.run.seccomp``): what it costs grading.

1. Grading: a sample of the synthetic class of ``p2_grading`` (``ATTN_BENCH_SECCOMP_STUDENTS``
   students, 4 by default, two notebooks) graded four times in turn, with the filter, without
   it (``--GraderSettings.seccomp=False``), without, with, so that a change in the machine's
   load weighs on both sides; the row is the mean time a notebook took in a worker, filtered
   over unfiltered (target ≤ 1.02×).
2. One system call: a million ``getppid`` in a sandbox, with and without the filter, five
   times in turn; the row is the extra time per call (best run against best run).
3. The filter's cost, computed: the filter acts only when a process enters the kernel, so its
   cost per notebook is (system calls per notebook) × (2). The calls are counted by ``perf
   stat`` (Debian's linux-perf, installed by ``make bench``) over a filtered grading run of
   the same sample: every call of every process, the grader's own included, so the count
   is an upper bound on those the filter sees. ``clone``, the one call the filter reads the
   arguments of, gets its own count. Target ≤ 2% of a notebook's time from (1): this row,
   unlike (1), does not move with the machine's load (same-kind runs of (1) differ by up to
   20% on a shared machine).
"""

import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.p2_grading import ENV, _grade, autograde, make_class
from grader.course import REPO_ROOT
from grader.run import sandbox, seccomp

NOTEBOOKS = ("01_soft_lookup", "05_causal_mask")
CALLS = 1_000_000
LOOP = f"import os, time\nt = time.perf_counter()\nfor _ in range({CALLS}): os.getppid()\n"
LOOP += "print(time.perf_counter() - t)"


def _per_notebook(subs: Path, root: Path, filtered: bool, n: int) -> float:
    off = [] if filtered else ["--GraderSettings.seccomp=False"]
    out = root / f"out-{n}-{'on' if filtered else 'off'}"
    return _grade(subs, out, "--notebooks", *NOTEBOOKS, *off)[1]


def _grading(subs: Path, root: Path) -> tuple[float, float]:
    """(mean s per notebook filtered, unfiltered) over the four runs."""
    times = {True: [], False: []}
    for n, filtered in enumerate((True, False, False, True)):
        times[filtered].append(_per_notebook(subs, root, filtered, n))
    return statistics.mean(times[True]), statistics.mean(times[False])


def _calls(subs: Path, root: Path) -> tuple[float, float]:
    """(system calls, clone calls) per notebook over a filtered grading run, from perf."""
    out = root / "out-counted"
    events = "raw_syscalls:sys_enter,syscalls:sys_enter_clone"
    grading = autograde(subs, out, "--notebooks", *NOTEBOOKS)
    proc = subprocess.run(["perf", "stat", "-x,", "-e", events, *grading], cwd=REPO_ROOT,
                          env=ENV, capture_output=True, text=True, check=True)  # fmt: skip
    fields = [line.split(",") for line in proc.stderr.splitlines()]
    counts = {f[2]: int(f[0]) for f in fields if len(f) > 2 and f[0].isdigit()}
    notebooks = len(list((out / "work" / "results").glob("*/*.json")))
    return counts["raw_syscalls:sys_enter"] / notebooks, counts[events.split(",")[1]] / notebooks


def _per_call() -> float:
    """Extra seconds per getppid in a sandbox with the filter: the best of five runs of the
    loop each way, taken in turn."""
    best = {True: float("inf"), False: float("inf")}
    with tempfile.TemporaryDirectory() as ipc, tempfile.TemporaryDirectory() as private:
        os.chmod(ipc, 0o777)
        bpf = seccomp.write(private)
        for _, filtered in itertools.product(range(5), (True, False)):
            args = sandbox.command(
                [sys.executable, "-c", LOOP], scratch="/home/student", ipc=ipc, files={},
                folders=[], uid=61999 if os.geteuid() == 0 else None, scratch_mb=16,
                seccomp=bpf if filtered else None,
            )  # fmt: skip
            run = subprocess.run(args, capture_output=True, text=True, check=True)
            best[filtered] = min(best[filtered], float(run.stdout) / CALLS)
    return best[True] - best[False]


def run() -> list[tuple[str, str, str]]:
    start = time.perf_counter()
    students = int(os.environ.get("ATTN_BENCH_SECCOMP_STUDENTS", "4"))
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        make_class(root / "subs", students)
        filtered, unfiltered = _grading(root / "subs", root)
        calls, clones = _calls(root / "subs", root)
    extra = _per_call()
    share = calls * extra / unfiltered
    return [
        (
            f"seccomp filter, grading {len(NOTEBOOKS)} notebooks × a sample, per notebook "
            f"(filtered / unfiltered, {filtered:.2f} s / {unfiltered:.2f} s, "
            f"{time.perf_counter() - start:.0f} s in all)",
            f"{filtered / unfiltered:.3f}×",
            "≤ 1.02×",
        ),
        ("seccomp filter, one system call (getppid), extra time", f"{extra * 1e9:.0f} ns", ""),
        (
            f"seccomp filter, computed: {calls:,.0f} system calls per notebook ({clones:.0f} "
            f"clone) × {extra * 1e9:.0f} ns over {unfiltered:.2f} s",
            f"{share:.2%}",
            "≤ 2%",
        ),
    ]
