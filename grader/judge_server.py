"""Imported first by the judging server (multiprocessing's forkserver, see ``grader.judge``):
the server dies with the worker that started it, even while it is still importing the rest
of its preload list (torch takes seconds), so a stopped or killed grader leaves none behind."""

import os
import sys

if sys.platform.startswith("linux"):
    import ctypes
    import signal

    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    if os.getppid() == 1:  # the worker died before we could ask
        os._exit(1)
