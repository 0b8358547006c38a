"""nbgrader's exchange, laid out by ``python -m hub start`` (as root) before anyone signs in.

Left to nbgrader, the exchange is writable by everyone and the course's folders are made
by the first ``release_assignment``: an attendee who made ``<course_id>`` (or ``inbound``,
``outbound``) first would own it, and could block every release or read and remove the
others' submissions. Here root owns every folder, with the instructors' group:

- the exchange root, 0755: attendees reach the course folder, and create nothing;
- ``<course_id>/``, 2775, and ``outbound/``, 2775: the instructors release, attendees read;
- ``inbound/``, 3773: attendees drop a submission but cannot list, read, rename or remove
  another's (sticky); the instructors' group lists and reads it to collect;
- ``feedback/``, 2771: attendees open their own feedback by its secret name only.

nbgrader copes with folders it did not make when ``CourseDirectory.groupshared`` is on (both
profiles, ``hub.instructor``): it then neither demands a writable exchange root nor that the
releasing instructor own the course folder.

A rerun restores modes and owners. A folder there made by anyone else than root or an
instructor (an attendee, on an exchange laid out by an earlier version) is refused, not
fixed: its maker may have put anything in it (a fake release in ``outbound``), so the host
looks at it and removes it.
"""

import grp
import os
import pwd
import stat
from pathlib import Path

from hub.environment import SetupError
from hub.settings import Settings

ROOT_MODE = 0o755
COURSE_MODE = 0o2775
COURSE_FOLDERS = {  # under <course_id>/, as nbgrader's groupshared release would make them
    "outbound": 0o2775,
    "inbound": 0o3773,
    "feedback": 0o2771,
}


def lay_out(s: Settings, gid: int) -> None:
    """Make or restore the exchange for the instructors' group ``gid`` (as root)."""
    s.exchange.mkdir(mode=ROOT_MODE, exist_ok=True)
    _restore(s.exchange, 0, ROOT_MODE)  # first: nobody else adds an entry while we look
    _refuse_foreign_entries(s.exchange, gid)
    course = s.exchange / s.course_id
    course.mkdir(mode=0o700, exist_ok=True)
    _restore(course, gid, COURSE_MODE)
    _refuse_foreign_entries(course, gid)
    for name, mode in COURSE_FOLDERS.items():
        (course / name).mkdir(mode=0o700, exist_ok=True)
        _restore(course / name, gid, mode)


def _restore(folder: Path, gid: int, mode: int) -> None:
    """Owned by root and ``gid``, with ``mode``. Only root (and, in the course folder, the
    instructors) can write its parent by now, so no attendee swaps a link in after the check."""
    if not stat.S_ISDIR(os.lstat(folder).st_mode):
        raise SetupError(f"{folder} is a link or a file, not a folder: remove it and start again")
    os.chown(folder, 0, gid)
    os.chmod(folder, mode)


def _refuse_foreign_entries(folder: Path, gid: int) -> None:
    """Every entry of ``folder`` must be made by root or an instructor."""
    for entry in os.scandir(folder):
        uid = entry.stat(follow_symlinks=False).st_uid
        if not _trusted(uid, gid):
            raise SetupError(
                f"{entry.path} was made by {_name(uid)}, not by the hub: an attendee took it "
                "before the hub laid out the exchange; look at it, remove it and start again"
            )


def _trusted(uid: int, gid: int) -> bool:
    """Root, or a member of the instructors' group."""
    if uid == 0:
        return True
    try:
        account = pwd.getpwuid(uid)
        members = grp.getgrgid(gid).gr_mem
    except KeyError:
        return False
    return account.pw_gid == gid or account.pw_name in members


def _name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"
