"""Per-attendee limits for JupyterHub's local spawner: memory, CPU and processes.

Where root may make cgroups (cgroup v2, or v1's memory/cpu/pids hierarchies), each attendee's
server goes into ``<cgroup fs>/<name>/<user>``, which caps what all their processes together
use (memory, CPU time as a share of cores, processes), and stopping the server ends every
process left in it. Elsewhere (a container without cgroup rights) rlimits stand in: memory per
process (``RLIMIT_AS``) and processes per user (``RLIMIT_NPROC``, always set), and no CPU cap;
the hub's log says which applies.
"""

import os
import resource
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")
CPU_PERIOD_US = 100_000
V1 = ("memory", "cpu", "pids")  # the cgroup v1 hierarchies used


@dataclass
class Limits:
    memory_mb: int
    cpus: float
    processes: int

    def cgroup_files(self, version: int) -> dict[str, dict[str, str]]:
        """{controller: {file: value}}; v2 has one folder for every controller."""
        memory, quota = str(self.memory_mb * 2**20), str(int(self.cpus * CPU_PERIOD_US))
        if version == 2:
            cpu, pids = f"{quota} {CPU_PERIOD_US}", str(self.processes)
            return {
                "": {"memory.max": memory, "memory.swap.max": "0", "cpu.max": cpu, "pids.max": pids}
            }
        return {
            "memory": {"memory.limit_in_bytes": memory},
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


def folders(user: str, name: str, fs: Path = CGROUP_FS) -> list[Path]:
    """The user's cgroup folders that exist."""
    version = cgroup_version(fs)
    if version is None:
        return []
    places = [fs / name / user] if version == 2 else [fs / c / name / user for c in V1]
    return [p for p in places if p.is_dir()]


def create(user: str, limits: Limits, name: str, fs: Path = CGROUP_FS) -> list[Path]:
    """The user's cgroup folders, made with the limits written; [] if the host allows none
    (then only rlimits apply)."""
    version = cgroup_version(fs)
    if version is None:
        return []
    folders = []
    try:
        if version == 2:  # a child cgroup gets a controller only if its parent delegates it
            (fs / name).mkdir(exist_ok=True)
            for parent in (fs, fs / name):
                _write(parent / "cgroup.subtree_control", "+memory +cpu +pids")
        for controller, files in limits.cgroup_files(version).items():
            folder = fs / controller / name / user if controller else fs / name / user
            folder.mkdir(parents=True, exist_ok=True)
            folders.append(folder)
            for file, value in files.items():
                if (folder / file).exists():
                    _write(folder / file, value)
    except OSError:
        remove(folders)
        return []
    return folders


def join(folders: list[Path]) -> None:
    """Move the calling process into the folders (runs between fork and exec, as root)."""
    for folder in folders:
        _write(folder / "cgroup.procs", str(os.getpid()))


def set_rlimits(limits: Limits, memory: bool) -> None:
    """Processes per user always; memory per process when no cgroup caps it."""
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
    if memory:
        size = limits.memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (size, size))


def _pids(folders: list[Path]) -> set[int]:
    found = set()
    for folder in folders:
        try:
            found |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
        except OSError:
            pass
    return found


def kill_until_gone(find, wait: float = 10) -> None:
    """SIGKILL the processes ``find()`` lists until it lists none, for ``wait`` seconds at
    most (a process may fork while it is being killed)."""
    deadline = time.monotonic() + wait
    while (pids := find()) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def end_processes(folders: list[Path], wait: float = 10) -> None:
    """Kill every process still in the folders (what the server left running), and wait
    until they are gone (a cgroup is removable only then)."""
    kill_until_gone(lambda: _pids(folders), wait)


def remove(folders: list[Path]) -> None:
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            pass
