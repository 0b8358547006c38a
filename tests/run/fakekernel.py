"""A kernel made of faked Jupyter messages, for the run stage's tests (grader/run/): no
process, no sandbox, milliseconds a test, as nbclient tests its own loop (``prepare_cell_mocks``
in nbclient's tests).

``SandboxedExecute``'s cell loop runs unchanged over it: nbclient's ``setup_kernel``,
``execute_cell`` and message handling, the grader's output cap, statuses, restarts and replays,
and the stream with its end-of-cell markers (a real ``KernelStream``, fed by the kernel side's
own ``grader.kernel.channel.Channel``). Only the kernel process is faked: ``start_new_kernel``
(which would launch the sandbox) makes a :class:`FakeKernel` instead, and each cell's source
is a script of what that kernel does, one step a line:

- ``print TEXT``: a stdout stream output;
- ``raise NAME TEXT``: an error (the execute reply's status is "error");
- ``hang``: no reply, ever (nbclient's timeout handling takes over);
- ``late``: no reply before the cell's limit, then the kernel goes idle (the timeout error
  reaches the cell's outputs);
- ``die``: the kernel process dies (no reply; ``is_alive`` is False from then on);
- ``check NONCE``: a test cell's stream traffic: ``begin`` with NONCE, a record, ``end``;
  ``check NONCE nomark`` sends no ``end``, ``check NONCE norecord`` no record, ``check NONCE
  endafter SECONDS`` its ``end`` that much later (from a thread, as a slow kernel's would
  arrive), ``check NONCE cut`` closes the stream instead of ending;
- ``replay STEP``: STEP only when the cell is replayed after a restart (nbclient sends it
  with ``store_history=False``), ``first STEP`` only when it is not.
"""

import json
import threading
import uuid
from collections import deque
from queue import Empty
from time import monotonic

import nbformat

from grader.kernel.channel import Channel
from grader.run import cgroups
from grader.run.execute import Plan, SandboxedExecute, SandboxKernelManager
from grader.run.stream import Window, Windows
from grader.settings import GraderSettings


def _msg(parent: str, msg_type: str, **content: object) -> dict:
    """A kernel message, as jupyter_client hands it to nbclient."""
    header = {"msg_id": uuid.uuid4().hex, "msg_type": msg_type}
    return {"header": header, "msg_type": msg_type, "parent_header": {"msg_id": parent},
            "metadata": {}, "content": content}  # fmt: skip


class FakeKernel:
    """One kernel's life: what it was asked to run, and the messages it answered with."""

    def __init__(self, stream_path: str):
        self.alive = True
        self.ran: list[str] = []  # the sources it executed, in order
        self.iopub: deque[dict] = deque()
        self.shell: deque[dict] = deque()
        self.channel = Channel(stream_path)  # the kernel's first act, before any cell runs
        self.channel.send({"k": "hello", "pid": 0})

    def execute(self, source: str, replay: bool = False) -> str:
        parent = uuid.uuid4().hex
        self.ran.append(source)
        self.iopub.append(_msg(parent, "status", execution_state="busy"))
        reply: dict | None = _msg(parent, "execute_reply", status="ok", execution_count=1)
        idle = True
        for line in source.splitlines():
            step, _, rest = line.partition(" ")
            if step in ("replay", "first"):
                if (step == "replay") != replay:
                    continue
                step, _, rest = rest.partition(" ")
            if step == "print":
                self.iopub.append(_msg(parent, "stream", name="stdout", text=rest))
            elif step == "raise":
                ename, _, evalue = rest.partition(" ")
                error = {"ename": ename, "evalue": evalue, "traceback": [f"{ename}: {evalue}"]}
                self.iopub.append(_msg(parent, "error", **error))
                reply = _msg(parent, "execute_reply", status="error", **error)
            elif step == "hang":
                reply, idle = None, False
            elif step == "die":  # and its end of the stream closes with the process
                reply, idle, self.alive = None, False, False
                self.channel.sock.close()
            elif step == "late":
                reply = None  # idle follows: the cell ended just after its limit
            elif step == "check":
                self._check(*rest.split())
        if idle:
            self.iopub.append(_msg(parent, "status", execution_state="idle"))
        if reply is not None:
            self.shell.append(reply)
        return parent

    def _check(self, nonce: str, how: str = "", seconds: str = "0") -> None:
        """A test cell's traffic on the stream, as grader.kernel.recorders sends it."""
        self.channel.ask({"k": "begin", "n": nonce})
        if how != "norecord":
            self.channel.send({"k": "record", "n": nonce, "body": b"a record"})
        if how == "cut":
            self.channel.sock.close()
        elif how == "endafter":
            end = {"k": "end", "n": nonce}
            later = threading.Timer(float(seconds), self.channel.send, [end])
            later.daemon = True  # a test ends without waiting for it
            later.start()
        elif how != "nomark":
            self.channel.send({"k": "end", "n": nonce})


class FakeChannel:
    """A jupyter_client channel whose messages are the fake kernel's, at once."""

    def __init__(self, queue: deque):
        self.queue = queue

    async def get_msg(self, timeout: float | None = None) -> dict:
        if not self.queue:
            raise Empty  # as jupyter_client says "nothing within the timeout"
        return self.queue.popleft()


class FakeClient:
    def __init__(self, kernel: FakeKernel):
        self.kernel = kernel
        self.iopub_channel = FakeChannel(kernel.iopub)
        self.shell_channel = FakeChannel(kernel.shell)

    def execute(self, source: str, store_history: bool = True, stop_on_error: bool = True):
        return self.kernel.execute(source, replay=not store_history)

    async def is_alive(self) -> bool:
        return self.kernel.alive

    def start_channels(self) -> None:
        pass

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        pass

    def stop_channels(self) -> None:
        pass


class FakeManager(SandboxKernelManager):
    """The grader's kernel manager (its no-op interrupt included) over a fake kernel."""

    def __init__(self, kernel: FakeKernel):
        super().__init__(command=["fake"])
        self.kernel = kernel

    @property
    def has_kernel(self) -> bool:
        return True

    def client(self, **kwargs: object) -> FakeClient:
        return FakeClient(self.kernel)

    async def is_alive(self) -> bool:
        return self.kernel.alive

    async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
        self.kernel.alive = False
        self.kernel.channel.sock.close()

    async def cleanup_resources(self, restart: bool = False) -> None:
        pass


class FakeExecute(SandboxedExecute):
    """The grader's executor, every part of it real but the kernel process."""

    kernels: list[FakeKernel]

    def start_new_kernel(self, **kwargs: object) -> None:
        """nbclient's (the sandbox's launch): a fake kernel, connected to the loop's stream."""
        env = kwargs["env"]
        assert isinstance(env, dict)
        kernel = FakeKernel(json.loads(env["ATTN_KERNEL"])["stream"])
        self.kernels.append(kernel)
        self.km = FakeManager(kernel)


def run_cells(folder, sources, tests=None, skip=(), state=None, deadline=60.0, **overrides):
    """(statuses, the executor, the windows, the notebook) of one notebook's run of
    ``sources`` over fake kernels; ``tests``: {cell index: test id}, whose ``{nonce}`` is
    replaced by its window's nonce; ``state``: the cells replayed after a restart (all but the
    test cells by default); ``overrides``: GraderSettings."""
    windows = Windows(shortcuts={})
    cell_windows = {i: windows.add(Window(t, "visible")) for i, t in (tests or {}).items()}
    sources = [
        s.replace("{nonce}", cell_windows[i].nonce) if i in cell_windows else s
        for i, s in enumerate(sources)
    ]
    nb = notebook(*sources)
    snapshot = settings(**overrides)
    ex = FakeExecute(snapshot)
    ex.kernels = []
    plan = Plan(
        scratch=str(folder), cwd=str(folder), job_dir=str(folder), env={}, kernel_settings={},
        state_cells=set(range(len(sources)) if state is None else state) - set(cell_windows),
        windows=windows, cell_windows=cell_windows, skip=set(skip), files={}, folders=[],
        sandboxed=False, uid=None, scratch_mb=0, shm_mb=0, limits=cgroups.Limits(0, 1.0, 0),
        grace=snapshot.stream_grace, trusted_timeout=60, deadline=monotonic() + deadline,
    )  # fmt: skip
    status = ex.run(nb, plan)
    return status, ex, windows, nb


def settings(**overrides: object):
    values = {"cell_timeout": 5, "notebook_timeout": 60, "max_output_chars": 100,
              "max_restarts": 4, "stream_grace": 1.0, **overrides}  # fmt: skip
    return GraderSettings(**values).snapshot()


def notebook(*sources: str):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
