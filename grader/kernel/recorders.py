"""What the instrumented test cells run: call the learner's functions, record what happened.

Each test cell of the graded copy becomes one call here with a *nonce*, a random token the
grader put in that cell's source only. The recorder announces the cell (``begin``, which
also brings the shortcut rules and, for a hidden cell, its hidden inputs), sends one
``record`` and ends with an ``end`` marker. The grader accepts a record only between the
begin and end of the cell it expects, once: a later cell cannot rewrite it.

A record holds, for every call, the arguments as they were before the call, what it returned
or raised, the arguments it changed in place (so the judge can show the same failure as
Validate), its parameter names, and the whole-solution shortcuts it was seen calling.
Every value is encoded with ``grader.wire`` as soon as it exists, against one budget per
record (at most one frame, and what is left of the stream's total); a value that does not
fit becomes a stand-in saying so.
"""

import ast
import builtins
import inspect
import sys
import types
from dataclasses import replace
from inspect import CO_OPTIMIZED, Parameter

import numpy as np

from grader import wire
from grader.kernel import channel, policy, tamper

TAMPERED = "sys.setprofile"  # recorded when the graded function switched the profiler off
_SET_PROFILE = sys.setprofile
_ARRAY_EQUAL = np.array_equal  # taken before any student code runs (it may patch numpy)
MAX_PARAMS = 32
KINDS = (
    Parameter.POSITIONAL_ONLY,
    Parameter.POSITIONAL_OR_KEYWORD,
    Parameter.VAR_POSITIONAL,
    Parameter.KEYWORD_ONLY,
    Parameter.VAR_KEYWORD,
)  # inspect numbers them 0 to 4


class _Record:
    """One record's values, encoded as they come, within one shared budget."""

    MARGIN = 2**16  # bytes and entries kept for the record's own structure

    def __init__(self):
        limits = wire.LIMITS
        self.frame = replace(limits, frame_bytes=min(limits.frame_bytes, channel.room()))
        size = self.frame.frame_bytes - self.MARGIN
        self.budget = wire.Budget(
            replace(limits, frame_bytes=max(size, 0), entries=limits.entries - 1000)
        )

    def body(self, record: dict) -> bytes:
        """The whole record, whose values are already encoded (and were charged one by one):
        only its own structure is new, within the margin kept for it."""
        try:
            return wire.encode(record, self.frame)
        except Exception as err:  # noqa: BLE001 (a hostile object, or more than a frame)
            return wire.encode({"cell": str(record.get("cell")), "too_large": str(err)[:200]})

    def value(self, value) -> bytes:
        try:
            return wire.encode(value, budget=self.budget)
        except wire.TooLarge as err:
            return wire.opaque(f"too large to record ({err})")
        except Exception as err:  # noqa: BLE001 (a hostile object broke the encoder)
            return wire.opaque(f"could not be recorded ({type(err).__name__})")


def _send(kind: str, nonce: str, **fields) -> None:
    channel.send({"k": kind, "n": nonce, **fields})


def _raised(err: BaseException) -> dict:
    try:
        text = str(err)[:500]
    except Exception:  # noqa: BLE001 (a hostile __str__)
        text = "?"
    return {"ename": type(err).__name__[:100], "evalue": text}


def params(fn) -> list | None:
    """[[name, kind], ...] of ``fn``'s parameters (kind as inspect's enum value), as the
    trusted ``call()`` will name them in a message; None when they cannot be told."""
    try:
        found = [[p.name, KINDS.index(p.kind)] for p in inspect.signature(fn).parameters.values()]
    except Exception:  # noqa: BLE001 (no signature, or a hostile one)
        return None
    return found if len(found) <= MAX_PARAMS else None


def signature(names) -> inspect.Signature | None:
    """The signature ``params`` described (no defaults), or None if it is not one."""
    try:
        return inspect.Signature([Parameter(str(name), KINDS[int(kind)]) for name, kind in names])
    except (TypeError, ValueError, IndexError):
        return None


def _snapshot(args, kwargs) -> dict:
    """Copies of the top-level array arguments, to tell afterwards which ones changed."""
    found = {str(i): a.copy() for i, a in enumerate(args) if isinstance(a, np.ndarray)}
    found |= {k: a.copy() for k, a in kwargs.items() if isinstance(a, np.ndarray)}
    return found


def _changed(before: dict, args, kwargs) -> dict:
    """{position or keyword: array now} for array arguments the call changed in place."""
    out = {}
    for key, old in before.items():
        now = args[int(key)] if key.isdigit() else kwargs[key]
        same = now.shape == old.shape and now.dtype == old.dtype
        if not (same and _ARRAY_EQUAL(now, old, equal_nan=now.dtype.kind in "fc")):
            out[key] = np.array(now)
    return out


def _builtin_name(fn) -> str:
    owner = getattr(fn, "__self__", None)
    if owner is None or isinstance(owner, types.ModuleType):
        where = getattr(fn, "__module__", None) or getattr(owner, "__name__", "?")
    else:  # a method, e.g. torch.Tensor.softmax
        where = f"{type(owner).__module__}.{type(owner).__qualname__}"
    return f"{where}.{getattr(fn, '__name__', '?')}"


def call_watched(rules: dict, fn, args, kwargs, seen: dict):
    """``fn(*args, **kwargs)``, noting in ``seen`` every call it makes, at any depth, to the
    shortcuts in ``rules`` ({module prefix: names}, from the grader for this cell), and
    ``TAMPERED`` if it switched the profiler off meanwhile. The profiler sees the actual
    callee, so aliases and captured references are caught."""
    if not rules:
        return fn(*args, **kwargs)
    prefixes = tuple(f"{p}." for p in rules)
    builtins_named = set().union(*rules.values())
    own_code = call_watched.__code__

    def profile(frame, event, arg):
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
            if arg is _SET_PROFILE and frame.f_code is not own_code:
                seen[TAMPERED] = None
            elif getattr(arg, "__name__", None) in builtins_named:
                seen[_builtin_name(arg)] = None

    previous = sys.getprofile()
    with policy.quiet_profile():
        sys.setprofile(profile)
    try:
        return fn(*args, **kwargs)
    finally:
        if sys.getprofile() is not profile:
            seen[TAMPERED] = None
        with policy.quiet_profile():
            sys.setprofile(previous)


def _names(source: str) -> list[str]:
    return sorted({n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)})


def _rules(reply) -> dict:
    rules = reply.get("shortcuts") if isinstance(reply, dict) else None
    return rules if isinstance(rules, dict) else {}


def visible(nonce: str, cell_id: str, source: str, ns: dict) -> None:
    """Run a visible test cell's (trusted) source, recording every call to the learner's
    functions."""
    rules = _rules(channel.ask({"k": "begin", "n": nonce}))
    rec = _Record()
    record = {"cell": cell_id, "calls": [], "values": {}, "modules": {}, "missing": []}
    scope = dict(ns)

    def wrap(name, fn):
        names = params(fn)

        def recorded(*args, **kwargs):
            entry = {"fn": name, "params": names, "args": rec.value(list(args))}
            entry["kwargs"] = rec.value(dict(kwargs))
            record["calls"].append(entry)
            before, seen = _snapshot(args, kwargs), {}
            try:
                result = call_watched(rules.get(name), fn, args, kwargs, seen)
            except BaseException as err:
                entry["raise"] = _raised(err)
                raise
            finally:
                if changed := _changed(before, args, kwargs):
                    entry["after"] = rec.value(changed)
                if seen:
                    entry["shortcuts"] = list(seen)[:10]
            entry["result"] = rec.value(result)
            return result

        recorded.__name__ = getattr(fn, "__name__", name)
        if names is not None and (sig := signature(names)) is not None:
            recorded.__signature__ = sig  # so call() names the parameters as the judge will
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
                record["values"][name] = rec.value(value)
        record["anomalies"] = tamper.anomalies()
        with tamper.Pristine():
            exec(compile(source, f"<{cell_id}>", "exec"), scope)
    except BaseException as err:  # noqa: BLE001 (the judge decides; the kernel only records)
        record["kernel_error"] = _raised(err)
    finally:
        _send("record", nonce, body=rec.body(record))
        _send("end", nonce)


class OracleError(Exception):
    """The grader refused or failed a call to a function argument of a hidden case."""


def _oracles(nonce: str, value):
    """``value`` with every ``wire.Oracle`` replaced by a function that asks the grader."""
    if isinstance(value, wire.Oracle):
        oid, label = value.id, value.label

        def ask(*args):
            reply = channel.ask({"k": "oracle", "n": nonce, "id": oid, "args": list(args)})
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


def _hidden_one(rec: _Record, rules: dict, name: str, fn_name: str, cases, ns) -> dict:
    out = {"exercise": name, "missing": fn_name not in ns, "results": []}
    if out["missing"]:
        return out
    fn, seen = ns[fn_name], {}
    out["params"] = params(fn)
    for args in cases:
        args, kwargs = list(args), {}
        entry = {}
        before = _snapshot(args, kwargs)
        try:
            if not callable(fn):
                raise TypeError(f"`{fn_name}` is a {type(fn).__name__}, not a function")
            entry["result"] = rec.value(call_watched(rules.get(name), fn, args, kwargs, seen))
        except BaseException as err:  # noqa: BLE001
            entry["raise"] = _raised(err)
            if isinstance(err, KeyboardInterrupt):
                out["results"].append(entry)
                break
        if changed := _changed(before, args, kwargs):
            entry["after"] = rec.value(changed)
        out["results"].append(entry)
    if seen:
        out["shortcuts"] = list(seen)[:10]
    return out


def hidden(nonce: str, cell_id: str, verifies: list, ns: dict) -> None:
    """Call the learner's functions on the hidden inputs the grader sends for this cell
    (``verifies``: [(exercise, learner's function name)]) and record the results."""
    reply = channel.ask({"k": "begin", "n": nonce})
    rules = _rules(reply)
    rec = _Record()
    record = {"cell": cell_id, "exercises": []}
    try:
        all_cases = _oracles(nonce, reply.get("cases")) if isinstance(reply, dict) else None
        for name, fn_name in verifies:
            cases = (all_cases or {}).get(name) or []
            record["exercises"].append(_hidden_one(rec, rules, name, fn_name, cases, ns))
        record["anomalies"] = tamper.anomalies()
    except BaseException as err:  # noqa: BLE001
        record["kernel_error"] = _raised(err)
    finally:
        _send("record", nonce, body=rec.body(record))
        _send("end", nonce)


def sentinel(nonce: str) -> None:
    """The last cell: proves the stream to the grader still works after the student's code."""
    channel.ask({"k": "begin", "n": nonce})
    _send("end", nonce)
