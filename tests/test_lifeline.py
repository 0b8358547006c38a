"""grader.lifeline: a process that asked to die with its parent goes when the parent is
SIGKILLed (what a stopped grader's workers, judging server and a hub's grading run rely on)."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.course import REPO_ROOT

PARENT = """
import subprocess, sys
from grader.lifeline import die_with_parent
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                         preexec_fn=die_with_parent if sys.argv[1] == "yes" else None)
print(child.pid, flush=True)
__import__("time").sleep(60)
"""


def _child_of_killed_parent(ask: str) -> int:
    """The pid of a child (that asked to die with its parent, or not) whose parent was just
    SIGKILLed."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT, ask], cwd=REPO_ROOT,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    return child


def _gone(pid: int) -> bool:
    """Whether ``pid`` is dead: vanished, or a zombie its new parent has not reaped yet
    (``os.kill(pid, 0)`` still succeeds on a zombie; init may reap it seconds later)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")  # the state, after the name


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not _gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_that_asked_dies_with_its_killed_parent():
    child = _child_of_killed_parent("yes")
    try:
        assert _gone_within(child, 30), f"child {child} still runs 30 s after its parent died"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_that_did_not_ask_outlives_it():
    """The control: without the request the child lives on (so the test above can fail)."""
    child = _child_of_killed_parent("no")
    try:
        assert not _gone_within(child, 2), f"child {child} died with its parent unasked"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
