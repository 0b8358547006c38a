"""``python -m grader.kernel -f CONNECTION_FILE``: a student's kernel, set up before any of
the student's code runs.

Its settings come as JSON in ``ATTN_KERNEL`` (``grader.run.execute.KernelSettings``, made by
``grader.run.kernelrun``): the grader's stream socket, the roots it may read and write, resource
limits and the seed.
"""

import json
import os
import sys


def _die_with_parent() -> None:
    """Linux: this kernel gets SIGKILL when the process that started it dies. Not
    ``grader.lifeline``: the sandbox lets a kernel read only ``grader/kernel/`` of the grader
    (``grader.run.sandbox.read_roots``)."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG


def _limit(which: str, value: int | None) -> None:
    import resource

    if value:
        resource.setrlimit(getattr(resource, which), (value, value))


def main(argv: list[str] | None = None) -> None:
    cfg = json.loads(os.environ.pop("ATTN_KERNEL"))
    _die_with_parent()
    _limit("RLIMIT_AS", cfg.get("memory_bytes"))
    _limit("RLIMIT_CPU", cfg.get("cpu_seconds"))
    _limit("RLIMIT_FSIZE", cfg.get("fsize_bytes"))
    _limit("RLIMIT_NPROC", cfg.get("processes"))

    # ipykernel's parent poller would stop this kernel at once where bwrap is its parent as
    # pid 1 (the unprivileged sandbox): "1" turns it off; PR_SET_PDEATHSIG above does its job.
    os.environ["JPY_PARENT_PID"] = "1"

    from grader.kernel import channel, policy, tamper

    channel.connect(cfg["stream"]).send({"k": "hello", "pid": os.getpid()})

    import importlib
    import pkgutil
    import random

    import numpy as np
    from ipykernel.kernelapp import IPKernelApp

    import attnlib.checks

    seed = int(cfg.get("seed", 0))
    random.seed(seed)
    np.random.seed(seed % 2**32)
    app = IPKernelApp.instance()
    app.initialize(sys.argv[1:] if argv is None else argv)
    # attnlib.checks was imported before the shell existed: its one-line messages now.
    attnlib.checks._cells.install(attnlib.checks.CheckFailed)
    for info in pkgutil.iter_modules(attnlib.checks.__path__):
        importlib.import_module(f"attnlib.checks.{info.name}")
    import grader.kernel.recorders  # noqa: F401 (loaded before the policy, like the checks)

    tamper.snapshot(app.shell)
    policy.install(cfg["read"], cfg["write"], cfg["libraries"])
    app.start()
