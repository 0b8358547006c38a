"""The course's structure, read from the nbgrader source notebooks in `solutions/`.

An *assignment* is one numbered notebook (``solutions/NN_slug/NN_slug.ipynb``).
An *exercise* is one answer cell: its grade_id is the name of the function it
defines (or of the written question). Test cells belong to the answer cell
before them; their grade_ids start with ``test_<exercise>``.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

from attnlib.paths import FORMER_NAMES as FORMER_NAMES  # the graders' view of it
from attnlib.paths import REPO_ROOT as REPO_ROOT
from attnlib.paths import moved_to as moved_to

SOLUTIONS = REPO_ROOT / "solutions"
RELEASE = REPO_ROOT / "notebooks"
# Submissions under a notebook's former name (attnlib.paths.FORMER_NAMES, made from an
# older release) are graded as the notebook they are, with a note.


@dataclass
class Exercise:
    notebook: str  # assignment id, e.g. "01_soft_lookup"
    grade_id: str  # the answer cell's grade_id
    autograded: bool  # False for a written answer graded by hand
    max_points: float = 0.0
    test_ids: list[str] = field(default_factory=list)


def assignments() -> list[str]:
    """Assignment ids in course order."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if (p / f"{p.name}.ipynb").is_file())


def source_path(assignment: str) -> Path:
    return SOLUTIONS / assignment / f"{assignment}.ipynb"


def release_path(assignment: str) -> Path:
    return RELEASE / assignment / f"{assignment}.ipynb"


def nbgrader_meta(cell: NotebookNode) -> dict[str, Any]:
    """A notebook cell's nbgrader metadata ({} for a plain cell); nbgrader.utils reads its
    flags (is_solution, is_grade, is_locked), this and :func:`grade_id` the rest."""
    meta: dict[str, Any] = cell.metadata.get("nbgrader", {})
    return meta


def grade_id(cell: NotebookNode) -> str | None:
    gid: str | None = nbgrader_meta(cell).get("grade_id")
    return gid


def _points(cell: NotebookNode) -> float:
    return float(nbgrader_meta(cell).get("points", 0))


def exercises(assignment: str) -> list[Exercise]:
    """The exercises of one assignment, with their test cells and points."""
    from nbgrader.utils import is_grade, is_solution  # nbgrader's import takes seconds

    nb = nbformat.read(source_path(assignment), as_version=4)
    found: list[Exercise] = []
    for cell in nb.cells:
        gid = grade_id(cell) or ""
        if is_solution(cell) and not is_grade(cell):  # autograded answer
            found.append(Exercise(assignment, gid, autograded=True))
        elif is_solution(cell):  # written answer, graded by hand
            found.append(Exercise(assignment, gid, False, _points(cell)))
        elif is_grade(cell):  # autograded test cell
            if not found or not gid.startswith(f"test_{found[-1].grade_id}"):
                raise ValueError(
                    f"{assignment}: test cell {gid!r} must follow its answer cell and "
                    f"be named test_<exercise>... (previous answer: "
                    f"{found[-1].grade_id if found else None!r})"
                )
            found[-1].test_ids.append(gid)
            found[-1].max_points += _points(cell)
    return found
