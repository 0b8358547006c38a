"""Grades that land in Moodle's own assignment (issue 51): `grader export --moodle-worksheet`
reads Moodle's grading worksheet (built here as Moodle's assignment writes it, "Download
grading worksheet": ``Identifier`` holding ``Participant N``, ``Full name``, ``Email
address``, ``Status``, ``Grade``, ``Maximum Grade``, ``Grade can be changed``, ``Last
modified (submission)``, ``Last modified (grade)``, ``Feedback comments``) and writes it
back with its exact headers and cells, the Grade column filled for the students it matches
by identifier, email or name, as its upload ("Upload grading worksheet") reads it."""

import csv
import subprocess
import sys

import pytest
from fixtures.small_class import NB, copy_out, give_points

from grader.course import REPO_ROOT, exercises
from grader.errors import UserError
from grader.intake import moodle_worksheet

HEADER = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
          "Grade can be changed", "Last modified (submission)", "Last modified (grade)",
          "Feedback comments"]  # fmt: skip
WHEN = "Tuesday, 1 December 2026, 10:00 AM"
ROSTER = 'student,name,id\nalice,Alice Adams,201\nbob,"Brown, Bob",202\ncarol,Carol Cole,203\n'


def _worksheet(path, rows, maximum="12.00"):
    """Moodle's worksheet of one assignment: ``rows`` [(participant, name, email, grade,
    can change, feedback)], written as Moodle's CSV download writes it."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(HEADER)
        for number, name, email, grade, change, feedback in rows:
            out.writerow([f"Participant {number}", name, email, "Submitted for grading", grade,
                          maximum, change, WHEN, "-" if not grade else WHEN, feedback])  # fmt: skip
    return path


def _raw(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


CLASS = [
    (5501, "Alice Adams", "a.adams@uni.edu", "", "Yes", ""),  # by name
    (5502, "Zed Other", "bob@uni.edu", "3.00", "Yes", "- see me"),  # by email (local part)
    (5503, "Carol Cole", "carol@uni.edu", "", "No", ""),  # cannot be changed
    (5504, "Dan Doe", "dan@uni.edu", "", "Yes", "=1+1"),  # no student of ours
]
ROSTER_COLUMNS = {"alice": {"Student": "Alice Adams", "ID": "201"},
                  "bob": {"Student": "Brown, Bob", "ID": "202"},
                  "carol": {"Student": "Carol Cole", "ID": "5503"}}  # fmt: skip


def test_the_worksheet_comes_back_with_its_headers_and_cells_and_the_grades(tmp_path):
    sheet = moodle_worksheet.read(_worksheet(tmp_path / "Grades-ATT-01 Soft lookup-42.csv", CLASS))
    points = {("alice", NB): 9.5, ("bob", NB): 12.5, ("carol", NB): "", ("eve", NB): 4.0}
    done = moodle_worksheet.fill(sheet, NB, points, 12.0, ROSTER_COLUMNS)
    moodle_worksheet.write(sheet, tmp_path / "out.csv")
    before, after = _raw(tmp_path / "Grades-ATT-01 Soft lookup-42.csv"), _raw(tmp_path / "out.csv")
    assert after[0] == before[0] == HEADER
    grade = HEADER.index("Grade")
    assert [r[grade] for r in after[1:]] == ["9.5", "12.5", "", ""]
    for old, new in zip(before[1:], after[1:], strict=True):  # nothing else changed...
        assert new[:grade] + new[grade + 1 :] == old[:grade] + old[grade + 1 :]
    assert after[2][-1] == "- see me" and after[4][-1] == "=1+1"  # ...the feedback exactly
    assert (done.graded, done.missing) == (2, ["eve"])
    assert done.not_ours == ["Participant 5504 (Dan Doe)"]
    assert done.above == ["Participant 5502 (Zed Other) 12.5"]  # Moodle would skip it
    assert done.locked == ["Participant 5503 (Carol Cole)"] and done.ambiguous == []


def test_a_name_a_spreadsheet_would_run_is_quoted_but_no_column_moodle_reads(tmp_path):
    rows = [(5501, "=HYPERLINK(1)", "alice@uni.edu", "", "Yes", "+ well done")]
    sheet = moodle_worksheet.read(_worksheet(tmp_path / "w.csv", rows))
    moodle_worksheet.fill(sheet, NB, {("alice", NB): 7.0}, 12.0, {})
    moodle_worksheet.write(sheet, tmp_path / "out.csv")
    row = dict(zip(HEADER, _raw(tmp_path / "out.csv")[1], strict=True))
    assert row["Full name"] == "'=HYPERLINK(1)" and row["Feedback comments"] == "+ well done"
    assert (row["Identifier"], row["Grade"], row["Last modified (grade)"]) == (
        "Participant 5501", "7", "-")  # fmt: skip


def test_a_row_two_students_could_be_gets_no_grade_and_is_named(tmp_path):
    """alice's roster id is the participant number of carol's row: neither is guessed."""
    rows = [(201, "Carol Cole", "c@else.org", "5.00", "Yes", ""),
            (5501, "Alice Adams", "a@else.org", "", "Yes", "")]  # fmt: skip
    sheet = moodle_worksheet.read(_worksheet(tmp_path / "w.csv", rows))
    points = {("alice", NB): 9.0, ("carol", NB): 8.0}
    done = moodle_worksheet.fill(sheet, NB, points, 12.0, ROSTER_COLUMNS)
    assert [r[4] for r in sheet.rows] == ["", ""] and done.graded == 0
    assert done.ambiguous == ["Participant 201 (Carol Cole): alice, carol",
                              "Participant 5501 (Alice Adams): alice"]  # fmt: skip


@pytest.mark.parametrize("maximum_header", ["Maximum Grade", "Maximum grade"])
def test_a_decimal_comma_worksheet_gets_decimal_commas(tmp_path, maximum_header):
    """Moodle's versions spell the maximum's header both ways."""
    rows = [(5501, "Alice Adams", "", "", "Yes", "")]
    path = _worksheet(tmp_path / "w.csv", rows, maximum="12,00")
    path.write_text(path.read_text().replace("Maximum Grade", maximum_header))
    sheet = moodle_worksheet.read(path)
    done = moodle_worksheet.fill(sheet, NB, {("alice", NB): 12.5}, 12.0, ROSTER_COLUMNS)
    assert sheet.rows[0][4] == "12,5" and done.maximum == ""
    assert done.above == ["Participant 5501 (Alice Adams) 12,5"]


def test_other_files_are_refused_in_one_line(tmp_path):
    (tmp_path / "roster.csv").write_text(ROSTER)
    with pytest.raises(UserError, match="is no Moodle grading worksheet: its header needs"):
        moodle_worksheet.read(tmp_path / "roster.csv")
    scale = tmp_path / "scale.csv"
    scale.write_text(_worksheet(tmp_path / "w.csv", CLASS).read_text().replace("Maximum Grade",
                                                                              "Scale"))  # fmt: skip
    with pytest.raises(UserError, match="graded on a scale"):
        moodle_worksheet.read(scale)
    with pytest.raises(UserError, match="cannot read Moodle's grading worksheet"):
        moodle_worksheet.read(tmp_path / "absent.csv")


def test_the_notebook_is_the_one_the_file_name_names():
    notebooks = ["01_soft_lookup", "02_projections"]
    found = moodle_worksheet.notebook_of
    assert found(REPO_ROOT / "Grades-ATT101-02 Projections-77.csv", notebooks) == "02_projections"
    with pytest.raises(UserError, match="it names no graded notebook; say which"):
        found(REPO_ROOT / "Grades-ATT101-Week 3-78.csv", notebooks)


def _export_cli(out, *args):
    return subprocess.run([sys.executable, "-m", "grader", "export", str(out), *map(str, args)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)  # fmt: skip


def test_grader_export_fills_moodle_s_worksheet_for_upload(small_class, tmp_path):
    out = copy_out(small_class, tmp_path / "out")
    for student in ("alice", "bob"):  # graded by hand: no notebook is left blank
        give_points(out, student, 1.0)
    (tmp_path / "roster.csv").write_text(ROSTER)
    maximum = f"{sum(e.max_points for e in exercises(NB)):g}.00"
    folder = tmp_path / "worksheets"
    folder.mkdir()
    rows = [(7001, "Alice Adams", "alice@uni.edu", "", "Yes", ""),
            (7002, "Bob Brown", "bob@uni.edu", "", "Yes", "")]  # fmt: skip
    name = "Grades-ATT101-02 Projections-77.csv"
    _worksheet(folder / name, rows, maximum)
    done = _export_cli(out, "--roster", tmp_path / "roster.csv", "--moodle-worksheet", folder)
    assert done.returncode == 0, done.stderr
    written = _raw(out / "moodle" / name)
    assert written[0] == HEADER
    assert [r[0] for r in written[1:]] == ["Participant 7001", "Participant 7002"]
    long = {r[0]: r[2] for r in csv.reader((out / "grades_long.csv").open()) if r[1] == NB}
    assert [r[4] for r in written[1:]] == [long["alice"], long["bob"]] and long["alice"] != ""
    assert "carol" in done.stderr and "no row in" in done.stderr  # in the roster, no row
    for bad, said in [(f"99_nope={folder / name}", "no graded notebook '99_nope' in OUT"),
                      (tmp_path / "roster.csv", "is no Moodle grading worksheet")]:  # fmt: skip
        refused = _export_cli(out, "--moodle-worksheet", bad)
        assert refused.returncode != 0 and said in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
