"""The course's structure, read from the nbgrader source notebooks in `solutions/`.

An *assignment* is one numbered notebook (``solutions/NN_slug/NN_slug.ipynb``).
An *exercise* is one answer cell: its grade_id is the name of the function it
defines (or of the written question). Test cells belong to the answer cell
before them; their grade_ids start with ``test_<exercise>``.
"""

from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from attnlib.paths import FORMER_NAMES  # noqa: F401 (the graders' view of it)

REPO_ROOT = Path(__file__).resolve().parent.parent
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
    test_ids: list = field(default_factory=list)


def assignments() -> list[str]:
    """Assignment ids in course order."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if (p / f"{p.name}.ipynb").is_file())


def source_path(assignment: str) -> Path:
    return SOLUTIONS / assignment / f"{assignment}.ipynb"


def release_path(assignment: str) -> Path:
    return RELEASE / assignment / f"{assignment}.ipynb"


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def exercises(assignment: str) -> list[Exercise]:
    """The exercises of one assignment, with their test cells and points."""
    nb = nbformat.read(source_path(assignment), as_version=4)
    found: list[Exercise] = []
    for cell in nb.cells:
        meta = _nbgrader(cell)
        if meta.get("solution") and not meta.get("grade"):  # autograded answer
            found.append(Exercise(assignment, meta["grade_id"], autograded=True))
        elif meta.get("solution") and meta.get("grade"):  # written answer, graded by hand
            points = float(meta.get("points", 0))
            found.append(Exercise(assignment, meta["grade_id"], False, points))
        elif meta.get("grade") and not meta.get("solution"):  # autograded test cell
            if not found or not meta["grade_id"].startswith(f"test_{found[-1].grade_id}"):
                raise ValueError(
                    f"{assignment}: test cell {meta['grade_id']!r} must follow its answer cell and "
                    f"be named test_<exercise>... (previous answer: "
                    f"{found[-1].grade_id if found else None!r})"
                )
            found[-1].test_ids.append(meta["grade_id"])
            found[-1].max_points += float(meta.get("points", 0))
    return found
