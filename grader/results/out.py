"""OUT, a grading run's output folder: where its working records lie, and the one way they
are written (:func:`replaced`: at once, so an interrupted run leaves the old file or the new,
never half of one; every instructor command is safe to interrupt and rerun).

The seed of a run's hidden inputs is recorded here too: fresh for every new OUT, kept by OUT
after. A learner's function sees its hidden inputs, and could print them in a resubmission; a
seed that differs per class (per OUT) makes what one round showed useless in the next. The rule:

- ``--seed`` (or ``c.GraderSettings.seed``, or ``ATTN_GRADER_SEED``) chosen: that seed, and
  OUT records it;
- none chosen: the seed OUT recorded, so a resumed run, ``--students``, ``--notebooks`` and
  ``make totals`` keep the finished results valid; a new OUT draws a random one.

OUT records it before any notebook is graded (``OUT/work/seed.json``).
"""

import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from grader.errors import UserError


@dataclass(frozen=True)
class OutFile:
    """One of OUT's files or folders: where it lies, who writes it, who links to or reads it
    (modules, as dotted names; tests/results/test_out.py checks they exist)."""

    path: Path  # relative to OUT
    what: str
    writer: str
    readers: tuple[str, ...] = ()


GRADES = OutFile(
    Path("grades.csv"),
    "one row per student, notebook and exercise (the CSV contract)",
    "grader.results.report",
    ("grader.commands.totals", "grader.commands.export", "hub.instructor"),
)
TOTALS = OutFile(
    Path("totals.csv"),
    "one row per student: points per notebook, lateness, the total",
    "grader.results.report",
    ("grader.commands.totals", "grader.commands.autograde", "hub.instructor"),
)
FEEDBACK = OutFile(
    Path("feedback"),
    "each student's feedback pages",
    "grader.results.report",
    ("grader.results.annotated", "hub.instructor"),
)
REPORT = OutFile(
    Path("report"),
    "the instructor's class report: index.html, exercises.csv, flags.csv",
    "grader.results.report",
    ("grader.commands.autograde", "grader.commands.totals"),
)
AUTOGRADED = OutFile(
    Path("nbgrader") / "autograded",
    "the autograded notebooks, by student and notebook, for formgrader",
    "grader.commands.autograde",
    ("grader.results.gradebook", "grader.results.annotated", "grader.commands.formgrader"),
)
WORK = Path("work")  # OUT's working records (the CSVs, feedback and report sit beside it)
RESULTS = WORK / "results"  # one JSON result per student and notebook
RUN = WORK / "run.json"  # what the last grading run saw of SUBMISSIONS
SEED = WORK / "seed.json"
FILES = (GRADES, TOTALS, FEEDBACK, REPORT, AUTOGRADED)  # what OUT shows its readers
SECRET_BITS = 256  # a new OUT's secret: kernels see only keyed hashes of it (grader.seeds)


def result_path(out: Path, student: str, notebook: str) -> Path:
    return out / RESULTS / student / f"{notebook}.json"


def autograded_path(out: Path, student: str, notebook: str) -> Path:
    """A student's autograded notebook, where formgrader reads it."""
    return out / AUTOGRADED.path / student / notebook / f"{notebook}.ipynb"


@contextmanager
def replaced(path: Path) -> Iterator[Path]:
    """A temporary file beside ``path`` to write; it replaces ``path`` at once when the block
    ends without an error, and is removed otherwise."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` at once (see :func:`replaced`)."""
    with replaced(path) as tmp:
        tmp.write_text(text)


def recorded_seed(out: Path) -> int | None:
    """The seed OUT recorded, or None (a new OUT); a damaged record is one error line."""
    path = out / SEED
    if not path.is_file():
        return None
    try:
        seed = json.loads(path.read_text())["seed"]
    except (OSError, ValueError, KeyError, TypeError):
        seed = None
    if type(seed) is not int:
        raise UserError(f"{path} is damaged: give --seed, or grade into a new --out")
    return seed


def settle_seed(out: Path, chosen: int | None) -> int:
    """The seed of this run into ``out`` (see the module's rule), recorded there."""
    seed = chosen if chosen is not None else recorded_seed(out)
    if seed is None:
        seed = secrets.randbits(SECRET_BITS)
    write_text(out / SEED, json.dumps({"seed": seed}) + "\n")
    return seed
