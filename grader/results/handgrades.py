"""What an instructor typed in formgrader, read from nbgrader's gradebook (``OUT/gradebook.db``)
and applied to each exercise's points: every output that shows a score (grades.csv, totals,
feedback, the report, the export; on the hub nbgrader's own feedback reads the same
gradebook) goes through :func:`exercise_points`.

nbgrader keeps, per graded cell of a submission, ``manual_score`` (the points typed in
formgrader: the grade of a written answer, or an override of a check's test cell, which
replaces the points the checks gave that cell) and ``extra_credit`` (added on top, so an
exercise may score above its maximum), as its own ``Grade.score`` does. A test cell
belongs to the exercise whose answer it follows (``grader.course``).
"""

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from nbgrader.api import Gradebook, SubmittedNotebook

from grader import course
from grader.results import gradebook
from grader.results.result import Result, Row

GRADED = "graded in formgrader"  # a written answer's points, as any hand grading gives
Key = tuple[str, str]  # (student, notebook)


@dataclass
class HandGrades:
    """Per (student, notebook), {grade cell name: value} of what formgrader holds: manual
    scores and extra credit of any graded cell, comments of any cell."""

    scores: dict[Key, dict[str, float]] = field(default_factory=dict)
    extra: dict[Key, dict[str, float]] = field(default_factory=dict)
    comments: dict[Key, dict[str, str]] = field(default_factory=dict)


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
    return points, message, "; ".join(said)
