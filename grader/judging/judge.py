"""The trusted side of grading: decide every test cell from what the kernel recorded.

Runs outside the student's kernel, in a process of its own per notebook with a time and a
memory limit (:func:`judge_bounded`): whatever a record holds, judging it ends in time, and
a notebook that exceeds the limits gets 0 autograded points alone.

A visible test cell is decided by running its (trusted) source here, against *replays* of
the learner's functions that return exactly what the kernel recorded for the same arguments
and change those arguments in place exactly as they did in the kernel (so ``call()`` fails a
function that overwrites its input, as Validate does); a hidden test cell by comparing the
recorded results with ``grader.hidden``'s references on the grader's own inputs.
Monkeypatched ``np.allclose``, patched check functions, IPython hooks, ``__eq__`` objects and
ndarray subclasses therefore change nothing here: only recorded numbers count. A function
the kernel saw calling its exercise's whole-solution shortcut fails, and so does a visible
check that failed in the kernel (one that measures the function, e.g. its memory, which a
replay cannot reproduce): trusting the kernel there can only cost the learner points.

Records are decoded with ``grader.wire`` (bounded, no pickles); a record that cannot be
decoded, or has the wrong shape, was not written by the grader's recorder: tampering.

Messages never quote text the kernel made once a hidden input could be in it (the learner's
error texts and exception names, what the recorder says of a value, a shortcut's name the
judge cannot find loaded itself): only text from visible test cells that ran before the
first hidden test cell, in a run with one kernel (the job's ``clean`` ids), is quoted.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import importlib
import io
import sys
import time
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict, TypeVar, overload

import numpy as np

from attnlib.checks import _cells
from attnlib.checks._core import CheckFailed, call
from grader import lifeline, pysource, wire
from grader.kernel.recorders import TAMPERED, signature
from grader.processes import STARTUP_SECONDS, context, limit_memory
from grader.results import messages
from grader.run.cases import hidden_cases

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from multiprocessing.connection import Connection

T = TypeVar("T")
EXCEEDED = "grading exceeded its limits"

# What a verdict keeps of texts the kernel or the learner's code could make any length: they
# reach OUT's CSVs, the feedback pages and the instructor's report, read by people.
MESSAGE_CHARS = 2000  # a verdict's message, as the learner reads it in their feedback
FLAG_CHARS = 300  # one flag (a line of the instructor's report and of OUT's flags column)
MAX_FLAGS = 50  # flags kept per test cell, and kernel anomalies read per record
ERROR_TEXT_CHARS = 500  # a learner's error text, when it may be quoted (as the run keeps it)
ERROR_NAME_CHARS = 60  # an exception's name: longer is no Python name a learner meant
NAME_CHARS = 100  # a function the kernel saw called, e.g. ``torch.softmax``: longer, no name
CRASH_CHARS = 600  # judging's own crash, as the job's "grader error" flag quotes it


class Verdict(TypedDict):
    """One test cell's verdict: what :func:`judge` says of each test id."""

    passed: bool
    message: str
    flags: list[str]


class Judged(TypedDict):
    """What :func:`judge_notebook` says of a notebook."""

    verdicts: dict[str, Verdict]  # test id -> its verdict
    tampered: list[str]  # how records were not the recorder's


REAP_SECONDS = 5  # a killed judging process is gone well within this


class NotChecked(BaseException):
    """The check asked for a call the kernel never recorded (tampering or a flaky check)."""


class Tampered(Exception):
    """The record was not written by the grader's recorder (the message says how)."""


# --------------------------------------------------------------------------- records


class Record:
    """A decoded record: typed accessors that refuse anything the recorder never writes."""

    data: dict[str, Any]  # as the kernel sent it: any values
    what: str

    def __init__(self, body: object, what: str) -> None:
        self.budget = wire.Budget()  # for the values, decoded as the check asks for them
        if type(body) is not bytes:
            raise Tampered(f"{what} sent no record")
        try:
            data = wire.decode(body)  # the record's own structure: one frame's budget
        except wire.Malformed as err:
            raise Tampered(f"{what}'s record cannot be read ({err})") from None
        if type(data) is not dict:
            raise Tampered(f"{what}'s record is not a record")
        self.data, self.what = data, what

    @overload
    def get(self, key: str, kind: type[T]) -> T | None: ...
    @overload
    def get(self, key: str, kind: type[T], default: T) -> T: ...
    def get(self, key: str, kind: type[T], default: T | None = None) -> T | None:
        value = self.data.get(key, default)
        if value is not default and type(value) is not kind:
            raise Tampered(f"{self.what}'s record has a malformed `{key}`")
        return value

    def value(self, data: object) -> tuple[Any, list[str]]:
        """A recorded value (its subclass names are returned too)."""
        if type(data) is not bytes:
            raise Tampered(f"{self.what}'s record holds a value that is not encoded")
        try:
            found: list[str] = []
            return wire.plain(wire.decode(data, budget=self.budget), found), found
        except wire.Malformed as err:
            raise Tampered(f"{self.what}'s record holds an unreadable value ({err})") from None


def _equal(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return (
                isinstance(a, np.ndarray)
                and isinstance(b, np.ndarray)
                and a.shape == b.shape
                and bool(np.array_equal(a, b, equal_nan=True))
            )
        except TypeError:
            return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, wire.Opaque) or isinstance(b, wire.Opaque):  # e.g. a function argument
        names = {x.type_name if isinstance(x, wire.Opaque) else type(x).__name__ for x in (a, b)}
        return len(names) == 1 or callable(a) or callable(b)
    try:
        return bool(a == b) or (a != a and b != b)
    except Exception:  # noqa: BLE001
        return False


_BUILTIN_ERRORS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def _error_name(info: Mapping[str, object]) -> str:
    name = str(info.get("ename", "Exception"))[:ERROR_NAME_CHARS]
    return name if name.isidentifier() else "Exception"


# In place of a learner's error text that may not be quoted (``quote`` below).
WITHHELD = messages.WITHHELD


def error_name(ename: object, quote: bool, bases: object = ()) -> str:
    """The name of an error the learner's code raised, as a message may show it: a name the
    learner chose (their own exception class) only from a cell run before any hidden input
    reached the kernel (``quote``); otherwise a built-in one: its own, or the first built-in
    class it derives from (``bases``, as the kernel recorded them), or "Exception"."""
    name = _error_name({"ename": ename})
    if quote or name in _BUILTIN_ERRORS:
        return name
    bases = bases if type(bases) is list else []
    return next((b for b in bases if type(b) is str and b in _BUILTIN_ERRORS), "Exception")


def _raise(info: object, quote: bool) -> NoReturn:
    """Raise what the learner's function raised in the kernel; its text only when ``quote``
    (the call was made before any hidden input reached the kernel)."""
    info = info if isinstance(info, dict) else {}
    ename = error_name(info.get("ename"), quote, info.get("bases"))
    evalue = str(info.get("evalue", ""))[:ERROR_TEXT_CHARS] if quote else WITHHELD
    if ename == "NotImplementedError":
        raise NotImplementedError(evalue)
    raise type(ename, (Exception,), {})(evalue)


def _write_back(
    after: dict[str, Any], args: Sequence[object], kwargs: Mapping[str, object]
) -> None:
    """Change the caller's arrays as the learner's function changed them in the kernel."""
    for key, now in after.items():
        target = args[int(key)] if key.isdigit() and int(key) < len(args) else kwargs.get(key)
        if isinstance(target, np.ndarray) and isinstance(now, np.ndarray):
            try:
                if target.shape != now.shape:
                    target.shape = now.shape
                np.copyto(target, now, casting="unsafe")
            except (ValueError, TypeError, AttributeError):
                target.flags.writeable = False  # cannot be reproduced: still differs


class Replay:
    """Plays back the learner's function: same arguments, same answer as in the kernel."""

    def __init__(self, name: str, calls: list[Any], record: Record, quote: bool) -> None:
        self.__name__ = name
        self.record, self.quote = record, quote
        self.calls = [c for c in calls if type(c) is dict and c.get("fn") == name]
        self.used: set[int] = set()
        names = self.calls[0].get("params") if self.calls else None
        if type(names) is list and (sig := signature(names)) is not None:
            self.__signature__ = sig

    def __call__(self, *args: object, **kwargs: object) -> Any:  # what the kernel recorded
        for i, entry in enumerate(self.calls):
            if i in self.used:
                continue
            rec_args, _ = self.record.value(entry.get("args"))
            rec_kwargs, _ = self.record.value(entry.get("kwargs"))
            if _equal(list(rec_args), list(args)) and _equal(rec_kwargs, kwargs):
                self.used.add(i)
                return _outcome(entry, self.record, args, kwargs, self.quote)
        raise NotChecked(self.__name__)


def _outcome(
    entry: dict[str, Any],
    record: Record,
    args: Sequence[object],
    kwargs: Mapping[str, object],
    quote: bool = False,
) -> Any:
    """Return or raise what the learner's function did in the kernel, after changing the
    arguments in place as it did (the recorder sends their state after every call; the
    trusted ``call()`` compares it with its own copies)."""
    if "after" in entry:
        after, _ = record.value(entry["after"])
        if type(after) is not dict:  # too large to record: whether it changed is unknown
            raise NotChecked(str(entry.get("fn") or "the function"))
        _write_back(after, args, kwargs)
    if "raise" in entry:
        _raise(entry["raise"], quote)
    if "result" not in entry:
        raise NotChecked("the call never finished in the kernel")
    return record.value(entry["result"])[0]


def _too_large(value: object) -> str | None:
    if isinstance(value, wire.Opaque) and value.type_name.startswith(("too large", "could not")):
        return value.type_name
    if isinstance(value, (list, tuple)):
        return next((t for v in value if (t := _too_large(v))), None)
    return None


def _check_after(entries: list[Any], record: Record) -> None:
    """The recorder sends the arguments' state after every call it records (whether the call
    changed them is decided here): an entry without it was not written by the recorder."""
    if any(
        type(e) is dict and ("result" in e or "raise" in e) and "after" not in e for e in entries
    ):
        raise Tampered(f"{record.what}'s record leaves out what a call did to its arguments")


def _real_name(hit: str) -> str | None:
    """``hit`` (kernel text) when it names an object this process has loaded too, e.g.
    ``torch.softmax``; None otherwise (it could carry anything out)."""
    parts = hit.split(".")
    if len(hit) > NAME_CHARS or not all(p.isidentifier() for p in parts):
        return None
    if parts[0] == "attnlib":  # the course's own package: its modules may be imported here
        with contextlib.suppress(Exception):
            importlib.import_module(".".join(parts[:2]))
    found = sys.modules.get(parts[0])
    for part in parts[1:]:
        try:
            found = getattr(found, part)
        except Exception:  # noqa: BLE001 (a lazy attribute that fails: not a real name)
            return None
    return hit if found is not None and callable(found) else None


def _shortcut(name: str, hits: object) -> tuple[str, list[str]] | None:
    """(message, flags) when the kernel saw ``name`` call a shortcut, else None."""
    if not hits or type(hits) is not list:
        return None
    hits = [str(h)[:NAME_CHARS] for h in hits]
    if TAMPERED in hits:
        return (
            messages.switched_off_watch(name),
            [f"`{name}` switched off the grader's profiler while it ran (tampering)"],
        )
    return (
        messages.calls_shortcut(name, _real_name(hits[0])),
        [f"whole-solution shortcut at run time: `{name}` calls {', '.join(hits)}"],
    )


# --------------------------------------------------------------------------- test cells


def _flag(text: str) -> str:
    return text[:FLAG_CHARS]


def _anomalies(record: Record) -> list[str]:
    """The flags of what the kernel's instrumentation saw while a test cell ran."""
    return [_flag(f"runtime: {a}") for a in record.get("anomalies", list, [])[:MAX_FLAGS]]


def judge_visible(
    source: str, trusted_ns: dict[str, Any], record: Record, quote: bool = False
) -> tuple[bool, str, list[str]]:
    """(passed, message, flags) for a visible test cell; the learner's own error texts are
    quoted only when ``quote`` (the cell ran before any hidden input reached the kernel)."""
    ns = dict(trusted_ns)
    flags = _anomalies(record)
    calls = record.get("calls", list, [])
    in_source = {n.id for n in ast.walk(pysource.parse(source)) if isinstance(n, ast.Name)}
    for name, data in record.get("values", dict, {}).items():
        if name in trusted_ns or name not in in_source:
            continue
        if data == "callable":
            ns[name] = Replay(name, calls, record, quote)
        else:
            ns[name], subclasses = record.value(data)
            flags += [f"`{name}` is an ndarray subclass ({s})" for s in subclasses]
    missing = [n for n in record.get("missing", list, []) if n in in_source - set(trusted_ns)]
    _check_after(calls, record)
    for entry in calls:
        if type(entry) is dict and (
            found := _shortcut(str(entry.get("fn")), entry.get("shortcuts"))
        ):
            return False, found[0], flags + found[1]
    for entry in calls:
        if type(entry) is dict and "result" in entry:
            result, subclasses = record.value(entry["result"])
            flags += [f"`{entry.get('fn')}` returned an ndarray subclass ({s})" for s in subclasses]
            if reason := _too_large(result):
                flags.append(_flag(f"`{entry.get('fn')}` returned a value {reason}"))
                return False, messages.RESULT_TOO_LARGE, flags
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # checks print "passed" lines
            exec(compile(source, "<visible check>", "exec"), ns)
    except CheckFailed as err:
        return False, str(err), flags
    except NotChecked as err:
        flags.append(f"visible check of `{err}` did not run as recorded in the kernel")
        return False, messages.not_checked(str(err)), flags
    except NameError as err:
        name = getattr(err, "name", None)
        name = name if name in in_source else (missing[0] if missing else "?")
        return False, messages.not_defined(name), flags
    except Tampered:
        raise
    except Exception as err:  # noqa: BLE001 (a check crashing on odd results is a failed check)
        # Its text would quote the learner's values: the check's error name alone.
        return False, messages.check_stopped(type(err).__name__), flags
    if failed := _failed_in_kernel(record):
        return False, failed, flags
    return True, "", flags


# The kernel's own text is never shown (a learner's code controls it).
FAILED_IN_KERNEL = messages.FAILED_IN_KERNEL


def _failed_in_kernel(record: Record) -> str | None:
    """A fixed message when a visible check failed in the kernel though its replay here
    passed: some checks measure the learner's function itself (memory, time), which a replay
    cannot reproduce. Trusting the kernel here can only cost the learner points."""
    error = record.get("kernel_error", dict) or {}
    return FAILED_IN_KERNEL if error.get("ename") == "CheckFailed" else None


def _copy(args: Iterable[object]) -> tuple[object, ...]:
    return tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in args)


def judge_hidden(
    name: str, cases: list[tuple[object, ...]], entry: dict[str, Any], record: Record
) -> tuple[bool, str, list[str]]:
    """(passed, message, flags) for one exercise of a hidden test cell. Only the names of
    built-in errors a hidden input caused reach the learner, never their text nor the
    inputs' shapes: they could carry the hidden inputs out."""
    from grader.hidden import check_case

    if found := _shortcut(name, entry.get("shortcuts")):
        return False, found[0], found[1]
    recorded = entry.get("results")
    results: list[Any] = recorded if type(recorded) is list else []
    _check_after(results, record)
    names = entry.get("params")
    sig = signature(names) if type(names) is list else None
    flags: list[str] = []
    for i, args in enumerate(cases):
        if i >= len(results) or type(results[i]) is not dict:
            return False, messages.hidden_not_run(name), flags
        result = results[i]
        raised = result.get("raise") if type(result.get("raise")) is dict else None
        if raised is not None and _error_name(raised) != "NotImplementedError":
            ename = error_name(raised.get("ename"), quote=False, bases=raised.get("bases"))
            return False, messages.hidden_raised(name, ename), flags

        def replay(*a: object, _result: dict[str, Any] = result, **k: object) -> Any:
            return _outcome(_result, record, a, k)

        replay.__name__ = name
        if sig is not None:
            replay.__signature__ = sig  # type: ignore[attr-defined]  # read by inspect
        try:
            got = call(replay, *_copy(args), name=name)  # type: ignore[no-untyped-call]  # attnlib
            if "result" in result:
                flags += [
                    f"`{name}` returned an ndarray subclass ({s})"
                    for s in record.value(result["result"])[1]
                ]
            if reason := _too_large(got):
                flags.append(_flag(f"`{name}` returned a value {reason}"))
                return False, messages.hidden_too_large(name), flags
            check_case(name, args, got)
        except CheckFailed as err:
            return False, str(err), flags
        except NotChecked:
            return False, messages.hidden_not_finished(name), flags
        except Tampered:
            raise
        except Exception as err:  # noqa: BLE001 (a result the comparison cannot handle)
            return False, messages.hidden_not_numbers(name, type(err).__name__), flags
    return True, "", list(dict.fromkeys(flags))


def verify_calls(source: str) -> list[tuple[str, str]]:
    """[(exercise name, learner's function name)] for each ``verify("name", fn)`` in a
    hidden test cell's source."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(pysource.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "verify":
            first, second = (node.args + [None, None])[:2]
            if isinstance(first, ast.Constant) and isinstance(second, ast.Name):
                # The instructor's source names the exercise with a string, kept as written.
                found.append((first.value, second.id))  # type: ignore[arg-type]
    return found


# --------------------------------------------------------------------------- a notebook


def judge_notebook(request: dict[str, Any]) -> Judged:
    """{test id: {"passed", "message", "flags"}} and {"tampered": [...]} for one notebook.

    ``request``: {"imports": trusted imports source, "tests": [{"id", "exercise", "hidden",
    "source", "verifies"}], "records": {test id: record bytes}, "seeds": {exercise: seed},
    "clean": [ids of the visible tests that ran before any hidden input reached the kernel,
    whose learner's error texts may be quoted], "cells": [[grade id or "", source], ...] of
    the notebook's code cells as they run (:func:`point_to_earlier`)}.
    """
    trusted_ns: dict[str, Any] = {}
    exec(compile(request["imports"], "<imports>", "exec"), trusted_ns)  # trusted course code
    verdicts: dict[str, Verdict]
    tampered: list[str]
    verdicts, tampered = {}, []
    clean = set(request.get("clean", ()))
    for test in request["tests"]:
        if test["id"] not in request["records"]:
            continue  # the cell did not run to its end: the job says why
        what = f"test cell `{test['id']}`"
        try:
            record = Record(request["records"][test["id"]], what)
            if too_large := record.get("too_large", str):
                verdicts[test["id"]] = {
                    "passed": False,
                    "message": messages.RECORD_TOO_LARGE,
                    "flags": [_flag(f"{what}: record too large ({too_large})")],
                }
                continue
            if test["hidden"] and (error := record.get("kernel_error", dict)):
                raise Tampered(f"{what}'s recorder failed ({_error_name(error)})")
            if not test["hidden"]:
                passed, message, flags = judge_visible(
                    test["source"], trusted_ns, record, test["id"] in clean
                )
            else:
                passed, message, flags = _judge_hidden_cell(test, record, request["seeds"], what)
        except Tampered as err:
            tampered.append(str(err))
            passed, message, flags = False, messages.UNREADABLE_RESULTS, []
        verdicts[test["id"]] = {
            "passed": passed,
            "message": str(message)[:MESSAGE_CHARS],
            "flags": list(dict.fromkeys(flags))[:MAX_FLAGS],
        }
    point_to_earlier(request, verdicts)
    return {"verdicts": verdicts, "tampered": tampered}


def _judge_hidden_cell(
    test: dict[str, Any], record: Record, seeds: dict[str, int], what: str
) -> tuple[bool, str, list[str]]:
    """(passed, message, flags) of a hidden test cell: each exercise it verifies, in order,
    until one fails."""
    passed, message = True, ""
    flags = _anomalies(record)
    entries = {e.get("exercise"): e for e in record.get("exercises", list, []) if type(e) is dict}
    for name, _fn in test["verifies"]:
        entry = entries.get(name)
        if entry is None:
            raise Tampered(f"{what}'s record does not mention `{name}`")
        if entry.get("missing"):
            return False, messages.not_defined(name), flags
        passed, message, more = judge_hidden(name, hidden_cases(name, seeds[name]), entry, record)
        flags += more
        if not passed:
            break
    return passed, message, flags


def point_to_earlier(request: dict[str, Any], verdicts: dict[str, Verdict]) -> None:
    """A failed check that relies on an earlier exercise which failed its own check in this
    run (its answer calls that function, or uses what a cell computed with it, as
    ``attnlib.checks._cells.needed`` reads the code, the same reading as Validate's) says
    so first: that exercise is the likely cause. Only this judge's verdicts and the
    notebook's code count, never what the kernel said."""
    exercise = {t["id"]: t.get("exercise", "") for t in request["tests"]}
    order = list(dict.fromkeys(exercise.values()))
    failed = {exercise[i] for i, v in verdicts.items() if not v["passed"]}
    failed |= {exercise[i] for i in exercise if i not in request["records"]}  # did not end
    cells = request["cells"]
    for k, (gid, _) in enumerate(cells):
        verdict = verdicts.get(gid)
        if verdict is None or verdict["passed"]:
            continue
        earlier = {e: "" for e in order[: order.index(exercise[gid])] if e in failed}
        sources = [source for _, source in cells[: k + 1]]
        for other in _cells.needed(sources, earlier) if earlier else ():
            if f"`{other}` first" not in verdict["message"]:
                message = _cells.uses_unfinished(other) + verdict["message"]
                verdict["message"] = message[:MESSAGE_CHARS]
            break


# --------------------------------------------------------------------------- bounded


def _child(conn: Connection, request: dict[str, Any], memory_mb: int) -> None:
    result: Judged | dict[str, str]
    lifeline.die_with_parent()
    conn.send("started")  # the time limit counts from here, not from the server's start
    try:
        limit_memory(memory_mb)
        result = judge_notebook(request)
    except MemoryError:
        result = {"exceeded": "memory"}
    except Exception as err:  # noqa: BLE001 (reported as a grader error by the job)
        result = {"error": f"{type(err).__name__}: {err}"[:CRASH_CHARS]}
    try:
        conn.send(result)
    except MemoryError:
        conn.send({"exceeded": "memory"})
    conn.close()


@functools.cache
def warm() -> None:
    """Start this process's judging server now (it imports torch: seconds) rather than in
    the first notebook's judging: a worker's start-up cost, not that notebook's. Once per
    process."""
    process = context().Process(target=_ready, daemon=True)
    process.start()
    process.join(STARTUP_SECONDS)
    if process.is_alive():  # judging will wait for the server again, within its own limits
        process.kill()


def _ready() -> None:
    """What :func:`warm` forks: nothing to do once the server is up."""


def judge_bounded(request: dict[str, Any], seconds: float, memory_mb: int) -> dict[str, Any]:
    """:func:`judge_notebook` in a fresh process limited to ``seconds`` of wall time and
    ``memory_mb`` more memory; ``{"exceeded": "time"|"memory"}`` when it goes over."""
    ctx = context()
    mine, theirs = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(theirs, request, memory_mb), daemon=True)
    process.start()
    theirs.close()
    result: dict[str, Any] | None
    result, late = None, False
    try:
        if mine.poll(STARTUP_SECONDS) and mine.recv() == "started":
            start = time.monotonic()
            if mine.poll(seconds):
                result = mine.recv()
            late = time.monotonic() - start >= seconds
    except (EOFError, OSError):
        result = None
    finally:
        if process.is_alive():
            process.kill()
        process.join(REAP_SECONDS)
        mine.close()
    if result is None:
        result = {"exceeded": "time" if late else "memory"}
    return result
