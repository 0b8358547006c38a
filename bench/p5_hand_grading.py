"""P5: hand-entered points into the outputs, `grader totals`, against a regrade.

A class (30 students × notebook 01; ``ATTN_BENCH_STUDENTS`` changes the size) is graded once
with the course grader (timed: what a regrade would cost); every written answer then gets
its points in the gradebook, as formgrader saves them, and ``python -m grader totals OUT``
rewrites grades.csv, totals.csv, the feedback and the report (median of 3 runs, each a
fresh process, imports included).
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nbgrader.api import Gradebook

from bench.p2_grading import make_class
from grader.course import REPO_ROOT, exercises
from grader.results import gradebook

NOTEBOOK = "02_projections"  # a notebook with written answers
RUNS = 3


def _cli(*args) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "grader", *map(str, args)], cwd=REPO_ROOT,
                   check=True, capture_output=True, timeout=3600)  # fmt: skip
    return time.perf_counter() - start


def _give_every_written_answer_points(out: Path, students) -> int:
    written = [e for e in exercises(NOTEBOOK) if not e.autograded]
    with Gradebook(gradebook.db_url(out), gradebook.COURSE_ID) as gb:
        for student in students:
            for ex in written:
                gb.find_grade(ex.grade_id, NOTEBOOK, NOTEBOOK, student).manual_score = 1
        gb.db.commit()
    return len(students) * len(written)


def run():
    students = int(os.environ.get("ATTN_BENCH_STUDENTS", 30))
    with tempfile.TemporaryDirectory() as tmp:
        subs, out = Path(tmp) / "subs", Path(tmp) / "out"
        class_ = make_class(subs, students)
        for _, assignment, path in class_:  # notebook 01 only
            if assignment != NOTEBOOK:
                path.unlink()
        regrade = _cli("autograde", subs, "--out", out, "--quiet")
        entered = _give_every_written_answer_points(out, sorted({s for s, _, _ in class_}))
        totals = statistics.median(_cli("totals", out) for _ in range(RUNS))
    return [
        ("P5 class", f"{students} students × {NOTEBOOK}, {entered} written answers graded", ""),
        ("P5 regrade of the class (what `totals` avoids)", f"{regrade:.1f} s", ""),
        ("P5 `grader totals` (median of 3, fresh process)", f"{totals:.1f} s", "≤ 10 s"),
    ]
