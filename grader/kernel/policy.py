"""The audit hook: what notebook code may not do while it is graded, refused and reported.

``sys.addaudithook`` cannot be removed from Python, but code in the same process can still
reach its state, so this is a second line: it makes the common attempts fail *loudly* (each
refusal is streamed to the grader and listed in the instructor's report), while the OS
sandbox is what actually keeps the grading machine out of reach.

Sealed when imported (``grader.kernel.seal``): the roots, the lists of events and the state
below live where notebook code cannot change them through this module's attributes, and the
log goes to the stream that was connected when the hook was installed.

Refused: reading outside the notebook's view (``read`` roots), writing outside its scratch
folders (``write`` roots), starting processes, sending signals, changing limits, opening
sockets or databases, making links; and native code from notebook code: loading a library
or looking up a symbol with ctypes, reading raw memory through it, importing cffi. Libraries
(numpy, torch, ...) may still load their own native code, e.g. when a notebook imports torch.
Also refused from notebook code: running frames (``sys._getframe``, ``inspect.stack``, a
traceback's or generator's frame) and object finders (``gc.get_referrers``, ...), through
which an answer could reach the recorders' arguments and findings, and replacing the code or
defaults of a grader function.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from grader.kernel import channel, seal

if TYPE_CHECKING:
    from types import FrameType

    from _typeshed import ProfileFunction, StrOrBytesPath

_STREAM: channel.Channel | None = None  # the kernel's stream, taken when the hook is installed
_READ: tuple[str, ...] = ()
_WRITE: tuple[str, ...] = ()
_LIBRARIES: tuple[str, ...] = ()  # roots of installed, trusted code (checked, links unresolved)
_SEEN: set[str] = set()
_NOTE_QUIETLY = [False]  # True while the recorders themselves call sys.setprofile
_SET_PROFILE = sys.setprofile

BLOCKED = {
    "os.system",
    "subprocess.Popen",
    "os.posix_spawn",
    "os.exec",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "pty.spawn",
    "os.kill",
    "os.killpg",
    "signal.pthread_kill",
    "resource.setrlimit",
    "resource.prlimit",
    "sqlite3.connect",
    "sqlite3.connect/handle",
    "socket.connect",
    "socket.bind",
    "socket.sendto",
    "os.symlink",
    "os.link",
    "os.chown",
    "os.setxattr",
    "webbrowser.open",
    "urllib.Request",
    "ftplib.connect",
}
NOTED = {"sys.settrace", "sys.setprofile", "sys.addaudithook"}
# ctypes events that load or reach native code; refused when notebook code asks for them.
NATIVE = {
    "ctypes.dlopen",
    "ctypes.dlsym",
    "ctypes.dlsym/handle",
    "ctypes.cdata",
    "ctypes.cdata/buffer",
    "ctypes.string_at",
    "ctypes.wstring_at",
}
NATIVE_MODULES = {"cffi", "_cffi_backend"}
# What hands notebook code a running frame (and through ``f_back`` the recorders' own, with
# the arguments they will copy and the shortcuts they saw) or any object in memory: refused
# when notebook code asks. A library may still look at frames for itself (typing, logging,
# namedtuple), so one that hands its caller's frame on is a way round (best-effort).
OBJECT_FINDERS = {"sys._current_frames", "gc.get_referrers", "gc.get_referents", "gc.get_objects"}
FRAME_ATTRIBUTES = {"tb_frame", "gi_frame", "cr_frame", "ag_frame"}
INTROSPECTION = OBJECT_FINDERS | {"sys._getframe", "object.__getattr__", "object.__setattr__"}
# Library code that only hands its caller's frames on (inspect.currentframe, .stack): the
# code behind it is what asked. Not ``traceback``, which a notebook may use to print an error.
_FRAME_RELAYS = re.compile(r"(^<frozen |/inspect\.py$)")
_LOOKING = [False]  # True while this hook looks at frames itself (sys._getframe is audited)
PATH_WRITES = {
    "os.remove",
    "os.rmdir",
    "os.mkdir",
    "os.chmod",
    "os.utime",
    "os.truncate",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.copytree",
    "shutil.move",
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
# Code that only passes a request on: the notebook code behind it is what asked.
_RELAYS = re.compile(r"(^<frozen |/ctypes/|/numpy/ctypeslib|/cffi/)")


MAX_LOGS = 200  # log lines one kernel sends (the grader keeps as many): a loop cannot flood
_LOGGED = [0]


def log(kind: str, detail: str) -> None:
    if _LOGGED[0] < MAX_LOGS and _STREAM is not None:
        _LOGGED[0] += 1
        _STREAM.send({"k": "log", "kind": kind, "detail": detail[:300]})


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _deny(kind: str, detail: str) -> NoReturn:
    log(kind, detail)
    raise PermissionError(f"Not allowed while grading: {detail}")


def _own_proc(path: str) -> bool:
    """/proc/<this process>/...: a kernel may read what it is (limits, mounts, status)."""
    return path.startswith(f"/proc/{os.getpid()}/") or path == f"/proc/{os.getpid()}"


def _check_path(path: StrOrBytesPath | int | None, write: bool, event: str) -> None:
    if isinstance(path, int) or path is None:
        return
    try:
        name = os.fsdecode(path)
        if not write and _under(os.path.abspath(name), _LIBRARIES):
            return  # fast path for imports: no link can be planted there (os.symlink is blocked)
        real = os.path.realpath(name)
    except (TypeError, ValueError):
        return
    if write:
        if not _under(real, _WRITE) and real != "/dev/null":
            _deny("write-outside-sandbox", f"{event} {real}")
    elif not _under(real, _READ + _WRITE) and not _own_proc(real):
        _deny("read-secret", f"{event} {real}")


def from_notebook(relays: re.Pattern[str] = _RELAYS) -> bool:
    """True when the innermost code behind this event (relays skipped) is notebook code,
    not an installed library. Code in the same process can fake this (that is why the
    sandbox is the wall); it stops the plain attempts."""
    frame: FrameType | None
    _LOOKING[0] = True  # sys._getframe is itself an event
    try:
        frame = sys._getframe(2)
    finally:
        _LOOKING[0] = False
    while frame is not None:
        filename = frame.f_code.co_filename
        if not relays.search(filename):
            return not _under(os.path.abspath(filename), _LIBRARIES)
        frame = frame.f_back
    return False


def _introspection(event: str, args: tuple[Any, ...]) -> str | None:
    """What the event asks for when it hands out a running frame or any object in memory,
    or replaces a grader function's code or defaults; else None."""
    if event in OBJECT_FINDERS or event == "sys._getframe":
        return event
    if len(args) < 2 or not isinstance(args[1], str):
        return None
    if event == "object.__getattr__":
        return f"{type(args[0]).__name__}.{args[1]}" if args[1] in FRAME_ATTRIBUTES else None
    module = getattr(args[0], "__module__", None)  # a grader function's code or defaults
    return f"{args[1]} of {module}" if isinstance(module, str) and module[:7] == "grader." else None


def audit(event: str, args: tuple[Any, ...]) -> None:  # any event's arguments
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None))[:3]
        write = bool((flags or 0) & _WRITE_FLAGS) or any(c in str(mode or "") for c in "wax+")
        _check_path(path, write, "open")
    elif event in ("os.listdir", "os.scandir"):
        _check_path(args[0] if args and args[0] is not None else ".", False, event)
    elif event in PATH_WRITES:
        _check_path(args[0] if args else None, True, event)
    elif event == "os.rename":
        _check_path(args[0], True, event)
        _check_path(args[1], True, event)
    elif event in NATIVE and from_notebook():
        what = repr(args[-1] if event.startswith("ctypes.dl") and args else "")[:80]
        _deny("native-code", f"{event} {what} from notebook code")
    elif event == "import" and args and args[0] in NATIVE_MODULES and from_notebook():
        _deny("native-code", f"import {args[0]} from notebook code")
    elif (
        event in INTROSPECTION
        and not _LOOKING[0]
        and (asked := _introspection(event, args))
        and from_notebook(_FRAME_RELAYS)
    ):
        _deny("frames", f"{asked} from notebook code")
    elif event in BLOCKED:
        _deny("blocked", event)
    elif event in NOTED and event not in _SEEN and not _NOTE_QUIETLY[0]:
        _SEEN.add(event)
        log("noted", event)


def install(read: list[str], write: list[str], libraries: list[str]) -> None:
    """Start refusing (the hook stays for the life of the process)."""
    global _READ, _WRITE, _LIBRARIES, _STREAM
    _STREAM = sys.modules[channel.__name__].CHANNEL  # connected by now (a sealed copy is not)
    _READ = tuple(os.path.realpath(p) for p in read)
    _WRITE = tuple(os.path.realpath(p) for p in write)
    _LIBRARIES = tuple(os.path.abspath(p) for p in libraries)
    sys.addaudithook(audit)


def set_profile_quietly(profile: ProfileFunction | None) -> None:
    """``sys.setprofile(profile)`` for the recorders: not reported as the learner's."""
    _NOTE_QUIETLY[0] = True
    try:
        _SET_PROFILE(profile)
    finally:
        _NOTE_QUIETLY[0] = False


seal.seal(globals())
