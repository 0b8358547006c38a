"""Per-attendee limits for JupyterHub's local spawner: memory, CPU and processes.

Where root may make cgroups (``grader.run.cgroups``, the same module the grader's sandboxes use),
each attendee's server goes into ``<cgroup fs>/<name>/<user>``, which caps what all their
processes together use (memory, CPU time as a share of cores, processes), and stopping the
server ends every process left in it. Elsewhere (a container without cgroup rights) rlimits
stand in: memory per process (``RLIMIT_AS``) and processes per user (``RLIMIT_NPROC``, always
set), and no CPU cap; the hub's log says which applies.
"""

import resource
from pathlib import Path

from grader.run import cgroups
from grader.run.cgroups import CGROUP_FS, V1, Limits, end_processes, join, kill_until_gone, remove

__all__ = [  # what the hub uses; the cgroup work itself is grader.run.cgroups'
    "CGROUP_FS", "V1", "Limits", "create", "end_processes", "folders", "join",
    "kill_until_gone", "remove", "set_rlimits",
]  # fmt: skip


def folders(user: str, name: str, fs: Path = CGROUP_FS) -> list[Path]:
    """The user's cgroup folders that exist."""
    return cgroups.folders(f"{name}/{user}", fs)


def create(user: str, limits: Limits, name: str, fs: Path = CGROUP_FS) -> list[Path]:
    """The user's cgroup folders, made with the limits written; [] if the host allows none
    (then only rlimits apply)."""
    return cgroups.create(f"{name}/{user}", limits, fs)


def set_rlimits(limits: Limits, memory: bool) -> None:
    """Processes per user always; memory per process when no cgroup caps it."""
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
    if memory:
        size = limits.memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
