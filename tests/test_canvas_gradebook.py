"""Grades that land in Canvas's own assignments (issue 51): `grader export
--canvas-gradebook` reads Canvas's gradebook export (built here in Canvas's format: the
leading ``Student, ID, SIS User ID, SIS Login ID, Section``, assignment columns headed
``Name (assignment id)``, read-only totals after them, a ``Points Possible`` row under the
header) and writes the import file with its exact headers and rows."""

import subprocess
import sys

import pytest
from fixtures.small_class import NB, copy_out, give_points

from grader.commands.export import write_canvas_import
from grader.course import REPO_ROOT, exercises
from grader.errors import UserError
from grader.intake import canvas_gradebook
from grader.results import csvfile

LEADING = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
READ_ONLY = ["Current Points", "Final Points", "Current Score", "Final Score"]
ROSTER = 'student,name,id\nalice,Alice Adams,201\nbob,"Brown, Bob",202\n'


def _export(path, assignments):
    """Canvas's gradebook export: ``assignments`` [(name, id, points possible)]."""
    header = LEADING + [f"{n} ({i})" for n, i, _ in assignments] + READ_ONLY
    possible = ["    Points Possible", "", "", "", ""] + [p for *_, p in assignments]
    rows = [
        header,
        possible + ["(read only)"] * len(READ_ONLY),
        ["Adams, Alice", "201", "S201", "alice@uni.edu", "Section 1"],
        ["Brown, Bob", "202", "S202", "bob@uni.edu", "Section 1"],
        ["Cole, Carol", "203", "S203", "carol@uni.edu", "Section 2"],
        ["Student, Test", "999", "", "", "Section 1"],
    ]
    csvfile.write(path, rows[0], [r + [""] * (len(header) - len(r)) for r in rows[1:]])
    return path


def test_the_export_s_students_and_assignments_are_read_with_their_ids(tmp_path):
    path = _export(tmp_path / "export.csv", [("01 Soft lookup", "5501", "12"), ("Quiz", "77", "5")])
    exported = canvas_gradebook.read(path)
    assert exported.leading == LEADING
    assert [(a.header, a.name, a.id, a.points) for a in exported.assignments] == [
        ("01 Soft lookup (5501)", "01 Soft lookup", "5501", "12"), ("Quiz (77)", "Quiz", "77", "5")
    ]  # fmt: skip
    assert [s["ID"] for s in exported.students] == ["201", "202", "203", "999"]


def test_a_roster_csv_or_any_other_file_is_refused_in_one_line(tmp_path):
    (tmp_path / "roster.csv").write_text(ROSTER)
    with pytest.raises(UserError, match="is no Canvas gradebook export"):
        canvas_gradebook.read(tmp_path / "roster.csv")


def test_notebooks_go_to_the_assignment_named_by_the_setting_else_by_name(tmp_path):
    path = _export(tmp_path / "export.csv", [("01 Soft lookup", "5501", "12"),
                                             ("Week 2: projections", "5502", "10")])  # fmt: skip
    assignments = canvas_gradebook.read(path).assignments
    notebooks = ["01_soft_lookup", "02_projections", "03_scores_and_cost"]
    found, unmatched = canvas_gradebook.match_notebooks(
        notebooks, assignments, {"02_projections": "5502"}
    )
    assert {n: a.header for n, a in found.items()} == {
        "01_soft_lookup": "01 Soft lookup (5501)", "02_projections": "Week 2: projections (5502)"
    }  # fmt: skip
    assert unmatched == ["03_scores_and_cost"]
    with pytest.raises(UserError, match="02_projections: no assignment '404'"):
        canvas_gradebook.match_notebooks(notebooks, assignments, {"02_projections": "404"})


def test_the_import_file_has_the_export_s_headers_and_rows(tmp_path):
    exported = canvas_gradebook.read(_export(tmp_path / "export.csv", [("Soft", "5501", "12")]))
    columns = {"01_soft_lookup": exported.assignments[0]}
    points = {("alice", "01_soft_lookup"): 9.5, ("bob", "01_soft_lookup"): "",
              ("zed", "01_soft_lookup"): 3.0}  # fmt: skip
    roster = {"alice": {"ID": "201"}, "bob": {"ID": "202"}}
    outside = write_canvas_import(tmp_path / "import.csv", exported, columns, points, roster)
    assert outside == ["zed"]
    rows = csvfile.read(tmp_path / "import.csv")
    assert list(rows[0]) == [*LEADING, "Soft (5501)"]
    assert rows[0]["Student"] == "    Points Possible" and rows[0]["Soft (5501)"] == "12"
    assert [(r["ID"], r["SIS Login ID"], r["Soft (5501)"]) for r in rows[1:]] == [
        ("201", "alice@uni.edu", "9.5"), ("202", "bob@uni.edu", ""), ("203", "carol@uni.edu", ""),
        ("999", "", ""),
    ]  # fmt: skip


def _export_cli(out, *args):
    return subprocess.run([sys.executable, "-m", "grader", "export", str(out), *map(str, args)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)  # fmt: skip


def test_grader_export_writes_the_import_under_the_assignment_s_own_header(small_class, tmp_path):
    out = copy_out(small_class, tmp_path / "out")
    for student in ("alice", "bob"):  # graded by hand: no notebook is left blank
        give_points(out, student, 1.0)
    (tmp_path / "roster.csv").write_text(ROSTER)
    maximum = f"{sum(e.max_points for e in exercises(NB)):g}"
    export = _export(tmp_path / "export.csv", [("Attention", "8101", maximum), ("Q", "7", "5")])
    setting = f'--GraderSettings.canvas_assignments={{"{NB}": "8101"}}'
    done = _export_cli(out, "--canvas-gradebook", export, "--roster", tmp_path / "roster.csv",
                       setting)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = csvfile.read(out / "canvas_grades.csv")
    assert list(rows[0]) == [*LEADING, "Attention (8101)"]
    assert [r["ID"] for r in rows[1:]] == ["201", "202", "203", "999"]
    assert rows[1]["Attention (8101)"] != "" and rows[2]["Attention (8101)"] != ""
    unnamed = _export_cli(out, "--canvas-gradebook", export, "--roster", tmp_path / "roster.csv")
    assert f"no Canvas assignment for {NB} (left out" in unnamed.stderr
    assert list(csvfile.read(out / "canvas_grades.csv")[0]) == LEADING
