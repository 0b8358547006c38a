"""Grade one student's notebook: ``grade(job)`` is a pure function.

Its input is a :class:`Job` (the submission's bytes, the trusted facts about the notebook
and the settings, all plain data); its output the result dict, which also holds the
autograded notebook as JSON. It writes nothing anywhere but a private temporary folder, so
it can run in any worker (the main process writes OUT), and it never raises for anything a
submission can do (a grader bug becomes a flagged "grader error" result).

The job is a list of steps, each reading and extending one :class:`State`, the way
nbgrader's converters list their preprocessors::

    read -> rebuild -> scan -> choose_cells -> execute -> judge -> confirm -> write

A step may finish the job early (nothing submitted, an unreadable file).
"""

import copy
import hashlib
import json
import shutil
import sys
import traceback
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from time import monotonic

import nbformat
from nbgrader.utils import is_grade, is_solution

from grader import cgroups, course, messages, needs, sandbox, seeds
from grader import judge as judging
from grader import rebuild as rebuilding
from grader import scan as scanning
from grader.course import grade_id, nbgrader_meta
from grader.trusted import Trusted

RESULT_VERSION = 5  # bump when grading logic changes, so resumed runs regrade
TAMPERED = "grader instrumentation tampered"
SANDBOX_HOME = Path("/home/student")  # the kernel's scratch folder inside the sandbox
CPU_SECONDS_SPARE = 30  # CPU time beyond notebook_timeout: the wall clock stops a notebook first
NOT_RUN = "(Not re-run when grading: this demo cell only teaches, and no check depends on it.)\n"


# Settings that change no result of a job (intake's budgets act through its notes and
# ``refused``, which are part of the key).
KEYLESS_SETTINGS = frozenset(
    {"workers", "release_cache", "sandbox_slots", "unpack_mb", "unpack_files", "unpack_depth",
     "batch_unpack_mb", "batch_unpack_files", "due_dates", "extensions", "late_policy",
     "late_penalty"}
)  # fmt: skip


@dataclass
class Job:
    student: str
    notebook: str
    submission: bytes | None  # the submitted file, or None when not submitted
    trusted: Trusted
    settings: dict  # GraderSettings.snapshot()
    notes: tuple = ()  # intake notes (wrong name, from a zip, ...)
    name: str = ""  # the file's name as submitted
    refused: str = ""  # the rows' message when intake refused the student (over a budget)


@dataclass
class State:
    job: Job
    result: dict | None = None  # set by a step that finishes the job
    notes: list = field(default_factory=list)
    flags: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    cells: list = field(default_factory=list)  # the submission's cells (rebuild.submitted_cells)
    nb: object = None  # the rebuilt notebook, graded and returned
    found: dict = field(default_factory=dict)  # answer grade_id -> "found" | "missing"
    status: dict = field(default_factory=dict)  # run notebook cell index -> status
    run_nb: object = None  # the instrumented copy the kernel ran
    windows: object = None  # grader.stream.Windows
    cell_windows: dict = field(default_factory=dict)
    verdicts: dict = field(default_factory=dict)  # test id -> {"passed", "message", "flags"}
    tampered: list = field(default_factory=list)
    judge_failed: str = ""  # a message for every autograded row when judging failed
    skip: set = field(default_factory=set)  # demo cells this run leaves out (grader.needs)
    before_run: tuple = ()  # (flags, notes, tampered) before execute: confirm may run again
    limits: str = ""  # how the sandbox's limits applied: "cgroup", or "rlimits" per process


@cache
def _grader_fingerprint() -> bytes:
    """The grading code itself: results made by other code are not reused."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    patterns = ("grader/*.py", "grader/kernel/*.py", "grader/hidden/*.py", "attnlib/checks/*.py")
    for pattern in patterns:
        for path in sorted(root.glob(pattern)):
            h.update(path.name.encode() + path.read_bytes())
    return h.digest()


def job_key(job: Job) -> str:
    """Identifies a job's inputs: a finished result with the same key is reused on resume."""
    h = hashlib.sha256(_grader_fingerprint())
    parts = (RESULT_VERSION, job.student, job.notebook, sorted(job.notes), job.name, job.refused)
    for part in parts:
        h.update(repr(part).encode())
    for name, value in sorted(job.settings.items()):
        if name not in KEYLESS_SETTINGS:
            h.update(f"{name}={value!r}".encode())
    h.update(job.submission if job.submission is not None else b"<missing>")
    h.update(job.trusted.release.encode())
    h.update(json.dumps(job.trusted.source_cells, sort_keys=True).encode())
    return h.hexdigest()


# --------------------------------------------------------------------------- results


def _rows(job: Job, points: dict, said: dict, written: dict) -> list[dict]:
    rows = []
    for ex in job.trusted.exercises:
        if ex.autograded:
            got = sum(points.get(t, 0.0) for t in ex.test_ids)
            msg = next((said[t] for t in ex.test_ids if said.get(t)), "")
            rows.append(
                {
                    "exercise": ex.grade_id,
                    "points": got,
                    "max_points": ex.max_points,
                    "message": "" if got >= ex.max_points else msg,
                    "autograded": True,
                }
            )
        else:
            points_, message = written.get(ex.grade_id, ("", "graded by hand"))
            rows.append(
                {
                    "exercise": ex.grade_id,
                    "points": points_,
                    "max_points": ex.max_points,
                    "message": message,
                    "autograded": False,
                }
            )
    return rows


def missing_result(job: Job, message: str, flags=(), notes=()) -> dict:
    rows = _rows(job, {}, {}, {})
    for row in rows:
        row.update(points=0.0, message=message)
    return {
        "student": job.student,
        "notebook": job.notebook,
        "status": "not graded",
        "rows": rows,
        "flags": list(flags),
        "notes": list(notes),
        "timings": {},
        "sandboxed": job.settings["sandbox"],
    }


def grade(job: Job) -> dict:
    start = monotonic()
    state = State(job, notes=list(job.notes))
    try:
        for step in STEPS:
            begun = monotonic()
            step(state)
            state.timings[step.__name__] = round(monotonic() - begun, 3)
            if state.result is not None:
                break
        result = state.result
    except Exception:  # noqa: BLE001 (a grader bug must not stop the batch)
        result = missing_result(
            job,
            messages.FAILED,
            flags=["grader error: " + traceback.format_exc(limit=3)[-600:]],
            notes=state.notes,
        )
    result["timings"] = {**state.timings, "total": round(monotonic() - start, 3)}
    result["key"] = job_key(job)
    return result


# --------------------------------------------------------------------------- steps


def read(s: State) -> None:
    """The submitted bytes as notebook JSON, however they were encoded, and which release
    they say they came from."""
    job = s.job
    if job.submission is None:
        message = job.refused or "Notebook not submitted."
        flags = [job.refused] if job.refused else []
        s.result = missing_result(job, message, flags=flags, notes=s.notes)
        return
    try:
        data, read_notes = rebuilding.parse(job.submission)
    except rebuilding.Unreadable as err:
        s.result = missing_result(
            job,
            f"Could not read your notebook: {err}.",
            flags=[f"unreadable notebook: {err}"],
            notes=s.notes,
        )
        return
    s.notes += read_notes
    s.notes += rebuilding.release_notes(data, job.notebook, job.trusted.version, job.name)
    s.cells = rebuilding.submitted_cells(data)


def rebuild(s: State) -> None:
    """The notebook that gets graded: the trusted release with the student's answers."""
    base = nbformat.reads(s.job.trusted.release, as_version=4)
    s.nb, s.found, flags = rebuilding.rebuild(base, s.cells, s.job.trusted.source_cells)
    s.flags += flags


def scan(s: State) -> None:
    """Flags for a human: suspicious code in the autograded answers (never a grade)."""
    trusted = s.job.trusted
    names = {ex.grade_id for ex in trusted.exercises}
    autograded = {ex.grade_id for ex in trusted.exercises if ex.autograded}
    answers = {}
    for cell in reversed(s.cells):
        gid = cell["nbgrader"].get("grade_id")
        if gid in s.found:
            answers[gid] = cell["source"]
    for gid, source in answers.items():
        if gid in autograded:
            s.flags += scanning.scan_cell(gid, source, trusted.modules, names)


def code_view(nb, trusted: Trusted) -> tuple[list[int], list[str], set[int], set[int]]:
    """A notebook as ``grader.needs`` reads it: its code cells' indexes, their sources as
    they run (a test cell reads its check, or the functions it verifies), and the positions
    (in that list) of the demo cells and of the answer cells."""
    tests = {t.id: t for t in trusted.tests}
    answers = {ex.grade_id for ex in trusted.exercises}
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    sources, answer_at = [], set()
    for k, i in enumerate(code):
        gid = grade_id(nb.cells[i])
        test = tests.get(gid)
        if test is None:
            sources.append(nb.cells[i].source)
        else:
            sources.append("\n".join(fn for _, fn in test.verifies) if test.hidden else test.source)
        if gid in answers:
            answer_at.add(k)
    demo = {k for k, i in enumerate(code) if i in trusted.demo}
    return code, sources, demo, answer_at


def choose_cells(s: State) -> None:
    """The demo cells no check depends on, left out of the run (``grader.needs``); none when
    the settings say so or any cell cannot be read with certainty."""
    trusted = s.job.trusted
    if not s.job.settings["skip_demo_cells"] or not trusted.demo or _unwritten(s.nb, trusted):
        return
    code, sources, demo, answers = code_view(s.nb, trusted)
    try:
        left_out = needs.skippable(sources, demo, set(trusted.module_names), answers)
    except needs.Unclear:
        left_out = set()
    s.skip = {code[k] for k in left_out}


def likely_cost(job: Job) -> tuple:
    """A sort key, larger for a job that likely takes longer, guessed from its bytes without
    reading them: one that still holds a release stub runs in full, and the more demo cells
    a whole notebook has, the longer it runs. Only the order jobs start in (the longest
    first, so that a batch does not end on one long notebook while the other workers
    wait): a wrong guess costs time, never a grade."""
    if job.submission is None:
        return (False, 0)
    stub_ends = {stub.strip().splitlines()[-1].strip() for stub in job.trusted.stubs.values()}
    stubbed = any(end.encode() in job.submission for end in stub_ends if end)
    return (stubbed or not job.settings["skip_demo_cells"], len(job.trusted.demo))


def _unwritten(nb, trusted: Trusted) -> bool:
    """An exercise still holds the release's stub: its check cannot pass, so a short run
    would only be run again in full."""
    return any(
        trusted.stubs.get(grade_id(c)) == c.source for c in nb.cells if c.cell_type == "code"
    )


def confirm(s: State) -> None:
    """A run that left demo cells out stands only when every check passed and no limit was
    hit; otherwise the notebook runs again in full, and that run is graded."""
    if not s.skip or _all_passed(s):
        return
    s.flags, s.notes, s.tampered = s.before_run
    s.skip, s.judge_failed, s.verdicts = set(), "", {}
    s.timings["short_run"] = round(s.timings["execute"] + s.timings["judge"], 3)
    for step in (execute, judge):  # the timings describe the run that is graded
        begun = monotonic()
        step(s)
        s.timings[step.__name__] = round(monotonic() - begun, 3)
    s.timings["full_run"] = round(s.timings["execute"] + s.timings["judge"], 3)


def _all_passed(s: State) -> bool:
    tests = [t.id for t in s.job.trusted.tests]
    return (
        not s.judge_failed
        and not s.tampered
        and (s.flags, s.notes) == tuple(s.before_run[:2])
        and all(st.get("status") == "ok" for st in s.status.values())
        and all(s.verdicts.get(t, {}).get("passed") for t in tests)
    )


def _instrument(s: State):
    """The copy the kernel runs: test cells replaced by recorder calls with their nonces,
    a last sentinel cell, and the windows the stream accepts them in."""
    from grader.stream import Window, Windows

    job = s.job
    tests = {t.id: t for t in job.trusted.tests}
    windows = Windows(job.trusted.shortcuts)
    run_nb = copy.deepcopy(s.nb)
    cell_windows = {}
    for idx, cell in enumerate(run_nb.cells):
        test = tests.get(grade_id(cell))
        if test is None:
            continue
        if test.hidden:
            cases = {
                name: judging.hidden_cases(name, _seed(job, name)) for name, _fn in test.verifies
            }
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


def _seed(job: Job, name: str = "") -> int:
    return seeds.derived(job.settings["seed"], job.student, job.notebook, name)


def _scratch_files(s: State, folder: Path, scratch: Path, tmp: str, sandboxed: bool):
    """({path in scratch: file to put there}, folders to make there); without the sandbox,
    made and copied now (the sandbox mounts them itself)."""
    from grader.execute import font_cache

    notebook_file = folder / f"{s.job.notebook}.ipynb"
    notebook_file.write_text(nbformat.writes(s.nb))
    notebook_file.chmod(0o644)
    files = {str(scratch / f"{s.job.notebook}.ipynb"): str(notebook_file)}
    files |= {str(scratch / ".mpl" / n): p for n, p in font_cache().items()}
    folders = [str(scratch / ".mpl"), str(scratch / ".ipython")]
    if not sandboxed:
        scratch.mkdir()
        for path in [*folders, tmp]:
            Path(path).mkdir(parents=True, exist_ok=True)
        for dest, src in files.items():
            shutil.copyfile(src, dest)
    return files, folders


def _kernel_env(scratch: Path, tmp: str) -> dict:
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


def _plan(s: State, folder: Path, windows, cell_windows):
    from grader.execute import Plan

    job, cfg = s.job, s.job.settings
    sandboxed = cfg["sandbox"]
    # In the sandbox the scratch folder is a tmpfs at a fixed path, outside its private /tmp,
    # so nothing next to it is readable; without the sandbox it is a folder of the job's.
    scratch = SANDBOX_HOME if sandboxed else folder / "scratch"
    tmp = "/tmp" if sandboxed else str(scratch / "tmp")
    files, folders = _scratch_files(s, folder, scratch, tmp, sandboxed)
    slot = sandbox.slot(cfg["sandbox_uid"], cfg["sandbox_slots"]) if sandboxed else None
    kernel_settings = {
        "read": sandbox.read_roots(),
        "write": [str(scratch), tmp],
        "libraries": sandbox.library_roots(),
        "memory_bytes": cfg["memory_mb"] * 2**20 if cfg["memory_mb"] else None,
        "cpu_seconds": cfg["notebook_timeout"] + CPU_SECONDS_SPARE,
        "fsize_bytes": cfg["file_mb"] * 2**20,
        "processes": cfg["max_processes"] if sandboxed else None,
        "seed": _seed(job),
    }
    tests = {t.id for t in job.trusted.tests}
    state_cells = {
        i for i, c in enumerate(s.nb.cells) if c.cell_type == "code" and grade_id(c) not in tests
    }
    return Plan(
        scratch=str(scratch),
        cwd=str(folder if sandboxed else scratch),
        job_dir=str(folder),
        env=_kernel_env(scratch, tmp),
        kernel_settings=kernel_settings,
        state_cells=state_cells - s.skip,
        skip=set(s.skip),
        windows=windows,
        cell_windows=cell_windows,
        files=files,
        folders=folders,
        sandboxed=sandboxed,
        uid=slot.uid if slot else None,
        scratch_mb=cfg["scratch_mb"],
        shm_mb=cfg["shm_mb"],
        limits=cgroups.Limits(cfg["memory_mb"], cfg["sandbox_cpus"], cfg["max_processes"]),
        grace=cfg["stream_grace"],
        trusted_timeout=cfg["validate_timeout"],
    )


def execute(s: State) -> None:
    """Run the instrumented copy in the sandbox; keep statuses, outputs, records and logs."""
    from grader.execute import SandboxedExecute

    cfg = s.job.settings
    s.before_run = (list(s.flags), list(s.notes), list(s.tampered))
    s.run_nb, s.windows, s.cell_windows = _instrument(s)
    folder = Path(sandbox.private_folder())
    try:
        plan = _plan(s, folder, s.windows, s.cell_windows)
        executor = SandboxedExecute(
            timeout=cfg["cell_timeout"],
            notebook_timeout=cfg["notebook_timeout"],
            max_output_chars=cfg["max_output_chars"],
            max_restarts=cfg["max_restarts"],
        )
        with open(folder / "kernel.stderr", "w") as stderr:
            s.status = executor.run(s.run_nb, plan, stderr=stderr)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    s.timings["kernel_starts"] = executor.kernel_starts
    if executor.flooded:
        s.notes.append(f"output flood cut at {executor.max_output_chars} characters per cell")
    if executor.leftovers:
        s.flags.append(f"sandbox: {executor.leftovers} processes outlived their kernel (killed)")
    if executor.exceeded:  # as when judging exceeds its limits: the notebook scores 0
        hit = ", ".join(executor.exceeded)
        s.flags.append(f"sandbox exceeded its limits ({hit})")
        s.judge_failed = messages.not_graded(f"your notebook exceeded its limits ({hit})")
    s.limits = ("cgroup" if executor.group else "rlimits") if cfg["sandbox"] else ""
    s.flags += [f"sandbox {e['kind']}: {e['detail']}" for e in s.windows.logs]
    s.tampered += s.windows.tampered


def judge(s: State) -> None:
    """Decide every test cell that ran to its end, in a bounded process of its own."""
    cfg = s.job.settings
    records = {
        w.test_id: w.record
        for w in s.cell_windows.values()
        if w.kind != "sentinel" and w.ended and w.record is not None
    }
    request = {
        "imports": s.job.trusted.imports,
        "tests": [
            {
                "id": t.id,
                "exercise": t.exercise,
                "hidden": t.hidden,
                "source": t.source,
                "verifies": list(t.verifies),
            }
            for t in s.job.trusted.tests
        ],
        "cells": _cells_as_run(s),
        "records": records,
        "seeds": {n: _seed(s.job, n) for t in s.job.trusted.tests for n, _ in t.verifies},
        "clean": sorted(grade_id(s.nb.cells[i]) for i in _clean(s)),
    }
    outcome = judging.judge_bounded(request, cfg["judge_seconds"], cfg["judge_memory_mb"])
    if "exceeded" in outcome:
        s.judge_failed = messages.not_graded(judging.EXCEEDED)
        s.flags.append(f"{judging.EXCEEDED} ({outcome['exceeded']})")
    elif "error" in outcome:
        s.judge_failed = messages.FAILED
        s.flags.append(f"grader error while judging: {outcome['error']}")
    else:
        s.verdicts = outcome["verdicts"]
        s.tampered += outcome["tampered"]


def _cells_as_run(s: State) -> list:
    """[[grade id or "", source]] of the code cells the kernel ran, as they run (the judge
    reads which earlier exercises a failed check relies on)."""
    code, sources, _, _ = code_view(s.nb, s.job.trusted)
    ids = [grade_id(s.nb.cells[i]) or "" for i in code]
    return [[g, src] for i, g, src in zip(code, ids, sources, strict=True) if i not in s.skip]


def _clean(s: State) -> set[int]:
    """Indexes of the cells that ran before any hidden input reached the kernel: those
    before the first hidden test cell, in a run with one kernel (after a restart, cells run
    again later, and files may outlive a kernel). Only their error texts may be quoted."""
    if s.timings.get("kernel_starts") != 1:
        return set()
    hidden = {t.id for t in s.job.trusted.tests if t.hidden}
    first = next(
        (i for i, c in enumerate(s.nb.cells) if grade_id(c) in hidden),
        len(s.nb.cells),
    )
    return {i for i in range(first) if grade_id(s.nb.cells[i])}


def _answer_message(name: str, status: dict | None, cfg: dict, quote: bool) -> str | None:
    kind = (status or {}).get("status")
    if kind == "error":
        ename = judging.error_name(status.get("ename"), quote)
        text = f": {status.get('evalue')}" if quote else ""
        return f"Your `{name}` cell raised {ename}{text}".strip()
    if kind == "timeout":
        return f"Your `{name}` cell ran longer than the {cfg['cell_timeout']} s time limit."
    if kind == "died":
        return (
            f"Your `{name}` cell stopped the Python kernel (a crash, os._exit, or more "
            f"than the {cfg['memory_mb']} MB memory limit)."
        )
    if kind == "deadline":
        return f"Not graded: the notebook ran past its {cfg['notebook_timeout']} s time limit."
    return None


def _test_status_message(name: str, status: dict, cfg: dict) -> str:
    kind = status.get("status")
    if kind == "timeout":
        return f"Checking `{name}` took longer than the {cfg['cell_timeout']} s time limit."
    if kind == "died":
        return (
            f"The Python kernel stopped while checking `{name}` (a crash, os._exit, or "
            f"more than the {cfg['memory_mb']} MB memory limit)."
        )
    if kind == "deadline":
        return f"Not graded: the notebook ran past its {cfg['notebook_timeout']} s time limit."
    return f"Not graded: the kernel kept crashing before `{name}` could be checked."


def _verdict_outputs(passed: bool, message: str):
    if passed:
        return [nbformat.v4.new_output("stream", name="stdout", text="✓ passed\n")]
    return [
        nbformat.v4.new_output(
            "error",
            ename="CheckFailed",
            evalue=message,
            traceback=[f"\x1b[1;31m✗ {message}\x1b[0m"],
        )
    ]


def _test_verdict(s: State, test, idx: int, answer_status: dict):
    """(passed, message) of one test cell, from its run status and the judge's verdict."""
    cfg = s.job.settings
    st = s.status.get(idx, {"status": "not-run"})
    if s.judge_failed:
        return False, s.judge_failed
    if st.get("status") not in ("ok", "error"):
        return False, _test_status_message(test.exercise, st, cfg)
    verdict = s.verdicts.get(test.id)
    if verdict is None:  # ran, but left no record (flagged as tampering)
        return False, f"The check of `{test.exercise}` did not run."
    passed, message = verdict["passed"], verdict["message"]
    s.flags += verdict["flags"]
    if not passed and s.found.get(test.exercise) == "missing":
        message = f"The answer cell for `{test.exercise}` is missing from your notebook."
    elif not passed and ("is not defined" in message or "did not run" in message):
        status, quote = answer_status.get(test.exercise, (None, False))
        message = _answer_message(test.exercise, status, cfg, quote) or message
    return passed, message


def write(s: State) -> None:
    """The result: rows, per-test points, flags, and the autograded notebook as JSON."""
    job = s.job
    tests = {t.id: t for t in job.trusted.tests}
    answer_status, clean = {}, _clean(s)
    for idx, cell in enumerate(s.run_nb.cells[: len(s.nb.cells)]):
        gid = grade_id(cell)
        if gid in s.found:
            answer_status[gid] = (s.status.get(idx), idx in clean)
    points, said = {}, {}
    for idx, cell in enumerate(s.nb.cells):
        gid = grade_id(cell)
        test = tests.get(gid)
        if test is None:
            if cell.cell_type == "code" and idx in s.status:
                cell.outputs = s.run_nb.cells[idx].get("outputs", [])
            elif idx in s.skip:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=NOT_RUN)]
            continue
        passed, message = _test_verdict(s, test, idx, answer_status)
        if s.tampered:
            passed, message = False, messages.TAMPERED
        points[gid] = test.points if passed else 0.0
        said[gid] = message
        cell.outputs = _verdict_outputs(passed, message)
        cell.execution_count = None
    s.flags += [f"{TAMPERED}: {reason}" for reason in s.tampered]
    written = {}
    for cell in s.nb.cells:
        if is_solution(cell) and is_grade(cell):
            unchanged = nbgrader_meta(cell).get("checksum") == _checksum(cell)
            written[grade_id(cell)] = (
                (0.0, "No answer written.") if unchanged else ("", "graded by hand")
            )
    s.result = {
        "student": job.student,
        "notebook": job.notebook,
        "status": "graded",
        "rows": _rows(job, points, said, written),
        "tests": {
            g: {"points": points[g], "max_points": tests[g].points, "message": said[g]}
            for g in points
        },
        "flags": list(dict.fromkeys(s.flags)),
        "notes": list(dict.fromkeys(s.notes)),
        "autograded": nbformat.writes(s.nb),
        "sandboxed": job.settings["sandbox"],
        "limits": s.limits,
        "demo_cells_left_out": len(s.skip),
    }
    s.timings["slowest_cell"] = max((st.get("seconds", 0) for st in s.status.values()), default=0)


def _checksum(cell) -> str:
    from nbgrader.utils import compute_checksum

    return compute_checksum(cell)


STEPS = (read, rebuild, scan, choose_cells, execute, judge, confirm, write)
