"""The class roster: a CSV with a ``student`` column (the folder names of the submissions) and
any of ``name, id, sis_user_id, sis_login_id, section`` (Canvas's columns). ``grader export``
fills Canvas's ID columns from it, ``grader collect`` maps an LMS's file names to students
with it, and :func:`import_into_gradebook` records its students in nbgrader's gradebook (as
``nbgrader db student import`` does), so formgrader and every output list the students who
handed in nothing.
"""

import csv
import json
from pathlib import Path

from nbgrader.api import Gradebook

from grader.errors import UserError
from grader.results import gradebook
from grader.results import out as out_files

IMPORTED = out_files.WORK / "roster.json"
Roster = dict[str, dict[str, str]]  # {student folder name: {Canvas column: value}}
COLUMNS = {  # roster column -> Canvas column
    "name": "Student",
    "id": "ID",
    "sis_user_id": "SIS User ID",
    "sis_login_id": "SIS Login ID",
    "section": "Section",
}


def read(path: Path) -> Roster:
    """{student folder name: {Canvas column: value}}, or a one-line error."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            header = [h.strip() for h in reader.fieldnames or []]
            rows = [{k.strip(): (v or "").strip() for k, v in r.items() if k} for r in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise UserError(f"cannot read the roster {path}: {err}") from None
    unknown = [h for h in header if h != "student" and h not in COLUMNS]
    if "student" not in header or unknown:
        raise UserError(
            f"roster {path}: columns must be student and any of {', '.join(COLUMNS)}"
            + (f" (unknown: {', '.join(unknown)})" if unknown else " (no student column)")
        )
    roster: Roster = {}
    for row in rows:
        if row["student"] in roster:
            raise UserError(f"roster {path}: student {row['student']!r} is listed twice")
        roster[row["student"]] = {COLUMNS[k]: v for k, v in row.items() if k != "student"}
    return roster


def _names(full: str) -> dict[str, str | None]:
    """nbgrader's first and last name of a roster name ("Ada Lovelace", "Lovelace, Ada")."""
    if "," in full:
        last, _, first = full.partition(",")
    else:
        first, _, last = full.strip().rpartition(" ")
    return {"first_name": first.strip() or None, "last_name": last.strip() or None}


def import_into_gradebook(out: Path, roster: Roster) -> None:
    """Every roster student in OUT's gradebook, with their name and Canvas id, and in
    ``OUT/work/roster.json`` (:func:`imported`: the students OUT's outputs list even with
    no submission)."""
    if not roster:
        return
    with Gradebook(gradebook.db_url(out), gradebook.COURSE_ID) as gb:
        for student, columns in sorted(roster.items()):
            known = _names(columns["Student"]) if columns.get("Student") else {}
            if columns.get("ID"):
                known["lms_user_id"] = columns["ID"]
            gb.update_or_create_student(student, **known)
    students = sorted(set(imported(out)) | set(roster))
    out_files.write_text(out / IMPORTED, json.dumps(students, indent=1) + "\n")


def imported(out: Path) -> list[str]:
    """The students of every roster imported into OUT."""
    try:
        students: list[str] = json.loads((out / IMPORTED).read_text())  # written by this module
        return students
    except (OSError, ValueError):
        return []
