"""Where the course's files are, wherever a notebook runs from.

Notebooks run from ``notebooks/``, ``solutions/`` and nbgrader's ``autograded/``
folders alike, so they never use relative paths: they ask this module.
"""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# Notebooks the course renamed: {old name: current name}. A learner's copy and a submission
# under the old name are carried over to (graded as) the current one.
FORMER_NAMES = {"07_attention_maps": "08_attention_maps", "07_heads_and_positions": "07_heads"}
# Exercises the course moved to another notebook: {grade_id: (old notebook, current one)}.
# `make update` carries a learner's answer over; an old copy handed in is graded without them,
# with a note saying where they are now graded.
MOVED_EXERCISES = {
    "design_keys_values": ("01_soft_lookup", "02_projections"),
    "keys_vs_values": ("01_soft_lookup", "02_projections"),
}


def moved_to(notebook: str, grade_id: str) -> str | None:
    """The notebook an exercise of an older ``notebook`` moved to, for the grade_id of its
    answer cell or of one of its test cells (``test_<exercise>...``); None if it did not."""
    for exercise, (old, new) in MOVED_EXERCISES.items():
        if old == notebook and (grade_id == exercise or grade_id.startswith(f"test_{exercise}")):
            return new
    return None


def data_dir() -> Path:
    """The course's ``data/`` folder (override with ``ATTN_DATA_DIR``)."""
    found = Path(os.environ.get("ATTN_DATA_DIR", REPO_ROOT / "data"))
    if not found.is_dir():
        raise FileNotFoundError(
            f"The course data folder is missing: {found}. "
            "Run `make data` from the course folder, or set ATTN_DATA_DIR."
        )
    return found


def data_file(name: str) -> Path:
    """A file in ``data/``, with a clear error if it is not there."""
    path = data_dir() / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing. Run `make data` from the course folder.")
    return path
