"""Every grade the instructor sees is the one they gave, through the real CLI (issue 33).

One class, built on the small graded class (``fixtures/small_class.py``): its two students'
notebooks come back as a Canvas "Download Submissions" zip with a roster (bob handed in twice,
a stranger is in no roster, carol in the roster handed in nothing), are collected and graded
again into a copy of its OUT (the same bytes: the results are reused), with a due date that
bob's resubmission missed. Then formgrader's points go in through nbgrader's API: an override
of a check bob failed, extra credit for alice, her written answer's points, a comment in two
paragraphs. `totals` and `export` must carry all of it to every output; several assertions
share the one graded OUT because grading is slow.
"""

import json
import subprocess
import sys
import zipfile

import pytest
from fixtures.small_class import BEFORE, NB, STUDENTS, WRITTEN, copy_out
from nbgrader.api import Gradebook

from grader.batch.progress import Lines
from grader.course import REPO_ROOT, exercises
from grader.results import csvfile, gradebook
from grader.results.annotated import message_html
from grader.results.report import GRADES_COLUMNS

CONTRACT = ["student", "notebook", "exercise", "points", "max_points", "message", "comment"]
DUE = f'--GraderSettings.due_dates={{"{NB}": "2026-12-02 12:00"}}'
ROSTER = 'student,name,id\nalice,Alice Adams,201\nbob,"Brown, Bob",202\ncarol,Carol Cole,203\n'
FIRST_TEST = {e.grade_id: e.test_ids[0] for e in exercises(NB) if e.autograded}
COMMENT = "Good start.\n\nNext time, say why the keys differ."


def _cli(*args):
    proc = subprocess.run([sys.executable, "-m", "grader", *map(str, args)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _canvas_zip(path):
    """alice on time; bob first on time, then again late ("-1"), with the untouched release;
    a stranger in no roster."""
    alice, bob = (STUDENTS[s].read_bytes() for s in ("alice", "bob"))
    members = [
        (f"adamsalice_201_9001_{NB}.ipynb", alice, (2026, 12, 1, 10, 0, 0)),
        (f"brownbob_202_9002_{NB}.ipynb", alice, (2026, 12, 1, 11, 0, 0)),
        (f"brownbob_LATE_202_9003_{NB}-1.ipynb", bob, (2026, 12, 2, 15, 30, 0)),
        (f"zedzed_999_9004_{NB}.ipynb", bob, (2026, 12, 1, 9, 0, 0)),
    ]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, when in members:
            zf.writestr(zipfile.ZipInfo(name, when), data)
    return path


def _hand_grade(out):
    """What an instructor types in formgrader, through nbgrader's API."""
    with Gradebook(gradebook.db_url(out), gradebook.COURSE_ID) as gb:
        gb.find_grade(FIRST_TEST["project"], NB, NB, "bob").manual_score = 1.0  # override
        gb.find_grade(FIRST_TEST["qkv"], NB, NB, "alice").extra_credit = 0.5
        gb.find_grade(WRITTEN.grade_id, NB, NB, "alice").manual_score = 2.0
        gb.find_comment(WRITTEN.grade_id, NB, NB, "alice").manual_comment = COMMENT
        gb.db.commit()


@pytest.fixture(scope="module")
def term(small_class, tmp_path_factory):
    """(OUT after collect, grade, hand grading, totals and export; what collect printed)."""
    tmp = tmp_path_factory.mktemp("term")
    out = copy_out(small_class, tmp / "out")
    (tmp / "roster.csv").write_text(ROSTER)
    archive = _canvas_zip(tmp / "canvas.zip")
    collected = _cli("collect", archive, "--roster", tmp / "roster.csv", "--into", tmp / "subs")
    graded = _cli("autograde", tmp / "subs", "--out", out, "--roster", tmp / "roster.csv", DUE)
    assert "(2 reused from an earlier run)" in graded.stdout, graded.stdout
    _hand_grade(out)
    _cli("totals", out, DUE)
    _cli("export", out, "--roster", tmp / "roster.csv", DUE)
    return out, collected.stdout


def _by(rows, *keys):
    return {tuple(r[k] for k in keys): r for r in rows}


def test_collect_keeps_the_latest_file_and_lists_what_it_could_not_match(term):
    _out, said = term
    assert said.startswith("collected 2 files of 2 of the roster's 3 students")
    assert f"older, left out: brownbob_202_9002_{NB}.ipynb" in said
    assert f"not collected: zedzed_999_9004_{NB}.ipynb: no roster student" in said


def test_an_override_and_extra_credit_reach_every_output(term):
    out, _ = term
    assert GRADES_COLUMNS[: len(CONTRACT)] == CONTRACT and GRADES_COLUMNS[-1] == "by_hand"
    grades = _by(csvfile.read(out / "grades.csv"), "student", "exercise")
    assert list(grades[("bob", "project")]) == GRADES_COLUMNS
    bob, alice = grades[("bob", "project")], grades[("alice", "qkv")]
    assert (bob["points"], bob["by_hand"]) == ("1", "set in formgrader (the checks gave 0)")
    assert (alice["points"], alice["by_hand"]) == ("2.5", "extra credit +0.5")
    assert grades[("alice", WRITTEN.grade_id)]["comment"] == COMMENT  # paragraphs kept
    assert grades[("alice", "project")]["by_hand"] == ""

    alice_total = BEFORE + 0.5 + 2
    totals = {r["student"]: r for r in csvfile.read(out / "totals.csv")}
    assert (totals["alice"]["total"], totals["bob"]["total"]) == (f"{alice_total:g}", "1")
    canvas = {r["Student"]: r for r in csvfile.read(out / "canvas_grades.csv")}
    assert (canvas["Alice Adams"][NB], canvas["Brown, Bob"][NB]) == (f"{alice_total:g}", "1")
    long = _by(csvfile.read(out / "grades_long.csv"), "student")
    assert (long[("alice",)]["points"], long[("bob",)]["points"]) == (f"{alice_total:g}", "1")

    feedback = (out / "feedback" / "bob.html").read_text()
    assert "1 / 2" in feedback and "set in formgrader" in feedback
    alice_feedback = (out / "feedback" / "alice.html").read_text()
    assert "2.5 / 2" in alice_feedback and "<p>Good start.</p><p>Next time" in alice_feedback
    report = (out / "report" / "index.html").read_text()
    assert "Points set by hand" in report and "extra credit +0.5" in report


def test_the_roster_is_in_the_gradebook_and_every_output(term):
    out, _ = term
    with Gradebook(gradebook.db_url(out), gradebook.COURSE_ID) as gb:
        carol = gb.find_student("carol")
        assert (carol.first_name, carol.last_name, carol.lms_user_id) == ("Carol", "Cole", "203")
    totals = {r["student"]: r for r in csvfile.read(out / "totals.csv")}
    assert totals["carol"]["total"] == "0"
    carol_rows = [r for r in csvfile.read(out / "grades.csv") if r["student"] == "carol"]
    assert {r["message"] for r in carol_rows} == {"Notebook not submitted."}
    report = (out / "report" / "index.html").read_text()
    assert "3 students: 2 notebooks submitted" in report and "Handed in nothing: carol." in report
    assert (out / "not_in_roster.txt").read_text() == ""


def test_late_work_is_listed_once_under_the_policy_none(term):
    out, _ = term
    report = (out / "report" / "index.html").read_text()
    late = report.split("<h2>Late work</h2>")[1].split("</table>")[0]
    assert late.count("<tr>") == 2  # the header and bob's one row
    assert "bob" in late and "4 hours late; no penalty" in late


def test_the_annotated_notebook_shows_the_check_s_message_and_nothing_hidden(term):
    out, _ = term
    result = json.loads((out / "work" / "results" / "bob" / f"{NB}.json").read_text())
    test_id = FIRST_TEST["design_keys_values"]
    message = result["tests"][test_id]["message"]
    page = (out / "feedback" / "bob" / f"{NB}.html").read_text()
    under = page.split("checks.check_design_keys_values(design_keys_values)</pre></div>", 1)[1]
    assert message and under.startswith(f"<div class='fail'>✗ {message_html(message)}</div>")
    hidden = (REPO_ROOT / "grader" / "hidden" / "nb02_projections.py").read_text()
    for secret in ("_design_cases", "weights-not-log", "_retrieved", "BEGIN HIDDEN"):
        assert secret in hidden or secret == "BEGIN HIDDEN"
        assert secret not in page
    assert f"href='bob/{NB}.html'" in (out / "feedback" / "bob.html").read_text()


def test_progress_is_one_line_per_notebook_when_not_a_terminal(capsys):
    import io

    stream = io.StringIO()
    lines = Lines(total=4, initial=1, stream=stream)
    lines.update()
    lines.update()
    said = stream.getvalue().splitlines()
    assert len(said) == 2 and said[0].startswith("graded 2 of 4 notebooks, ")
    assert "left" in said[1] and said[1].startswith("graded 3 of 4 notebooks, ")


def test_notes_show_inline_code_and_comments_keep_their_paragraphs(tmp_path):
    from grader.results import report
    from grader.results.result import GRADED, Result

    note = "submitted as `01 (1).ipynb`"
    result = Result("ann", NB, GRADED, (), flags=(), notes=(note,), sandboxed=True)
    row = {"student": "ann", "notebook": NB, "exercise": "project", "points": "2",
           "max_points": "2", "message": "", "comment": "One.\n\nTwo,\nthree.",
           "by_hand": ""}  # fmt: skip
    extra = {("ann", NB): {"comments": ["Top.\n\nMore."]}}
    report.write_feedback(tmp_path, [row], [result], extra)
    page = report.feedback_path(tmp_path, "ann").read_text()
    assert "Note: submitted as <code>01 (1).ipynb</code>" in page
    assert "<p>One.</p><p>Two,<br>three.</p>" in page and "<p>Top.</p><p>More.</p>" in page
