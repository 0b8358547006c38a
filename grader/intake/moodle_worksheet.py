"""Moodle's grading worksheet (an assignment's "View all submissions", Grading action
"Download grading worksheet"), read and filled for ``grader export --moodle-worksheet``.

Moodle writes one worksheet per assignment, named ``Grades-<course>-<assignment>-<id>.csv``,
headed by its own column names: ``Identifier`` (``Participant N``, the participant number
of that assignment, the one its "Download all submissions" puts in each folder's name),
``Full name``, the identity fields the site shows (``Email address`` by default),
``Status``, ``Grade``, ``Maximum Grade``, ``Grade can be changed``, ``Last modified
(submission)``, ``Last modified (grade)`` and ``Feedback comments``. Its upload ("Upload
grading worksheet") finds each row's participant by ``Identifier``, takes ``Grade``, and
reads ``Last modified (grade)`` to skip a grade changed in Moodle since the download; it
skips a blank grade, one equal to Moodle's, one above the maximum and one that cannot be
changed. So the file written here is the worksheet as downloaded, every header and cell kept
(a cell of a column the upload does not read quoted by a ``'`` where a spreadsheet would run
it, as in every CSV here), with only ``Grade`` filled in for the rows of our students, in
the worksheet's own decimal separator.

A row is a roster student's when its ``Identifier``'s number is their ``id`` or
``sis_user_id`` (as ``grader collect`` reads Moodle's folder names), its email is their
``sis_login_id`` or student id (or its part before ``@`` is the student id), or its full
name is theirs in either word order (``grader.intake.collect.name_keys``); a row that two
students could be, or a student two rows could be, gets no grade and is named.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from grader.errors import UserError
from grader.intake.collect import name_keys
from grader.results import csvfile

IDENTIFIER = "Identifier"
FULL_NAME = "Full name"
EMAIL = "Email address"
GRADE = "Grade"
MAXIMUM = "Maximum Grade"
CAN_CHANGE = "Grade can be changed"
MODIFIED = "Last modified (grade)"
SCALE = "Scale"
NEEDED = (IDENTIFIER, GRADE, MODIFIED)  # what Moodle's upload reads
PARTICIPANT = re.compile(r"Participant (\d+)")
WHERE = "Moodle: the assignment's View all submissions, Grading action, Download grading worksheet"


@dataclass
class Worksheet:
    path: Path
    header: list[str]
    rows: list[list[str]]
    comma: bool  # whether its numbers use a decimal comma ("10,00")

    def cell(self, row: list[str], column: str) -> str:
        """``row``'s cell of ``column`` ("" without one), the name's case aside: Moodle's
        versions write ``Maximum Grade`` and ``Maximum grade``."""
        names = [h.strip().lower() for h in self.header]
        at = names.index(column.lower()) if column.lower() in names else None
        return row[at].strip() if at is not None else ""


@dataclass
class Filled:
    """What filling a worksheet found, for the command to say."""

    graded: int = 0
    not_ours: list[str] = field(default_factory=list)  # rows of no student of ours
    ambiguous: list[str] = field(default_factory=list)  # rows (and students) left blank
    missing: list[str] = field(default_factory=list)  # our students with no row
    above: list[str] = field(default_factory=list)  # grades Moodle will skip as too high
    locked: list[str] = field(default_factory=list)  # rows whose grade cannot be changed
    maximum: str = ""  # the assignment's maximum in Moodle, where it differs from ours


def read(path: Path) -> Worksheet:
    """The worksheet at ``path``, or a one-line error saying what it lacks."""
    rows = csvfile.rows(path, "Moodle's grading worksheet")
    header = rows[0] if rows else []
    if any(c not in header for c in NEEDED) or len(set(header)) != len(header):
        raise UserError(
            f"{path} is no Moodle grading worksheet: its header needs "
            f"{', '.join(NEEDED)}, once each, as Moodle in English writes them ({WHERE})"
        )
    lower = [h.strip().lower() for h in header]
    if SCALE.lower() in lower and MAXIMUM.lower() not in lower:
        raise UserError(
            f"{path}: this Moodle assignment is graded on a scale; give it a point grade "
            "(its settings, Grade, Type: Point) and download its worksheet again"
        )
    body = [r + [""] * (len(header) - len(r)) for r in rows[1:] if any(c.strip() for c in r)]
    if any(len(r) > len(header) for r in body):
        raise UserError(f"{path}: a row has more cells than the header ({WHERE})")
    at = lower.index(MAXIMUM.lower()) if MAXIMUM.lower() in lower else None
    comma = at is not None and any(re.fullmatch(r"\d+,\d+", r[at].strip()) for r in body)
    return Worksheet(path, header, body, comma)


def notebook_of(path: Path, notebooks: list[str]) -> str:
    """The notebook a worksheet's file name names (Moodle's ``Grades-<course>-<assignment>-
    <id>.csv``; letters and digits compared, so ``01 Soft lookup`` is ``01_soft_lookup``), or
    a one-line error asking for ``NOTEBOOK=WORKSHEET``."""
    name = _key(path.stem)
    hits = [n for n in notebooks if _key(n) in name]
    if len(hits) == 1:
        return hits[0]
    found = f"it names {', '.join(hits)}" if hits else "it names no graded notebook"
    raise UserError(
        f"--moodle-worksheet {path}: {found}; say which: --moodle-worksheet NOTEBOOK={path} "
        f"(graded: {', '.join(notebooks)})"
    )


def _key(text: str) -> str:
    return "".join(re.findall(r"[a-z0-9]+", text.lower()))


def _number(text: str, comma: bool) -> float | None:
    try:
        return float(text.replace(",", ".") if comma else text)
    except ValueError:
        return None


def _cell(value: float, comma: bool) -> str:
    text = f"{value:g}"
    return text.replace(".", ",") if comma else text


def whose(
    sheet: Worksheet, row: list[str], roster: Mapping[str, Mapping[str, str]], students: set[str]
) -> set[str]:
    """The students (of ``students``, with their roster columns) ``row`` could be."""
    found: set[str] = set()
    number = PARTICIPANT.fullmatch(sheet.cell(row, IDENTIFIER))
    email = sheet.cell(row, EMAIL).lower()
    name = "".join(re.findall(r"[a-z0-9]+", sheet.cell(row, FULL_NAME).lower()))
    for student in students:
        columns = roster.get(student, {})
        ids = {columns.get("ID"), columns.get("SIS User ID")} - {None, ""}
        emails = {student.lower(), (columns.get("SIS Login ID") or "").lower()} - {""}
        if (
            (number and number.group(1) in ids)
            or (email and (email in emails or email.partition("@")[0] == student.lower()))
            or (name and name in name_keys(student, columns.get("Student", "")))
        ):
            found.add(student)
    return found


def fill(
    sheet: Worksheet,
    notebook: str,
    points: Mapping[tuple[str, str], float | str],
    maximum: float,
    roster: Mapping[str, Mapping[str, str]],
) -> Filled:
    """Put each of our students' points for ``notebook`` (``""`` while a written answer
    waits: left blank, so Moodle keeps its grade) into ``sheet``'s Grade column, in place."""
    done = Filled()
    students = {s for s, n in points if n == notebook}
    at = sheet.header.index(GRADE)
    claims: dict[int, set[str]] = {}
    for i, row in enumerate(sheet.rows):
        claims[i] = whose(sheet, row, roster, students)
    taken: dict[str, list[int]] = {}
    for i, found in claims.items():
        for student in found:
            taken.setdefault(student, []).append(i)
    for i, row in enumerate(sheet.rows):
        label = f"{sheet.cell(row, IDENTIFIER)} ({sheet.cell(row, FULL_NAME)})"
        found = claims[i]
        if not found:
            done.not_ours.append(label)
            continue
        student = next(iter(found))
        if len(found) > 1 or len(taken[student]) > 1:
            done.ambiguous.append(f"{label}: {', '.join(sorted(found))}")
            row[at] = ""
            continue
        value = points[(student, notebook)]
        row[at] = "" if value == "" else _cell(float(value), sheet.comma)
        done.graded += value != ""
        if sheet.cell(row, CAN_CHANGE).lower() == "no":
            done.locked.append(label)
        top = _number(sheet.cell(row, MAXIMUM), sheet.comma)
        if top is not None and top != maximum:
            done.maximum = sheet.cell(row, MAXIMUM)
        if value != "" and top is not None and float(value) > top:
            done.above.append(f"{label} {row[at]}")
    done.missing = sorted(students - set(taken))
    return done


def read_back(sheet: Worksheet) -> list[str]:
    """The columns Moodle's upload reads: Identifier, Grade, Last modified (grade) and the
    feedback fields after it (``Feedback comments``, the teacher's)."""
    return [IDENTIFIER, GRADE, *sheet.header[sheet.header.index(MODIFIED) :]]


def write(sheet: Worksheet, path: Path) -> None:
    """The worksheet as read, Grade filled, through grader.results.csvfile: the columns
    Moodle's upload reads exactly as they were (a ``'`` in a feedback comment would change
    it), every other one (names, emails, a learner's online text) with a cell a spreadsheet
    would run as a formula quoted by a ``'``, as every CSV here."""
    path.parent.mkdir(parents=True, exist_ok=True)
    csvfile.write(path, sheet.header, sheet.rows, as_is=read_back(sheet))
