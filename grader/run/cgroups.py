"""Limits for a group of processes as a whole (memory, CPU, processes), through a cgroup.

One module for the hub (a cgroup per attendee's server) and the grader (one per sandbox).
Memory counts every page the group's processes charge: their own, and what they write into
a tmpfs (``/tmp``, scratch, ``/dev/shm``), which is charged to the writer's cgroup. Works with
cgroup v2, or v1's memory, cpu and pids hierarchies; where root may make none (a container
without cgroup rights, a non-root user), :func:`create` returns [] and callers fall back to
rlimits.
"""

import errno
import logging
import os
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")
log = logging.getLogger(__name__)
CPU_PERIOD_US = 100_000
V1 = ("memory", "cpu", "pids")  # the cgroup v1 hierarchies used
MEMSW = "memory.memsw.limit_in_bytes"  # v1: memory + swap


@dataclass
class Limits:
    memory_mb: int
    cpus: float
    processes: int

    def cgroup_files(self, version: int) -> dict[str, dict[str, str]]:
        """{controller: {file: value}}, in writing order; v2 has one folder for all."""
        memory, quota = str(self.memory_mb * 2**20), str(int(self.cpus * CPU_PERIOD_US))
        if version == 2:
            cpu, pids = f"{quota} {CPU_PERIOD_US}", str(self.processes)
            return {
                "": {"memory.max": memory, "memory.swap.max": "0", "cpu.max": cpu, "pids.max": pids}
            }
        return {  # memsw after memory: it may not be set below the memory limit
            "memory": {"memory.limit_in_bytes": memory, MEMSW: memory},
            "cpu": {"cpu.cfs_period_us": str(CPU_PERIOD_US), "cpu.cfs_quota_us": quota},
            "pids": {"pids.max": str(self.processes)},
        }


def cgroup_version(fs: Path = CGROUP_FS) -> int | None:
    if (fs / "cgroup.controllers").is_file():
        return 2
    if all((fs / c / "cgroup.procs").is_file() for c in V1):
        return 1
    return None


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def own(controller: str) -> str:
    """This process's cgroup in ``controller``'s v1 hierarchy ("" for v2's), e.g. "/a/b"."""
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            _, names, path = line.rstrip("\n").split(":", 2)
            if controller in names.split(",") or (not controller and not names):
                return path.rstrip("/")
    return ""


def places(path: str, fs: Path = CGROUP_FS, nested: bool = False) -> list[Path]:
    """Where the cgroup ``path`` lives: one folder (v2) or one per v1 controller; under
    this process's own cgroups when ``nested`` (v1), so limits set above still apply."""
    version = cgroup_version(fs)
    if version == 2:
        return [fs / path]
    if version == 1:
        return [fs / c / (own(c).lstrip("/") if nested else "") / path for c in V1]
    return []


def folders(path: str, fs: Path = CGROUP_FS, nested: bool = False) -> list[Path]:
    """The cgroup's folders that exist."""
    return [p for p in places(path, fs, nested) if p.is_dir()]


def create(path: str, limits: Limits, fs: Path = CGROUP_FS, nested: bool = False) -> list[Path]:
    """The cgroup ``path`` ("group/member"), made with the limits written; [] if the host
    allows none (then only rlimits apply)."""
    version = cgroup_version(fs)
    made: list[Path] = []
    try:
        if version == 2:  # a child cgroup gets a controller only if its parents delegate it
            parent = fs
            for part in Path(path).parts[:-1]:
                _write(parent / "cgroup.subtree_control", "+memory +cpu +pids")
                parent /= part
                parent.mkdir(exist_ok=True)
            _write(parent / "cgroup.subtree_control", "+memory +cpu +pids")
        files = limits.cgroup_files(version) if version else {}
        for folder, values in zip(places(path, fs, nested), files.values(), strict=True):
            folder.mkdir(parents=True, exist_ok=True)
            made.append(folder)
            if (folder / MEMSW).exists():  # never below memory: unset while memory changes
                _write(folder / MEMSW, "-1")
            for file, value in values.items():
                if (folder / file).exists():
                    _write(folder / file, value)
    except OSError as err:
        log.debug("no cgroup %s (%s): rlimits only", path, err)
        remove(made)
        return []
    return made


def join(folders: list[Path]) -> None:
    """Move the calling process into the folders (between fork and exec, as root)."""
    for folder in folders:
        _write(folder / "cgroup.procs", str(os.getpid()))


def join_command(folders: list[Path], argv: list[str]) -> list[str]:
    """``argv``, run by a shell that first moves itself into the folders: every process
    it starts is in the cgroup from its first instruction (it fails if it cannot join)."""
    script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
    return ["sh", "-c", script, "join", *(str(f / "cgroup.procs") for f in folders), "--", *argv]


def exceeded(folders: list[Path]) -> list[str]:
    """Which limits the cgroup hit: "memory" (a process was killed for it), "processes"
    (a fork or thread was refused)."""
    counters = {
        "memory": ("memory.events", "memory.oom_control", "oom_kill"),
        "processes": ("pids.events", "pids.events", "max"),
    }
    hit = []
    for limit, (v2_file, v1_file, key) in counters.items():
        for folder in folders:
            for name in (v2_file, v1_file):
                if _counter(folder / name, key) > 0 and limit not in hit:
                    hit.append(limit)
    return hit


def _counter(path: Path, key: str) -> int:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return 0
    return sum(int(line.split()[1]) for line in lines if line.split()[:1] == [key])


def pids(folders: list[Path]) -> set[int]:
    found = set()
    for folder in folders:
        try:
            found |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
        except OSError:
            pass
    return found


KILL_SECONDS = 10  # killing a process that forks as it dies ends within this, else give up
REMOVE_SECONDS = 2  # a cgroup stays busy a moment after its last process was killed


def kill_until_gone(find: Callable[[], Iterable[int]], wait: float = KILL_SECONDS) -> None:
    """SIGKILL the processes ``find()`` lists until it lists none, for ``wait`` seconds at
    most (a process may fork while it is being killed)."""
    deadline = time.monotonic() + wait
    while (found := find()) and time.monotonic() < deadline:
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def end_processes(folders: list[Path], wait: float = KILL_SECONDS) -> None:
    """Kill every process still in the folders, and wait until they are gone (a cgroup is
    removable only then)."""
    kill_until_gone(lambda: pids(folders), wait)


def remove(folders: list[Path], wait: float = REMOVE_SECONDS) -> None:
    """Remove the folders (a cgroup stays busy a moment after its last process was killed)."""
    deadline = time.monotonic() + wait
    for folder in folders:
        while True:
            try:
                folder.rmdir()
            except OSError as err:
                if err.errno == errno.EBUSY and time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
            break
