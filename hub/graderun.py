"""``python -m hub grade`` is safe to interrupt and rerun: one run at a time, and each run's
gradebook changes all or nothing.

The course grader writes the gradebook notebook by notebook and nbgrader commits cell by
cell, so a run killed halfway (a closed terminal's SIGHUP, SIGKILL) leaves a gradebook no
later run can trust. So a run first copies the gradebook aside (SQLite's online backup:
consistent even while formgrader has it open) and drops the copy only once it finished. A
run that finds the copy puts it back first, undoing the interrupted run's changes as one
(formgrader's hand-given points of that time too), then makes them again: the grader reuses
the notebooks that run graded, so the grades are the same. The grader and nbgrader end with
the command (a parent-death signal), so nothing of an interrupted run writes on.
"""

import fcntl
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from grader.lifeline import die_with_parent
from hub.environment import SetupError

BEFORE = "gradebook.before-grade.db"  # the gradebook as it was before an unfinished run
LOCK = ".grade.lock"


dies_with_parent = die_with_parent  # ``preexec_fn`` of the command's subprocesses


@contextmanager
def one_at_a_time(grading: Path) -> Iterator[None]:
    """Hold the grading folder's lock (the kernel drops it when its holder dies)."""
    if not grading.is_dir():
        raise SetupError(f"no grading folder {grading}: start the hub (`make hub`) to make it")
    with open(grading / LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SetupError(
                "another `python -m hub grade` is running on this hub: let it finish, or stop "
                "it, then run this again"
            ) from None
        yield


def _copy(source: Path, target: Path) -> None:
    """``source``'s database into ``target``, in one transaction on ``target``."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def begin(grading: Path) -> bool:
    """Undo an unfinished run's gradebook changes, or keep the gradebook aside for this run;
    True if a run was undone."""
    database, before = grading / "gradebook.db", grading / BEFORE
    if before.is_file():
        _copy(before, database)
        return True
    if not database.is_file():
        raise SetupError(f"no gradebook in {grading}: start the hub (`make hub`) to make it")
    partial = before.with_name(BEFORE + ".partial")
    partial.unlink(missing_ok=True)
    _copy(database, partial)
    os.replace(partial, before)  # atomic: a run killed before this has changed nothing yet
    return False


def finish(grading: Path) -> None:
    """The run finished: its changes stay."""
    (grading / BEFORE).unlink()
