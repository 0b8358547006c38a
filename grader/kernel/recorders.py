"""What the instrumented test cells run: call the learner's functions, record what happened.

Each test cell of the graded copy becomes one call here with a *nonce*, a random token the
grader put in that cell's source only. The recorder announces the cell (``begin``, which
also brings the shortcut rules and, for a hidden cell, its hidden inputs), sends one
``record`` and ends with an ``end`` marker. The grader accepts a record only between the
begin and end of the cell it expects, once: a later cell cannot rewrite it.

A record holds, for every call, the arguments as they were before the call, what it returned
or raised, copies of its array arguments taken the moment it returned (before anything else
touches what it returned: the judge's trusted ``call()`` decides on them whether it changed
its input in place, as Validate does), its parameter names, and the whole-solution shortcuts
it was seen calling. Every value is encoded with ``grader.wire`` as soon as it exists,
against one budget per record (at most one frame, and what is left of the stream's total); a
value that does not fit becomes a stand-in saying so.

The module is sealed (``grader.kernel.seal``) when it is imported, before any notebook code:
replacing one of its functions, or one it calls, changes nothing the recorders do, and they
hold the kernel's stream itself rather than reading ``channel.CHANNEL`` each time.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import sys
import types
from dataclasses import replace
from inspect import CO_OPTIMIZED, Parameter
from typing import TYPE_CHECKING, Any

import numpy as np

from grader import wire
from grader.kernel import channel, policy, seal, tamper, torchwatch

if TYPE_CHECKING:  # the records' shapes, for the checker only (nothing here runs in a kernel)
    from collections.abc import Callable, Iterable
    from typing import NotRequired, TypedDict

    Rules = dict[str, list[str]]  # {module prefix: shortcut names} of one exercise
    Params = list[list[str | int]]  # [[name, kind], ...] of a function's parameters

    class Raised(TypedDict):
        ename: str
        evalue: str
        bases: list[str]

    # One call a visible test cell made: every value already encoded (``_value``).
    Call = TypedDict(
        "Call",
        {
            "fn": str,
            "params": Params | None,
            "args": bytes,
            "kwargs": NotRequired[bytes],
            "after": NotRequired[bytes],
            "result": NotRequired[bytes],
            "raise": NotRequired[Raised],
            "shortcuts": NotRequired[list[str]],
        },
    )
    # One hidden input's outcome.
    Outcome = TypedDict("Outcome", {"after": bytes, "result": bytes, "raise": Raised}, total=False)

    class Exercise(TypedDict):
        exercise: str
        missing: bool
        results: list[Outcome]
        params: NotRequired[Params | None]
        shortcuts: NotRequired[list[str]]

    class VisibleRecord(TypedDict):
        cell: str
        calls: list[Call]
        values: dict[str, bytes | str]  # encoded, or "callable" (replayed by the judge)
        modules: dict[str, str]
        missing: list[str]
        anomalies: NotRequired[list[str]]
        kernel_error: NotRequired[Raised]

    class HiddenRecord(TypedDict):
        cell: str
        exercises: list[Exercise]
        anomalies: NotRequired[list[str]]
        kernel_error: NotRequired[Raised]


TAMPERED = "sys.setprofile"  # recorded when the graded function switched the profiler off
_SET_PROFILE = sys.setprofile
_GET_PROFILE = sys.getprofile
_SET_TRACE, _GET_TRACE = sys.settrace, sys.gettrace
_NDARRAY, _COPY = np.ndarray, np.array  # what tells and copies the changed arguments
_STREAM = channel.CHANNEL  # connected before this module is imported (grader.kernel.boot)
MARGIN = 2**16  # bytes and entries of a record kept for its own structure
MAX_PARAMS = 32
KINDS = (
    Parameter.POSITIONAL_ONLY,
    Parameter.POSITIONAL_OR_KEYWORD,
    Parameter.VAR_POSITIONAL,
    Parameter.KEYWORD_ONLY,
    Parameter.VAR_KEYWORD,
)  # inspect numbers them 0 to 4


def _room() -> int:
    """Bytes a record may still take of the stream's total (``channel.room``, for the
    stream this module holds)."""
    sent = _STREAM.sent if _STREAM is not None else 0
    return max(wire.LIMITS.stream_bytes - sent - channel.RESERVE, 0)


def _frame_limits() -> tuple[wire.Limits, wire.Budget]:
    """(limits of a whole record, budget its values are charged to, one after another)."""
    limits = wire.LIMITS
    frame = replace(limits, frame_bytes=min(limits.frame_bytes, _room()))
    size = frame.frame_bytes - MARGIN
    budget = wire.Budget(replace(limits, frame_bytes=max(size, 0), entries=limits.entries - 1000))
    return frame, budget


def _body(frame: wire.Limits, record: VisibleRecord | HiddenRecord) -> bytes:
    """The whole record, whose values are already encoded (and were charged one by one):
    only its own structure is new, within the margin kept for it."""
    try:
        return wire.encode(record, frame)
    except Exception as err:  # noqa: BLE001 (a hostile object, or more than a frame)
        return wire.encode({"cell": str(record.get("cell")), "too_large": str(err)[:200]})


def _value(budget: wire.Budget, value: object) -> bytes:
    try:
        return wire.encode(value, budget=budget)
    except wire.TooLarge as err:
        return wire.opaque(f"too large to record ({err})")
    except Exception as err:  # noqa: BLE001 (a hostile object broke the encoder)
        return wire.opaque(f"could not be recorded ({type(err).__name__})")


def _send(kind: str, nonce: str, **fields: object) -> None:
    if _STREAM is not None:
        _STREAM.send({"k": kind, "n": nonce, **fields})


def _ask(value: object) -> Any:  # the grader's reply, decoded
    return _STREAM.ask(value) if _STREAM is not None else None


def _raised(err: BaseException) -> Raised:
    try:
        text = str(err)[:500]
    except Exception:  # noqa: BLE001 (a hostile __str__)
        text = "?"
    try:  # the classes it derives from: the judge names a built-in one
        bases = [str(c.__name__)[:100] for c in type(err).__mro__[1:16]]
    except Exception:  # noqa: BLE001 (a hostile metaclass)
        bases = []
    return {"ename": type(err).__name__[:100], "evalue": text, "bases": bases}


def params(fn: Any) -> Params | None:  # any object of the learner's
    """[[name, kind], ...] of ``fn``'s parameters (kind as inspect's enum value), as the
    trusted ``call()`` will name them in a message; None when they cannot be told."""
    try:
        found: Params = [
            [p.name, KINDS.index(p.kind)] for p in inspect.signature(fn).parameters.values()
        ]
    except Exception:  # noqa: BLE001 (no signature, or a hostile one)
        return None
    return found if len(found) <= MAX_PARAMS else None


def signature(names: Params) -> inspect.Signature | None:
    """The signature ``params`` described (no defaults), or None if it is not one."""
    try:
        return inspect.Signature([Parameter(str(name), KINDS[int(kind)]) for name, kind in names])
    except (TypeError, ValueError, IndexError):
        return None


def _after(args: tuple[object, ...], kwargs: dict[str, object]) -> dict[str, np.ndarray]:
    """{position or keyword: a copy} of every top-level array argument as the call left it,
    taken at once (later code, e.g. a hook of what it returned, may put it back)."""
    found = {str(i): _COPY(a) for i, a in enumerate(args) if isinstance(a, _NDARRAY)}
    return found | {k: _COPY(a) for k, a in kwargs.items() if isinstance(a, _NDARRAY)}


def call_watched(
    rules: Rules | None,
    fn: Callable[..., Any],
    args: tuple[object, ...],
    kwargs: dict[str, object],
    seen: dict[str, None],
) -> Any:  # what the learner's function returned
    """``fn(*args, **kwargs)``, noting in ``seen`` every call it makes, at any depth, to the
    shortcuts in ``rules`` ({module prefix: names}, from the grader for this cell), and
    ``TAMPERED`` if it changed the profiler, a trace function or torch's modes meanwhile.

    Two watchers, each seeing the actual callee, so aliases and captured references are
    caught: the profiler (Python functions; builtins that Python code calls itself) and,
    from the moment torch is loaded, a torch function mode (``grader.kernel.torchwatch``:
    torch's builtins however they are reached, through ``functools.partial``,
    ``operator.methodcaller``, ``map`` or an operator overload)."""
    if not rules:
        return fn(*args, **kwargs)
    prefixes = tuple(f"{p}." for p in rules)
    builtins_named = set().union(*rules.values())
    own_code = (call_watched.__code__, policy.set_profile_quietly.__code__)
    torch_names = torchwatch.names_for(rules)
    mode = [torchwatch.push(torch_names, seen)]

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call":
            module = frame.f_globals.get("__name__")
            if type(module) is not str or not f"{module}.".startswith(prefixes):
                return
            if not frame.f_code.co_flags & CO_OPTIMIZED:
                return  # a module or class body run by an import, not a call
            parts = frame.f_code.co_qualname.split(".")
            for prefix, names in rules.items():
                if f"{module}.".startswith(f"{prefix}."):
                    for i, part in enumerate(parts):
                        if part in names:
                            seen[".".join([module, *parts[: i + 1]])] = None
                            break
        elif event == "c_call":
            if arg is _SET_PROFILE and frame.f_code not in own_code:
                seen[TAMPERED] = None
            elif getattr(arg, "__name__", None) in builtins_named:
                seen[torchwatch.qualified(arg)] = None
        elif event == "return" and frame.f_code.co_name == "<module>" and mode[0] is None:
            if _torch_imported(frame):  # by the graded call itself: watched from now on
                mode[0] = torchwatch.push(torch_names, seen)

    previous, trace = _GET_PROFILE(), _GET_TRACE()
    policy.set_profile_quietly(profile)
    try:
        return fn(*args, **kwargs)
    finally:
        if _GET_TRACE() is not trace:  # a trace function can rewrite the recorder's locals
            seen[TAMPERED] = None
            _SET_TRACE(trace)
        if _GET_PROFILE() is not profile:
            seen[TAMPERED] = None
        policy.set_profile_quietly(previous)
        if not torchwatch.pop(mode[0]):
            seen[TAMPERED] = None


def _torch_imported(frame: types.FrameType) -> bool:
    """True at the end of torch's own ``__init__`` (a module body)."""
    return frame.f_globals.get("__name__") == torchwatch.TORCH and torchwatch.loaded()


def _names(source: str) -> list[str]:
    return sorted({n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)})


def _rules(reply: object) -> dict[str, Rules]:
    rules = reply.get("shortcuts") if isinstance(reply, dict) else None
    return rules if isinstance(rules, dict) else {}


def visible(nonce: str, cell_id: str, source: str, ns: dict[str, object]) -> None:
    """Run a visible test cell's (trusted) source, recording every call to the learner's
    functions."""
    rules = _rules(_ask({"k": "begin", "n": nonce}))
    frame, budget = _frame_limits()
    record: VisibleRecord = {
        "cell": cell_id,
        "calls": [],
        "values": {},
        "modules": {},
        "missing": [],
    }
    scope = dict(ns)

    def wrap(name: str, fn: Callable[..., object]) -> Callable[..., object]:
        names = params(fn)

        def recorded(*args: object, **kwargs: object) -> object:
            seen: dict[str, None]
            entry: Call = {"fn": name, "params": names, "args": _value(budget, list(args))}
            entry["kwargs"] = _value(budget, dict(kwargs))
            record["calls"].append(entry)
            passed, seen = tuple(kwargs.items()), {}  # immutable, like args
            try:
                result = call_watched(rules.get(name), fn, args, dict(passed), seen)
            except BaseException as err:
                entry["raise"] = _raised(err)
                raise
            finally:
                entry["after"] = _value(budget, _after(args, dict(passed)))
                if seen:
                    entry["shortcuts"] = list(seen)[:10]
            entry["result"] = _value(budget, result)
            return result

        recorded.__name__ = getattr(fn, "__name__", name)
        if names is not None and (sig := signature(names)) is not None:
            # so call() names the parameters as the judge will (inspect reads the attribute)
            recorded.__signature__ = sig  # type: ignore[attr-defined]
        return recorded

    try:
        for name in _names(source):
            if name not in ns:
                if not hasattr(builtins, name):
                    record["missing"].append(name)
                continue
            value = ns[name]
            if isinstance(value, types.ModuleType):
                record["modules"][name] = str(value.__name__)
            elif callable(value) and not isinstance(value, type):
                scope[name] = wrap(name, value)
                record["values"][name] = "callable"
            else:
                record["values"][name] = _value(budget, value)
        record["anomalies"] = tamper.anomalies()
        tamper.pristine(exec, compile(source, f"<{cell_id}>", "exec"), scope)
    except BaseException as err:  # noqa: BLE001 (the judge decides; the kernel only records)
        record["kernel_error"] = _raised(err)
    finally:
        _send("record", nonce, body=_body(frame, record))
        _send("end", nonce)


class OracleError(Exception):
    """The grader refused or failed a call to a function argument of a hidden case."""


def _oracles(nonce: str, value: Any) -> Any:  # the grader's hidden cases, decoded
    """``value`` with every ``wire.Oracle`` replaced by a function that asks the grader."""
    if isinstance(value, wire.Oracle):
        oid, label = value.id, value.label

        def ask(*args: object) -> Any:
            reply = _ask({"k": "oracle", "n": nonce, "id": oid, "args": list(args)})
            if not isinstance(reply, dict) or "result" not in reply:
                raise OracleError(str((reply or {}).get("raise", "no answer from the grader")))
            return reply["result"]

        ask.__name__ = ask.__qualname__ = label.replace(" ", "_")
        return ask
    if type(value) in (list, tuple):
        return type(value)(_oracles(nonce, v) for v in value)
    if type(value) is dict:
        return {k: _oracles(nonce, v) for k, v in value.items()}
    return value


def _hidden_one(
    budget: wire.Budget,
    rules: dict[str, Rules],
    name: str,
    fn_name: str,
    cases: Iterable[Iterable[object]],
    ns: dict[str, object],
) -> Exercise:
    out: Exercise = {"exercise": name, "missing": fn_name not in ns, "results": []}
    if out["missing"]:
        return out
    seen: dict[str, None]
    fn, seen = ns[fn_name], {}
    out["params"] = params(fn)
    for args in cases:
        args = tuple(args)  # immutable: code that reaches this frame cannot swap an argument
        entry: Outcome = {}
        try:
            if not callable(fn):
                raise TypeError(f"`{fn_name}` is a {type(fn).__name__}, not a function")
            result = call_watched(rules.get(name), fn, args, {}, seen)
            entry["after"] = _value(budget, _after(args, {}))
            entry["result"] = _value(budget, result)
        except BaseException as err:  # noqa: BLE001
            entry.setdefault("after", _value(budget, _after(args, {})))
            entry["raise"] = _raised(err)
            if isinstance(err, KeyboardInterrupt):
                out["results"].append(entry)
                break
        out["results"].append(entry)
    if seen:
        out["shortcuts"] = list(seen)[:10]
    return out


def hidden(
    nonce: str, cell_id: str, verifies: list[tuple[str, str]], ns: dict[str, object]
) -> None:
    """Call the learner's functions on the hidden inputs the grader sends for this cell
    (``verifies``: [(exercise, learner's function name)]) and record the results."""
    reply = _ask({"k": "begin", "n": nonce})
    rules = _rules(reply)
    frame, budget = _frame_limits()
    record: HiddenRecord = {"cell": cell_id, "exercises": []}
    try:
        all_cases = _oracles(nonce, reply.get("cases")) if isinstance(reply, dict) else None
        for name, fn_name in verifies:
            cases = (all_cases or {}).get(name) or []
            record["exercises"].append(_hidden_one(budget, rules, name, fn_name, cases, ns))
        record["anomalies"] = tamper.anomalies()
    except BaseException as err:  # noqa: BLE001
        record["kernel_error"] = _raised(err)
    finally:
        _send("record", nonce, body=_body(frame, record))
        _send("end", nonce)


def sentinel(nonce: str) -> None:
    """The last cell: proves the stream to the grader still works after the student's code."""
    _ask({"k": "begin", "n": nonce})
    _send("end", nonce)


seal.seal(globals())
