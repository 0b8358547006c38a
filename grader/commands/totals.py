"""`python -m grader totals OUT`: carry hand-entered points into OUT's outputs, fast.

Formgrader saves the points an instructor gives a written answer in ``OUT/gradebook.db``.
This command rewrites ``grades.csv``, ``totals.csv``, ``feedback/`` and ``report/`` from the
graded results the last grading run kept in ``OUT/work/results`` plus those scores and
formgrader's comments: no notebook runs (``make bench`` p5 times it against a regrade).
Every student the last run saw gets a row for every notebook of the class, "not graded yet"
when OUT holds no result for it. Due dates, extensions and the late policy are applied as
the settings are now (``grader.results.deadlines``), so changing them needs only this command.
"""

import argparse
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TypedDict

from grader import course
from grader.errors import UserError
from grader.intake import roster as class_roster
from grader.results import annotated, deadlines, handgrades, messages, report
from grader.results import out as out_files
from grader.results.annotated import GradeRow
from grader.results.deadlines import Lateness
from grader.results.handgrades import Key
from grader.results.report import FeedbackExtra
from grader.results.result import NO_RESULT, NOT_GRADED, Result, Row

TAKES_SETTINGS = True  # the late policy (grader.settings), from the command line too


class LastRun(TypedDict, total=False):
    """OUT/work/run.json (:func:`write_run`); a class graded before it existed has none."""

    students: list[str]
    ignored: list[str]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, help="the OUT folder of a grading run")


def write_run(out: Path, students: list[str], ignored: list[str]) -> None:
    """What the last grading run saw of SUBMISSIONS, for `rewrite` (and so for this command)."""
    text = json.dumps({"students": students, "ignored": ignored}, indent=1)
    out_files.write_text(out / out_files.RUN, text + "\n")


def roster_only(out: Path) -> set[str]:
    """The students of a roster imported into OUT who handed in nothing: neither in
    SUBMISSIONS at the last grading run nor with any result in OUT."""
    results = out / out_files.RESULTS
    graded = {p.name for p in results.iterdir() if p.is_dir()} if results.is_dir() else set()
    return set(class_roster.imported(out)) - set(_last_run(out).get("students") or []) - graded


def _last_run(out: Path) -> LastRun:
    path = out / out_files.RUN
    run: LastRun = json.loads(path.read_text()) if path.is_file() else {"ignored": []}
    return run


def load_results(out: Path) -> list[Result]:
    """The graded results in ``OUT/work/results`` of the students in SUBMISSIONS at the last
    grading run, sorted by student and notebook."""
    folder = out / out_files.RESULTS
    students = _last_run(out).get("students")
    results = []
    for path in sorted(folder.glob("*/*.json")):
        if students is not None and path.parent.name not in students:
            continue
        try:
            results.append(Result.from_json(json.loads(path.read_text())))
        except (ValueError, KeyError, TypeError):
            raise UserError(f"{path} is damaged: rerun `make grade` for this class") from None
    if not results or not (out / "gradebook.db").is_file():
        raise UserError(
            f"{out} holds no graded class (no gradebook.db or work/results): "
            "grade it first with `make grade SUBMISSIONS=... OUT=...`"
        )
    return sorted(results, key=lambda r: (r.student, r.notebook))


def complete(
    results: list[Result], students: list[str] | None, absent: Iterable[str] = ()
) -> list[Result]:
    """``results`` plus a "not graded yet" result for each student and class notebook OUT
    has none for (a student graded alone, a notebook graded for some), so every record
    has every notebook's maximum; ``absent`` students (the roster's, with no submission)
    get "Notebook not submitted." for every notebook."""
    have = {(r.student, r.notebook) for r in results}
    notebooks = sorted({n for _, n in have})
    absentees = set(absent) - set(students or []) - {s for s, _ in have}
    added = [
        (_not_submitted if student in absentees else _no_result_yet)(student, notebook)
        for student in sorted(set(students or []) | {s for s, _ in have} | absentees)
        for notebook in notebooks
        if (student, notebook) not in have
    ]
    return sorted(results + added, key=lambda r: (r.student, r.notebook))


def _no_result_yet(student: str, notebook: str) -> Result:
    rows = tuple(
        Row(e.grade_id, 0.0, e.max_points, messages.NO_RESULT_YET, e.autograded)
        for e in course.exercises(notebook)
    )
    return Result(student, notebook, NO_RESULT, rows, flags=(), notes=(), sandboxed=True)


def _not_submitted(student: str, notebook: str) -> Result:
    rows = tuple(
        Row(e.grade_id, 0.0, e.max_points, report.NOT_SUBMITTED, e.autograded)
        for e in course.exercises(notebook)
    )
    return Result(student, notebook, NOT_GRADED, rows, flags=(), notes=(), sandboxed=True)


def current(
    out: Path, settings: deadlines.Policy
) -> tuple[list[Result], list[GradeRow], list[str], dict[Key, FeedbackExtra]]:
    """(results, grades.csv rows with today's points typed in formgrader (scores, overrides,
    extra credit: grader.results.handgrades), comments and late penalties, notebooks in
    course order, {(student, notebook): feedback extras}). The students of a roster
    imported with no submission have every notebook "not submitted"."""
    results = complete(load_results(out), _last_run(out).get("students"), roster_only(out))
    hand = handgrades.read(out)
    graded = {r.notebook for r in results}
    notebooks = [a for a in course.assignments() if a in graded]
    times = deadlines.load_times(out)
    lates: dict[Key, Lateness | None] = {}
    for r in results:
        key = (r.student, r.notebook)
        if report.submitted(r):
            lates[key] = deadlines.lateness(settings, *key, times)
    penalised = {k: v for k, v in lates.items() if v and v["fraction"]}
    grade_rows = report.rows(results, hand, penalised)
    extra: dict[Key, FeedbackExtra] = {}
    for key in {(r.student, r.notebook) for r in results}:
        exercises = {e.grade_id for e in course.exercises(key[1])}
        late = lates.get(key)
        extra[key] = {
            "handed": deadlines.describe(late) if late else "",
            "late_hours": late["hours"] if late else None,
            "late": late,
            "comments": [c for g, c in hand.comments.get(key, {}).items() if g not in exercises],
        }
    return results, grade_rows, notebooks, extra


def rewrite(out: Path, settings: deadlines.Policy) -> list[GradeRow]:
    """Rewrite OUT's outputs from the kept results and the gradebook; return the grade rows."""
    results, grade_rows, notebooks, extra = current(out, settings)
    total_rows = report.totals(grade_rows, notebooks)
    report.write_grades(out, grade_rows)
    report.write_totals(out, total_rows, notebooks)
    learners = [handgrades.for_learner(g) for g in grade_rows]  # no note to the instructor
    for r in results:  # each learner's own notebook, annotated, linked from their feedback
        mine = [g for g in learners if (g["student"], g["notebook"]) == (r.student, r.notebook)]
        extra[(r.student, r.notebook)]["annotated"] = annotated.write(out, r, mine)
    report.write_feedback(out, learners, results, extra)
    report.write_class_report(
        out, grade_rows, total_rows, results, _last_run(out)["ignored"], extra
    )
    return grade_rows


def run(args: argparse.Namespace) -> int:
    rows = rewrite(args.out, args.settings)
    written = [r for r in rows if r["exercise"] in _written_ids()]
    pending = [r for r in written if r["points"] == ""]
    print(
        f"updated {args.out / out_files.TOTALS.path}, {out_files.GRADES.path}, "
        f"{out_files.FEEDBACK.path}/ and {out_files.REPORT.path}/: "
        f"{len(written) - len(pending)} of {len(written)} written answers have points"
        + (f"; {len(pending)} still to grade (`make formgrader OUT={args.out}`)" if pending else "")
    )
    for line in handgrades.pending_notes(handgrades.read(args.out)):
        print(line)
    return 0


def _written_ids() -> set[str]:
    return {
        e.grade_id for a in course.assignments() for e in course.exercises(a) if not e.autograded
    }
