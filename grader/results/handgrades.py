"""What an instructor typed in formgrader, read from nbgrader's gradebook (``OUT/gradebook.db``)
and applied to each exercise's points: every output that shows a score (grades.csv, totals,
feedback, the report, the export; on the hub nbgrader's own feedback reads the same
gradebook) goes through :func:`exercise_points`.

A hand grade is tied to the answer it graded: when a regrade finds an answer cell changed
(a resubmission), :func:`answers_changed` drops that cell's hand grades (its test cells'
overrides and extra credit, its own points and comment), since they judged other work, and
records a note that every output shows until formgrader holds a hand grade for it again;
``c.GraderSettings.keep_changed_hand_grades`` keeps them, with a note that says so.

nbgrader keeps, per graded cell of a submission, ``manual_score`` (the points typed in
formgrader: the grade of a written answer, or an override of a check's test cell, which
replaces the points the checks gave that cell) and ``extra_credit`` (added on top, so an
exercise may score above its maximum), as its own ``Grade.score`` does. A test cell
belongs to the exercise whose answer it follows (``grader.course``).
"""

import hashlib
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

import nbformat
from nbgrader.api import Gradebook, MissingEntry, SubmittedNotebook

from grader import course
from grader.printable import printable
from grader.results import gradebook
from grader.results import out as out_files
from grader.results.annotated import GradeRow
from grader.results.result import Result, Row

GRADED = "graded in formgrader"  # a written answer's points, as any hand grading gives
EARLIER = "graded by hand on an earlier submission"
DROPPED_NOTE = f"{EARLIER}; check again in formgrader"
KEPT_NOTE = f"{EARLIER}; kept (keep_changed_hand_grades)"
CHANGED = out_files.WORK / "changed_answers.json"  # {student: {notebook: {cell: Fate}}}
Key = tuple[str, str]  # (student, notebook)
Fate = Literal["dropped", "kept"]  # what became of a changed answer's hand grades


@dataclass
class HandGrades:
    """Per (student, notebook), {grade cell name: value} of what formgrader holds: manual
    scores and extra credit of any graded cell, comments of any cell."""

    scores: dict[Key, dict[str, float]] = field(default_factory=dict)
    extra: dict[Key, dict[str, float]] = field(default_factory=dict)
    comments: dict[Key, dict[str, str]] = field(default_factory=dict)
    changed: dict[Key, dict[str, Fate]] = field(default_factory=dict)  # answers_changed's


def read(out: Path) -> HandGrades:
    """Everything formgrader holds for OUT, in one gradebook session (one per notebook was
    the slow part)."""
    hand = HandGrades()
    with Gradebook(gradebook.db_url(out), gradebook.COURSE_ID) as gb:
        for assignment in gb.assignments:
            for submission in assignment.submissions:
                key = (submission.student.id, assignment.name)
                for notebook in submission.notebooks:
                    _read_notebook(notebook, key, hand)
    for student, notebooks in _read_changed(out).items():
        for notebook, cells in notebooks.items():
            hand.changed[(student, notebook)] = cells
    return hand


def _read_notebook(notebook: SubmittedNotebook, key: Key, hand: HandGrades) -> None:
    scores = hand.scores.setdefault(key, {})
    extra = hand.extra.setdefault(key, {})
    said = hand.comments.setdefault(key, {})
    for g in notebook.grades:
        if g.manual_score is not None:
            scores[g.name] = float(g.manual_score)
        if g.extra_credit:
            extra[g.name] = float(g.extra_credit)
    said.update((c.name, c.manual_comment) for c in notebook.comments if c.manual_comment)


@cache
def test_ids(notebook: str) -> dict[str, tuple[str, ...]]:
    """{exercise: its graded cells}: an autograded one's test cells, a written one itself."""
    return {
        e.grade_id: tuple(e.test_ids) if e.autograded else (e.grade_id,)
        for e in course.exercises(notebook)
    }


def _read_changed(out: Path) -> dict[str, dict[str, dict[str, Fate]]]:
    path = out / CHANGED
    found: dict[str, dict[str, dict[str, Fate]]] = (
        json.loads(path.read_text()) if path.is_file() else {}
    )
    return found


def _answer_hashes(text: str) -> dict[str, str]:
    """{grade_id: hash of its source} of a graded notebook's answer cells."""
    from nbgrader.utils import is_solution

    nb = nbformat.reads(text, as_version=4)
    return {
        gid: hashlib.sha256(cell.source.encode()).hexdigest()
        for cell in nb.cells
        if is_solution(cell) and (gid := course.grade_id(cell))
    }


def changed_answers(before: str, after: str) -> set[str]:
    """The answer cells of graded notebook ``before`` whose source ``after`` changed."""
    old, new = _answer_hashes(before), _answer_hashes(after)
    return {gid for gid, digest in old.items() if new.get(gid) != digest}


def answers_changed(out: Path, key: Key, cells: set[str], keep: bool) -> None:
    """Drop (or, with ``keep``, keep) the hand grades of ``key``'s changed answer ``cells``
    in OUT's gradebook and record a note for each that had one (:func:`pending_notes`
    says them). Run before the new submission's grades are saved: a rerun after an
    interruption finds nothing left to drop and changes nothing."""
    student, notebook = key
    fate: Fate = "kept" if keep else "dropped"
    had: list[str] = []
    with Gradebook(gradebook.db_url(out), gradebook.COURSE_ID) as gb:
        for cell in sorted(cells):
            try:
                if _hand_graded(gb, key, cell, drop=not keep):
                    had.append(cell)
            except MissingEntry:  # a cell the gradebook never held: nothing typed for it
                continue
        gb.db.commit()
    if had:
        record = _read_changed(out)
        record.setdefault(student, {}).setdefault(notebook, {}).update(dict.fromkeys(had, fate))
        out_files.write_text(out / CHANGED, json.dumps(record, indent=1, sort_keys=True) + "\n")


def _hand_graded(gb: Gradebook, key: Key, cell: str, drop: bool) -> bool:
    """Whether answer ``cell`` of ``key`` holds anything typed in formgrader (its graded
    cells' points or extra credit, its comment); with ``drop`` it then holds nothing."""
    student, notebook = key
    grades = [gb.find_grade(g, notebook, notebook, student) for g in _graded_cells(notebook, cell)]
    comment = gb.find_comment(cell, notebook, notebook, student)
    typed = any(g.manual_score is not None or g.extra_credit for g in grades)
    typed = typed or bool(comment.manual_comment)
    if drop:
        for g in grades:
            g.manual_score, g.extra_credit = None, None
        comment.manual_comment = None
    return typed


def _graded_cells(notebook: str, cell: str) -> tuple[str, ...]:
    """The cells whose hand grades judged answer ``cell``: an exercise's graded cells (its
    test cells, or itself when written); none for an answer cell that is no exercise."""
    return test_ids(notebook).get(cell, ())


def _terminal_line(key: Key, cell: str, fate: Fate) -> str:
    note = KEPT_NOTE if fate == "kept" else DROPPED_NOTE
    return printable(f"{key[0]}/{key[1]} {cell}: {note}")  # a student id is a name they chose


def changed_note(key: Key, exercise: str, hand: HandGrades) -> str:
    """The note an exercise's row carries for a changed answer: while a dropped hand grade
    has no successor in formgrader, or always when it was kept ("" for none)."""
    fate = hand.changed.get(key, {}).get(exercise)
    cells = test_ids(key[1]).get(exercise, ())
    typed = any(c in hand.scores.get(key, {}) or c in hand.extra.get(key, {}) for c in cells)
    if fate == "kept":
        return KEPT_NOTE
    if fate == "dropped" and not typed and exercise not in hand.comments.get(key, {}):
        return DROPPED_NOTE
    return ""


def for_learner(row: GradeRow) -> GradeRow:
    """A grades.csv row as the student's feedback shows it: without the note to the
    instructor about a changed answer's hand grades."""
    message = row["message"]
    for note in (DROPPED_NOTE, KEPT_NOTE):
        message = message.replace(f"; {note}", "").replace(note, "")
    return {**row, "message": message}


def pending_notes(hand: HandGrades) -> list[str]:
    """The terminal's line for every changed answer whose note still shows."""
    return [
        _terminal_line(key, cell, fate)
        for key, cells in sorted(hand.changed.items())
        for cell, fate in sorted(cells.items())
        if changed_note(key, cell, hand)
    ]


def exercise_points(result: Result, row: Row, hand: HandGrades) -> tuple[float | str, str, str]:
    """(points, message, by_hand) of one exercise's row of ``result``: the checks' points
    (or "" for a written answer not graded yet) with formgrader's scores and extra credit
    applied; ``by_hand`` says what was set by hand ("" when nothing was)."""
    key = (result.student, result.notebook)
    scores, extra = hand.scores.get(key, {}), hand.extra.get(key, {})
    cells = test_ids(result.notebook).get(row.exercise, ())
    points, message, said = row.points, row.message, []
    if not row.autograded and row.exercise in scores:
        points, message = scores[row.exercise], ""
        said.append(GRADED)
    elif row.autograded and any(c in scores for c in cells):
        checks = result.tests or {}
        points = sum(scores.get(c, checks.get(c, {}).get("points", 0.0)) for c in cells)
        said.append(f"set in formgrader (the checks gave {float(row.points):g})")
    credit = sum(extra.get(c, 0.0) for c in cells)
    if credit and points != "":
        points = float(points) + credit
        said.append(f"extra credit {credit:+g}")
    note = changed_note(key, row.exercise, hand)
    message = "; ".join(part for part in (message, note) if part)
    return points, message, "; ".join(said)
