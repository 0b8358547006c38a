"""The nbgrader gradebook in OUT, written by one process only (the CLI's main process).

Assignments are recorded from the trusted *release* notebooks (built from ``solutions/``,
see ``grader.judging.trusted``) with nbgrader's own ``SaveCells``
(so the database never holds hidden test sources), and each graded notebook with nbgrader's
``SaveAutoGrades``, which keeps any manual score an instructor already gave in formgrader.
``OUT/nbgrader/nbgrader_config.py`` points formgrader at this course folder and database,
and ``OUT/nbgrader/source/`` holds the release each notebook was graded against:
``make formgrader OUT=...`` opens it (``grader.commands.formgrader``).
"""

import hashlib
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import nbformat
import nbgrader
from nbgrader.api import Gradebook
from nbgrader.preprocessors import SaveAutoGrades, SaveCells

from grader import settings
from grader.configfile import config_file
from grader.errors import UserError
from grader.results import out as out_files
from grader.results.result import GRADED, Result

COURSE_ID = settings.course_id()

# nbgrader's own add_submission trips SQLAlchemy autoflush warnings; they are harmless.
warnings.filterwarnings("ignore", message=".*not in session.*")

# nbgrader runs the `alembic` command when it creates a gradebook: find it in our venv.
_BIN = os.path.dirname(sys.executable)
if _BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _BIN + os.pathsep + os.environ.get("PATH", "")


def db_url(out: Path) -> str:
    return f"sqlite:///{(out / 'gradebook.db').resolve()}"


def _resources(out: Path, assignment: str, student: str | None = None) -> dict[str, dict[str, str]]:
    info = {"assignment": assignment, "notebook": assignment, "db_url": db_url(out)}
    if student:
        info["student"] = student
    return {"nbgrader": info}


def write_config(out: Path) -> Path:
    """OUT/nbgrader with its nbgrader_config.py naming OUT where it is now (formgrader
    rewrites it, so a moved or copied OUT never writes to the original's gradebook)."""
    course = out / "nbgrader"
    course.mkdir(parents=True, exist_ok=True)
    root = str(course.resolve())
    course_directory = {"course_id": COURSE_ID, "root": root, "db_url": db_url(out)}
    (course / "nbgrader_config.py").write_text(
        config_file(
            "Written by `python -m grader autograde`: the graded class, for nbgrader.",
            {"CourseDirectory": course_directory},
        )
    )
    return course


def prepare(out: Path, releases: dict[str, str], cache: str | None = None) -> None:
    """Create the course folder, its config, and the assignments in the gradebook
    (``releases``: {assignment: its trusted release notebook as JSON}). A new gradebook is
    a copy of one made once per set of releases in ``cache`` (a folder), when given: making
    one costs seconds (nbgrader runs the ``alembic`` command, then records every cell)."""
    course = write_config(out)
    for assignment, text in releases.items():
        source = course / "source" / assignment / f"{assignment}.ipynb"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(text)  # what formgrader shows: the release, never the solution
    database = out / "gradebook.db"
    if cache is not None and not database.exists():
        shutil.copyfile(_template(Path(cache), releases), database)
    else:
        _record_assignments(out, releases)


def _record_assignments(out: Path, releases: dict[str, str]) -> None:
    """The assignments and their cells in ``out``'s gradebook, made if missing; an error
    line when it holds another version of one."""
    with Gradebook(db_url(out), COURSE_ID) as gb:
        for assignment in releases:
            gb.update_or_create_assignment(assignment)
    for assignment, text in releases.items():
        nb = nbformat.reads(text, as_version=4)
        try:
            SaveCells().preprocess(nb, _resources(out, assignment))
        except RuntimeError as err:
            raise UserError(
                f"{out / 'gradebook.db'} was made for another version of "
                f"{assignment} ({err}); grade into a new OUT folder"
            ) from None


def _template(cache: Path, releases: dict[str, str]) -> Path:
    """A gradebook holding exactly ``releases``, made once and kept in ``cache``."""
    h = hashlib.sha256(f"{nbgrader.__version__}:{COURSE_ID}".encode())
    for assignment, text in sorted(releases.items()):
        h.update(assignment.encode() + b"\0" + text.encode() + b"\0")
    path = cache / "gradebooks" / f"{h.hexdigest()[:20]}.db"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix="building-", dir=path.parent))
        try:
            _record_assignments(building, releases)
            os.replace(building / "gradebook.db", path)  # atomic: a parallel run keeps either
        finally:
            shutil.rmtree(building, ignore_errors=True)
    return path


def save(out: Path, result: Result) -> dict[str, float]:
    """Record one graded notebook; return {grade_id: manual score} for written answers."""
    student, assignment = result.student, result.notebook
    path = out_files.autograded_path(out, student, assignment)
    manual = {}
    with Gradebook(db_url(out), COURSE_ID) as gb:
        gb.update_or_create_student(student)
        gb.update_or_create_submission(assignment, student)
        if result.status == GRADED and path.is_file():
            nb = nbformat.read(path, as_version=4)
            SaveAutoGrades().preprocess(nb, _resources(out, assignment, student))
        else:  # not submitted or unreadable: zero every autograded cell
            for grade in gb.find_submission_notebook(assignment, assignment, student).grades:
                if grade.cell.cell_type == "code" and grade.manual_score is None:
                    grade.auto_score = 0.0
                    grade.needs_manual_grade = False
            gb.db.commit()
        for grade in gb.find_submission_notebook(assignment, assignment, student).grades:
            if grade.cell.cell_type == "markdown" and grade.manual_score is not None:
                manual[grade.name] = float(grade.manual_score)
    return manual
