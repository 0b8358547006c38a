"""The answers attendees must never read, outside the instructors' folder.

The instructors' copy of the course (``ROOT/instructor/course``) is their group's alone
(``hub.instructor``). The checkout the hub starts from holds the answers too: ``solutions/``,
``grader/hidden/`` and its git history (``.git`` has every version of both). An attendee is
"other" to all three (the hub's groups are its own), so ``start`` takes every access away
from others (``chmod o-rwx``; the owner and the group keep theirs) and keeps it so after
the day: a checkout others can read is a leak on any shared machine.
"""

import os
from pathlib import Path

from hub.environment import SetupError
from hub.settings import REPO_ROOT

ANSWERS = ("solutions", "grader/hidden", ".git")
OTHERS = 0o007


def close_to_others(repo: Path = REPO_ROOT) -> list[Path]:
    """Make the checkout's answers unreadable to others; return the paths changed."""
    changed = []
    for path in (repo / name for name in ANSWERS):
        if not path.exists():  # a link is followed: its target is the copy
            continue
        mode = os.stat(path).st_mode
        if mode & OTHERS:
            try:
                os.chmod(path, mode & ~OTHERS & 0o7777)
            except OSError as err:
                raise SetupError(
                    f"attendees could read {path} and it cannot be made private ({err.strerror}):"
                    f" run `chmod o-rwx {path}`, then start again"
                ) from None
            changed.append(path)
    return changed
