"""Canvas's own gradebook export (Grades > Export > Export Entire Gradebook), read for
``grader export --canvas-gradebook``: its students, and its assignment columns, whose headers
are ``Name (assignment id)``. Canvas matches an imported column to an assignment by that
header; a column without the id makes a new assignment, so the import file reuses them
exactly. Its leading columns (``Student, ID, SIS User ID, SIS Login ID, Section``, in
whatever set the export has) say whose each row is; a row with no ``ID`` is no student (the
``Points Possible`` row, and a posting-policy row where there is one).

Each notebook goes to the assignment ``c.GraderSettings.canvas_assignments`` names for it
(``{notebook: assignment id or name}``), else to the one whose name is the notebook's once
both are lower-cased letters and digits only (``01 Soft lookup`` is ``01_soft_lookup``).
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from grader.errors import UserError
from grader.results import csvfile

HEADER = re.compile(r"(?P<name>.*\S)\s*\((?P<id>\d+)\)")  # "Soft lookup (12345)"
NEEDED = ("Student", "ID")


@dataclass(frozen=True)
class Assignment:
    header: str  # exactly as the export wrote it: the import's column name
    name: str
    id: str
    points: str  # its Points Possible ("" when the export has no such row)


@dataclass(frozen=True)
class CanvasGradebook:
    leading: list[str]  # the columns before the first assignment's, as exported
    assignments: list[Assignment]
    students: list[dict[str, str]]  # each student's leading columns


def read(path: Path) -> CanvasGradebook:
    """The export at ``path``, or a one-line error saying what it lacks."""
    rows = csvfile.rows(path, "Canvas's gradebook export")
    header = [h.strip() for h in rows[0]] if rows else []
    first = next((i for i, h in enumerate(header) if HEADER.fullmatch(h)), None)
    if first is None or any(c not in header[:first] for c in NEEDED):
        raise UserError(
            f"{path} is no Canvas gradebook export: its header needs Student, ID, then "
            "assignment columns named 'Name (assignment id)'"
        )
    body = [dict(zip(header, row, strict=False)) for row in rows[1:]]
    possible = next((r for r in body if r.get("Student", "").strip() == "Points Possible"), {})
    assignments = [
        Assignment(h, m["name"], m["id"], possible.get(h, "").strip())
        for h in header[first:]
        if (m := HEADER.fullmatch(h))
    ]
    students = [{c: r.get(c, "") for c in header[:first]} for r in body if r.get("ID", "").strip()]
    return CanvasGradebook(header[:first], assignments, students)


def _key(text: str) -> str:
    return "".join(re.findall(r"[a-z0-9]+", text.lower()))


def match_notebooks(
    notebooks: list[str], assignments: list[Assignment], chosen: Mapping[str, str]
) -> tuple[dict[str, Assignment], list[str]]:
    """({notebook: its assignment}, [notebooks with none]): ``chosen`` ({notebook: id or
    name}, the setting) first, else by name; a chosen one the export lacks is an error."""
    found: dict[str, Assignment] = {}
    unmatched = []
    for notebook in notebooks:
        wanted = chosen.get(notebook)
        if wanted is not None:
            hits = [a for a in assignments if wanted in (a.id, a.name)]
            if not hits:
                raise UserError(
                    f"c.GraderSettings.canvas_assignments: {notebook}: no assignment "
                    f"{wanted!r} in Canvas's gradebook export"
                )
        else:
            hits = [a for a in assignments if _key(a.name) == _key(notebook)]
        if len(hits) == 1:
            found[notebook] = hits[0]
        else:
            unmatched.append(notebook)
    return found, unmatched


def canvas_row(
    student: str, roster_ids: Mapping[str, str], rows: list[dict[str, str]]
) -> dict[str, str] | None:
    """The export's row of ``student``: the one with the roster's ID or SIS User ID for
    them, else one whose ID, SIS User ID or SIS Login ID is the student's own id."""
    for column in ("ID", "SIS User ID"):
        wanted = roster_ids.get(column)
        if wanted:
            hits = [r for r in rows if r.get(column, "").strip() == wanted]
            if hits:
                return hits[0]
    ids = ("ID", "SIS User ID", "SIS Login ID")
    return next((r for r in rows if student in (r.get(c, "").strip() for c in ids)), None)
