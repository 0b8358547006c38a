"""Grade one student's notebook: ``grade(job)`` is a pure function.

Its input is a :class:`Job` (the submission's bytes, the trusted facts about the notebook
and the settings, all plain data); its output a :class:`grader.results.result.Result`, which also
holds the autograded notebook as JSON. It writes nothing anywhere but a private temporary
folder, so it can run in any worker (the main process writes OUT), and it never raises for
anything a submission can do (a grader bug becomes a flagged "grader error" result).

The job is a chain of stages, each a frozen dataclass made by a function from the one
before::

    Job -read-> Submitted -rebuild, scan-> Rebuilt -execute-> Run -judge-> Verdicts -write-> Result

``read`` may end the job early (nothing submitted, an unreadable file). A run that leaves
demo cells out (``choose_cells``) stands only when everything in it went well; otherwise
the notebook runs again in full, from the same Rebuilt stage (``grade``'s loop).
"""

from __future__ import annotations  # CellStatus is only imported for the type checker

import copy
import hashlib
import json
import logging
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import cache
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import nbformat
from nbformat import NotebookNode
from nbgrader.utils import is_grade, is_solution

from grader.batch import reads
from grader.course import grade_id, nbgrader_meta
from grader.intake import bounded
from grader.intake import rebuild as rebuilding
from grader.intake import scan as scanning
from grader.intake.rebuild import Found, SubmittedCell
from grader.judging import judge as judging
from grader.judging.trusted import TestCell, Trusted
from grader.results import messages
from grader.results.inert import inert_outputs
from grader.results.result import GRADED, Result, exercise_rows, ungraded_result
from grader.run import kernelrun, needs
from grader.settings import Snapshot

if TYPE_CHECKING:  # nbclient and nbgrader's preprocessors load in a run only
    from grader.run.execute import CellStatus

RESULT_VERSION = 5  # bump when grading logic changes, so resumed runs regrade
TAMPERED = "grader instrumentation tampered"
# What a notebook's kernels may take past notebook_timeout, its runs together: each run's
# last cell (a second), a kernel stopped and its sandbox's processes and folders removed.
KERNEL_SPARE = 20
log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")
Timings = dict[str, float]  # stage name -> seconds, and a few counts
AnswerStatuses = dict[str, tuple["CellStatus | None", bool]]


# Settings that change no result of a job (intake's budgets act through its notes and
# ``refused``, which are part of the key).
KEYLESS_SETTINGS = frozenset(
    {"workers", "release_cache", "sandbox_slots", "unpack_mb", "unpack_files", "unpack_depth",
     "batch_unpack_mb", "batch_unpack_files", "due_dates", "extensions", "late_policy",
     "late_penalty", "lms", "lms_pattern", "private_outputs", "keep_changed_hand_grades",
     "zip_timezone", "canvas_assignments"}
)  # fmt: skip


@dataclass(frozen=True)
class Job:
    student: str
    notebook: str
    submission: bytes | None  # the submitted file, or None when not submitted
    trusted: Trusted
    settings: Snapshot  # GraderSettings.snapshot()
    notes: tuple[str, ...] = ()  # intake notes (wrong name, from a zip, ...)
    name: str = ""  # the file's name as submitted
    refused: str = ""  # the rows' message when intake refused the student (over a budget)


@dataclass(frozen=True)
class Submitted:
    job: Job
    cells: tuple[SubmittedCell, ...]  # the submission's cells (rebuild.submitted_cells)
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Rebuilt:
    job: Job
    cells: tuple[SubmittedCell, ...]
    nb: NotebookNode  # the trusted release with the student's answers: graded, never changed
    found: dict[str, Found]  # answer grade_id -> "found" | "missing"
    flags: tuple[str, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Run:
    rebuilt: Rebuilt
    skip: frozenset[int]  # demo cells this run left out (grader.run.needs)
    kernel: kernelrun.KernelRun
    flags: tuple[str, ...]  # the Rebuilt stage's and this run's
    notes: tuple[str, ...]
    failed: str  # a message for every autograded row when the run exceeded its limits
    limits: str  # how the sandbox's limits applied: "cgroup", or "rlimits" per process


@dataclass(frozen=True)
class Verdicts:
    run: Run
    verdicts: dict[str, judging.Verdict]  # test id -> the judge's verdict
    flags: tuple[str, ...]  # the run's and the judge's
    tampered: tuple[str, ...]
    failed: str  # a message for every autograded row when running or judging failed


@cache
def _grader_fingerprint(notebook: str) -> bytes:
    """What grading ``notebook`` reads: results made by other code are not reused."""
    return code_fingerprint(Path(__file__).resolve().parents[2], notebook)


def code_fingerprint(root: Path, notebook: str) -> bytes:
    """A hash of every file grading ``notebook`` reads under ``root`` (with its path, so a
    moved file counts; grader.batch.reads finds them by reading the code): an edit to
    another notebook's checks, or to an attnlib module it never imports, changes nothing.
    The trusted release and the settings are hashed by job_key."""
    h = hashlib.sha256()
    for path in reads.notebook_files(root, notebook):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.digest()


def job_key(job: Job) -> str:
    """Identifies a job's inputs: a finished result with the same key is reused on resume."""
    h = hashlib.sha256(_grader_fingerprint(job.notebook))
    parts = (RESULT_VERSION, job.student, job.notebook, sorted(job.notes), job.name, job.refused)
    for part in parts:
        h.update(repr(part).encode())
    for name, value in sorted(asdict(job.settings).items()):
        if name not in KEYLESS_SETTINGS:
            h.update(f"{name}={value!r}".encode())
    h.update(job.submission if job.submission is not None else b"<missing>")
    h.update(job.trusted.release.encode())
    h.update(json.dumps(job.trusted.source_cells, sort_keys=True).encode())
    return h.hexdigest()


# --------------------------------------------------------------------------- the job


def grade(job: Job) -> Result:
    """The result of ``job``, with how long each stage took; the short run (demo cells left
    out) and, where it does not stand, the full run are the loop below."""
    start, timings = monotonic(), Timings()
    reached: Job | Submitted | Result | Rebuilt | Run = job  # its notes go in a failure's result
    try:
        submitted = reached = _timed(timings, read, job)
        if isinstance(submitted, Result):
            return _finished(submitted, job, timings, start)
        rebuilt = reached = _timed(timings, scan, _timed(timings, rebuild, submitted))
        chosen = _timed(timings, choose_cells, rebuilt)
        looping = monotonic()
        # One time budget: the full run gets what the short run left, none once it is spent.
        deadline, kernels = looping + job.settings.notebook_timeout, 0.0
        for skip in (chosen, frozenset[int]()):
            run = reached = _timed(timings, execute, rebuilt, skip, deadline)
            kernels += timings["execute"]
            verdicts = _timed(timings, judge, run)
            if stands(verdicts) or monotonic() >= deadline:
                break
            timings["short_run"] = round(timings["execute"] + timings["judge"], 3)
        last_run = round(timings["execute"] + timings["judge"], 3)
        if "short_run" in timings:
            timings["full_run"] = last_run
        # "confirm": what deciding whether a run stands cost, with the full run if one followed
        timings["confirm"] = round(monotonic() - looping - timings.get("short_run", last_run), 3)
        timings["kernel_starts"] = run.kernel.kernel_starts
        timings["kernels"] = round(kernels, 3)  # both runs: notebook_timeout + KERNEL_SPARE
        result = _timed(timings, write, verdicts)
    except Exception:  # noqa: BLE001 (a grader bug must not stop the batch)
        log.info("%s/%s: grader error (flagged in its result)", job.student, job.notebook,
                 exc_info=log.isEnabledFor(logging.DEBUG))  # fmt: skip
        flag = "grader error: " + traceback.format_exc(limit=3)[-600:]
        notes = getattr(reached, "notes", job.notes)
        result = ungraded_result(job, messages.FAILED, flags=[flag], notes=notes)
    return _finished(result, job, timings, start)


def _timed(timings: Timings, stage: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    begun = monotonic()
    made = stage(*args, **kwargs)
    timings[stage.__name__] = round(monotonic() - begun, 3)
    return made


def _finished(result: Result, job: Job, timings: Timings, start: float) -> Result:
    timings = {**result.timings, **timings, "total": round(monotonic() - start, 3)}
    log.debug("%s/%s: %s in %s", job.student, job.notebook, result.status, timings)
    return result.with_timings(timings, job_key(job))


def read(job: Job) -> Submitted | Result:
    """The submitted bytes as notebook cells, however they were encoded, and which release
    they say they came from."""
    if job.submission is None:
        message = job.refused or "Notebook not submitted."
        flags = [job.refused] if job.refused else []
        return ungraded_result(job, message, flags=flags, notes=job.notes)
    release = (job.notebook, job.trusted.version, job.name)
    try:  # in a bounded process of its own: never parsed in this one
        cells, read_notes = bounded.read(job.submission, bounded.Bounds.of(job.settings), release)
    except rebuilding.Unreadable as err:
        flags = [f"unreadable notebook: {err}"]
        return ungraded_result(job, f"Could not read your notebook: {err}.", flags, job.notes)
    return Submitted(job, cells, (*job.notes, *read_notes))


def rebuild(submitted: Submitted) -> Rebuilt:
    """The notebook that gets graded: the trusted release with the student's answers."""
    job = submitted.job
    base = nbformat.reads(job.trusted.release, as_version=4)
    nb, found, flags = rebuilding.rebuild(base, list(submitted.cells), job.trusted.source_cells)
    return Rebuilt(job, submitted.cells, nb, found, tuple(flags), submitted.notes)


def scan(rebuilt: Rebuilt) -> Rebuilt:
    """Flags for a human: suspicious code in the autograded answers (never a grade)."""
    trusted = rebuilt.job.trusted
    names = {ex.grade_id for ex in trusted.exercises}
    autograded = {ex.grade_id for ex in trusted.exercises if ex.autograded}
    answers = {}
    for cell in reversed(rebuilt.cells):
        gid = cell["nbgrader"].get("grade_id")
        if gid in rebuilt.found:
            answers[gid] = cell["source"]
    flags = [
        flag
        for gid, source in answers.items()
        if gid in autograded
        for flag in scanning.scan_cell(gid, source, trusted.modules, names)
    ]
    return replace(rebuilt, flags=(*rebuilt.flags, *flags))


def code_view(
    nb: NotebookNode, trusted: Trusted
) -> tuple[list[int], list[str], set[int], set[int]]:
    """A notebook as ``grader.run.needs`` reads it: its code cells' indexes, their sources as
    they run (a test cell reads its check, or the functions it verifies), and the positions
    (in that list) of the demo cells and of the answer cells."""
    tests = {t.id: t for t in trusted.tests}
    answers = {ex.grade_id for ex in trusted.exercises}
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    sources, answer_at = [], set()
    for k, i in enumerate(code):
        gid = grade_id(nb.cells[i]) or ""
        test = tests.get(gid)
        if test is None:
            sources.append(nb.cells[i].source)
        else:
            sources.append("\n".join(fn for _, fn in test.verifies) if test.hidden else test.source)
        if gid in answers:
            answer_at.add(k)
    demo = {k for k, i in enumerate(code) if i in trusted.demo}
    return code, sources, demo, answer_at


def choose_cells(rebuilt: Rebuilt) -> frozenset[int]:
    """The demo cells no check depends on, left out of the first run (``grader.run.needs``); none
    when the settings say so or any cell cannot be read with certainty."""
    trusted, nb = rebuilt.job.trusted, rebuilt.nb
    if not rebuilt.job.settings.skip_demo_cells or not trusted.demo or _unwritten(nb, trusted):
        return frozenset()
    code, sources, demo, answers = code_view(nb, trusted)
    try:
        left_out = needs.skippable(sources, demo, set(trusted.module_names), answers)
    except needs.Unclear:
        left_out = set()
    return frozenset(code[k] for k in left_out)


def likely_cost(job: Job) -> tuple[bool, int]:
    """A sort key, larger for a job that likely takes longer, guessed from its bytes without
    reading them: one that still holds a release stub runs in full, and the more demo cells
    a whole notebook has, the longer it runs. Only the order jobs start in (the longest
    first, so that a batch does not end on one long notebook while the other workers
    wait): a wrong guess costs time, never a grade."""
    if job.submission is None:
        return (False, 0)
    stub_ends = {stub.strip().splitlines()[-1].strip() for stub in job.trusted.stubs.values()}
    stubbed = any(end.encode() in job.submission for end in stub_ends if end)
    return (stubbed or not job.settings.skip_demo_cells, len(job.trusted.demo))


def _unwritten(nb: NotebookNode, trusted: Trusted) -> bool:
    """An exercise still holds the release's stub: its check cannot pass, so a short run
    would only be run again in full."""
    return any(
        trusted.stubs.get(grade_id(c) or "") == c.source for c in nb.cells if c.cell_type == "code"
    )


def execute(rebuilt: Rebuilt, skip: frozenset[int], deadline: float) -> Run:
    """Run the instrumented copy in the sandbox, its kernels ending by ``deadline``; keep
    statuses, outputs, records and logs."""
    cfg = rebuilt.job.settings
    ran = kernelrun.run(rebuilt.job, rebuilt.nb, skip, deadline)
    flags, notes, failed = list(rebuilt.flags), list(rebuilt.notes), ""
    if ran.flooded:
        notes.append(f"output flood cut at {cfg.max_output_chars} characters per cell")
    if ran.leftovers:
        flags.append(f"sandbox: {ran.leftovers} processes outlived their kernel (killed)")
    if ran.exceeded:  # as when judging exceeds its limits: the notebook scores 0
        hit = ", ".join(ran.exceeded)
        flags.append(f"sandbox exceeded its limits ({hit})")
        failed = messages.not_graded_because(f"your notebook exceeded its limits ({hit})")
    limits = ("cgroup" if ran.cgroup else "rlimits") if cfg.sandbox else ""
    flags += [f"sandbox {e['kind']}: {e['detail']}" for e in ran.windows.logs]
    return Run(rebuilt, skip, ran, tuple(flags), tuple(notes), failed, limits)


def judge(run: Run) -> Verdicts:
    """Decide every test cell that ran to its end, in a bounded process of its own."""
    job, nb = run.rebuilt.job, run.rebuilt.nb
    records = {
        w.test_id: w.record
        for w in run.kernel.cell_windows.values()
        if w.kind != "sentinel" and w.ended and w.record is not None
    }
    request = {
        "imports": job.trusted.imports,
        "tests": [
            {
                "id": t.id,
                "exercise": t.exercise,
                "hidden": t.hidden,
                "source": t.source,
                "verifies": list(t.verifies),
            }
            for t in job.trusted.tests
        ],
        "cells": _cells_as_run(run),
        "records": records,
        "seeds": {n: kernelrun.job_seed(job, n) for t in job.trusted.tests for n, _ in t.verifies},
        "clean": sorted(grade_id(nb.cells[i]) or "" for i in _clean(run)),
    }
    cfg = job.settings
    outcome = judging.judge_bounded(request, cfg.judge_seconds, cfg.judge_memory_mb)
    return _verdicts(run, outcome)


def _verdicts(run: Run, outcome: dict[str, Any]) -> Verdicts:
    tampered = tuple(run.kernel.windows.tampered)
    if "exceeded" in outcome:
        flag = f"{judging.EXCEEDED} ({outcome['exceeded']})"
        return Verdicts(
            run, {}, (*run.flags, flag), tampered, messages.not_graded_because(judging.EXCEEDED)
        )
    if "error" in outcome:
        flag = f"grader error while judging: {outcome['error']}"
        return Verdicts(run, {}, (*run.flags, flag), tampered, messages.FAILED)
    tampered += tuple(outcome["tampered"])
    return Verdicts(run, outcome["verdicts"], run.flags, tampered, run.failed)


def stands(verdicts: Verdicts) -> bool:
    """A run that left demo cells out stands only when every check passed and nothing was
    flagged, noted or hit a limit; otherwise the notebook runs again in full."""
    run = verdicts.run
    if not run.skip:
        return True
    tests = [t.id for t in run.rebuilt.job.trusted.tests]
    return (
        not verdicts.failed
        and not verdicts.tampered
        and (verdicts.flags, run.notes) == (run.rebuilt.flags, run.rebuilt.notes)
        and all(st.get("status") == "ok" for st in run.kernel.status.values())
        and all(t in verdicts.verdicts and verdicts.verdicts[t]["passed"] for t in tests)
    )


def _cells_as_run(run: Run) -> list[list[str]]:
    """[[grade id or "", source]] of the code cells the kernel ran, as they run (the judge
    reads which earlier exercises a failed check relies on)."""
    nb = run.rebuilt.nb
    code, sources, _, _ = code_view(nb, run.rebuilt.job.trusted)
    ids = [grade_id(nb.cells[i]) or "" for i in code]
    return [[g, src] for i, g, src in zip(code, ids, sources, strict=True) if i not in run.skip]


def _clean(run: Run) -> set[int]:
    """Indexes of the cells that ran before any hidden input reached the kernel: those
    before the first hidden test cell, in a run with one kernel (after a restart, cells run
    again later, and files may outlive a kernel). Only their error texts may be quoted."""
    if run.kernel.kernel_starts != 1:
        return set()
    nb = run.rebuilt.nb
    hidden = {t.id for t in run.rebuilt.job.trusted.tests if t.hidden}
    first = next((i for i, c in enumerate(nb.cells) if grade_id(c) in hidden), len(nb.cells))
    return {i for i in range(first) if grade_id(nb.cells[i])}


def _answer_message(name: str, status: CellStatus | None, cfg: Snapshot, quote: bool) -> str | None:
    """Why the answer cell ``name`` left its check nothing to check (None: it ran)."""
    kind = (status or {}).get("status")
    if kind == "error" and status is not None:
        ename = judging.error_name(status.get("ename"), quote)
        evalue = str(status.get("evalue")) if quote else None
        return messages.answer_cell_stopped(name, kind, cfg, ename, evalue)
    return messages.answer_cell_stopped(name, kind, cfg)


def _verdict_outputs(passed: bool, message: str) -> list[NotebookNode]:
    if passed:
        return [nbformat.v4.new_output("stream", name="stdout", text=messages.PASSED)]
    return [
        nbformat.v4.new_output(
            "error",
            ename="CheckFailed",
            evalue=message,
            traceback=[f"\x1b[1;31m✗ {message}\x1b[0m"],
        )
    ]


def _test_verdict(
    verdicts: Verdicts, test: TestCell, idx: int, answer_status: AnswerStatuses
) -> tuple[bool, str, list[str]]:
    """(passed, message, flags) of one test cell, from its run status and the judge's verdict."""
    run = verdicts.run
    cfg = run.rebuilt.job.settings
    st = run.kernel.status.get(idx, {"status": "not-run"})
    if verdicts.failed:
        return False, verdicts.failed, []
    if st.get("status") not in ("ok", "error"):
        return False, messages.check_cell_stopped(test.exercise, st.get("status"), cfg), []
    verdict = verdicts.verdicts.get(test.id)
    if verdict is None:  # ran, but left no record (flagged as tampering)
        return False, messages.check_did_not_run(test.exercise), []
    passed, message = verdict["passed"], verdict["message"]
    if not passed and run.rebuilt.found.get(test.exercise) == "missing":
        message = messages.answer_missing(test.exercise)
    elif not passed and ("is not defined" in message or "did not run" in message):
        status, quote = answer_status.get(test.exercise, (None, False))
        message = _answer_message(test.exercise, status, cfg, quote) or message
    return passed, message, verdict["flags"]


def _answer_statuses(run: Run) -> AnswerStatuses:
    """{answer grade id: (its cell's run status, whether its error text may be quoted)}."""
    nb, clean = run.rebuilt.nb, _clean(run)
    statuses: AnswerStatuses = {}
    for idx, cell in enumerate(run.kernel.run_nb.cells[: len(nb.cells)]):
        gid = grade_id(cell)
        if gid is not None and gid in run.rebuilt.found:
            statuses[gid] = (run.kernel.status.get(idx), idx in clean)
    return statuses


def _graded_notebook(
    verdicts: Verdicts,
) -> tuple[NotebookNode, dict[str, float], dict[str, str], list[str]]:
    """(the notebook with the run's outputs and the verdicts, points, messages, flags)."""
    run = verdicts.run
    tests = {t.id: t for t in run.rebuilt.job.trusted.tests}
    nb, answer_status = copy.deepcopy(run.rebuilt.nb), _answer_statuses(run)
    points: dict[str, float] = {}
    said: dict[str, str] = {}
    flags = list(verdicts.flags)
    for idx, cell in enumerate(nb.cells):
        gid = grade_id(cell)
        test = tests.get(gid) if gid is not None else None
        if gid is None or test is None:
            if cell.cell_type == "code" and idx in run.kernel.status:
                # kept for formgrader, inert: what the kernel displayed could be a script
                cell.outputs = inert_outputs(run.kernel.run_nb.cells[idx].get("outputs", []))
            elif idx in run.skip:
                not_run = nbformat.v4.new_output("stream", name="stdout", text=messages.NOT_RUN)
                cell.outputs = [not_run]
            continue
        passed, message, more = _test_verdict(verdicts, test, idx, answer_status)
        flags += more
        if verdicts.tampered:
            passed, message = False, messages.TAMPERED
        points[gid] = test.points if passed else 0.0
        said[gid] = message
        cell.outputs = _verdict_outputs(passed, message)
        cell.execution_count = None
    flags += [f"{TAMPERED}: {reason}" for reason in verdicts.tampered]
    return nb, points, said, flags


def _written(nb: NotebookNode) -> dict[str, tuple[float | str, str]]:
    """{hand-graded answer: (points, message)}: an untouched one scores 0."""
    written: dict[str, tuple[float | str, str]] = {}
    for cell in nb.cells:
        if is_solution(cell) and is_grade(cell):
            unchanged = nbgrader_meta(cell).get("checksum") == _checksum(cell)
            written[grade_id(cell) or ""] = (
                (0.0, messages.NO_ANSWER_WRITTEN) if unchanged else ("", messages.GRADED_BY_HAND)
            )
    return written


def write(verdicts: Verdicts) -> Result:
    """The result: rows, per-test points, flags, and the autograded notebook as JSON."""
    run = verdicts.run
    job = run.rebuilt.job
    tests = {t.id: t for t in job.trusted.tests}
    nb, points, said, flags = _graded_notebook(verdicts)
    slowest = max((st.get("seconds", 0) for st in run.kernel.status.values()), default=0)
    return Result(
        student=job.student,
        notebook=job.notebook,
        status=GRADED,
        rows=exercise_rows(job.trusted, points, said, _written(nb)),
        tests={
            g: {"points": points[g], "max_points": tests[g].points, "message": said[g]}
            for g in points
        },
        flags=tuple(dict.fromkeys(flags)),
        notes=tuple(dict.fromkeys(run.notes)),
        autograded=nbformat.writes(nb),
        sandboxed=job.settings.sandbox,
        limits=run.limits,
        demo_cells_left_out=len(run.skip),
        timings={"slowest_cell": slowest},
    )


def _checksum(cell: NotebookNode) -> str:
    from nbgrader.utils import compute_checksum

    return str(compute_checksum(cell))
