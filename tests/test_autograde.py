"""The instructor's grader, end to end through the real CLI.

One session-scoped run grades a class of adversarial and broken submissions
(``fixtures/adversarial.py``, one student per item of issue 5) plus a student who submits every
solution notebook and one who submits every untouched release notebook. The tests then read
its outputs; two small extra runs check determinism, isolation and resuming.
"""

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.adversarial import NB, build

from grader.course import REPO_ROOT, assignments, exercises

CLI = [sys.executable, "-m", "grader", "autograde"]
FAST = ["--cell-timeout", "6", "--notebook-timeout", "120", "--quiet"]


def _grade(subs: Path, out: Path, *extra, check=True):
    proc = subprocess.run(
        [*CLI, str(subs), "--out", str(out), *FAST, *extra],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _rows(out: Path) -> list[dict]:
    with open(out / "grades.csv", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    """(submissions, out, cases, rows, results) of the fixture class, graded once."""
    root = tmp_path_factory.mktemp("class")
    subs, out = root / "submissions", root / "out"
    cases = build(subs, REPO_ROOT, out)
    before = {p: p.stat().st_mtime_ns for p in subs.rglob("*")}
    proc = _grade(subs, out)
    after = {p: p.stat().st_mtime_ns for p in subs.rglob("*")}
    assert before == after, "grading changed the submissions folder"
    results = {}
    for path in (out / "work" / "results").glob("*/*.json"):
        result = json.loads(path.read_text())
        results[(result["student"], result["notebook"])] = result
    return subs, out, cases, _rows(out), results, proc.stdout


def _mine(rows, student, notebook=NB):
    return {r["exercise"]: r for r in rows if r["student"] == student and r["notebook"] == notebook}


# ----------------------------------------------------------------------------- the contract


def test_grades_csv_has_exactly_the_contract_columns(graded):
    _, out, cases, rows, _, _ = graded
    header = (out / "grades.csv").read_text().splitlines()[0]
    assert header == "student,notebook,exercise,points,max_points,message"
    expected = {(s, a, e.grade_id) for s in cases for a in assignments() for e in exercises(a)}
    assert {(r["student"], r["notebook"], r["exercise"]) for r in rows} == expected
    assert len(rows) == len(expected)


@pytest.mark.parametrize("assignment", assignments())
def test_every_solution_scores_full_marks(graded, assignment):
    rows = _mine(graded[3], "all_solutions", assignment)
    for ex in exercises(assignment):
        row = rows[ex.grade_id]
        if ex.autograded:
            assert (row["points"], row["message"]) == (f"{ex.max_points:g}", ""), row
        else:
            assert (row["points"], row["message"]) == ("", "graded by hand"), row
    result = graded[4][("all_solutions", assignment)]
    assert not result["flags"]
    assert not result["notes"], "the solution's own outputs were cut (figures over the cap?)"


@pytest.mark.parametrize("assignment", assignments())
def test_untouched_release_scores_zero_with_a_reason(graded, assignment):
    rows = _mine(graded[3], "all_release", assignment)
    for ex in exercises(assignment):
        row = rows[ex.grade_id]
        assert row["points"] == "0", row
        assert row["message"], row
        if ex.autograded:
            assert "isn't written yet" in row["message"], row
        else:
            assert row["message"] == "No answer written."


def test_totals_and_missing_notebooks(graded):
    _, out, cases, rows, _, _ = graded
    with open(out / "totals.csv", newline="") as fh:
        totals = {r["student"]: r for r in csv.DictReader(fh)}
    assert set(totals) == set(cases)
    full = sum(e.max_points for a in assignments() for e in exercises(a) if e.autograded)
    assert float(totals["all_solutions"]["total"]) == full
    assert float(totals["all_release"]["total"]) == 0
    if len(assignments()) > 1:  # the others submitted notebook 01 only
        other = next(a for a in assignments() if a != NB)
        assert all(
            r["points"] == "0" and r["message"] == "Notebook not submitted."
            for r in _mine(rows, "honest", other).values()
        )


# ----------------------------------------------------------------------------- pinned class


CASE_IDS = """
    honest monkeypatch_np patch_checks input_transformer custom_exc showtraceback settrace
    event_hook deleted_tests skip_tags test_to_markdown forged_cells duplicated_answer reordered
    eq_object ndarray_subclass read_secrets write_gradebook shortcut_torch course_helper
    shortcut_alias shortcut_tamper torch_building_block shortcut_sdpa
    loop_in_cell loop_in_function os_exit_cell os_exit_function memory_hog system_exit
    syntax_error output_flood warnings corrupt_json empty_file old_nbformat latin1 wrong_name
    untitled nested zip_inside zoe not_submitted
""".split()


@pytest.mark.parametrize("student", CASE_IDS)
def test_pinned_points_flags_and_messages(graded, student):
    _, _, cases, rows, results, _ = graded
    assert set(CASE_IDS) | {"all_solutions", "all_release"} == set(cases)
    case = cases[student]
    mine = _mine(rows, student, case.notebook)
    result = results[(student, case.notebook)]
    for ex in exercises(case.notebook):
        want = case.points.get(ex.grade_id, "full" if ex.autograded else "")
        if want is None:
            continue
        want = f"{ex.max_points:g}" if want == "full" else ("" if want == "" else f"{want:g}")
        assert mine[ex.grade_id]["points"] == want, (ex.grade_id, mine[ex.grade_id])
        if ex.autograded and want == f"{ex.max_points:g}":
            assert mine[ex.grade_id]["message"] == ""
        elif ex.autograded:
            assert mine[ex.grade_id]["message"], "lost points need a reason"
    for flag in case.flags:
        assert any(flag in f for f in result["flags"]), (flag, result["flags"])
    for note in case.notes:
        assert any(note in n for n in result["notes"]), (note, result["notes"])
    for ex, text in case.messages.items():
        assert text in mine[ex]["message"], mine[ex]
    if case.unflagged:
        assert result["flags"] == []
    if case.flags:  # every attempt appears in the instructor's report, with its reason
        report = (graded[1] / "report" / "index.html").read_text()
        assert f"{student} · {case.notebook}" in report


def test_nothing_outside_the_sandbox_was_touched(graded):
    subs, out, _, rows, _, _ = graded
    assert (subs / "honest" / f"{NB}.ipynb").read_text().startswith("{")
    with sqlite3.connect(out / "gradebook.db") as con:
        assert con.execute(
            "select count(*) from grade where manual_score is not null"
        ).fetchone() == (0,)
    assert not (subs.parent / "escape.txt").exists() and not (out / "work" / "escape.txt").exists()
    assert "hacked" not in (out / "grades.csv").read_text()


def test_gradebook_matches_grades_csv(graded):
    _, out, _, rows, _, _ = graded
    with sqlite3.connect(out / "gradebook.db") as con:
        (auto,) = con.execute(
            "select sum(g.auto_score) from grade g join submitted_notebook n on g.notebook_id = "
            "n.id join submitted_assignment a on n.assignment_id = a.id join student s on "
            "a.student_id = s.id where s.id = 'all_solutions'"
        ).fetchone()
        hidden = con.execute(
            "select count(*) from source_cell where source like '%BEGIN HIDDEN TESTS%'"
        ).fetchone()
    full = sum(e.max_points for a in assignments() for e in exercises(a) if e.autograded)
    assert auto == pytest.approx(full)
    assert hidden == (0,), "the gradebook must not store hidden test sources"
    assert (out / "nbgrader" / "nbgrader_config.py").is_file()


def test_feedback_and_report_never_show_hidden_tests(graded):
    _, out, cases, _, _, _ = graded
    pages = list((out / "feedback").glob("*.html"))
    assert len(pages) == len(cases)
    autograded = list((out / "nbgrader" / "autograded").rglob("*.ipynb"))
    assert autograded
    for path in [*pages, *autograded, out / "report" / "index.html"]:
        text = path.read_text()
        assert "BEGIN HIDDEN TESTS" not in text and "verify(" not in text, path
    honest = (out / "feedback" / "monkeypatch_np.html").read_text()
    assert "hard_lookup" in honest and "SMALLEST" in honest


def test_class_report_files(graded):
    _, out, _, _, _, stdout = graded
    report = out / "report"
    assert (report / "histogram.png").read_bytes()[:4] == b"\x89PNG"
    with open(report / "exercises.csv", newline="") as fh:
        stats = {(r["notebook"], r["exercise"]): r for r in csv.DictReader(fh)}
    assert float(stats[(NB, "hard_lookup")]["full_marks_rate"]) < 1
    assert "SMALLEST" in stats[(NB, "hard_lookup")]["top_messages"]
    with open(report / "flags.csv", newline="") as fh:
        flagged = {r["student"] for r in csv.DictReader(fh)}
    assert {"monkeypatch_np", "read_secrets", "skip_tags"} <= flagged
    assert "honest" not in flagged
    assert "flagged for review" in stdout


# ----------------------------------------------------------------------------- reruns


def test_rerun_is_identical_and_isolated(graded, tmp_path):
    """Three students graded alone get exactly the rows they got among crashing classmates."""
    subs, _, _, rows, _, _ = graded
    alone = tmp_path / "subs"
    for student in ("honest", "monkeypatch_np", "os_exit_function"):
        (alone / student).mkdir(parents=True)
        for f in (subs / student).iterdir():
            (alone / student / f.name).write_bytes(f.read_bytes())
    _grade(alone, tmp_path / "out", "--notebooks", NB)
    again = [
        r
        for r in rows
        if r["student"] in {"honest", "monkeypatch_np", "os_exit_function"} and r["notebook"] == NB
    ]
    assert _rows(tmp_path / "out") == again


def test_interrupted_run_resumes_without_regrading(graded, tmp_path):
    subs, _, _, rows, _, _ = graded
    small = tmp_path / "subs"
    students = ("honest", "patch_checks", "syntax_error")
    for student in students:
        (small / student).mkdir(parents=True)
        (small / student / f"{NB}.ipynb").write_bytes((subs / student / f"{NB}.ipynb").read_bytes())
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*CLI, str(small), "--out", str(out), *FAST, "--jobs", "1"],
        cwd=REPO_ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while not list((out / "work" / "results").glob("*/*.json")):
        assert proc.poll() is None and time.monotonic() < deadline, "no result before the kill"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "grades.csv").exists()
    finished = len(list((out / "work" / "results").glob("*/*.json")))
    resumed = _grade(small, out)
    assert f"({finished} reused" in resumed.stdout
    want = [r for r in rows if r["student"] in students and r["notebook"] == NB]
    assert _rows(out) == want
    # A written answer graded by hand in formgrader shows up in grades.csv on the next run.
    with sqlite3.connect(out / "gradebook.db") as con:
        con.execute(
            "update grade set manual_score = 1.5 where cell_id in (select id from base_cell "
            "where name = 'keys_vs_values') and notebook_id in (select n.id from "
            "submitted_notebook n join submitted_assignment a on n.assignment_id = a.id "
            "where a.student_id = 'honest')"
        )
    rerun = _grade(small, out)
    assert "(3 reused" in rerun.stdout
    written = _mine(_rows(out), "honest")["keys_vs_values"]
    assert (written["points"], written["message"]) == ("1.5", "")


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "setup, args, message",
    [
        ("missing", [], "does not exist"),
        ("empty", [], "is empty"),
        ("junk", [], "no submitted file is a course notebook"),
        ("ok", ["--notebooks", "99_nothing"], "unknown notebook '99_nothing'"),
        ("ok", ["--out-inside"], "must not be inside the submissions folder"),
    ],
)
def test_clear_one_line_errors(tmp_path, setup, args, message):
    subs = tmp_path / "subs"
    if setup != "missing":
        subs.mkdir()
    if setup == "junk":
        (subs / "alice").mkdir()
        (subs / "alice" / "homework.py").write_text("print(1)")
    if setup == "ok":
        (subs / "alice").mkdir()
    out = tmp_path / "out"
    if "--out-inside" in args:
        args, out = [], subs / "out"
    proc = subprocess.run(
        [*CLI, str(subs), "--out", str(out), *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert not (out / "grades.csv").exists()
