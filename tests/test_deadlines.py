"""Due dates, extensions and the late policy (``grader.results.deadlines``), through the real CLI.

On a copy of the small graded class (``fixtures/small_class.py``), alice and bob hand in
again with nbgrader's ``timestamp.txt``: alice 3 hours after the due date, bob before it.
The rerun reuses their results (a due date is no part of a grade), records the times, and
`totals` applies the policy as the settings then are. On the workshop server's exchange, a
late attendee's forged times change nothing (the last test).
"""

import html
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from fixtures import hub_exchange
from fixtures.adversarial import honest
from fixtures.hub_exchange import STUDENT, as_user, home, release, submit
from fixtures.small_class import BEFORE, NB, WRITTEN, copy_out
from nbgrader.api import Gradebook

from grader.course import REPO_ROOT
from grader.results import csvfile, deadlines, gradebook
from hub import instructor

DUE = f'--GraderSettings.due_dates={{"{NB}": "2026-12-01 13:00 +01:00"}}'  # 12:00 UTC
PER_HOUR = ["--GraderSettings.late_policy=per_hour", "--GraderSettings.late_penalty=0.1"]
hub_root = hub_exchange.hub_root  # the fixture


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
    penalty = -0.3 * (BEFORE + WRITTEN.max_points)  # 2 h 20 min: 3 started hours, 10% each
    assert [(r["student"], r["points"], r["max_points"]) for r in late] == [
        ("alice", f"{penalty:g}", "0")
    ]
    assert "2 hours" not in late[0]["message"] and "3 hours late" in late[0]["message"]
    totals = {r["student"]: r for r in _rows(out, "totals.csv")}
    assert totals["alice"][NB] == f"{BEFORE + penalty:g}"
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
    penalty = f"{0.3 * (BEFORE + WRITTEN.max_points):g}"  # 3 started hours of the maximum
    assert (long["alice"]["late_hours"], long["alice"]["late_penalty"]) == ("2.33", penalty)
    assert (long["bob"]["late_hours"], long["bob"]["late_penalty"]) == ("0.00", "0")


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


# --- the workshop server: the exchange's time, and nbgrader's feedback -------------------


@pytest.mark.grading  # grades one notebook (about a minute on a busy machine)
@pytest.mark.skipif(os.geteuid() != 0, reason="submits as another unix user: run as root")
def test_on_the_hub_a_forged_submission_time_is_still_late(hub_root):
    """An attendee submits through nbgrader's own ExchangeSubmit half an hour after the due date,
    then forges the inbound folder as their unix user: timestamp.txt and the folder's name
    dated a day before the due date, every file's times set back (``touch -d``). The hub's
    collect records the exchange's file-system time; grading (the real CLI on the staged
    class) and nbgrader's feedback (generate_feedback with the hub's config) find it late,
    with the course grader's line and points. No hub runs (its module start costs minutes)."""
    s = hub_root
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    due, forged = now - timedelta(minutes=30), now - timedelta(days=1)  # late by 30-31 min
    settings = {"due_dates": {NB: f"{due:%Y-%m-%d %H:%M}"}, "late_policy": "per_hour",
                "late_penalty": 0.1}  # fmt: skip
    release(s, settings)
    submitted_from = datetime.now(UTC)
    folder = submit(s, STUDENT, home(s, STUDENT, honest(NB)))
    inbound = folder.parent
    stamp = f"{forged:%Y-%m-%d %H:%M:%S}.000000 UTC"

    def forge():
        renamed = folder.rename(inbound / f"{STUDENT}+{NB}+{stamp}+forged")
        (renamed / "timestamp.txt").write_text(stamp)
        for path in [*renamed.iterdir(), renamed]:
            os.utime(path, (forged.timestamp(), forged.timestamp()))

    as_user(forge)
    forged_by = datetime.now(UTC)
    assert instructor._nbgrader(s, "collect", NB, "--update") == 0
    assert instructor._stage(s, NB) == [STUDENT]
    staged = s.collected / STUDENT / NB
    assert (staged / "timestamp.txt").read_text() == stamp, "the forgery reached the grader"

    options = [f"--GraderSettings.{k}={json.dumps(v) if isinstance(v, dict) else v}"
               for k, v in settings.items()]  # fmt: skip
    _cli("autograde", s.collected, "--out", s.grading, "--quiet", "--cell-timeout", 15, *options)
    recorded = json.loads((s.grading / "work" / "times.json").read_text())[STUDENT][NB]
    assert recorded["source"] == deadlines.RECEIVED
    assert submitted_from <= datetime.fromisoformat(recorded["time"]) <= forged_by, recorded
    (late,) = [r for r in _rows(s.grading) if r["exercise"] == deadlines.LATE_ROW]
    assert "(file-system time of the hub's exchange)" in late["message"]
    assert "1 hour late; penalty 10%" in late["message"] and float(late["points"]) < 0

    instructor._record_submissions(s, NB, [STUDENT])
    with Gradebook(gradebook.db_url(s.grading), s.course_id) as gb:  # what formgrader shows
        shown = gb.find_submission(NB, STUDENT).timestamp
    assert f"{shown:%F %T}" == f"{datetime.fromisoformat(recorded['time']):%F %T}"
    assert instructor._nbgrader(s, "generate_feedback", NB, "--force") == 0
    page = (s.course_root / "feedback" / STUDENT / NB / f"{NB}.html").read_text()
    assert html.escape(late["message"], quote=False) in page, "not the course grader's line"
    assert f"Late submission penalty (Score: {float(late['points']):g})" in page
    (total,) = _rows(s.grading, "totals.csv")
    score = re.search(r"\(Score: ([\d.]+)(?: \+ [\d.]+ pending)? / [\d.]+\)", page)
    assert score and float(score.group(1)) == pytest.approx(float(total[NB]), abs=0.01)
