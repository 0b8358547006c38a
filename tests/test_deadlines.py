"""Due dates, extensions and the late policy (``grader.deadlines``), through the real CLI.

On a copy of the small graded class (``fixtures/small_class.py``), alice and bob hand in
again with nbgrader's ``timestamp.txt``: alice 3 hours after the due date, bob before it.
The rerun reuses their results (a due date is no part of a grade), records the times, and
`totals` applies the policy as the settings then are.
"""

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from fixtures.small_class import AUTOGRADED, NB, copy_out

from grader import csvfile, deadlines
from grader.course import REPO_ROOT

DUE = f'--GraderSettings.due_dates={{"{NB}": "2026-12-01 13:00 +01:00"}}'  # 12:00 UTC
PER_HOUR = ["--GraderSettings.late_policy=per_hour", "--GraderSettings.late_penalty=0.1"]


def _cli(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "grader", *map(str, args)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    if check:
        assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def _rows(out, name="grades.csv"):
    return csvfile.read(out / name)


@pytest.fixture(scope="module")
def late_class(small_class, tmp_path_factory):
    """OUT after a rerun in which alice's and bob's submissions carry nbgrader's timestamp
    (the tests below run `totals` on it in turn, each with the settings it needs)."""
    tmp_path = tmp_path_factory.mktemp("late_class")
    out = copy_out(small_class, tmp_path / "out")
    subs = tmp_path / "submissions"
    shutil.copytree(small_class.parent / "submissions", subs)
    (subs / "alice" / "timestamp.txt").write_text("2026-12-01 14:20:00.000000 UTC\n")
    (subs / "bob" / "timestamp.txt").write_text("2026-12-01 11:59:00.000000 UTC\n")
    results = {p: p.stat().st_mtime_ns for p in (out / "work" / "results").rglob("*.json")}
    proc = _cli("autograde", subs, "--out", out, "--quiet", DUE, *PER_HOUR)
    assert "(2 reused from an earlier run)" in proc.stdout, proc.stdout
    assert {p: p.stat().st_mtime_ns for p in results} == results, "a due date regraded"
    return out


def test_a_late_student_loses_points_and_an_on_time_one_does_not(late_class):
    out = late_class
    _cli("totals", out, DUE, *PER_HOUR)  # as the grading run left it, whatever ran before
    times = json.loads((out / "work" / "times.json").read_text())
    assert times["alice"][NB] == {
        "time": "2026-12-01T14:20:00+00:00",
        "source": "timestamp.txt of the submission",
    }
    late = [r for r in _rows(out) if r["exercise"] == deadlines.LATE_ROW]
    assert [(r["student"], r["points"], r["max_points"]) for r in late] == [
        ("alice", f"{-0.3 * (AUTOGRADED + 2):g}", "0")  # 2 h 20 min: 3 started hours, 10% each
    ]
    assert "2 hours" not in late[0]["message"] and "3 hours late" in late[0]["message"]
    totals = {r["student"]: r for r in _rows(out, "totals.csv")}
    assert totals["alice"][NB] == f"{AUTOGRADED - 0.3 * (AUTOGRADED + 2):g}"
    alice = (out / "feedback" / "alice.html").read_text()
    assert "due 2026-12-01 12:00 UTC: 3 hours late; penalty 30%" in alice
    assert "(timestamp.txt of the submission)" in alice and "Late penalty" in alice
    assert "ignored extra files" not in alice, "nbgrader's timestamp.txt is no stray file"
    bob = (out / "feedback" / "bob.html").read_text()
    assert "Handed in 2026-12-01 11:59 UTC (timestamp.txt of the submission)" in bob
    assert "on time." in bob and "Late penalty" not in bob
    report = (out / "report" / "index.html").read_text()
    assert "<h2>Late work</h2>" in report and "3 hours late" in report


def test_totals_and_export_apply_the_policy_as_it_stands(late_class):
    """An extension or another policy needs only `totals`; the export carries the lateness."""
    out = late_class
    _cli("totals", out, DUE, *PER_HOUR, '--GraderSettings.extensions={"alice": 3}')
    assert not [r for r in _rows(out) if r["exercise"] == deadlines.LATE_ROW]
    assert "on time." in (out / "feedback" / "alice.html").read_text()

    _cli("totals", out, DUE, "--GraderSettings.late_policy=refuse")
    totals = {r["student"]: r for r in _rows(out, "totals.csv")}
    assert (totals["alice"][NB], totals["bob"][NB]) == ("0", "0")
    assert "late work is not accepted" in (out / "feedback" / "alice.html").read_text()

    _cli("export", out, DUE, *PER_HOUR)
    long = {r["student"]: r for r in _rows(out, "grades_long.csv")}
    assert list(long["alice"])[-2:] == ["late_hours", "late_penalty"]
    assert (long["alice"]["late_hours"], long["alice"]["late_penalty"]) == ("2.33", "3.6")
    assert (long["bob"]["late_hours"], long["bob"]["late_penalty"]) == ("0.00", "0")


def test_a_bad_due_date_is_one_line(late_class):
    proc = _cli("totals", late_class, f'--GraderSettings.due_dates={{"{NB}": "soon"}}',
                check=False)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: due date 'soon' is not a date (e.g. '2026-12-10 17:00 +01:00')"
    ]


@pytest.mark.parametrize(
    "policy, hours, share",
    [("none", 30, 0), ("per_hour", 0.5, 0.1), ("per_hour", 2.01, 0.3), ("per_hour", 40, 1),
     ("per_day", 1, 0.1), ("per_day", 24.5, 0.2), ("refuse", 0.01, 1), ("refuse", 0, 0)],
)  # fmt: skip
def test_penalty_share(policy, hours, share):
    settings = SimpleNamespace(late_policy=policy, late_penalty=0.1)
    assert deadlines.penalty_fraction(settings, hours) == pytest.approx(share)


def test_due_dates_extensions_and_file_times(tmp_path):
    settings = SimpleNamespace(
        due_dates={NB: "2026-12-01 17:00"}, extensions={"ada": 24, "bo": {NB: 2, "other": 9}}
    )
    assert deadlines.due(settings, "cy", NB) == datetime(2026, 12, 1, 17, tzinfo=UTC)
    assert deadlines.due(settings, "ada", NB) == datetime(2026, 12, 2, 17, tzinfo=UTC)
    assert deadlines.due(settings, "bo", NB) == datetime(2026, 12, 1, 19, tzinfo=UTC)
    assert deadlines.due(settings, "bo", "04_other") is None
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / f"{NB}.ipynb").write_text("{}")
    found = deadlines.submission_time(tmp_path / "ada", NB, f"{NB}.ipynb")
    assert found["source"] == f"modification time of {NB}.ipynb"
    (tmp_path / "ada" / "timestamp.txt").write_text("not a time")
    assert deadlines.submission_time(tmp_path / "ada", NB, f"{NB}.ipynb") == found
