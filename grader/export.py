"""`python -m grader export OUT [--roster ROSTER]`: the final grades, for an LMS.

Points are the autograded ones plus those entered in formgrader, read fresh (as
``grader.totals`` does). Two files:

- ``--canvas`` (default ``OUT/canvas_grades.csv``): a Canvas gradebook import. Canvas's
  leading columns ``Student, ID, SIS User ID, SIS Login ID, Section`` (how it matches a row to
  a student), then one column per notebook, and under the header a ``Points Possible`` row
  with each notebook's maximum. Canvas makes a new assignment for a column name it does not
  know.
- ``--long`` (default ``OUT/grades_long.csv``): ``student, assignment, points, max``, one row
  per student and notebook.

A notebook with a written answer still to grade is left blank in both (no points are sent
for it) and listed. The roster (optional) is a CSV with a ``student`` column (the
folder names of the submissions) and any of ``name, id, sis_user_id, sis_login_id,
section``; without it the ID columns are blank and Canvas can match rows by the Student
column only.
"""

import csv
from pathlib import Path

from grader import course, csvfile
from grader.cli import UserError
from grader.totals import current

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_POSSIBLE = "    Points Possible"  # as Canvas's own gradebook export writes it
ROSTER_COLUMNS = {  # roster column -> Canvas column
    "name": "Student",
    "id": "ID",
    "sis_user_id": "SIS User ID",
    "sis_login_id": "SIS Login ID",
    "section": "Section",
}
LONG_COLUMNS = ["student", "assignment", "points", "max"]


def add_arguments(parser):
    parser.add_argument("out", type=Path, help="the OUT folder of a grading run")
    parser.add_argument("--canvas", type=Path, help="Canvas CSV (default: OUT/canvas_grades.csv)")
    parser.add_argument("--long", type=Path, help="long CSV (default: OUT/grades_long.csv)")
    parser.add_argument("--roster", type=Path, help="CSV: student,name,id,sis_user_id,...")


def read_roster(path: Path) -> dict[str, dict]:
    """{student folder name: {Canvas column: value}}, or a one-line error."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            header = [h.strip() for h in reader.fieldnames or []]
            rows = [{k.strip(): (v or "").strip() for k, v in r.items() if k} for r in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise UserError(f"cannot read the roster {path}: {err}") from None
    unknown = [h for h in header if h != "student" and h not in ROSTER_COLUMNS]
    if "student" not in header or unknown:
        raise UserError(
            f"roster {path}: columns must be student and any of {', '.join(ROSTER_COLUMNS)}"
            + (f" (unknown: {', '.join(unknown)})" if unknown else " (no student column)")
        )
    roster: dict[str, dict] = {}
    for row in rows:
        if row["student"] in roster:
            raise UserError(f"roster {path}: student {row['student']!r} is listed twice")
        roster[row["student"]] = {ROSTER_COLUMNS[k]: v for k, v in row.items() if k != "student"}
    return roster


def notebook_points(grade_rows: list[dict]) -> tuple[dict, list[str]]:
    """({(student, notebook): points, or "" while a written answer waits}, [what waits])."""
    points: dict = {}
    pending = []
    for row in grade_rows:
        key = (row["student"], row["notebook"])
        so_far = points.setdefault(key, 0.0)
        if row["points"] == "":
            points[key] = ""
            pending.append(f"{row['student']} {row['notebook']} ({row['exercise']})")
        elif so_far != "":
            points[key] = so_far + float(row["points"])
    return points, pending


def _num(value) -> str:
    return "" if value == "" else f"{value:g}"


def write_canvas(path: Path, students, notebooks, points, maxima, roster) -> None:
    rows = [[POINTS_POSSIBLE, "", "", "", ""] + [_num(maxima[n]) for n in notebooks]]
    for student in students:
        ids = {"Student": student, **roster.get(student, {})}
        rows.append(
            [ids.get(c, "") for c in CANVAS_COLUMNS]
            + [_num(points[(student, n)]) for n in notebooks]
        )
    csvfile.write(path, CANVAS_COLUMNS + notebooks, rows)


def write_long(path: Path, students, notebooks, points, maxima) -> None:
    rows = (
        [student, n, _num(points[(student, n)]), _num(maxima[n])]
        for student in students
        for n in notebooks
    )
    csvfile.write(path, LONG_COLUMNS, rows)


def run(args) -> int:
    roster = read_roster(args.roster) if args.roster else {}
    _, grade_rows, notebooks = current(args.out)
    points, pending = notebook_points(grade_rows)
    maxima = {n: sum(e.max_points for e in course.exercises(n)) for n in notebooks}
    students = sorted({s for s, _ in points})
    canvas = args.canvas or args.out / "canvas_grades.csv"
    long = args.long or args.out / "grades_long.csv"
    write_canvas(canvas, students, notebooks, points, maxima, roster)
    write_long(long, students, notebooks, points, maxima)
    print(f"wrote {canvas} (Canvas gradebook import) and {long}: {len(students)} students")
    if not args.roster:
        print(
            "no --roster: the ID, SIS User ID, SIS Login ID and Section columns are blank, so "
            "Canvas can match rows by the Student column (the submission folder names) only"
        )
    else:
        missing = [s for s in students if s not in roster]
        if missing:
            print(f"not in the roster (ID columns blank): {', '.join(missing)}")
        absent = sorted(set(roster) - set(students))
        if absent:
            print(f"in the roster but not graded (left out): {', '.join(absent)}")
    if pending:
        print(
            f"left blank, written answers still to grade: {'; '.join(pending)} "
            f"(`make formgrader OUT={args.out}`, then export again)"
        )
    return 0
