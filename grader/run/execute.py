"""Run one rebuilt notebook in a sandboxed kernel, cell by cell, surviving what students do.

``SandboxedExecute`` is nbgrader's ``Execute`` preprocessor (so the nbclient settings still
apply) with its own cell loop:

- every kernel start is a fresh sandbox (``grader.run.sandbox``) running ``python -m
  grader.kernel``, reached over Jupyter's IPC transport (Unix sockets in a folder bound into
  the sandbox: TCP does not cross its network namespace), with its stream to the grader
  (``grader.run.stream``) accepted before any student code runs, and started and stopped by
  the grader's jupyter_client provisioner (``SandboxProvisioner``);
- a per-cell time limit and a per-notebook deadline (a cell over it is not interrupted: its
  kernel is replaced, as after a crash);
- a kernel that dies (``os._exit``, out of memory, CPU limit) or will not stop after a
  timeout is restarted, the cells that defined state so far are replayed, the bad cell is
  skipped, and grading goes on: one bad cell costs only what depends on it;
- after each test cell, its end-of-cell marker must arrive on the stream (else: tampered);
- output floods are cut at ``max_output_chars`` per cell while they arrive;
- after each kernel, no process of the sandbox's uid may be left;
- all the notebook's sandboxes run in one cgroup of their own (``grader.run.sandbox.limit_group``)
  where the host allows it; what it hit (memory, processes) is in ``exceeded``.
"""

import asyncio
import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from time import monotonic
from typing import IO, Any, TypedDict, cast

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning.local_provisioner import LocalProvisioner
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Integer, List

from grader.course import grade_id
from grader.run import cgroups, sandbox
from grader.run.stream import KernelStream, Window, Windows
from grader.settings import Snapshot

TIMEOUT_ENAME = "GraderCellTimeout"
KERNEL = [sys.executable, "-m", "grader.kernel", "-f", "{connection_file}"]
PROVISIONERS = "jupyter_client.kernel_provisioners"  # the entry point group
PROVISIONER = "attn-grading-sandbox"  # ours, in pyproject.toml
REAP_SECONDS = 5  # as long as jupyter_client waits for a killed kernel before giving up
STARTUP_SECONDS = 60  # nbclient's own limit for a kernel to answer; less when time runs out


class CellStatus(TypedDict, total=False):
    """How one cell's run ended (``status``: ok, error, timeout, died, deadline, not-run)."""

    status: str
    seconds: float
    ename: str
    evalue: str
    flooded: bool


class KernelSettings(TypedDict):
    """grader.kernel.boot's settings (ATTN_KERNEL, as JSON), but for the stream's path."""

    read: list[str]
    write: list[str]
    libraries: list[str]
    memory_bytes: int | None
    cpu_seconds: int
    fsize_bytes: int
    processes: int | None
    seed: int


def kernel_process(provisioner: LocalProvisioner) -> "subprocess.Popen[bytes] | None":
    """The process a local provisioner started (the sandbox's), while it runs."""
    # jupyter_client declares ``process = None``; launching sets it to the kernel's Popen
    return cast("subprocess.Popen[bytes] | None", provisioner.process)


class SandboxProvisioner(LocalProvisioner):
    """Jupyter's local provisioner, but a killed sandbox is reaped as soon as it is gone:
    jupyter_client looks every 0.1 s, a tenth of a second lost per notebook graded."""

    # Overrides jupyter_client internals (pinned in pyproject.toml); guarded by
    # tests/test_overrides.py::test_the_provisioner_s_kill_returns_with_the_kernel_reaped
    async def kill(self, restart: bool = False) -> None:
        process = kernel_process(self)
        await super().kill(restart=restart)
        deadline = monotonic() + REAP_SECONDS
        while process is not None and process.poll() is None and monotonic() < deadline:
            await asyncio.sleep(0.002)


@functools.cache
def provisioner_name() -> str:
    """Ours where the course is installed with it (``make setup``); otherwise jupyter_client's
    own, which grades the same, only waiting longer for each stopped kernel."""
    installed = entry_points(group=PROVISIONERS, name=PROVISIONER)
    return PROVISIONER if installed else "local-provisioner"


class SandboxKernelManager(AsyncKernelManager):
    """jupyter_client's manager for one kernel started by ``command`` (the sandbox's)."""

    command: List[str] = List(
        help="The kernel's full command line ({connection_file} is filled in)."
    )
    owner_uid = Integer(None, allow_none=True, help="The sandbox's uid, owner of its files.")

    # Overrides jupyter_client internals (pinned in pyproject.toml); guarded by
    # tests/test_overrides.py::test_the_kernel_manager_starts_the_sandbox_s_command
    @property
    def kernel_spec(self) -> KernelSpec:
        return KernelSpec(
            argv=list(self.command),
            display_name="Python 3 (grading sandbox)",
            language="python",
            env={},
            metadata={"kernel_provisioner": {"provisioner_name": provisioner_name()}},
        )

    # Overrides jupyter_client internals (pinned in pyproject.toml); guarded by
    # tests/test_overrides.py::test_a_timeout_is_the_grader_s_error_with_no_interrupt
    # jupyter_client types AsyncKernelManager's as KernelManager's synchronous one
    async def interrupt_kernel(self) -> None:  # type: ignore[override]
        """No interrupt: a cell past its limit gets its kernel stopped and a fresh one (the
        signal would reach the sandbox's bwrap, not the kernel, and kill it at some point
        meanwhile, so the cell would look crashed or timed out by chance)."""

    def write_connection_file(self, **kwargs: object) -> None:
        super().write_connection_file(**kwargs)
        if self.owner_uid is not None:  # the sandbox's uid reads it, never writes it
            os.chmod(self.connection_file, 0o644)


@dataclass
class Plan:
    """What one notebook run needs besides the notebook."""

    scratch: str  # the kernel's working folder (a tmpfs in the sandbox)
    cwd: str  # where the sandbox (or the unsandboxed kernel) is started, on this machine
    job_dir: str  # private to the worker: IPC folders, the kernel's stderr
    env: dict[str, str]
    kernel_settings: KernelSettings  # for grader.kernel.boot, without the stream path
    state_cells: set[int]
    windows: Windows
    cell_windows: dict[int, Window]  # {cell index: Window}
    skip: set[int]  # demo cells left out of this run (grader.run.needs)
    files: dict[str, str]  # {path in scratch: host file}, read-only
    folders: list[str]  # writable folders made in scratch
    sandboxed: bool
    uid: int | None
    scratch_mb: int
    shm_mb: int
    limits: cgroups.Limits  # of each sandbox as a whole (sandboxed)
    grace: float  # GraderSettings.stream_grace
    trusted_timeout: int  # the per-cell limit of the trusted imports cell
    deadline: float  # monotonic time by which the notebook's kernels end (all its runs)
    seccomp: str | None = None  # the system-call filter's file (grader.run.seccomp)


class SandboxedExecute(Execute):  # type: ignore[misc]  # nbgrader has no types: Execute is Any
    """nbgrader's Execute with a fault-tolerant, deadline-aware, sandboxed cell loop."""

    km: SandboxKernelManager | None  # nbclient's, set by the cell loop (_kernel)
    _current: int | None  # the cell being run or replayed

    # Its cell loop (_run) drives nbclient's: setup_kernel with a preset km, execute_cell,
    # output, the km/kc reset; each use is marked where it is made.

    def __init__(self, settings: Snapshot, **kwargs: object) -> None:
        """``settings``: the job's GraderSettings snapshot, the one source of its limits."""
        kwargs.setdefault("kernel_manager_class", SandboxKernelManager)
        kwargs.setdefault("kernel_name", "python3")
        super().__init__(timeout=settings.cell_timeout, **kwargs)
        self.max_output_chars = settings.max_output_chars  # output kept per cell
        self.max_restarts = settings.max_restarts  # kernel restarts before giving up
        # Overrides nbclient internals (pinned in pyproject.toml); guarded by
        # tests/test_overrides.py::test_a_timeout_is_the_grader_s_error_with_no_interrupt
        self.error_on_timeout = {"ename": TIMEOUT_ENAME, "evalue": "", "traceback": []}
        self.record_timing = False
        self.shutdown_kernel = "immediate"
        self.leftovers = 0
        self.kernel_starts = 0
        self.group: list[Path] = []  # the notebook's cgroup folders ([]: rlimits only)
        self.exceeded: list[str] = []  # the cgroup's limits it hit

    # -- output flood control
    # Overrides nbclient internals (pinned in pyproject.toml); guarded by
    # tests/test_overrides.py::test_a_cell_s_outputs_past_the_cap_are_dropped_and_flagged
    def output(
        self,
        outs: list[NotebookNode],
        msg: dict[str, Any],  # a Jupyter message, as nbclient types it
        display_id: str | None,
        cell_index: int,
    ) -> NotebookNode | None:
        """Keep a cell's outputs up to the cap. A replay (after a restart) is capped apart:
        its outputs are thrown away, so they neither count for the cell nor flag a flood."""
        key = (cell_index, self.replaying)
        used = self._chars.get(key, 0)
        content = msg.get("content", {})
        size = len(str(content.get("text", ""))) + len(json.dumps(content.get("data", {})))
        if used + size > self.max_output_chars:
            if not self.replaying:
                self.flooded.add(cell_index)
            self._chars[key] = self.max_output_chars
            return None
        self._chars[key] = used + size
        kept: NotebookNode | None = super().output(outs, msg, display_id, cell_index)
        return kept

    # -- one kernel
    def _kernel(self, plan: Plan) -> tuple[KernelStream, dict[str, str]]:
        """A fresh kernel manager and its stream, in a new IPC folder."""
        ipc = tempfile.mkdtemp(prefix="ipc-", dir=plan.job_dir)
        if plan.uid is not None:
            os.chown(ipc, plan.uid, plan.uid)
        stream = KernelStream(ipc, plan.windows, plan.uid)
        settings = {**plan.kernel_settings, "stream": stream.path}
        if plan.sandboxed:
            command = sandbox.command(
                KERNEL,
                scratch=plan.scratch,
                ipc=ipc,
                files=plan.files,
                folders=plan.folders,
                uid=plan.uid,
                scratch_mb=plan.scratch_mb,
                shm_mb=plan.shm_mb,
                seccomp=plan.seccomp,
            )
            if self.group:
                command = cgroups.join_command(self.group, command)
        else:
            command = KERNEL
        self.km = SandboxKernelManager(
            command=command,
            owner_uid=plan.uid,
            transport="ipc",
            connection_file=os.path.join(ipc, "kernel.json"),
            kernel_name="python3",
        )
        self.kernel_starts += 1
        self.ipc = ipc
        return stream, {**plan.env, "ATTN_KERNEL": json.dumps(settings)}

    def _after_test_cell(
        self, plan: Plan, stream: KernelStream, idx: int, state: CellStatus
    ) -> None:
        window = plan.cell_windows.get(idx)
        if window is None or state["status"] not in ("ok", "error"):
            return
        if plan.windows.tampered:  # the notebook already scores 0, flagged: waiting adds nothing
            return
        if not plan.windows.wait_end(window, stream, plan.grace):
            plan.windows.tamper(
                f"test cell `{window.test_id}` finished but left no record: its end-of-cell "
                "marker never reached the grader (the kernel's stream was cut or the cell "
                "was changed at run time)"
            )

    # -- the cell loop
    def run(
        self, nb: NotebookNode, plan: Plan, stderr: IO[str] | None = None
    ) -> dict[int, CellStatus]:
        """Execute ``nb`` in place, in the notebook's cgroup; return {cell index: status}."""
        self.group = sandbox.limit_group(plan.limits) if plan.sandboxed else []
        try:
            return self._run(nb, plan, stderr)
        finally:
            self.exceeded = cgroups.exceeded(self.group)
            cgroups.end_processes(self.group)
            cgroups.remove(self.group)

    def _run(
        self, nb: NotebookNode, plan: Plan, stderr: IO[str] | None = None
    ) -> dict[int, CellStatus]:
        """The cell loop. ``plan.state_cells`` are replayed after a restart (cells that
        define the learner's names)."""
        self.nb = nb
        self._chars: dict[tuple[int, bool], int] = {}  # (cell, replaying) -> output kept
        self.flooded: set[int] = set()
        self.replaying = False
        deadline = plan.deadline  # one budget for the notebook's runs (grader.batch.job)
        self.timeout_func = self._cell_timeout(plan, deadline)
        status: dict[int, CellStatus] = {}
        pending = [
            i
            for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and c.source.strip() and i not in plan.skip
        ]
        replay: list[int] = []
        restarts = 0
        while pending and not _lost(plan, status):
            self._current = None
            if monotonic() >= deadline:  # no kernel starts once the notebook's time is up
                break
            self.startup_timeout = max(1, min(STARTUP_SECONDS, int(deadline - monotonic())))
            stream, env = self._kernel(plan)
            try:
                with self.setup_kernel(cwd=plan.cwd, env=env, stderr=stderr):
                    if plan.sandboxed:
                        sandbox.seal(self.ipc, plan.uid, self._sandbox_pid())
                    self._replay(nb, replay, deadline)
                    self._run_pending(nb, plan, stream, pending, status, replay, deadline)
            except (DeadKernelError, _Stuck, RuntimeError, TimeoutError) as err:
                self._after_crash(err, pending, status, replay)
                restarts += 1
                if restarts > self.max_restarts:
                    for rest in pending:
                        status[rest] = {"status": "not-run", "evalue": "too many kernel restarts"}
                    pending.clear()
            finally:
                self.replaying = False
                # Overrides nbclient internals (pinned in pyproject.toml); guarded by
                # tests/test_overrides.py::test_setup_kernel_starts_the_loop_s_own_kernel
                self.km = None
                self.kc = None
                stream.close()
                self.leftovers += sandbox.kill_leftovers(plan.uid)
        if monotonic() >= deadline:
            # Whatever stopped the loop (a short run lost to a cell the deadline cut short
            # too), the cells left did not run because the notebook's time was spent: they
            # say so, not that the kernel kept crashing (issue 46).
            status.update((i, {"status": "deadline"}) for i in pending)
        for idx in self.flooded:
            status.setdefault(idx, {"status": "not-run"})["flooded"] = True
        return status

    def _sandbox_pid(self) -> int:
        """The pid of the running kernel's sandbox (its bwrap)."""
        provisioner = self.km.provisioner if self.km is not None else None
        assert isinstance(provisioner, LocalProvisioner)  # ours (kernel_spec names it) or its base
        process = kernel_process(provisioner)
        assert process is not None  # setup_kernel has started it
        return process.pid

    def _cell_timeout(self, plan: Plan, deadline: float) -> Callable[[NotebookNode], int]:
        def timeout(cell: NotebookNode) -> int:
            # the imports cell is trusted code: a slow machine is not the learner's fault
            trusted = grade_id(cell) == "imports"
            limit = max(self.timeout or 1, plan.trusted_timeout) if trusted else self.timeout
            return max(1, int(min(limit or 1e9, deadline - monotonic())))

        return timeout

    def _replay(self, nb: NotebookNode, replay: list[int], deadline: float) -> None:
        """Run again, in a fresh kernel, the cells that defined the learner's names (until
        the deadline: then the cells left say so)."""
        self.replaying = True
        for idx in list(replay):
            if monotonic() >= deadline:
                break
            self._current = idx
            first_run = nb.cells[idx]
            cell = first_run.copy()
            cell.outputs = []
            self._chars.pop((idx, True), None)
            try:
                self.execute_cell(cell, idx, store_history=False)
            finally:
                # Overrides nbclient internals (pinned in pyproject.toml); guarded by
                # tests/run/test_execute.py::test_a_replay_s_outputs_are_thrown_away
                # (execute_cell stores the cell it ran in the notebook: the replay's copy)
                nb.cells[idx] = first_run
            if _timed_out(cell):
                raise _Stuck(idx)
        self.replaying = False
        self._current = None

    def _run_pending(
        self,
        nb: NotebookNode,
        plan: Plan,
        stream: KernelStream,
        pending: list[int],
        status: dict[int, CellStatus],
        replay: list[int],
        deadline: float,
    ) -> None:
        """Run ``pending`` in order (popping each as it ends) until the deadline or a loss."""
        while pending and not _lost(plan, status):
            idx = self._current = pending[0]
            if monotonic() >= deadline:  # the cells left: marked by the cell loop
                return
            start = monotonic()
            self.execute_cell(nb.cells[idx], idx)
            status[idx] = _status(nb.cells[idx], monotonic() - start)
            pending.pop(0)
            if status[idx]["status"] == "timeout":
                raise _Stuck(idx)
            self._after_test_cell(plan, stream, idx, status[idx])
            if idx in plan.state_cells:
                replay.append(idx)

    def _after_crash(
        self, err: Exception, pending: list[int], status: dict[int, CellStatus], replay: list[int]
    ) -> None:
        """The status of the cell the kernel died or got stuck in; it is not run again."""
        # nbgrader's Execute raises CellTimeoutError when the kernel stays busy past the
        # cell's limit (nothing interrupts it): a timeout, not a crash.
        died = not isinstance(err, (_Stuck, CellTimeoutError))
        current = self._current
        if current is not None and current in replay:  # failed on replay this time
            replay.remove(current)
            status[current] = {"status": "died" if died else "timeout"}
        elif current is not None and pending and pending[0] == current:
            pending.pop(0)
            status[current] = (
                {"status": "died", "evalue": str(err)[:200]}
                if died
                else status.get(current, {"status": "timeout"})
            )


def _lost(plan: Plan, status: Mapping[int, CellStatus]) -> bool:
    """A run without demo cells stands only if every cell ends well (``grader.batch.job.stands``):
    after one that did not, the rest of it is wasted, as the full run follows."""
    return bool(plan.skip) and any(st.get("status") != "ok" for st in status.values())


class _Stuck(Exception):
    """A cell ran past its time limit: restart the kernel rather than trust it."""


def _timed_out(cell: NotebookNode) -> bool:
    return any(
        o.get("output_type") == "error" and o.get("ename") == TIMEOUT_ENAME
        for o in cell.get("outputs", [])
    )


def _status(cell: NotebookNode, seconds: float) -> CellStatus:
    if _timed_out(cell):
        return {"status": "timeout", "seconds": round(seconds, 3)}
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return {
                "status": "error",
                "ename": str(out.get("ename", ""))[:100],
                "evalue": str(out.get("evalue", ""))[:500],
                "seconds": round(seconds, 3),
            }
    return {"status": "ok", "seconds": round(seconds, 3)}


def font_cache() -> dict[str, str]:
    """{file name: host path} of matplotlib's font cache, so kernels do not rebuild it."""
    try:
        import matplotlib

        return {p.name: str(p) for p in Path(matplotlib.get_cachedir()).glob("fontlist-*.json")}
    except Exception:  # noqa: BLE001 (only a speed-up)
        return {}
