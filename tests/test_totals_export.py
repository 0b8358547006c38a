"""Hand-entered points reach the outputs (`make totals`) and the LMS export (`make export`).

Each test works on its own copy of the small graded class (``fixtures/small_class.py``):
alice's written answer waits for hand grading, bob wrote none.
"""

import csv
import re
import subprocess
import sys
import time

import pytest
from fixtures.small_class import BEFORE, NB, WRITTEN, copy_out, give_points
from nbgrader.api import Gradebook

from grader.commands.export import CANVAS_COLUMNS
from grader.course import REPO_ROOT
from grader.results import gradebook

MAX = BEFORE + WRITTEN.max_points


def _cli(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "grader", *map(str, args)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    if check:
        assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def _csv(path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture
def out(small_class, tmp_path):
    return copy_out(small_class, tmp_path / "out")


def test_totals_carries_hand_entered_points_into_every_output(out):
    waiting = _cli("totals", out).stdout
    assert "3 of 4 written answers have points; 1 still to grade" in waiting, waiting
    before = {r["student"]: r for r in _csv(out / "totals.csv")}
    assert before["alice"]["pending_hand_grading"] == f"{WRITTEN.max_points:g}"
    give_points(out, "alice", 1.5)
    results = sorted((out / "work" / "results").rglob("*.json"))
    stamps = [p.stat().st_mtime_ns for p in results]
    start = time.monotonic()
    proc = _cli("totals", out)
    print(f"totals took {time.monotonic() - start:.1f} s")  # measured; the target is in bench
    assert "4 of 4 written answers have points" in proc.stdout, proc.stdout
    assert "still to grade" not in proc.stdout
    assert [p.stat().st_mtime_ns for p in results] == stamps, "totals must not regrade"

    totals = {r["student"]: r for r in _csv(out / "totals.csv")}
    assert (totals["alice"][NB], totals["alice"]["pending_hand_grading"]) == (
        f"{BEFORE + 1.5:g}",
        "0",
    ), totals["alice"]
    assert totals["bob"]["total"] == "0"
    row = next(r for r in _csv(out / "grades.csv")
               if r["student"] == "alice" and r["exercise"] == WRITTEN.grade_id)  # fmt: skip
    assert (row["points"], row["message"]) == ("1.5", ""), row
    feedback = (out / "feedback" / "alice.html").read_text()
    assert f"<b>{BEFORE + 1.5:g}</b> of {MAX:g}" in feedback
    assert f"1.5 / {WRITTEN.max_points:g}" in feedback and "pending" not in feedback
    stats = {r["exercise"]: r for r in _csv(out / "report" / "exercises.csv")}
    assert stats[WRITTEN.grade_id]["scored"] == "2"  # alice's 1.5 and bob's 0


def test_formgrader_comments_reach_grades_and_feedback(out):
    """Comments typed in formgrader (nbgrader's gradebook: a cell's manual_comment) are the
    last column of grades.csv and show in the feedback after `totals`; the pending written
    answer stays pending (never 0) in the feedback and the report."""
    with Gradebook(gradebook.db_url(out), gradebook.COURSE_ID) as gb:
        for student, cell, text in [("alice", WRITTEN.grade_id, "Good, but say\nwhy <b>."),
                                    ("bob", "project", "Start from X @ W.T.")]:  # fmt: skip
            gb.find_comment(cell, NB, NB, student).manual_comment = text
        gb.db.commit()
    _cli("totals", out)
    with open(out / "grades.csv", newline="") as fh:
        header = next(csv.reader(fh))
    assert header == ["student", "notebook", "exercise", "points", "max_points", "message",
                      "comment", "by_hand"]  # fmt: skip
    said = {(r["student"], r["exercise"]): r["comment"] for r in _csv(out / "grades.csv")}
    assert said[("alice", WRITTEN.grade_id)] == "Good, but say\nwhy <b>."  # its lines kept
    assert said[("bob", "project")] == "Start from X @ W.T."
    assert said[("alice", "project")] == ""
    alice = (out / "feedback" / "alice.html").read_text()
    assert "Comment from your instructor:</b><p>Good, but say<br>why &lt;b&gt;.</p>" in alice
    assert f"pending / {WRITTEN.max_points:g}" in alice
    assert f"({WRITTEN.max_points:g} more pending: written answers not graded yet)" in alice
    assert "Start from X @ W.T." in (out / "feedback" / "bob.html").read_text()
    report = (out / "report" / "index.html").read_text()
    assert "2 students: 2 notebooks submitted, 2 graded." in report
    assert "1 of 2 pending hand grading" in report


def test_totals_on_a_folder_that_was_never_graded(tmp_path):
    proc = _cli("totals", tmp_path, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {tmp_path} holds no graded class (no gradebook.db or work/results): "
        "grade it first with `make grade SUBMISSIONS=... OUT=...`"
    ]


def test_canvas_export_has_canvas_s_import_format(out, tmp_path):
    """Canvas's gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then one
    column per assignment; a "Points Possible" row under the header (as Canvas exports it)."""
    give_points(out, "alice", 2)
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "student,name,id,sis_user_id,sis_login_id,section\n"
        'alice,"Liddell, Alice",101,S-1,alice@uni,Sec A\ncarol,Carol,103,S-3,carol@uni,Sec B\n'
    )
    _cli("export", out, "--roster", roster)
    with open(out / "canvas_grades.csv", newline="") as fh:
        header, possible, *rows = list(csv.reader(fh))
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", NB]
    assert header[:5] == CANVAS_COLUMNS
    assert possible[0].strip() == "Points Possible" and possible[1:5] == ["", "", "", ""]
    assert possible[5] == f"{MAX:g}"
    assert rows == [
        ["Liddell, Alice", "101", "S-1", "alice@uni", "Sec A", f"{MAX:g}"],
        ["bob", "", "", "", "", "0"],
        ["Carol", "103", "S-3", "carol@uni", "Sec B", "0"],
    ]
    late = {"late_hours": "", "late_penalty": ""}  # no due date
    assert _csv(out / "grades_long.csv") == [
        {"student": "alice", "assignment": NB, "points": f"{MAX:g}", "max": f"{MAX:g}", **late},
        {"student": "bob", "assignment": NB, "points": "0", "max": f"{MAX:g}", **late},
        {"student": "carol", "assignment": NB, "points": "0", "max": f"{MAX:g}", **late},
    ]


def test_every_roster_student_gets_a_row_and_strangers_are_listed(out, tmp_path):
    """carol (roster, no work) gets 0, or blank with --absent blank; bob (graded, not in the
    roster) keeps his row and is named in one stderr line and in OUT/not_in_roster.txt."""
    give_points(out, "alice", 2)
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name,id\nalice,Alice,101\ncarol,Carol,103\n")
    for absent, cell in (("zero", "0"), ("blank", "")):
        proc = _cli("export", out, "--roster", roster, "--absent", absent)
        with open(out / "canvas_grades.csv", newline="") as fh:
            rows = {r[0]: r for r in list(csv.reader(fh))[2:]}
        assert (rows["Carol"][1], rows["Carol"][5]) == ("103", cell)
        assert rows["bob"][1:] == ["", "", "", "", "0"]
        assert proc.stderr.splitlines() == [
            f"graded but not in the roster (ID columns blank; listed in "
            f"{out / 'not_in_roster.txt'}): bob"
        ]
        assert (out / "not_in_roster.txt").read_text() == "bob\n"
        given = "0 for every notebook" if absent == "zero" else "left blank: --absent blank"
        assert f"in the roster with no graded work ({given}): carol" in proc.stdout


def test_export_without_roster_or_finished_grading_says_so(out):
    proc = _cli("export", out)
    with open(out / "canvas_grades.csv", newline="") as fh:
        rows = list(csv.reader(fh))[2:]
    assert rows == [["alice", "", "", "", "", ""], ["bob", "", "", "", "", "0"]]
    assert "no --roster: the ID, SIS User ID, SIS Login ID and Section columns are blank" in (
        proc.stdout
    )
    assert f"written answers still to grade: alice {NB} ({WRITTEN.grade_id})" in proc.stdout
    assert _csv(out / "grades_long.csv")[0]["points"] == ""


@pytest.mark.parametrize(
    "text, message",
    [
        ("name,id\nalice,1\n", "columns must be student and any of"),
        ("student,email\nalice,a@b\n", "(unknown: email)"),
        ("student,id\nalice,1\nalice,2\n", "student 'alice' is listed twice"),
    ],
)
def test_bad_roster_is_one_clear_line(out, tmp_path, text, message):
    roster = tmp_path / "roster.csv"
    roster.write_text(text)
    proc = _cli("export", out, "--roster", roster, check=False)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (out / "canvas_grades.csv").exists()


def test_export_neutralises_formulas_and_keeps_the_student(out, tmp_path):
    """A roster name like a formula reaches Canvas as text (a leading '), next to bob's
    numbers, and every CSV the export writes reads back to the same students."""
    from grader.results import csvfile

    roster = tmp_path / "roster.csv"
    roster.write_text('student,name,id\nalice,"=HYPERLINK(""evil"",""x"")",@1\nbob,-bob,-7\n')
    _cli("export", out, "--roster", roster)
    with open(out / "canvas_grades.csv", newline="") as fh:
        rows = list(csv.reader(fh))[2:]
    assert rows[0][:3] == ['\'=HYPERLINK("evil","x")', "'@1", ""]
    assert rows[1][:3] == ["'-bob", "-7", ""], "a number stays a number"
    assert [r["Student"] for r in csvfile.read(out / "canvas_grades.csv")][1:] == [
        '=HYPERLINK("evil","x")',
        "-bob",
    ]
    assert [r["student"] for r in csvfile.read(out / "grades_long.csv")] == ["alice", "bob"]


@pytest.mark.parametrize(
    "value, cell",
    [
        ("=1+2", "'=1+2"),
        ("+cmd", "'+cmd"),
        ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("'quoted", "''quoted"),
        ("alice", "alice"),
        ("-1.5", "-1.5"),
        ("+3", "+3"),
        ("a=b", "a=b"),
        (2.5, 2.5),
        (-1, -1),
        ("", ""),
    ],
)
def test_csv_cells_never_start_a_formula(value, cell):
    from grader.results import csvfile

    assert csvfile.safe(value) == cell
    if isinstance(value, str):
        assert csvfile.original(csvfile.safe(value)) == value


def test_csv_file_round_trip(tmp_path):
    from grader.results import csvfile

    rows = [{"student": "=evil()", "points": 1.5}, {"student": "'x", "points": "-2"}]
    csvfile.write(tmp_path / "t.csv", ["student", "points"], rows)
    assert (tmp_path / "t.csv").read_text() == "student,points\n'=evil(),1.5\n''x,-2\n"
    assert csvfile.read(tmp_path / "t.csv") == [
        {"student": "=evil()", "points": "1.5"},
        {"student": "'x", "points": "-2"},
    ]
    assert not list(tmp_path.glob(".*.tmp")), "the temporary file is renamed into place"


def test_a_cell_holding_a_carriage_return_or_line_feed_stays_one_cell(tmp_path):
    """Issue 46: an id holding a CR was written unquoted (Python before 3.12 quotes only the
    line terminator's characters), and a spreadsheet read a fake row starting with another
    id. Each such cell is quoted; the plain row beside them is written as before."""
    from grader.results import csvfile

    rows = [["t_cr\rzz FAKE LINE", 1], ["t_lf\nzz FAKE LINE", 2], ["t\r\nzz", 3], ["ada", 4]]
    csvfile.write(tmp_path / "t.csv", ["student", "points"], rows)
    assert (tmp_path / "t.csv").read_bytes() == (
        b'student,points\n"t_cr\rzz FAKE LINE",1\n"t_lf\nzz FAKE LINE",2\n"t\r\nzz",3\nada,4\n'
    )
    assert [r["student"] for r in csvfile.read(tmp_path / "t.csv")] == [r[0] for r in rows]


def test_every_csv_the_grader_and_the_hub_write_goes_through_csvfile():
    """So the quoting above (and the formulas') holds for grades.csv, totals.csv, the
    report's, the export's and the hub's CSVs alike."""
    writer = re.compile(r"csv\.(writer|DictWriter)\b|\.writerows?\(")
    elsewhere = [
        str(path.relative_to(REPO_ROOT))
        for package in ("grader", "hub")
        for path in sorted((REPO_ROOT / package).rglob("*.py"))
        if path.name != "csvfile.py" and writer.search(path.read_text())
    ]
    assert elsewhere == []


# ----------------------------------------------------------------------------- the seed


def test_seed_rule(tmp_path):
    """A new OUT draws a seed and records it; a rerun into it keeps it; a chosen one wins
    (and is recorded for the next run)."""
    from grader.results import out as out_files

    first = out_files.settle_seed(tmp_path / "a", None)
    assert out_files.recorded_seed(tmp_path / "a") == first
    assert out_files.settle_seed(tmp_path / "a", None) == first
    others = {out_files.settle_seed(tmp_path / f"b{i}", None) for i in range(4)}
    assert len(others | {first}) > 1, "every new OUT draws its own seed"
    assert out_files.settle_seed(tmp_path / "a", 7) == 7
    assert out_files.settle_seed(tmp_path / "a", None) == 7


def test_damaged_seed_record_is_one_line(tmp_path):
    from grader.errors import UserError
    from grader.results import out as out_files

    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "seed.json").write_text("{not json")
    with pytest.raises(UserError, match="seed.json is damaged: give --seed"):
        out_files.settle_seed(tmp_path, None)
    assert out_files.settle_seed(tmp_path, 3) == 3


def test_autograde_records_and_reuses_the_seed(tmp_path):
    """Through the CLI, without ATTN_GRADER_SEED: OUT records a fresh seed before grading,
    a rerun (here `--students`) reuses it, `--seed` replaces it."""
    import json
    import os

    subs, out = tmp_path / "subs", tmp_path / "out"
    (subs / "zed").mkdir(parents=True)
    (subs / "zed" / "notes.txt").write_text("nothing to grade")
    env = {k: v for k, v in os.environ.items() if k != "ATTN_GRADER_SEED"}

    def run(*extra):
        proc = subprocess.run(
            [sys.executable, "-m", "grader", "autograde", subs, "--out", out, "--quiet",
             "--no-sandbox", "--notebooks", NB, *extra],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads((out / "work" / "seed.json").read_text())["seed"]

    first = run()
    assert run("--students", "zed") == first
    assert run("--seed", "12345") == 12345
