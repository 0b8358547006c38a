"""`python -m grader export OUT [--roster ROSTER]`: the final grades, for an LMS.

Points are the autograded ones plus those entered in formgrader, read fresh (as
``grader.commands.totals`` does). Two files:

- ``--canvas`` (default ``OUT/canvas_grades.csv``): a Canvas gradebook import. Canvas's
  leading columns ``Student, ID, SIS User ID, SIS Login ID, Section`` (how it matches a row to
  a student), then one column per notebook, and under the header a ``Points Possible`` row
  with each notebook's maximum. Canvas makes a new assignment for a column name it does not
  know.
  With ``--canvas-gradebook`` (Canvas's own gradebook export, grader.intake.canvas_gradebook)
  it is written in that export's terms instead: its leading columns and students, as
  exported, and each notebook under the header of its assignment, ``Name (assignment id)``,
  so the grades land in the assignments the students submitted to; every notebook with no
  assignment is named, and left out.
- ``--moodle-worksheet [NOTEBOOK=]WORKSHEET`` (each notebook's, or a folder of them):
  Moodle's grading worksheet of that notebook's assignment, as downloaded, written to
  ``OUT/moodle/<its name>`` with the Grade column filled and every other header and cell
  as Moodle wrote it (grader.intake.moodle_worksheet), to upload back to that assignment;
  what Moodle's upload would skip or could not match is named.
- ``--long`` (default ``OUT/grades_long.csv``): ``student, assignment, points, max,
  late_hours, late_penalty``, one row per student and notebook (``late_*`` blank without a
  due date or a submission; the penalty is already taken off ``points``).

A notebook with a written answer still to grade is left blank in both (no points are sent
for it) and listed. The roster (optional) is a CSV with a ``student`` column (the
folder names of the submissions) and any of ``name, id, sis_user_id, sis_login_id,
section``; without it the ID columns are blank and Canvas can match rows by the Student
column only. Every roster student gets a row: one with no graded work gets 0 for every
notebook (``--absent blank``: blank cells). Students graded but not in the roster keep
their rows (ID columns blank) and are listed on stderr and in ``OUT/not_in_roster.txt``.
"""

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from grader import course
from grader.commands.totals import current, roster_only
from grader.errors import UserError
from grader.intake import canvas_gradebook, moodle_worksheet
from grader.intake import roster as class_roster
from grader.intake.canvas_gradebook import CanvasGradebook
from grader.printable import printable
from grader.results import csvfile
from grader.results.annotated import GradeRow
from grader.results.deadlines import LATE_ROW
from grader.results.handgrades import Key
from grader.results.report import FeedbackExtra

TAKES_SETTINGS = True  # the late policy (grader.settings), as `grader totals` applies it

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_POSSIBLE = "    Points Possible"  # as Canvas's own gradebook export writes it
LONG_COLUMNS = ["student", "assignment", "points", "max", "late_hours", "late_penalty"]
Points = dict[Key, float | str]  # a notebook's points, "" while a written answer waits
LateColumns = dict[Key, tuple[str, str]]  # (hours late, points taken off), as CSV cells


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, help="the OUT folder of a grading run")
    parser.add_argument("--canvas", type=Path, help="Canvas CSV (default: OUT/canvas_grades.csv)")
    parser.add_argument("--long", type=Path, help="long CSV (default: OUT/grades_long.csv)")
    parser.add_argument("--roster", type=Path, help="CSV: student,name,id,sis_user_id,...")
    parser.add_argument(
        "--canvas-gradebook",
        type=Path,
        help="Canvas's own gradebook export (Grades > Export): the import file takes its "
        "students and its assignments' headers",
    )
    parser.add_argument(
        "--moodle-worksheet",
        action="append",
        default=[],
        metavar="[NOTEBOOK=]WORKSHEET",
        help="Moodle's grading worksheet of a notebook's assignment (Download grading "
        "worksheet), or a folder of them: written filled into OUT/moodle/ under its own name, "
        "to upload; the notebook is the one the file name names, unless given",
    )
    parser.add_argument(
        "--absent",
        choices=["zero", "blank"],
        default="zero",
        help="what a roster student with no graded work gets for each notebook (default: zero)",
    )


def notebook_points(grade_rows: list[GradeRow]) -> tuple[Points, list[str]]:
    """({(student, notebook): points, or "" while a written answer waits}, [what waits])."""
    points: Points = {}
    pending = []
    for row in grade_rows:
        key = (row["student"], row["notebook"])
        so_far = points.setdefault(key, 0.0)
        if row["points"] == "":
            points[key] = ""
            pending.append(f"{row['student']} {row['notebook']} ({row['exercise']})")
        elif not isinstance(so_far, str):  # no written answer of it waits so far
            points[key] = so_far + float(row["points"])
    return points, pending


def _num(value: float | str) -> str:
    return "" if value == "" else f"{value:g}"


def write_canvas(
    path: Path,
    students: list[str],
    notebooks: list[str],
    points: Points,
    maxima: Mapping[str, float],
    roster: class_roster.Roster,
) -> None:
    rows: list[list[str]] = [
        [POINTS_POSSIBLE, "", "", "", ""] + [_num(maxima[n]) for n in notebooks]
    ]
    for student in students:
        ids = {"Student": student, **roster.get(student, {})}
        rows.append(
            [ids.get(c, "") for c in CANVAS_COLUMNS]
            + [_num(points[(student, n)]) for n in notebooks]
        )
    csvfile.write(path, CANVAS_COLUMNS + notebooks, rows)


def write_canvas_import(
    path: Path,
    exported: CanvasGradebook,
    columns: Mapping[str, canvas_gradebook.Assignment],
    points: Points,
    roster: class_roster.Roster,
) -> list[str]:
    """The import file in the terms of Canvas's own export: its leading columns and rows,
    then ``columns`` ({notebook: assignment}) under their exact headers; return our
    students it has no row for. A row of no student of ours keeps blank cells (an import
    changes no grade for a blank)."""
    students = sorted({s for s, _ in points})
    mine = {s: canvas_gradebook.canvas_row(s, roster.get(s, {}), exported.students)
            for s in students}  # fmt: skip
    whose = {id(row): s for s, row in mine.items() if row is not None}
    possible = [POINTS_POSSIBLE] + [""] * (len(exported.leading) - 1)
    rows = [possible + [a.points for a in columns.values()]]
    for row in exported.students:
        student = whose.get(id(row))
        cells = [_num(points[(student, n)]) if student else "" for n in columns]
        rows.append([row[c] for c in exported.leading] + cells)
    headers = [a.header for a in columns.values()]
    csvfile.write(path, exported.leading + headers, rows)
    return [s for s, row in mine.items() if row is None]


def _canvas_columns(
    exported: CanvasGradebook,
    notebooks: list[str],
    maxima: Mapping[str, float],
    chosen: Mapping[str, str],
) -> dict[str, canvas_gradebook.Assignment]:
    """{notebook: its Canvas assignment}; the notebooks with none, and the points an
    assignment is worth where they are not the notebook's, are said on stderr."""
    columns, unmatched = canvas_gradebook.match_notebooks(notebooks, exported.assignments, chosen)
    if unmatched:
        print(f"no Canvas assignment for {', '.join(unmatched)} (left out; name one with "
              "c.GraderSettings.canvas_assignments, or give the assignment the notebook's "
              "name)", file=sys.stderr)  # fmt: skip
    for notebook, a in columns.items():
        if a.points and float(a.points) != maxima[notebook]:
            print(f"{a.header} is worth {a.points} points in Canvas, {notebook} "
                  f"{maxima[notebook]:g} here", file=sys.stderr)  # fmt: skip
    return columns


def _moodle_worksheets(
    given: list[str], notebooks: list[str], out: Path
) -> list[tuple[str, moodle_worksheet.Worksheet]]:
    """[(notebook, its worksheet)] of ``--moodle-worksheet``s (``[NOTEBOOK=]PATH``, a folder:
    every CSV in it), all read before anything is written; a one-line error for a notebook
    not graded, a worksheet naming none, or two worksheets for one notebook or file name."""
    found: list[tuple[str, moodle_worksheet.Worksheet]] = []
    for item in given:
        named, _, path_text = item.partition("=")
        if not path_text or (named not in notebooks and Path(item).exists()):
            named, path_text = "", item  # a path, "=" and all
        path = Path(path_text)
        if named and named not in notebooks:
            raise UserError(f"--moodle-worksheet {item}: no graded notebook {named!r} in OUT "
                            f"(graded: {', '.join(notebooks)})")  # fmt: skip
        if path.is_dir() and not named:
            paths = sorted(path.glob("*.csv"))
            if not paths:
                raise UserError(f"--moodle-worksheet {path}: the folder holds no .csv worksheet")
        else:
            paths = [path]
        for p in paths:
            if (out / "moodle" / p.name).resolve() == p.resolve():
                raise UserError(f"--moodle-worksheet {p}: give the worksheet downloaded from "
                                "Moodle, not the one export wrote")  # fmt: skip
            sheet = moodle_worksheet.read(p)
            found.append((named or moodle_worksheet.notebook_of(p, notebooks), sheet))
    for what, key in (("notebook", 0), ("file name", 1)):
        seen = [n if key == 0 else s.path.name for n, s in found]
        twice = sorted({x for x in seen if seen.count(x) > 1})
        if twice:
            raise UserError(f"--moodle-worksheet: two worksheets for one {what}: {twice[0]}")
    return found


def _fill_moodle(
    out: Path,
    sheet: moodle_worksheet.Worksheet,
    notebook: str,
    points: Points,
    maximum: float,
    roster: class_roster.Roster,
) -> None:
    """Write ``sheet`` filled with ``notebook``'s points into OUT/moodle/, and say what Moodle
    would not take."""
    done = moodle_worksheet.fill(sheet, notebook, points, maximum, roster)
    target = out / "moodle" / sheet.path.name
    moodle_worksheet.write(sheet, target)
    print(f"wrote {target}: {notebook} for {done.graded} students (Moodle: the assignment's "
          "View all submissions, Grading action, Upload grading worksheet)")  # fmt: skip
    said = [
        (done.missing, f"graded but with no row in {sheet.path.name} (not in Moodle's upload)"),
        (done.ambiguous, "rows that could be more than one student, or one student's twice "
                         "(left blank; check the roster's names, ids and emails)"),
        (done.above, f"above the assignment's maximum in Moodle, {done.maximum or 'its'} "
                     "(Moodle skips these grades)"),
        (done.locked, "rows whose grade Moodle says cannot be changed (it skips them)"),
        (done.not_ours, "rows of no graded or roster student (left as downloaded)"),
    ]  # fmt: skip
    for names, why in said:
        if names:
            print(f"{sheet.path.name}: {why}: {printable('; '.join(names))}", file=sys.stderr)
    if done.maximum:
        print(f"{sheet.path.name}: the assignment is worth {done.maximum} points in Moodle, "
              f"{notebook} {maximum:g} here", file=sys.stderr)  # fmt: skip


def write_long(
    path: Path,
    students: list[str],
    notebooks: list[str],
    points: Points,
    maxima: Mapping[str, float],
    late: LateColumns,
) -> None:
    rows = (
        [student, n, _num(points[(student, n)]), _num(maxima[n]), *late.get((student, n), ("", ""))]
        for student in students
        for n in notebooks
    )
    csvfile.write(path, LONG_COLUMNS, rows)


def late_columns(grade_rows: list[GradeRow], extra: Mapping[Key, FeedbackExtra]) -> LateColumns:
    """{(student, notebook): (hours late, points taken off)} of notebooks with a due date."""
    taken = {(r["student"], r["notebook"]): r["points"].lstrip("-")
             for r in grade_rows if r["exercise"] == LATE_ROW}  # fmt: skip
    return {
        key: (f"{e['late_hours']:.2f}", taken.get(key, "0"))
        for key, e in extra.items()
        if e.get("late_hours") is not None
    }


def _report_roster(
    out: Path, students: list[str], roster: class_roster.Roster, absent: str
) -> None:
    missing = [s for s in students if s not in roster]
    listing = out / "not_in_roster.txt"
    listing.write_text("".join(f"{s}\n" for s in missing))
    if missing:
        print(f"graded but not in the roster (ID columns blank; listed in {listing}): "
              f"{printable(', '.join(missing))}", file=sys.stderr)  # fmt: skip
    no_work = sorted(set(roster) - set(students))
    if no_work:
        given = "0 for every notebook" if absent == "zero" else "left blank: --absent blank"
        print(f"in the roster with no graded work ({given}): {printable(', '.join(no_work))}")


def run(args: argparse.Namespace) -> int:
    roster = class_roster.read(args.roster) if args.roster else {}
    _, grade_rows, notebooks, extra = current(args.out, args.settings)
    worksheets = _moodle_worksheets(args.moodle_worksheet, notebooks, args.out)  # before writing
    # for formgrader and the next totals; this export adds the roster's rows itself
    class_roster.import_into_gradebook(args.out, roster)
    points, pending = notebook_points(grade_rows)
    maxima = {n: sum(e.max_points for e in course.exercises(n)) for n in notebooks}
    graded = sorted({s for s, _ in points} - roster_only(args.out))  # no roster-only student
    for student in set(roster) - set(graded):
        points.update({(student, n): 0.0 if args.absent == "zero" else "" for n in notebooks})
    students = sorted({s for s, _ in points})
    canvas = args.canvas or args.out / "canvas_grades.csv"
    long = args.long or args.out / "grades_long.csv"
    if args.canvas_gradebook:
        exported = canvas_gradebook.read(args.canvas_gradebook)
        chosen = args.settings.canvas_assignments
        columns = _canvas_columns(exported, notebooks, maxima, chosen)
        outside = write_canvas_import(canvas, exported, columns, points, roster)
        if outside:
            print(f"no row in Canvas's gradebook export (left out of {canvas}): "
                  f"{printable(', '.join(outside))}", file=sys.stderr)  # fmt: skip
    else:
        write_canvas(canvas, students, notebooks, points, maxima, roster)
    for notebook, sheet in worksheets:
        _fill_moodle(args.out, sheet, notebook, points, maxima[notebook], roster)
    write_long(long, students, notebooks, points, maxima, late_columns(grade_rows, extra))
    print(f"wrote {canvas} (Canvas gradebook import) and {long}: {len(students)} students")
    if not args.roster and not args.canvas_gradebook:
        print(
            "no --roster: the ID, SIS User ID, SIS Login ID and Section columns are blank, so "
            "Canvas can match rows by the Student column (the submission folder names) only"
        )
    else:
        _report_roster(args.out, graded, roster, args.absent)
    if pending:
        print(
            f"left blank, written answers still to grade: {printable('; '.join(pending))} "
            f"(`make formgrader OUT={args.out}`, then export again)"
        )
    return 0
