"""The answers attendees must never read, outside the instructors' folder.

The instructors' copy of the course (``ROOT/instructor/course``) is their group's alone
(``hub.instructor``). The checkout the hub starts from holds the answers too: ``solutions/``,
``grader/hidden/`` and its git history (``.git`` has every version of both), and whatever
the host's commands wrote in it: a grading run's OUT (other students' answered notebooks,
the seed of their hidden inputs), ``submitted/`` and the LMS's roster and download (every
student's work, their names and ids), ``handouts/`` (the executed solutions), the bundle, the
host's own Lab copy and its backups (``work/``). An attendee is "other" to all of them (the
hub's groups are its own), so ``start`` takes every access away from others (``chmod
o-rwx``; the owner and the group keep theirs), refuses to start while one stays readable,
and keeps it so after the day: a checkout others can read is a leak on any shared machine.
"""

import os
from pathlib import Path

from grader.course import REPO_ROOT
from hub.environment import SetupError

ANSWERS = ("solutions", "grader/hidden", ".git")
# What the Makefile's commands write in the checkout (.gitignore lists them): `make grade`'s
# default OUT, `make collect`'s default SUBMISSIONS (every student's work), `make handouts`,
# `make bundle`, `make lab`'s copy with its backups, builds; and the class's files the README
# keeps there: the LMS's roster (names, SIS ids, e-mails), its bulk download, collect's report.
OUTPUTS = ("out", "submitted", "artifacts", "handouts", "dist", "work", "build", "roster.csv",
           "download.zip", "collect_report.csv")  # fmt: skip
# A grading run's OUT under any other name (`make grade OUT=...`), in the checkout's top level.
OUT_MARKS = ("gradebook.db", "work/seed.json", "nbgrader")
OTHERS = 0o007


def private_paths(repo: Path = REPO_ROOT) -> list[Path]:
    """The checkout's answers and outputs that exist."""
    named = [repo / name for name in (*ANSWERS, *OUTPUTS)]
    outs = [p for p in repo.iterdir() if any((p / mark).exists() for mark in OUT_MARKS)]
    return sorted({p for p in [*named, *outs, repo / "gradebook.db"] if p.exists()})


def close_to_others(repo: Path = REPO_ROOT) -> list[Path]:
    """Make the checkout's answers and outputs unreadable to others; return the paths
    changed. One that stays readable (chmod refused or ignored) stops the start."""
    changed = []
    for path in private_paths(repo):  # a link is followed: its target is the copy
        mode = os.stat(path).st_mode
        if not mode & OTHERS:
            continue
        try:
            os.chmod(path, mode & ~OTHERS & 0o7777)
        except OSError:
            pass  # said below, with what to do
        if os.stat(path).st_mode & OTHERS:
            raise SetupError(
                f"attendees could read {path} and it cannot be made private: run "
                f"`chmod o-rwx {path}` (or move it out of the checkout), then start again"
            )
        changed.append(path)
    return changed
