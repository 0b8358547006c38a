"""One run of a rebuilt notebook in its kernel, for ``grader.batch.job.execute``: the instrumented
copy the kernel runs (test cells replaced by recorder calls), the scratch folder and
environment it gets, and the :class:`grader.run.execute.Plan` that runs it.
"""

import copy
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import nbformat
from nbformat import NotebookNode

from grader import course, seeds
from grader.course import grade_id
from grader.run import cgroups, sandbox, seccomp
from grader.run.cases import hidden_cases

if TYPE_CHECKING:  # imported where used: numpy and nbclient load only in a run
    from grader.run.execute import CellStatus, KernelSettings, Plan
    from grader.run.stream import Window, Windows
    from grader.settings import Snapshot

SANDBOX_HOME = Path("/home/student")  # the kernel's scratch folder inside the sandbox
CPU_SECONDS_SPARE = 30  # CPU time beyond notebook_timeout: the wall clock stops a notebook first


class TestSpec(Protocol):
    """A test cell of the trusted release (``grader.judging.trusted.TestCell``)."""

    @property
    def id(self) -> str: ...
    @property
    def hidden(self) -> bool: ...
    @property
    def source(self) -> str: ...
    @property
    def verifies(self) -> tuple[tuple[str, str], ...]: ...


class TrustedSpec(Protocol):
    """What a run reads of the trusted facts (``grader.judging.trusted.Trusted``)."""

    @property
    def tests(self) -> Sequence[TestSpec]: ...
    @property
    def shortcuts(self) -> dict[str, dict[str, list[str]]]: ...


class RunJob(Protocol):
    """What a run reads of its job (``grader.batch.job.Job``, a layer above)."""

    @property
    def student(self) -> str: ...
    @property
    def notebook(self) -> str: ...
    @property
    def settings(self) -> "Snapshot": ...
    @property
    def trusted(self) -> TrustedSpec: ...


@dataclass(frozen=True)
class KernelRun:
    """What one run left: the notebook as run, its cells' statuses, the stream's windows and
    what the executor saw of the sandbox."""

    run_nb: NotebookNode  # the instrumented copy, with its outputs
    status: "dict[int, CellStatus]"  # run notebook cell index -> status
    windows: "Windows"
    cell_windows: "dict[int, Window]"  # cell index -> its window
    kernel_starts: int
    flooded: bool
    leftovers: int  # processes that outlived their kernel
    exceeded: tuple[str, ...]  # the cgroup limits the notebook hit
    cgroup: bool  # the limits applied through a cgroup (else rlimits per process)


def job_seed(job: RunJob, name: str = "") -> int:
    seed = job.settings.seed
    assert seed is not None  # settled before any job is made (grader.results.out.settle_seed)
    return seeds.keyed(seed, job.student, job.notebook, name)


def run(job: RunJob, nb: NotebookNode, skip: frozenset[int], deadline: float) -> KernelRun:
    """Run the instrumented copy of ``nb`` without the cells ``skip``, in a private folder,
    its kernels ending by ``deadline`` (monotonic)."""
    from grader.run.execute import SandboxedExecute

    run_nb, windows, cell_windows = _instrument(job, nb)
    folder = Path(sandbox.private_folder())
    try:
        executor = SandboxedExecute(job.settings)
        plan = _plan(job, nb, skip, folder, windows, cell_windows, deadline)
        with open(folder / "kernel.stderr", "w") as stderr:
            status = executor.run(run_nb, plan, stderr=stderr)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return KernelRun(
        run_nb=run_nb,
        status=status,
        windows=windows,
        cell_windows=cell_windows,
        kernel_starts=executor.kernel_starts,
        flooded=bool(executor.flooded),
        leftovers=executor.leftovers,
        exceeded=tuple(executor.exceeded),
        cgroup=bool(executor.group),
    )


def _instrument(job: RunJob, nb: NotebookNode) -> "tuple[NotebookNode, Windows, dict[int, Window]]":
    """The copy the kernel runs: test cells replaced by recorder calls with their nonces,
    a last sentinel cell, and the windows the stream accepts them in."""
    from grader.run.stream import Window, Windows

    tests = {t.id: t for t in job.trusted.tests}
    windows = Windows(job.trusted.shortcuts)
    run_nb = copy.deepcopy(nb)
    cell_windows: dict[int, Window] = {}
    for idx, cell in enumerate(run_nb.cells):
        gid = grade_id(cell)
        test = tests.get(gid) if gid is not None else None
        if test is None:
            continue
        if test.hidden:
            cases = {name: hidden_cases(name, job_seed(job, name)) for name, _fn in test.verifies}
            window = windows.add(Window(test.id, "hidden", cases))
            call = (
                f"_attn.hidden({window.nonce!r}, {test.id!r}, {list(test.verifies)!r}, globals())"
            )
        else:
            window = windows.add(Window(test.id, "visible"))
            call = f"_attn.visible({window.nonce!r}, {test.id!r}, {test.source!r}, globals())"
        cell.source = f"import grader.kernel.recorders as _attn\n{call}\ndel _attn"
        cell_windows[idx] = window
    last = windows.add(Window("(end of notebook)", "sentinel"))
    run_nb.cells.append(
        nbformat.v4.new_code_cell(
            f"import grader.kernel.recorders as _attn\n_attn.sentinel({last.nonce!r})\ndel _attn"
        )
    )
    cell_windows[len(run_nb.cells) - 1] = last
    return run_nb, windows, cell_windows


def _scratch_files(
    job: RunJob, nb: NotebookNode, folder: Path, scratch: Path, tmp: str, sandboxed: bool
) -> tuple[dict[str, str], list[str]]:
    """({path in scratch: file to put there}, folders to make there); without the sandbox,
    made and copied now (the sandbox mounts them itself)."""
    from grader.run.execute import font_cache

    notebook_file = folder / f"{job.notebook}.ipynb"
    notebook_file.write_text(nbformat.writes(nb))
    notebook_file.chmod(0o644)
    files = {str(scratch / f"{job.notebook}.ipynb"): str(notebook_file)}
    files |= {str(scratch / ".mpl" / n): p for n, p in font_cache().items()}
    folders = [str(scratch / ".mpl"), str(scratch / ".ipython")]
    if not sandboxed:
        scratch.mkdir()
        for path in [*folders, tmp]:
            Path(path).mkdir(parents=True, exist_ok=True)
        for dest, src in files.items():
            shutil.copyfile(src, dest)
    return files, folders


def _kernel_env(scratch: Path, tmp: str) -> dict[str, str]:
    """The kernel's whole environment: nothing of the grader's own is handed down."""
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(scratch),
        "USER": "student",
        "TMPDIR": tmp,
        "IPYTHONDIR": str(scratch / ".ipython"),
        "MPLCONFIGDIR": str(scratch / ".mpl"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONWARNINGS": "default",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "ATTN_DATA_DIR": str(course.REPO_ROOT / "data"),
    }


def _kernel_settings(job: RunJob, scratch: Path, tmp: str) -> "KernelSettings":
    """grader.kernel.boot's settings (ATTN_KERNEL), without the stream's path."""
    cfg = job.settings
    return {
        "read": sandbox.read_roots(),
        "write": [str(scratch), tmp],
        "libraries": sandbox.library_roots(),
        "memory_bytes": cfg.memory_mb * 2**20 if cfg.memory_mb else None,
        "cpu_seconds": cfg.notebook_timeout + CPU_SECONDS_SPARE,
        "fsize_bytes": cfg.file_mb * 2**20,
        "processes": cfg.max_processes if cfg.sandbox else None,
        "seed": job_seed(job),
    }


def _plan(
    job: RunJob,
    nb: NotebookNode,
    skip: frozenset[int],
    folder: Path,
    windows: "Windows",
    cell_windows: "dict[int, Window]",
    deadline: float,
) -> "Plan":
    from grader.run.execute import Plan

    cfg = job.settings
    sandboxed = cfg.sandbox
    # In the sandbox the scratch folder is a tmpfs at a fixed path, outside its private /tmp,
    # so nothing next to it is readable; without the sandbox it is a folder of the job's.
    scratch = SANDBOX_HOME if sandboxed else folder / "scratch"
    tmp = "/tmp" if sandboxed else str(scratch / "tmp")
    files, folders = _scratch_files(job, nb, folder, scratch, tmp, sandboxed)
    slot = sandbox.slot(cfg.sandbox_uid, cfg.sandbox_slots) if sandboxed else None
    tests = {t.id for t in job.trusted.tests}
    state_cells = {
        i for i, c in enumerate(nb.cells) if c.cell_type == "code" and grade_id(c) not in tests
    }
    return Plan(
        scratch=str(scratch),
        cwd=str(folder if sandboxed else scratch),
        job_dir=str(folder),
        env=_kernel_env(scratch, tmp),
        kernel_settings=_kernel_settings(job, scratch, tmp),
        state_cells=state_cells - skip,
        skip=set(skip),
        windows=windows,
        cell_windows=cell_windows,
        files=files,
        folders=folders,
        sandboxed=sandboxed,
        uid=slot.uid if slot else None,
        scratch_mb=cfg.scratch_mb,
        shm_mb=cfg.shm_mb,
        limits=cgroups.Limits(cfg.memory_mb, cfg.sandbox_cpus, cfg.max_processes),
        grace=cfg.stream_grace,
        trusted_timeout=cfg.validate_timeout,
        deadline=deadline,
        seccomp=seccomp.write(str(folder)) if sandboxed and cfg.seccomp else None,
    )
