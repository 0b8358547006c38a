"""The grader's overrides of other libraries' internals, each checked here in a second against
the pinned library with a faked collaborator (no kernel, no sandbox, no hub), so a library bump
that changes one fails in `make test-fast`. Each override's comment names its test here
(tests/test_pins.py checks every marker names a fast test); the slow end-to-end tests stay."""

import asyncio
import os
import signal
import subprocess
import sys
import uuid

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpec

from grader.run.execute import (
    TIMEOUT_ENAME,
    SandboxedExecute,
    SandboxKernelManager,
    SandboxProvisioner,
)
from grader.settings import GraderSettings

SETTINGS = GraderSettings(
    cell_timeout=5, notebook_timeout=60, max_output_chars=10, max_restarts=1
).snapshot()


def _executor() -> SandboxedExecute:
    ex = SandboxedExecute(SETTINGS)
    ex._chars, ex.flooded, ex.replaying = {}, set(), False  # as its cell loop starts
    return ex


def _stream_msg(text: str) -> dict:
    """An iopub stream message as a kernel sends it."""
    header = {"msg_id": uuid.uuid4().hex, "msg_type": "stream"}
    return {"header": header, "msg_type": "stream", "parent_header": {"msg_id": "cell"},
            "metadata": {}, "content": {"name": "stdout", "text": text}}  # fmt: skip


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups, SIGKILL")
def test_the_provisioner_s_kill_returns_with_the_kernel_reaped():
    """SandboxProvisioner.kill: jupyter_client's kill signals the kernel's process group and
    returns; ours returns only once the process is reaped."""
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    provisioner = SandboxProvisioner(
        kernel_id="k", kernel_spec=KernelSpec(argv=["sleep"]), parent=None
    )
    provisioner.process, provisioner.pgid = process, os.getpgid(process.pid)
    asyncio.run(provisioner.kill())
    assert process.returncode == -signal.SIGKILL


def test_the_kernel_manager_starts_the_sandbox_s_command():
    """SandboxKernelManager.kernel_spec: jupyter_client builds the kernel's command line from
    it, naming our provisioner."""
    km = SandboxKernelManager(command=["bwrap", "--", "python", "-f", "{connection_file}"])
    km.connection_file = "/ipc/kernel.json"
    assert km.format_kernel_cmd() == ["bwrap", "--", "python", "-f", "/ipc/kernel.json"]
    assert km.kernel_spec.metadata["kernel_provisioner"]["provisioner_name"]


def test_a_timeout_is_the_grader_s_error_with_no_interrupt():
    """SandboxedExecute.error_on_timeout with nbclient's timeout handling: no interrupt reaches
    the sandbox (SandboxKernelManager.interrupt_kernel does nothing) and the cell ends in an
    error the grader recognises."""
    ex = _executor()
    ex.km = SandboxKernelManager(command=["true"])
    cell = nbformat.v4.new_code_cell("while True: pass")
    reply = asyncio.run(ex._async_handle_timeout(5, cell))
    assert reply["content"]["ename"] == TIMEOUT_ENAME and reply["content"]["status"] == "error"


def test_a_cell_s_outputs_past_the_cap_are_dropped_and_flagged():
    """SandboxedExecute.output: nbclient passes every iopub output of a cell through it."""
    ex = _executor()
    cell = nbformat.v4.new_code_cell("print(...)")
    ex.clear_before_next_output = False  # as nbclient's execute_cell sets it for each cell
    ex.process_message(_stream_msg("12345"), cell, 3)
    assert [o.text for o in cell.outputs] == ["12345"] and not ex.flooded
    ex.process_message(_stream_msg("678901"), cell, 3)
    assert [o.text for o in cell.outputs] == ["12345"] and ex.flooded == {3}


def test_setup_kernel_starts_the_loop_s_own_kernel(monkeypatch):
    """SandboxedExecute's cell loop sets ``km`` (a fresh sandbox per kernel), then enters
    nbclient's setup_kernel, which must start that kernel with the loop's cwd and env, make
    its client, and clean both up after; the loop then sets ``km``/``kc`` to None."""
    ex = _executor()
    started, cleaned = [], []
    monkeypatch.setattr(ex, "start_new_kernel", lambda **kw: started.append(kw))
    monkeypatch.setattr(ex, "start_new_kernel_client", lambda: setattr(ex, "kc", "client"))
    monkeypatch.setattr(ex, "_cleanup_kernel", lambda: cleaned.append(True))
    km = ex.km = SandboxKernelManager(command=["true"])
    with ex.setup_kernel(cwd="/scratch", env={"A": "1"}, stderr=None):
        assert ex.km is km and ex.kc == "client"
    assert started == [{"cwd": "/scratch", "env": {"A": "1"}, "stderr": None}]
    assert cleaned == [True]


def _graders_only():
    from grader.commands.formgrader import CourseGraderOnly
    from hub.instructor import HubGraderOnly

    return [CourseGraderOnly, HubGraderOnly]


@pytest.mark.parametrize("exporter", _graders_only(), ids=lambda c: c.__name__)
def test_formgrader_s_autograde_makes_its_exporter_before_it_converts(
    exporter, monkeypatch, tmp_path
):
    """CourseGraderOnly and HubGraderOnly: nbgrader's Autograde makes its exporter (which
    refuses) after reading the notebooks' list and before converting, copying or removing."""
    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory

    converted = []
    monkeypatch.setattr(Autograde, "init_notebooks", lambda self: None)  # reads, never writes
    monkeypatch.setattr(Autograde, "convert_notebooks", lambda self: converted.append(self))
    app = Autograde(coursedir=CourseDirectory(root=str(tmp_path)), exporter_class=exporter)
    with pytest.raises(RuntimeError, match="Autograde is off"):
        app.start()
    assert converted == []


@pytest.mark.parametrize("past_deadline", [True, False])
def test_a_short_run_the_deadline_cuts_short_says_the_time_ran_out(monkeypatch, past_deadline):
    """The cell loop with faked kernels and clock (issue 46): in a run without demo cells,
    an answer cell that sleeps until the notebook's deadline stops the run; the test cell
    left then says the notebook ran out of its time (notebook_timeout), where it was told
    the kernel kept crashing. With time left (the control), it gets no status: the full run
    that follows grades it."""
    from contextlib import nullcontext
    from types import SimpleNamespace

    from grader.results import messages
    from grader.run import execute

    clock = [0.0]
    monkeypatch.setattr(execute, "monotonic", lambda: clock[0])
    monkeypatch.setattr(execute.sandbox, "kill_leftovers", lambda uid: 0)
    ex = _executor()
    monkeypatch.setattr(ex, "_kernel", lambda plan: (SimpleNamespace(close=lambda: None), {}))
    monkeypatch.setattr(ex, "setup_kernel", lambda **kw: nullcontext())

    def execute_cell(cell, idx, store_history=True):  # the answer sleeps past its limit
        clock[0] += 100.0 if past_deadline else SETTINGS.cell_timeout
        cell.outputs = [nbformat.v4.new_output("error", ename=TIMEOUT_ENAME, evalue="")]

    monkeypatch.setattr(ex, "execute_cell", execute_cell)
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(s) for s in ("sleep", "check", "demo")]
    )
    plan = SimpleNamespace(deadline=60.0, skip={2}, sandboxed=False, cwd="/", uid=None,
                           state_cells=set(), trusted_timeout=60)  # fmt: skip
    status = ex._run(nb, plan)
    assert status[0]["status"] == "timeout"
    if not past_deadline:
        assert 1 not in status
        return
    assert status[1] == {"status": "deadline"}
    message = messages.check_cell_stopped("check", status[1]["status"], SETTINGS)
    assert message.startswith("Not graded: the notebook ran out of its time budget (60 s, ")
    assert "notebook_timeout" in message
