"""`make grade STUDENTS=... NOTEBOOKS=...`: grading part of a class into its OUT.

Works on a copy of the small graded class (``fixtures/small_class.py``: alice's written
answer waits for hand grading, bob handed in the release). A late student, cleo, is graded
alone; OUT keeps alice's and bob's results, and every output covers all three.
"""

import csv
import os
import shutil
import subprocess

from fixtures.small_class import NB, WRITTEN, copy_out

from grader import settings
from grader.commands import totals
from grader.course import REPO_ROOT, exercises, release_path
from grader.results import messages

OTHER = "04_scaling"


def _csv(path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _make_grade(subs, out, **names):
    args = [f"{key.upper()}={value}" for key, value in names.items()]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}  # not `make test`'s
    return subprocess.run(
        ["make", "-s", "grade", f"SUBMISSIONS={subs}", f"OUT={out}", *args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def test_a_late_student_is_graded_alone_and_joins_the_class(small_class, tmp_path):
    out = copy_out(small_class, tmp_path / "out")
    subs = tmp_path / "submissions"
    shutil.copytree(small_class.parent / "submissions", subs)
    (subs / "cleo").mkdir()
    shutil.copy(release_path(NB), subs / "cleo" / f"{NB}.ipynb")
    (subs / "notes.txt").write_text("not a student")
    totals.rewrite(out, settings.load())  # the copy's outputs as its gradebook now stands
    kept = {p: p.stat().st_mtime_ns for p in (out / "work" / "results").glob("*/*.json")}
    before = _csv(out / "grades.csv")

    proc = _make_grade(subs, out, students="cleo", notebooks=NB)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "graded 1 notebook of 1 student in" in proc.stdout
    assert {p: p.stat().st_mtime_ns for p in kept} == kept, "alice and bob were regraded"
    rows = _csv(out / "grades.csv")
    assert [r for r in rows if r["student"] != "cleo"] == before
    cleo = [r for r in rows if r["student"] == "cleo"]
    assert [r["exercise"] for r in cleo] == [e.grade_id for e in exercises(NB)]
    assert {r["student"] for r in _csv(out / "totals.csv")} == {"alice", "bob", "cleo"}

    # The class report: exercises in notebook order, the written answer pending for alice.
    stats = _csv(out / "report" / "exercises.csv")
    assert [s["exercise"] for s in stats] == [e.grade_id for e in exercises(NB)]
    written = next(s for s in stats if s["exercise"] == WRITTEN.grade_id)
    assert (written["students"], written["scored"], written["pending"]) == ("3", "2", "1")
    index = (out / "report" / "index.html").read_text()
    assert "1 of 3 pending hand grading" in index
    assert "ignored in the submissions folder: notes.txt" in index
    # A rerun of the fast totals command keeps what the grading run saw.
    totals.rewrite(out, settings.load())
    assert "ignored in the submissions folder: notes.txt" in (out / "report/index.html").read_text()

    # Feedback renders a message's `code` as code.
    stub = next(r["message"] for r in cleo if "`" in r["message"])
    feedback = (out / "feedback" / "cleo.html").read_text()
    name = stub.split("`")[1]
    assert f"<code>{name}</code>" in feedback and f"`{name}`" not in feedback


def test_a_student_graded_alone_keeps_every_record_complete(small_class, tmp_path):
    """`STUDENTS=dora` alone, dora handing in notebook 04 only: her record has notebook 02
    too ("not submitted"), alice's and bob's have 04 ("not graded yet"), so every total has
    every notebook's maximum; the report counts what was handed in and graded."""
    out = copy_out(small_class, tmp_path / "out")
    subs = tmp_path / "submissions"
    shutil.copytree(small_class.parent / "submissions", subs)
    (subs / "dora").mkdir()
    shutil.copy(release_path(OTHER), subs / "dora" / f"{OTHER}.ipynb")
    proc = _make_grade(subs, out, students="dora")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "graded 2 notebooks of 1 student in" in proc.stdout

    most = {nb: sum(e.max_points for e in exercises(nb)) for nb in (NB, OTHER)}
    totals_ = {r["student"]: r for r in _csv(out / "totals.csv")}
    assert list(totals_["alice"])[1:3] == [NB, OTHER]
    for student in ("alice", "bob", "dora"):
        assert float(totals_[student]["max_total"]) == most[NB] + most[OTHER], student
    rows = _csv(out / "grades.csv")
    dora_nb = {r["message"] for r in rows if (r["student"], r["notebook"]) == ("dora", NB)}
    assert dora_nb == {"Notebook not submitted."}
    bob_04 = {r["message"] for r in rows if (r["student"], r["notebook"]) == ("bob", OTHER)}
    assert bob_04 == {messages.NO_RESULT_YET}
    index = (out / "report" / "index.html").read_text()
    assert "3 students: 3 notebooks submitted, 3 graded." in index


def test_unknown_students_are_named_with_the_known_ones(small_class, tmp_path):
    out = tmp_path / "out"
    proc = _make_grade(small_class.parent / "submissions", out, students="alice zed")
    assert proc.returncode != 0
    assert "unknown student 'zed'; known students: alice, bob" in proc.stderr
    assert not out.exists()
