"""The OS sandbox a student's kernel runs in: bubblewrap, an unprivileged uid, no network.

Each kernel start gets a fresh sandbox (``bwrap``) with its own PID, network, IPC, UTS and
cgroup namespaces and this view of the machine:

- read-only, each at the path it is used from: the Python installation and the venv, the
  helper package ``attnlib/``, the kernel-side grader modules (``grader/__init__.py``,
  ``grader/wire.py``, ``grader/kernel/``), ``data/``, ``/usr`` and the few ``/etc`` files
  the dynamic linker needs;
- writable: a private scratch folder (a size-limited tmpfs holding only the rebuilt notebook,
  the kernel's working directory and home), a private ``/tmp`` and ``/dev/shm`` (size-limited
  tmpfs) and, until the kernel has made its sockets, the folder of its IPC sockets (then
  sealed: :func:`seal`); ``/dev`` itself is read-only;
- nothing else: not ``solutions/``, ``grader/hidden/``, the gradebook, OUT, other students,
  the rest of the repository or of the home folder.

When the grader runs as root, the sandbox is built by a root ``bwrap`` and entered as a
dedicated uid (``sandbox_uid`` + the worker's slot; no account needed) through ``setpriv``
(no capabilities, no_new_privs), then an unprivileged ``bwrap`` gives the kernel its own user
namespace and forbids further ones. Otherwise one unprivileged ``bwrap`` does it all. Either
way the kernel has no capabilities and ``no_new_privs``, ``--die-with-parent`` and
``setpriv --pdeathsig`` make it die with its worker, and the PID namespace means killing it
kills everything the student started; when the grader is root, no process of the slot's uid
may survive a notebook (:func:`kill_leftovers`).

Where the host allows a cgroup (``grader.run.cgroups``), each notebook's sandboxes run in one of
their own (:func:`limit_group`), joined before the sandbox is built: memory (every process and
every tmpfs page together), CPU and processes are capped for the sandbox as a whole.
Elsewhere the kernel's rlimits stand in, per process. Each job's host folder is named after
its worker's pid, so the folders (and cgroups) of a worker that was killed are removed by the
next job on that machine (:func:`private_folder`).
"""

import fcntl
import itertools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from grader.course import REPO_ROOT
from grader.run import cgroups

INSTALL_HINT = (
    "bubblewrap (bwrap) is needed to grade in a sandbox: install it with "
    "`sudo apt-get install bubblewrap` (or `make sandbox`), or pass --no-sandbox to grade "
    "trusted submissions without it"
)
# What the dynamic linker, time zones and fontconfig (loaded by plotting) read from /etc.
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime", "/etc/fonts")
SLOT_LOCKS = Path("/run/attn-grader-slots")  # root only; not under TMPDIR, which runs change
LINKS = {"/lib": "usr/lib", "/lib64": "usr/lib64", "/bin": "usr/bin", "/sbin": "usr/sbin"}
JOB_PREFIX = "attn-job-"  # + the worker's pid: a job's host folder (grader.batch.job)
GROUP = "attn-grader"  # the sandboxes' cgroups: GROUP/w<worker pid>-<n>
_GROUPS = itertools.count()
SEAL = [sys.executable, "-m", "grader.run.remount"]  # + PID PATH, in a process of its own
HELPER_SECONDS = 30  # the bwrap probe and the seal helper take milliseconds: longer, a broken host
FILTER_FD = 9  # the system-call filter's descriptor, for bwrap --seccomp
LEFTOVER_WAIT_SECONDS = 3.0  # a killed sandbox's processes take a moment to go


class Unavailable(Exception):
    """The sandbox cannot run on this machine (the message says why and what to do)."""


def check() -> None:
    """Raise Unavailable unless bubblewrap is installed and can build a sandbox here."""
    if shutil.which("bwrap") is None:
        raise Unavailable(INSTALL_HINT)
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        raise Unavailable("setpriv (util-linux) is needed to drop to the sandbox's uid")
    probe = subprocess.run(
        ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--", "true"],
        capture_output=True,
        text=True,
        timeout=HELPER_SECONDS,
    )
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or ["unknown error"])[0]
        raise Unavailable(
            f"bubblewrap cannot create a sandbox here ({reason}); enable unprivileged user "
            "namespaces, or pass --no-sandbox to grade trusted submissions without it"
        )


class SealFailed(Exception):
    """The IPC folder could not be made read-only for the sandbox: no student code may run."""


def seal(folder: str, uid: int | None, pid: int) -> None:
    """After the kernel has made its sockets: it may no longer write in ``folder`` (the one
    host folder it can write to). Root mode: the folder goes back to root. Otherwise the
    sandbox runs as this user, so its bind of the folder is remounted read-only inside the
    sandbox (``pid`` is the sandbox's ``bwrap``), where this user owns the namespaces."""
    if uid is not None:
        os.chown(folder, 0, 0)
        os.chmod(folder, 0o755)
        return
    inside = _first_inside(pid)
    argv = [*SEAL, str(inside), folder]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=HELPER_SECONDS, cwd=REPO_ROOT
    )
    if done.returncode != 0:
        raise SealFailed(f"cannot seal the sandbox's IPC folder: {done.stderr.strip()[-300:]}")


def _first_inside(pid: int) -> int:
    """A process started by ``pid`` that is in another mount namespace (the sandbox's)."""
    mine, level = os.stat("/proc/self/ns/mnt").st_ino, [pid]
    while level:
        for child in level:
            if os.stat(f"/proc/{child}/ns/mnt").st_ino != mine:
                return child
        level = [c for p in level for c in _children(p)]
    raise SealFailed(f"no sandbox under process {pid}")


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(c) for c in fh.read().split()]
    except OSError:
        return []


# --------------------------------------------------------------------------- host leftovers


def private_folder(prefix: str = JOB_PREFIX) -> str:
    """A new private temporary folder named ``<prefix><this pid>-...``; first the folders of
    that prefix whose process is gone (a worker killed mid-notebook: a student's notebook, a
    kernel.json; a grading run killed outright) go."""
    base = tempfile.gettempdir()
    for entry in os.scandir(base):
        pid = _owner_pid(entry.name, prefix)
        if pid and not _alive(pid):
            shutil.rmtree(entry.path, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=base)


def limit_group(limits: cgroups.Limits) -> list[Path]:
    """A cgroup of its own for one notebook's sandboxes, under the grader's own; [] where
    the host allows none. First the cgroups of workers that are gone are emptied and go."""
    stale = [
        Path(entry.path)
        for parent in cgroups.folders(GROUP, nested=True)
        for entry in os.scandir(parent)
        if entry.is_dir() and (pid := _owner_pid(entry.name, "w")) and not _alive(pid)
    ]
    cgroups.end_processes(stale)
    cgroups.remove(stale)
    return cgroups.create(f"{GROUP}/w{os.getpid()}-{next(_GROUPS)}", limits, nested=True)


def _owner_pid(name: str, prefix: str) -> int:
    """The worker pid a leftover's name holds (``<prefix><pid>-...``), or 0."""
    pid = name[len(prefix) :].split("-")[0] if name.startswith(prefix) else ""
    return int(pid) if pid.isdigit() and "-" in name[len(prefix) :] else 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def read_roots() -> list[str]:
    """What a kernel may read: Python, the venv, the helper package, its grader modules, data.
    These are bound read-only into the sandbox and are also the audit hook's allow-list."""
    roots = {
        sys.base_prefix,
        sys.prefix,
        str(REPO_ROOT / "attnlib"),
        str(REPO_ROOT / "grader" / "__init__.py"),
        str(REPO_ROOT / "grader" / "wire.py"),
        str(REPO_ROOT / "grader" / "kernel"),
        str(REPO_ROOT / "data"),
        "/usr",
        *(p for p in ETC_FILES if os.path.exists(p)),
    }
    return sorted(roots)


def library_roots() -> list[str]:
    """Trusted code: native code these load is theirs, not the notebook's."""
    paths = sysconfig.get_paths()
    found = {paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"]}
    found |= {str(REPO_ROOT / "attnlib"), str(REPO_ROOT / "grader" / "kernel")}
    return sorted(found)


# --------------------------------------------------------------------------- worker slots


@dataclass
class Slot:
    index: int
    uid: int | None  # the sandbox's uid (None when the grader is not root)
    lock: TextIO | None = field(default=None, repr=False)  # the slot's lock file, held open


_SLOT: list[Slot] = []


def slot(first_uid: int, count: int) -> Slot:
    """This worker's slot, held (by a file lock) for the life of the process: its uid is
    used by no other worker on this machine, even of another grading run."""
    if _SLOT:
        return _SLOT[0]
    if os.geteuid() != 0:
        _SLOT.append(Slot(0, None))
        return _SLOT[0]
    folder = SLOT_LOCKS
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for index in range(count):
        handle = open(folder / f"uid-{first_uid + index}.lock", "w")  # noqa: SIM115 (held)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _SLOT.append(Slot(index, first_uid + index, handle))
        kill_leftovers(first_uid + index)
        return _SLOT[0]
    raise Unavailable(f"all {count} sandbox uids from {first_uid} are in use on this machine")


def processes_of(uid: int) -> list[int]:
    """Pids of the live (not zombie) processes whose real uid is ``uid``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:
            continue
        if fields.get("State", "").split()[:1] != ["Z"] and fields["Uid"].split()[0] == str(uid):
            found.append(int(entry.name))
    return found


def kill_leftovers(uid: int | None, wait: float = LEFTOVER_WAIT_SECONDS) -> int:
    """Wait up to ``wait`` s for every process of the sandbox uid to be gone (a killed
    sandbox takes a moment to empty); SIGKILL what is left and return how many that was."""
    if uid is None:
        return 0
    deadline = time.monotonic() + wait
    while processes_of(uid) and time.monotonic() < deadline:
        time.sleep(0.02)
    killed = 0
    for _ in range(50):
        pids = processes_of(uid)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, 9)
                killed += 1
            except ProcessLookupError:
                pass
        time.sleep(0.02)
    return killed


# --------------------------------------------------------------------------- the command


class _View:
    """bwrap arguments that build a file system view, creating parent folders 0755."""

    def __init__(self) -> None:
        self.args: list[str] = []
        self.made: set[str] = {"/"}

    def parents(self, path: str) -> None:
        missing = []
        parent = os.path.dirname(path)
        while parent not in self.made:
            missing.append(parent)
            parent = os.path.dirname(parent)
        for folder in reversed(missing):
            self.args += ["--perms", "0755", "--dir", folder]
            self.made.add(folder)

    def add(self, option: str, src: str, dest: str | None = None) -> None:
        dest = dest or src
        self.parents(dest)
        self.args += [option, src, dest]
        self.made.add(dest)

    def tmpfs(self, path: str, size_mb: int, perms: str) -> None:
        self.parents(path)
        self.args += ["--perms", perms, "--size", str(size_mb * 2**20), "--tmpfs", path]
        self.made.add(path)

    def folder(self, path: str, perms: str) -> None:
        self.parents(path)
        self.args += ["--perms", perms, "--dir", path]
        self.made.add(path)


def command(
    kernel_argv: list[str],
    *,
    scratch: str,
    ipc: str,
    files: dict[str, str],
    folders: list[str],
    uid: int | None,
    scratch_mb: int,
    shm_mb: int = 64,
    seccomp: str | None = None,
) -> list[str]:
    """The full command that runs ``kernel_argv`` in a sandbox. ``files``: {path inside
    scratch: host file} bound read-only; ``folders``: writable folders made inside scratch;
    ``seccomp``: a system-call filter's file (``grader.run.seccomp``), opened on the host as
    file descriptor 9 and loaded by the last ``bwrap``, right before the kernel starts."""
    view = _View()
    # The private /tmp first: a checkout or venv that lives under /tmp is bound on top of it.
    view.tmpfs("/tmp", scratch_mb, "1777")
    for root in read_roots():
        view.add("--ro-bind", root)
    for link, target in LINKS.items():
        if os.path.islink(link):
            view.args += ["--symlink", target, link]
            view.made.add(link)
    view.args += ["--proc", "/proc", "--dev", "/dev"]
    view.made |= {"/proc", "/dev"}
    view.tmpfs("/dev/shm", shm_mb, "1777")
    view.args += ["--remount-ro", "/dev"]  # its device nodes still work; no files there
    view.tmpfs(scratch, scratch_mb, "0777")
    for path in folders:
        view.folder(path, "0777")
    for dest, src in files.items():
        view.add("--ro-bind", src, dest)
    view.add("--bind", ipc)
    pdeathsig = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []
    # sh opens the filter and execs: the file descriptor crosses setpriv and the first bwrap.
    opened = ["sh", "-c", f'exec "$@" {FILTER_FD}<"$0"', seccomp] if seccomp else []
    filtered = ["--seccomp", str(FILTER_FD)] if seccomp else []
    if uid is None:
        return [
            *opened, *pdeathsig, "bwrap", "--unshare-all", "--unshare-user", "--disable-userns",
            "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--hostname", "sandbox",
            # The folders bwrap made are the user's own here: the root holding them read-only.
            *view.args, "--remount-ro", "/", *filtered, "--chdir", scratch, "--", *kernel_argv,
        ]  # fmt: skip
    return [
        *opened, *pdeathsig, "bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc",
        "--unshare-uts", "--unshare-cgroup", "--die-with-parent", "--new-session",
        "--hostname", "sandbox", *view.args, "--chdir", scratch, "--",
        "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
        "--inh-caps=-all", "--bounding-set=-all", "--",
        "bwrap", "--unshare-user", "--disable-userns", "--die-with-parent", "--cap-drop", "ALL",
        # --dev-bind: the outer sandbox's device nodes (its read-only /dev) keep working.
        "--dev-bind", "/", "/", "--proc", "/proc", *filtered, "--chdir", scratch, "--",
        *kernel_argv,
    ]  # fmt: skip
