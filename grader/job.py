"""Grade one student's notebook: read, rebuild, scan, run sandboxed, judge outside.

``grade(job)`` runs in a worker process and returns a JSON-able result; it never raises for
anything a submission can do (a grader bug becomes a "grader error" result, flagged).
"""

import copy
import hashlib
import json
import os
import shutil
import threading
import traceback
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from time import monotonic

import nbformat
import numpy as np

from grader import judge, rebuild, scan
from grader.course import exercises, source_path

RESULT_VERSION = 3  # bump when grading logic changes, so resumed runs regrade


@dataclass
class Job:
    student: str
    notebook: str
    path: str | None  # the submitted file, or None when not submitted
    out: str  # OUT folder
    seed: int
    cell_timeout: int
    notebook_timeout: int
    memory_mb: int
    notes: tuple = ()  # intake notes (wrong name, from a zip, ...)


@cache
def _grader_fingerprint() -> bytes:
    """The grading code itself: results made by other code are not reused."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for pattern in ("grader/*.py", "grader/hidden/*.py", "attnlib/checks/*.py"):
        for path in sorted(root.glob(pattern)):
            h.update(path.name.encode() + path.read_bytes())
    return h.digest()


def job_key(job: Job) -> str:
    """Identifies a job's inputs: a finished result with the same key is reused on resume."""
    h = hashlib.sha256(_grader_fingerprint())
    raw = Path(job.path).read_bytes() if job.path else b"<missing>"
    for part in (
        RESULT_VERSION,
        job.student,
        job.notebook,
        job.seed,
        job.cell_timeout,
        job.notebook_timeout,
        job.memory_mb,
        sorted(job.notes),
    ):
        h.update(repr(part).encode())
    h.update(raw)
    h.update(Path(rebuild.release_path(job.notebook)).read_bytes())
    h.update(source_path(job.notebook).read_bytes())
    return h.hexdigest()


def seed_for(base: int, student: str, notebook: str, name: str = "") -> int:
    return zlib.crc32(f"{base}:{student}:{notebook}:{name}".encode())


# --------------------------------------------------------------------------- course model


@dataclass
class TestCell:
    grade_id: str
    exercise: str
    points: float
    hidden: bool
    source: str  # visible: the release source; hidden: the trusted source's verify calls
    verifies: list


@cache
def course_model(notebook: str):
    """Trusted facts about one assignment, cached per worker."""
    base = rebuild.release(notebook)
    source = nbformat.read(source_path(notebook), as_version=4)
    source_cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in source.cells}
    tests = {}
    for ex in exercises(notebook):
        for gid in ex.test_ids:
            src_cell = source_cells[gid]
            verifies = (
                judge.verify_calls(src_cell.source) if "HIDDEN TESTS" in src_cell.source else []
            )
            release_cell = next(
                c for c in base.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid
            )
            tests[gid] = TestCell(
                gid,
                ex.grade_id,
                float(src_cell.metadata.nbgrader["points"]),
                bool(verifies),
                release_cell.source,
                verifies,
            )
    imports = "\n".join(
        c.source for c in base.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "imports"
    )
    trusted_ns: dict = {}
    exec(compile(imports, f"<{notebook} imports>", "exec"), trusted_ns)  # trusted course code
    return base, tests, trusted_ns, scan.module_names(imports), source


# --------------------------------------------------------------------------- messages


def _answer_message(name: str, status: dict | None, job: Job) -> str | None:
    if not status:
        return None
    kind = status.get("status")
    if kind == "error":
        return f"Your `{name}` cell raised {status.get('ename')}: {status.get('evalue')}".strip()
    if kind == "timeout":
        return f"Your `{name}` cell ran longer than the {job.cell_timeout} s time limit."
    if kind == "died":
        return (
            f"Your `{name}` cell stopped the Python kernel (a crash, os._exit, or more "
            f"than the {job.memory_mb} MB memory limit)."
        )
    if kind == "deadline":
        return f"Not graded: the notebook ran past its {job.notebook_timeout} s time limit."
    return None


def _test_status_message(name: str, status: dict, job: Job) -> str:
    kind = status.get("status")
    if kind == "timeout":
        return f"Checking `{name}` took longer than the {job.cell_timeout} s time limit."
    if kind == "died":
        return (
            f"The Python kernel stopped while checking `{name}` (a crash, os._exit, or "
            f"more than the {job.memory_mb} MB memory limit)."
        )
    if kind == "deadline":
        return f"Not graded: the notebook ran past its {job.notebook_timeout} s time limit."
    return f"Not graded: the kernel kept crashing before `{name}` could be checked."


# --------------------------------------------------------------------------- the job


def _encode_args(
    args, folder: Path, count: list, oracles: list | None = None, as_args: bool = True
) -> dict:
    """Hidden inputs as JSON plus ``.npy`` files (``count`` numbers the files of one folder).
    A function among the inputs becomes an *oracle*: the kernel asks, the grader answers."""

    def enc(value):
        if isinstance(value, np.ndarray):
            count[0] += 1
            name = f"a{count[0]}.npy"
            np.save(folder / name, value, allow_pickle=False)
            return {"t": "nd", "f": name}
        if isinstance(value, (tuple, list)):
            return {"t": "seq", "k": type(value).__name__, "v": [enc(v) for v in value]}
        if callable(value) and oracles is not None:
            oracles.append(value)
            return {"t": "oracle", "id": len(oracles) - 1, "label": str(value)[:40]}
        if isinstance(value, dict):
            return {"t": "dict", "v": [[k, enc(v)] for k, v in value.items()]}
        if value is None:
            return {"t": "none"}
        if isinstance(value, np.generic):
            value = value.item()
        return {"t": "num" if not isinstance(value, str) else "str", "v": value}

    return enc(list(args) if as_args else args)


def _instrument(nb, tests: dict, sandbox: Path, job: Job):
    """The notebook the kernel runs: test cells replaced by recorders; hidden inputs on disk.

    Returns (notebook, {test grade_id: [(exercise, cases, record folder)]}, record folders).
    """
    from grader.hidden import spec

    run_nb = copy.deepcopy(nb)
    oracles: list = []
    hidden_cases: dict = {}
    folders: dict = {}
    for idx, cell in enumerate(run_nb.cells):
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid not in tests:
            continue
        test = tests[gid]
        lines = ["import grader.sandbox_kernel as _attn_grader"]
        if not test.hidden:
            folder = sandbox / ".rec" / gid
            folders[gid] = [folder]
            lines.append(
                f"_attn_grader.visible({gid!r}, {test.source!r}, {str(folder)!r}, globals())"
            )
        else:
            hidden_cases[gid] = []
            folders[gid] = []
            for name, fn_name in test.verifies:
                rng = np.random.default_rng(seed_for(job.seed, job.student, job.notebook, name))
                cases = [tuple(args) for args in spec(name).cases(rng)]
                case_dir = sandbox / ".cases" / name
                case_dir.mkdir(parents=True, exist_ok=True)
                count = [0]
                encoded = [
                    {
                        "args": _encode_args(args, case_dir, count, oracles),
                        "kwargs": {"t": "dict", "v": []},
                    }
                    for args in cases
                ]
                (case_dir / "cases.json").write_text(json.dumps(encoded))
                folder = sandbox / ".rec" / gid / name
                hidden_cases[gid].append((name, cases, folder))
                folders[gid].append(folder)
                lines.append(
                    f"_attn_grader.hidden({gid!r}, {name!r}, {fn_name!r}, "
                    f"{str(case_dir)!r}, {str(folder)!r}, globals())"
                )
        lines.append("del _attn_grader")
        cell.source = "\n".join(lines)
        cell.metadata["attn_index"] = idx
    return run_nb, hidden_cases, folders, oracles


def _serve_oracles(folder: Path, oracles: list, stop) -> None:
    """Answer the kernel's calls to function arguments of hidden cases, with the trusted
    functions, until ``stop`` is set. Requests are untrusted data (decoded without pickle)."""
    folder.mkdir(parents=True, exist_ok=True)
    answered: set = set()
    pause = 0.001
    while not stop.wait(pause):
        pause = min(pause * 2, 0.02)  # poll fast only while the kernel is asking
        for request in folder.glob("q*.json"):
            if request.name in answered:
                continue
            pause = 0.001
            answered.add(request.name)
            n = request.stem[1:]
            reply_dir = folder / f"r{n}"
            reply_dir.mkdir(exist_ok=True)
            try:
                data = json.loads(request.read_text())
                fn = oracles[int(data["id"])]
                args = judge.decode(data["args"], folder / f"q{n}")
                if not isinstance(args, list) or any(isinstance(a, judge._StandIn) for a in args):
                    raise TypeError("arguments must be arrays or numbers")
                reply = {"result": _encode_args(fn(*args), reply_dir, [0], as_args=False)}
            except Exception as err:  # noqa: BLE001 (the learner's call was bad: say so)
                reply = {"raise": f"{type(err).__name__}: {err}"[:300]}
            tmp = reply_dir / "answer.tmp"
            tmp.write_text(json.dumps(reply))
            os.replace(tmp, reply_dir / "answer.json")


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


def _read_log(path: Path) -> list[str]:
    flags = []
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines()[:200]:
            try:
                entry = json.loads(line)
                flags.append(f"sandbox {entry['kind']}: {entry['detail']}")
            except (ValueError, KeyError, TypeError):
                flags.append("sandbox log was tampered with")
    return list(dict.fromkeys(flags))


def _rows_for(notebook: str, points: dict, messages: dict, written: dict) -> list[dict]:
    rows = []
    for ex in exercises(notebook):
        if ex.autograded:
            got = sum(points.get(t, 0.0) for t in ex.test_ids)
            msg = next((messages[t] for t in ex.test_ids if messages.get(t)), "")
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
            rows.append(
                {
                    "exercise": ex.grade_id,
                    "points": written.get(ex.grade_id, ("", ""))[0],
                    "max_points": ex.max_points,
                    "message": written.get(ex.grade_id, ("", "graded by hand"))[1],
                    "autograded": False,
                }
            )
    return rows


def missing_result(job: Job, message: str, flags=(), notes=()) -> dict:
    rows = _rows_for(job.notebook, {}, {}, {})
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
    }


def grade(job: Job) -> dict:
    start = monotonic()
    try:
        result = _grade(job)
    except Exception:  # noqa: BLE001 (a grader bug must not stop the batch)
        result = missing_result(
            job,
            "Not graded: the grader failed on this notebook; your instructor will look at it.",
            flags=["grader error: " + traceback.format_exc(limit=3)[-600:]],
        )
    result["timings"]["total"] = round(monotonic() - start, 3)
    result["key"] = job_key(job)
    return result


def _grade(job: Job) -> dict:
    notes = list(job.notes)
    if job.path is None:
        return missing_result(job, "Notebook not submitted.", notes=notes)
    try:
        data, read_notes = rebuild.parse(Path(job.path).read_bytes())
    except rebuild.Unreadable as err:
        return missing_result(
            job,
            f"Could not read your notebook: {err}.",
            flags=[f"unreadable notebook: {err}"],
            notes=notes,
        )
    notes += read_notes
    base, tests, trusted_ns, modules, source = course_model(job.notebook)
    cells = rebuild.submitted_cells(data)
    nb, found, flags = rebuild.rebuild(base, cells, source)
    exercise_names = {ex.grade_id for ex in exercises(job.notebook)}
    answers = {
        g: c["source"] for c in reversed(cells) if (g := c["nbgrader"].get("grade_id")) in found
    }
    for gid, source in answers.items():
        if any(ex.grade_id == gid and ex.autograded for ex in exercises(job.notebook)):
            flags += scan.scan_cell(gid, source, modules, exercise_names)

    work = Path(job.out) / "work" / "jobs" / job.student / job.notebook
    shutil.rmtree(work, ignore_errors=True)
    sandbox, private = work / "sandbox", work / "private"
    sandbox.mkdir(parents=True)
    private.mkdir(parents=True)
    run_nb, hidden_cases, folders, oracles = _instrument(nb, tests, sandbox, job)

    from grader.execute import SandboxedExecute, kernel_env

    executor = SandboxedExecute(timeout=job.cell_timeout, notebook_timeout=job.notebook_timeout)
    env = kernel_env(
        sandbox,
        private,
        seed=seed_for(job.seed, job.student, job.notebook),
        memory_mb=job.memory_mb,
        cpu_seconds=job.notebook_timeout + 30,
    )
    state_cells = {
        i
        for i, c in enumerate(run_nb.cells)
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade_id") not in tests
    }
    t_exec = monotonic()
    stop = threading.Event()
    server = threading.Thread(
        target=_serve_oracles, args=(sandbox / ".oracle", oracles, stop), daemon=True
    )
    if oracles:
        server.start()
    try:
        with open(private / "kernel.stderr", "w") as stderr:
            status = executor.run(run_nb, sandbox, env, state_cells, stderr=stderr)
    finally:
        stop.set()
        if oracles:
            server.join()
    exec_seconds = monotonic() - t_exec
    flags += _read_log(private / "sandbox.log")
    if executor.flooded:
        notes.append(f"output flood cut at {executor.max_output_chars} characters per cell")

    answer_status = {}
    for idx, cell in enumerate(run_nb.cells):
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in found:
            answer_status[gid] = status.get(idx)
    points, messages = {}, {}
    for idx, cell in enumerate(nb.cells):
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid not in tests:
            if idx in status or cell.cell_type != "code":
                cell.outputs = (
                    run_nb.cells[idx].get("outputs", [])
                    if cell.cell_type == "code"
                    else cell.get("outputs", [])
                )
            continue
        test = tests[gid]
        st = status.get(idx, {"status": "not-run"})
        passed, message, extra = _judge_test(
            test, st, folders[gid], hidden_cases.get(gid, []), trusted_ns, job
        )
        if not passed and test.exercise in found and found[test.exercise] == "missing":
            message = f"The answer cell for `{test.exercise}` is missing from your notebook."
        elif not passed and ("is not defined" in message or "did not run" in message):
            message = (
                _answer_message(test.exercise, answer_status.get(test.exercise), job) or message
            )
        flags += extra
        points[gid] = test.points if passed else 0.0
        messages[gid] = message
        cell.outputs = _verdict_outputs(passed, message)
        cell.execution_count = None

    written = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and meta.get("grade"):
            unchanged = meta.get("checksum") == _checksum(cell)
            written[meta["grade_id"]] = (
                (0.0, "No answer written.") if unchanged else ("", "graded by hand")
            )

    autograded = Path(job.out) / "nbgrader" / "autograded" / job.student / job.notebook
    autograded.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, autograded / f"{job.notebook}.ipynb")
    shutil.rmtree(work, ignore_errors=True)
    return {
        "student": job.student,
        "notebook": job.notebook,
        "status": "graded",
        "rows": _rows_for(job.notebook, points, messages, written),
        "tests": {
            g: {"points": points[g], "max_points": tests[g].points, "message": messages[g]}
            for g in points
        },
        "flags": list(dict.fromkeys(flags)),
        "notes": notes,
        "timings": {
            "execute": round(exec_seconds, 3),
            "slowest_cell": max((st.get("seconds", 0) for st in status.values()), default=0),
        },
    }


def _checksum(cell) -> str:
    from nbgrader.utils import compute_checksum

    return compute_checksum(cell)


def _judge_test(test: TestCell, st: dict, folders: list, cases: list, trusted_ns, job: Job):
    if st.get("status") not in ("ok", "error"):
        return False, _test_status_message(test.exercise, st, job), []
    flags = []
    if not test.hidden:
        record = judge.load_record(folders[0])
        if record is None:
            return (
                False,
                f"The check of `{test.exercise}` did not run.",
                [
                    f"`{test.grade_id}` left no record: the cell was changed at run time "
                    "(input transformer or similar)"
                ],
            )
        flags += [f"runtime: {a}" for a in record.get("anomalies") or []]
        passed, message, extra = judge.judge_visible(test.source, trusted_ns, record, folders[0])
        return passed, message, flags + extra
    for name, case_args, folder in cases:
        record = judge.load_record(folder)
        if record is None:
            return (
                False,
                f"Hidden check: the check of `{name}` did not run.",
                flags
                + [
                    f"`{test.grade_id}` left no record: the cell was changed at run time "
                    "(input transformer or similar)"
                ],
            )
        flags += [f"runtime: {a}" for a in record.get("anomalies") or []]
        if record.get("missing"):
            return False, f"`{name}` is not defined when its check runs.", flags
        passed, message, extra = judge.judge_hidden(name, case_args, record, folder)
        flags += extra
        if not passed:
            return False, message, flags
    return True, "", flags
