"""grader.lifeline: a process that asked to die with its parent goes when the parent is
SIGKILLed (what a stopped grader's workers, judging server and a hub's grading run rely on)."""

import os
import signal
import subprocess
import sys
import time

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


def _child_after_parent_killed(ask: str) -> bool:
    """Whether the child still runs 2 s after its parent was SIGKILLed."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT, ask], cwd=REPO_ROOT,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return False
        time.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_that_asked_dies_with_its_killed_parent():
    assert _child_after_parent_killed("yes") is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_that_did_not_ask_outlives_it():
    """The control: without the request the child lives on (so the test above can fail)."""
    assert _child_after_parent_killed("no") is True
