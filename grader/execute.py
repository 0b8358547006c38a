"""Run one rebuilt notebook in a sandboxed kernel, cell by cell, surviving what students do.

``SandboxedExecute`` is nbgrader's ``Execute`` preprocessor (so ``c.Execute.timeout`` and the
other nbclient settings still apply) with its own cell loop:

- a per-cell time limit and a per-notebook deadline;
- a kernel that dies (``os._exit``, out of memory, CPU limit) or will not stop after a
  timeout is restarted, the cells that defined state so far are replayed, the bad cell is
  skipped, and grading goes on: one bad cell costs only what depends on it;
- output floods are cut at ``max_output_chars`` per cell while they arrive;
- the kernel is ``grader.sandbox_kernel`` (limits + audit hook), started in a folder that
  holds only this submission, with a clean environment.
"""

import json
import os
import sys
import sysconfig
from pathlib import Path
from time import monotonic

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import DeadKernelError
from nbgrader.preprocessors import Execute
from traitlets import Integer

from grader.course import REPO_ROOT
from grader.hidden import shortcuts

TIMEOUT_ENAME = "GraderCellTimeout"


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel is ``python -m grader.sandbox_kernel``."""

    @property
    def kernel_spec(self):
        return KernelSpec(
            argv=[sys.executable, "-m", "grader.sandbox_kernel", "-f", "{connection_file}"],
            display_name="Python 3 (grading sandbox)",
            language="python",
            env={},
        )


def read_roots() -> list[str]:
    """What a student's kernel may read: Python, the libraries, the helper package, data."""
    roots = {
        sys.prefix,
        sys.base_prefix + "/lib",
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        str(Path(sys.executable).resolve().parent.parent / "lib"),
        str(REPO_ROOT / "attnlib"),
        str(Path(__file__).with_name("sandbox_kernel.py")),
        str(REPO_ROOT / "data"),
        str(REPO_ROOT / "notebooks"),
        "/usr/lib",
        "/usr/share",
        "/lib",
        "/lib64",
        "/etc",
        "/dev/null",
        "/dev/urandom",
        "/proc/self",
        "/proc/cpuinfo",
        "/proc/meminfo",
        "/proc/stat",
        "/sys/devices/system/cpu",
        "/sys/fs/cgroup",
    }
    return sorted(roots)


def kernel_env(sandbox: Path, private: Path, *, seed: int, memory_mb: int, cpu_seconds: int):
    """A clean environment for the kernel: no secrets, one thread, everything in ``sandbox``."""
    for sub in ("tmp", ".ipython", ".mpl"):
        (sandbox / sub).mkdir(parents=True, exist_ok=True)
    try:  # reuse matplotlib's font cache so each kernel does not rebuild it
        import matplotlib

        for font_cache in Path(matplotlib.get_cachedir()).glob("fontlist-*.json"):
            (sandbox / ".mpl" / font_cache.name).write_bytes(font_cache.read_bytes())
    except Exception:  # noqa: BLE001 (only a speed-up)
        pass
    config = {
        "read": read_roots(),
        "libraries": sorted({sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")}),
        "write": [str(sandbox)],
        "log": str(private / "sandbox.log"),
        "memory_bytes": memory_mb * 2**20 if memory_mb else None,
        "cpu_seconds": cpu_seconds,
        "fsize_bytes": 256 * 2**20,
        "seed": seed,
        "shortcuts": shortcuts(),
    }
    env = {
        "PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin",
        "HOME": str(sandbox),
        "TMPDIR": str(sandbox / "tmp"),
        "IPYTHONDIR": str(sandbox / ".ipython"),
        "MPLCONFIGDIR": str(sandbox / ".mpl"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONWARNINGS": "default",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "ATTN_DATA_DIR": str(REPO_ROOT / "data"),
        "ATTN_SANDBOX": json.dumps(config),
    }
    if "VIRTUAL_ENV" in os.environ:
        env["VIRTUAL_ENV"] = os.environ["VIRTUAL_ENV"]
    return env


class SandboxedExecute(Execute):
    """nbgrader's Execute with a fault-tolerant, deadline-aware cell loop."""

    notebook_timeout = Integer(300, help="Seconds for the whole notebook.").tag(config=True)
    max_output_chars = Integer(100_000, help="Output kept per cell.").tag(config=True)
    max_restarts = Integer(4, help="Kernel restarts before giving up.").tag(config=True)

    def __init__(self, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxKernelManager)
        kwargs.setdefault("kernel_name", "python3")
        super().__init__(**kwargs)
        self.error_on_timeout = {"ename": TIMEOUT_ENAME, "evalue": "", "traceback": []}
        self.record_timing = False

    # -- output flood control
    def output(self, outs, msg, display_id, cell_index):
        used = self._chars.get(cell_index, 0)
        content = msg.get("content", {})
        size = len(str(content.get("text", ""))) + len(json.dumps(content.get("data", {})))
        if used + size > self.max_output_chars:
            if cell_index not in self.flooded:
                self.flooded.add(cell_index)
                self._chars[cell_index] = self.max_output_chars
            return None
        self._chars[cell_index] = used + size
        return super().output(outs, msg, display_id, cell_index)

    # -- the cell loop
    def run(self, nb, cwd: Path, env: dict, state_cells: set[int], stderr=None) -> dict[int, dict]:
        """Execute ``nb`` in place; return {cell index: status}. ``state_cells`` are replayed
        after a restart (cells that define the learner's names)."""
        self.nb = nb
        self._chars: dict[int, int] = {}
        self.flooded: set[int] = set()
        deadline = monotonic() + self.notebook_timeout
        self.timeout_func = lambda cell: max(
            1, int(min(self.timeout or 1e9, deadline - monotonic()))
        )
        status: dict[int, dict] = {}
        pending = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]
        replay: list[int] = []
        restarts = 0
        while pending:
            current = None
            try:
                self.km = None
                with self.setup_kernel(cwd=str(cwd), env=env, stderr=stderr):
                    for idx in list(replay):
                        current = idx
                        cell = nb.cells[idx].copy()
                        cell.outputs = []
                        self.execute_cell(cell, idx, store_history=False)
                        if _timed_out(cell):
                            raise _Stuck(idx)
                    current = None
                    while pending:
                        idx = current = pending[0]
                        if monotonic() >= deadline:
                            for rest in pending:
                                status[rest] = {"status": "deadline"}
                            pending = []
                            break
                        start = monotonic()
                        self.execute_cell(nb.cells[idx], idx)
                        status[idx] = _status(nb.cells[idx], monotonic() - start)
                        pending.pop(0)
                        if status[idx]["status"] == "timeout":
                            raise _Stuck(idx)
                        if idx in state_cells:
                            replay.append(idx)
            except (DeadKernelError, _Stuck, RuntimeError, TimeoutError) as err:
                died = not isinstance(err, _Stuck)
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
                restarts += 1
                if restarts > self.max_restarts:
                    for rest in pending:
                        status[rest] = {"status": "not-run", "evalue": "too many kernel restarts"}
                    pending = []
        for idx in self.flooded:
            status.setdefault(idx, {"status": "not-run"})["flooded"] = True
        return status


class _Stuck(Exception):
    """A cell ran past its time limit: restart the kernel rather than trust it."""


def _timed_out(cell) -> bool:
    return any(
        o.get("output_type") == "error" and o.get("ename") == TIMEOUT_ENAME
        for o in cell.get("outputs", [])
    )


def _status(cell, seconds: float) -> dict:
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
