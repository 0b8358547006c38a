"""Copy a folder an attendee owns without ever following a link in it.

The attendee can change their folder while the instructor copies it: a file checked as a
plain file a moment ago can be a link to the solutions by the time it is opened. So every
folder and file is opened relative to its already-open parent with ``O_NOFOLLOW``, and each
opened file is checked to be a plain file (``O_NONBLOCK``: a FIFO swapped in cannot hang the
copy); anything else stops the copy with ``NotAPlainFile``.
"""

import os
import shutil
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

Ignore = Callable[[str, list[str]], Iterable[str]]  # as shutil.copytree's ignore

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK


class NotAPlainFile(OSError):
    """Something in the folder is a link or neither a folder nor a plain file."""


def copy_tree(src: str, dest: str, ignore: Ignore) -> None:
    """``shutil.copytree(src, dest, ignore=ignore)`` that fails on any link, wherever it is."""
    try:
        fd = os.open(src, DIR_FLAGS)
    except OSError as err:
        raise NotAPlainFile(f"the submission is not a plain folder ({err.strerror})") from None
    try:
        _copy_folder(fd, src, "", Path(dest), ignore)
    finally:
        os.close(fd)


def _copy_folder(fd: int, real: str, shown: str, dest: Path, ignore: Ignore) -> None:
    """Copy the open folder ``fd`` (at ``real``; ``shown`` in messages) into ``dest``."""
    dest.mkdir(parents=True)
    names = os.listdir(fd)
    for name in sorted(set(names) - set(ignore(real, names))):
        where = os.path.join(shown, name)
        try:
            child = os.open(name, DIR_FLAGS, dir_fd=fd)
        except NotADirectoryError:
            _copy_file(fd, name, where, dest / name)
            continue
        except OSError as err:
            raise NotAPlainFile(f"{where} is a link ({err.strerror})") from None
        try:
            _copy_folder(child, os.path.join(real, name), where, dest / name, ignore)
        finally:
            os.close(child)


def _copy_file(parent: int, name: str, where: str, target: Path) -> None:
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=parent)
    except OSError as err:
        raise NotAPlainFile(f"{where} is a link ({err.strerror})") from None
    with os.fdopen(fd, "rb") as source:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotAPlainFile(f"{where} is not a plain file")
        os.set_blocking(fd, True)
        with open(target, "xb") as copy:
            shutil.copyfileobj(source, copy)
