"""Dying with the parent (Linux's ``PR_SET_PDEATHSIG``): a grading run's workers, its judging
server and a hub's grading command go when what started them goes, even when that was
SIGKILLed. Import-light: the judging server imports it before torch."""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def die_with_parent(or_exit_if_orphaned: bool = False) -> None:
    """This process gets SIGKILL when its parent dies (Linux; elsewhere nothing). With
    ``or_exit_if_orphaned``, it exits at once if the parent died before it could ask (its
    parent is then init); never in a PID namespace, where the parent may be pid 1."""
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if or_exit_if_orphaned and os.getppid() == 1:
        os._exit(1)
