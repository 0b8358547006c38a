"""`python -m grader formgrader OUT`: nbgrader's formgrader on a class graded into OUT.

The course grader leaves in OUT the gradebook (``OUT/gradebook.db``), the graded notebooks
(``OUT/nbgrader/autograded/<student>/<notebook>/``) and ``OUT/nbgrader/nbgrader_config.py``.
Formgrader lists an assignment only if it has a *source* folder, and counts (and links) a
submission only if it has a *submitted* one, so this command adds nbgrader's layout: per
graded notebook a source folder holding the release version (never a solution or a hidden
test); per graded submission, unless one was collected there already, the submission as the
course grader rebuilt it (the student's answer cells, every other cell from the release,
no outputs); and an exchange folder, so formgrader has no exchange to warn about. It then
starts JupyterLab on ``OUT/nbgrader``, opening at formgrader, with the instructor's launch
profile (``attnlib.lab``: nbgrader's instructor tools on) and this course's formgrader
settings.

Hand-entered points are saved in the gradebook; ``python -m grader totals OUT`` carries them
into ``totals.csv``, the feedback and the report.

Formgrader's Autograde button runs stock ``nbgrader autograde``: student code outside the
course grader's sandbox, without its checks, over the course grader's graded notebook. The
profile's nbgrader config makes :class:`CourseGraderOnly` the exporter of that app, so the
button stops before any file is touched and says which command grades instead.
"""

import argparse
from pathlib import Path
from typing import Any

import nbformat
from nbconvert.exporters import NotebookExporter
from nbgrader.api import Gradebook

from attnlib.lab import launch, write_profile
from grader import course
from grader.configfile import config_file
from grader.errors import UserError
from grader.results import formgrade_csp, gradebook

# Formgrader shows the log in a <pre>: one short line each.
REFUSAL = (
    "Formgrader's Autograde is off for this course:\n"
    "it would run student code outside the course grader's sandbox and without its checks.\n"
    "Grade with the course grader: make grade SUBMISSIONS=<folder> OUT={out}\n"
    "After hand grading here: make totals OUT={out}"
)


class CourseGraderOnly(NotebookExporter):
    """``Autograde.exporter_class`` for formgrader's server: Autograde makes its exporter
    before it removes or writes anything, so refusing here leaves every file as it was."""

    # Overrides nbgrader internals (pinned in pyproject.toml); guarded by
    # tests/test_overrides.py::test_formgrader_s_autograde_makes_its_exporter_before_it_converts

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # NotebookExporter's own
        # nbconvert's Exporter.__init__ is untyped (mypy's untyped_calls_exclude misses super())
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        root = getattr(getattr(self.parent, "coursedir", None), "root", None)
        message = REFUSAL.format(out=Path(root).parent if root else "OUT")
        self.log.error(message)
        raise RuntimeError(message)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--exchange", type=Path, help="nbgrader exchange folder (default: OUT/nbgrader/exchange)"
    )
    parser.add_argument("out", type=Path, help="the OUT folder of a grading run")
    parser.add_argument("jupyter_args", nargs=argparse.REMAINDER, help="passed to jupyter lab")


def graded(out: Path) -> dict[str, list[str]]:
    """{assignment: students with a graded submission}, from OUT's gradebook."""
    if (
        not (out / "gradebook.db").is_file()
        or not (out / "nbgrader" / "nbgrader_config.py").is_file()
    ):
        raise UserError(
            f"{out} holds no graded class (no gradebook.db or nbgrader/nbgrader_config.py): "
            "grade it first with `make grade SUBMISSIONS=... OUT=...`"
        )
    with Gradebook(gradebook.db_url(out), gradebook.COURSE_ID) as gb:
        found = {a.name: sorted(s.student.id for s in a.submissions) for a in gb.assignments}
    return {a: found[a] for a in course.assignments() if a in found}


def _lay_out_submission(root: Path, student: str, assignment: str) -> None:
    """``submitted/<student>/<assignment>/``, from the graded notebook, if nothing is there.
    A notebook that was not handed in has no graded notebook, and gets nothing."""
    folder = root / "submitted" / student / assignment
    graded = root / "autograded" / student / assignment / f"{assignment}.ipynb"
    if graded.is_file() and not any(folder.glob("*.ipynb")):
        folder.mkdir(parents=True, exist_ok=True)
        nb = nbformat.read(graded, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        nbformat.write(nb, folder / f"{assignment}.ipynb")


def _trusted_release(assignment: str) -> str:
    from grader import settings
    from grader.judging import trusted

    return trusted.models([assignment], settings.load().release_cache)[assignment].release


def prepare(out: Path, exchange: Path | None = None) -> Path:
    """Make OUT/nbgrader ready for formgrader; return the launch profile folder."""
    root = gradebook.write_config(out).resolve()
    for assignment, students in graded(out).items():
        source = root / "source" / assignment / f"{assignment}.ipynb"
        if not source.is_file():  # graded before the grader kept its release in OUT
            source.parent.mkdir(parents=True, exist_ok=True)
            source.write_text(_trusted_release(assignment))
        for student in students:
            _lay_out_submission(root, student, assignment)
    exchange = (exchange or root / "exchange").resolve()
    exchange.mkdir(parents=True, exist_ok=True)
    profile = write_profile(root / ".jupyter", instructor=True)
    formgrade_csp.enable(profile)
    refusal = f"{__name__}.{CourseGraderOnly.__name__}"
    (profile / "nbgrader_config.py").write_text(
        config_file(
            "Written by `python -m grader formgrader`: settings for formgrader's server only.",
            {
                "Exchange": {"root": str(exchange)},
                "Autograde": {"exporter_class": refusal},
                "HTMLExporter": formgrade_csp.exporter_config(),
            },
        )
    )
    return profile


def run(args: argparse.Namespace) -> int:
    profile = prepare(args.out, args.exchange)
    root = args.out.resolve() / "nbgrader"
    print(f"formgrader on {root}; after hand grading: make totals OUT={args.out}")
    # nbgrader reads the course's config from the server's working folder.
    launch(root, profile, ["--LabApp.default_url=/formgrader", *args.jupyter_args], cwd=root)
    return 0
