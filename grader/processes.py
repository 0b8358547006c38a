"""The bounded processes of a grading worker: judging a notebook (``grader.judging.judge``)
and reading one (``grader.intake.bounded``) are forked from one preloaded server, each with
its own memory limit."""

import multiprocessing
from typing import Any

STARTUP_SECONDS = 300  # for the first judging process of a worker (its server imports torch)
# What every bounded process starts with (forked from a server that imported them once):
# the judge, the hidden checks, and what the notebooks' trusted imports cells import; first,
# what makes the server die with its worker.
PRELOAD = [
    "grader.judging.judge_server",
    "grader.judging.judge",
    "grader.intake.bounded",  # reading a notebook (nbformat, nbgrader: seconds to import)
    "grader.hidden",
    "attnlib.checks",
    "matplotlib.pyplot",
    "torch",
]


def limit_memory(extra_mb: int) -> None:
    """Let this process grow by ``extra_mb`` beyond what it uses now (address space)."""
    import resource

    try:
        with open("/proc/self/status") as fh:
            size = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize"))
    except (OSError, StopIteration):
        return
    limit = size + extra_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


_CONTEXT: list[Any] = []


def context() -> Any:
    """The judging server's start method (forkserver, preloaded): the bounded processes of
    a worker (judging, reading a notebook: ``grader.intake.bounded``) are forked from it."""
    if not _CONTEXT:
        if "forkserver" in multiprocessing.get_all_start_methods():
            import pkgutil

            import attnlib.checks

            checks = [
                f"attnlib.checks.{m.name}" for m in pkgutil.iter_modules(attnlib.checks.__path__)
            ]
            forkserver = multiprocessing.get_context("forkserver")
            forkserver.set_forkserver_preload(PRELOAD + checks)
            _CONTEXT.append(forkserver)
        else:
            _CONTEXT.append(multiprocessing.get_context("spawn"))
    return _CONTEXT[0]
