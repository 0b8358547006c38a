"""`python -m grader totals OUT`: carry hand-entered points into OUT's outputs, fast.

Formgrader saves the points an instructor gives a written answer in ``OUT/gradebook.db``.
This command rewrites ``grades.csv``, ``totals.csv``, ``feedback/`` and ``report/`` from the
graded results the last grading run kept in ``OUT/work/results`` plus those scores: no
notebook runs (``make bench`` p5 times it against a regrade).
"""

import json
from pathlib import Path

from nbgrader.api import Gradebook

from grader import course, gradebook, report
from grader.cli import UserError


def add_arguments(parser):
    parser.add_argument("out", type=Path, help="the OUT folder of a grading run")


def load_results(out: Path) -> list[dict]:
    """The graded results in ``OUT/work/results``, sorted by student and notebook."""
    folder = out / "work" / "results"
    results = []
    for path in sorted(folder.glob("*/*.json")):
        try:
            results.append(json.loads(path.read_text()))
        except ValueError:
            raise UserError(f"{path} is damaged: rerun `make grade` for this class") from None
    if not results or not (out / "gradebook.db").is_file():
        raise UserError(
            f"{out} holds no graded class (no gradebook.db or work/results): "
            "grade it first with `make grade SUBMISSIONS=... OUT=...`"
        )
    return sorted(results, key=lambda r: (r["student"], r["notebook"]))


def hand_scores(out: Path) -> dict[tuple[str, str], dict[str, float]]:
    """{(student, assignment): {grade_id: points}} of every written answer given points in
    formgrader, read in one gradebook session (one per notebook was the slow part)."""
    scores: dict = {}
    with Gradebook(gradebook.db_url(out), gradebook.COURSE_ID) as gb:
        for assignment in gb.assignments:
            for submission in assignment.submissions:
                mine = scores.setdefault((submission.student.id, assignment.name), {})
                for notebook in submission.notebooks:
                    mine.update(
                        (g.name, float(g.manual_score))
                        for g in notebook.grades
                        if g.cell.cell_type == "markdown" and g.manual_score is not None
                    )
    return scores


def current(out: Path) -> tuple[list[dict], list[dict], list[str]]:
    """(results, grades.csv rows with today's hand-entered points, notebooks in course order)."""
    results = load_results(out)
    manual = hand_scores(out)
    graded = {r["notebook"] for r in results}
    notebooks = [a for a in course.assignments() if a in graded]
    return results, report.rows(results, manual), notebooks


def rewrite(out: Path) -> list[dict]:
    """Rewrite OUT's outputs from the kept results and the gradebook; return the grade rows."""
    results, grade_rows, notebooks = current(out)
    total_rows = report.totals(grade_rows, notebooks)
    report.write_grades(out, grade_rows)
    report.write_totals(out, total_rows, notebooks)
    report.write_feedback(out, grade_rows, results)
    report.write_class_report(out, grade_rows, total_rows, results, [])
    return grade_rows


def run(args) -> int:
    rows = rewrite(args.out)
    written = [r for r in rows if r["exercise"] in _written_ids()]
    pending = [r for r in written if r["points"] == ""]
    print(
        f"updated {args.out / 'totals.csv'}, grades.csv, feedback/ and report/: "
        f"{len(written) - len(pending)} of {len(written)} written answers have points"
        + (f"; {len(pending)} still to grade (`make formgrader OUT={args.out}`)" if pending else "")
    )
    return 0


def _written_ids() -> set[str]:
    return {
        e.grade_id for a in course.assignments() for e in course.exercises(a) if not e.autograded
    }
