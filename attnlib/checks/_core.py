"""The machinery every check module shares: calling the learner's function safely,
comparing shapes and values, and reporting in one friendly line (in a notebook, through the
handler of ``attnlib.checks._cells``, installed when this module is imported)."""

import importlib
import inspect
import numbers
import pkgutil
import re
import warnings

import numpy as np

from attnlib.checks import _cells


class CheckFailed(AssertionError):
    """A check failed; the message says what is wrong and, where it can tell, why."""

    def _render_traceback_(self):  # IPython's protocol: how this exception is displayed
        return _cells.red(str(self))


_cells.install(CheckFailed)


# --------------------------------------------------------------------------- calling the learner

_CRASH_HINTS: dict[str, dict[str, str]] = {}


def crash_hints(exercise: str, hints: dict[str, str]) -> None:
    """Register what a crash of ``exercise`` most likely means: {text found in the error
    ("ValueError: operands could not be broadcast ..."): the hint shown before it}."""
    _CRASH_HINTS.setdefault(exercise, {}).update(hints)


def _hints(exercise: str) -> dict[str, str]:
    if exercise not in _CRASH_HINTS:  # e.g. the grader judging before any check ran
        package = importlib.import_module("attnlib.checks")
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"attnlib.checks.{info.name}")
    return _CRASH_HINTS.get(exercise, {})


def _undefined_name(err) -> str | None:
    if type(err).__name__ != "NameError":
        return None
    found = re.search(r"name '(\w+)' is not defined", str(err))
    return getattr(err, "name", None) or (found and found.group(1))


def _uses_failed(name, err) -> str | None:
    """Another exercise whose check failed, that the crash happened in or that the crashing
    code calls: the likely cause."""
    for code in reversed(list(_cells.frames(err.__traceback__))):
        if not _cells.from_cell(code):
            continue
        for other in (code.co_name, *code.co_names):
            if other != name and other in _cells.FAILED:
                return other
    return None


def _shapes(args) -> str:
    shapes = [f"{a.shape}" for a in args if isinstance(a, np.ndarray)]
    if not shapes:
        return ""
    return f" on input{'s' if len(shapes) > 1 else ''} of shape {', '.join(shapes)}"


def crash_message(name, err, args=(), hint=None) -> str:
    """The learner's ``name`` raised ``err``: the likely mistake first, the error after."""
    if other := _uses_failed(name, err):
        hint = f"it calls your `{other}`, which fails its own check: fix `{other}` first"
    elif missing := _undefined_name(err):
        hint = (
            f"it uses `{missing}`, which is not defined: run the cell that defines it "
            "(and check the spelling)"
        )
    text = _cells.brief(err)
    hint = hint or next((h for frag, h in _hints(name).items() if frag in text), None)
    if hint is None:
        return f"`{name}` raised {text}"
    return f"`{name}` crashed{_shapes(args)}: {hint} ({text})"


def precision_problem(result, args, name) -> str | None:
    """Results keep the precision of the inputs: float64 in, float64 out. A less precise
    floating result (a cast to float32, ``torch.Tensor``, ``.float()``) is refused."""
    inputs = [a.dtype for a in args if _floating(a)]
    if not inputs:
        return None
    wanted = max(inputs, key=lambda d: d.itemsize)
    parts = result if isinstance(result, (tuple, list)) else [result]
    coarse = [p.dtype for p in parts if _floating(p) and p.dtype.itemsize < wanted.itemsize]
    if not coarse:
        return None
    return (
        f"`{name}` returned {coarse[0]} for {wanted} input: keep {wanted}, the course's "
        "precision (no `.astype(np.float32)`, `np.float32(...)`, `torch.Tensor(...)` or "
        "`.float()`)."
    )


def _floating(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic)) and np.issubdtype(x.dtype, np.floating)


def call(fn, *args, name=None, hint=None, **kwargs):
    """Call the learner's ``fn``; turn a stub, a crash, a change to its input arrays (the
    caller's data would change) or a result less precise than its inputs into a clear
    CheckFailed. ``hint`` says what a crash on these inputs likely means (otherwise the
    exercise's registered ``crash_hints`` do). Warnings it gives are kept for the check's
    message (``_cells.warned``): after its ✗, or after its ✓ as a note."""
    name = name or getattr(fn, "__name__", "your function")
    if not callable(fn):
        raise CheckFailed(f"`{name}` should be a function, but it is a {type(fn).__name__}.")
    given = [*args, *kwargs.values()]
    before = {i: a.copy() for i, a in enumerate(given) if isinstance(a, np.ndarray)}
    try:
        with warnings.catch_warnings(record=True) as caught:
            try:
                result = fn(*args, **kwargs)
            finally:
                _cells.note_warnings(name, caught)
    except NotImplementedError as err:
        stub = _cells.stub_name(err.__traceback__)
        if stub and stub != name:
            raise CheckFailed(
                f"`{name}` calls `{stub}`, which isn't written yet: finish `{stub}` first."
            ) from None
        raise CheckFailed(
            f"`{name}` isn't written yet: replace `raise NotImplementedError()` with your code, "
            "run that cell (it must run without an error), then run this check again."
        ) from None
    except CheckFailed:
        raise
    except Exception as err:  # the learner's bug: the likely mistake, then what it was
        raise CheckFailed(crash_message(name, err, args, hint)) from None
    changed = [
        i
        for i, old in before.items()
        if given[i].shape != old.shape
        or given[i].dtype != old.dtype
        or not np.array_equal(given[i], old, equal_nan=old.dtype.kind in "fc")
    ]
    if changed:
        names = [f"argument {i + 1}" for i in range(len(args))] + list(kwargs)
        try:  # name the parameters as the learner wrote them
            kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            params = [p.name for p in inspect.signature(fn).parameters.values() if p.kind in kinds]
            names[: min(len(args), len(params))] = params[: len(args)]
        except (TypeError, ValueError):
            pass
        first = names[changed[0]]
        raise CheckFailed(
            f"`{name}` changed its input arrays in place "
            f"({', '.join(f'`{names[i]}`' for i in changed)}): work on a copy "
            f"(`{first + '.copy()' if first.isidentifier() else '.copy()'}`) or build new "
            "arrays, so the caller's data stays as it was."
        )
    if problem := precision_problem(result, args, name):
        raise CheckFailed(problem)
    return result


# --------------------------------------------------------------------------- comparing


def as_array(out, name, what="the result"):
    """The learner's output as a float ndarray, or a CheckFailed saying what it was."""
    if isinstance(out, np.ndarray) and type(out) is not np.ndarray:
        out = np.asarray(out)
    if not isinstance(out, np.ndarray):
        hint = " (a torch tensor? convert with `.numpy()`)" if hasattr(out, "detach") else ""
        raise CheckFailed(
            f"`{name}` should return a NumPy array as {what}, got {type(out).__name__}{hint}."
        )
    if not np.issubdtype(out.dtype, np.number):
        raise CheckFailed(f"`{name}` returned an array of {out.dtype}; expected numbers.")
    return out


def as_number(out, name, what="one number", hint=""):
    """The learner's output as a float (a Python or NumPy scalar), or a CheckFailed."""
    if hasattr(out, "detach"):
        raise CheckFailed(f"`{name}` returned a torch tensor; return {what} (use `float(...)`).")
    if np.ndim(out) != 0:
        raise CheckFailed(
            f"`{name}` returned an array of shape {np.shape(out)}; expected {what}." + hint
        )
    if isinstance(out, (np.ndarray, np.generic)):
        out = out.item()
    if isinstance(out, bool) or not isinstance(out, numbers.Real):
        raise CheckFailed(f"`{name}` should return {what}, got {type(out).__name__}.")
    return float(out)


def is_whole(out) -> bool:
    """An int: a Python or NumPy integer (also as a 0-d array, as the grader records it)."""
    if isinstance(out, np.ndarray) and out.ndim == 0:
        out = out[()]
    return isinstance(out, (int, np.integer)) and not isinstance(out, (bool, np.bool_))


def _subject(name, what):
    return f"`{name}` returned {what} of" if what else f"`{name}` returned"


def expect_shape(out, shape, name, hint="", what=""):
    """Shape first: most bugs show up here, and the message is easy to act on. ``what``
    names the part of the result ("the keys") when the function returns several."""
    out = as_array(out, name, what or "the result")
    if out.shape != tuple(shape):
        raise CheckFailed(
            f"{_subject(name, what)} shape {out.shape}, expected {tuple(shape)}."
            + (f" {hint}" if hint else "")
        )
    return out


def expect_finite(out, name, hint=""):
    if not np.all(np.isfinite(out)):
        bad = np.size(out) - np.count_nonzero(np.isfinite(out))
        raise CheckFailed(
            f"`{name}` returned {bad} NaN or infinite value(s) out of {np.size(out)}."
            + (f" {hint}" if hint else "")
        )


def expect_close(out, expected, name, hint="", atol=1e-6, rtol=1e-5, what=""):
    """Values next: compare, and report the worst entry (of ``what``, if named)."""
    out = expect_shape(out, np.shape(expected), name, what=what)
    if not np.allclose(out, expected, atol=atol, rtol=rtol):
        idx = (
            np.unravel_index(np.argmax(np.abs(out - expected)), np.shape(expected))
            if out.ndim
            else ()
        )
        where = f" of {what}" if what else ""
        raise CheckFailed(
            f"`{name}` gave {np.asarray(out)[idx]:.4g} at index {tuple(int(i) for i in idx)}"
            f"{where}, expected {np.asarray(expected)[idx]:.4g}." + (f" {hint}" if hint else "")
        )
    return out


def reject_known(out, wrongs, name, what):
    """Raise the message of the first hand-worked wrong answer ``out`` matches: ``wrongs``
    holds ``(wrong answer, message)`` pairs, ``what`` names the input."""
    for wrong, message in wrongs:
        if np.shape(out) == np.shape(wrong) and np.allclose(out, wrong, atol=1e-8):
            raise CheckFailed(f"`{name}` {what}: {message}")


def passed(name, n_hidden=True):
    """Say what passed, and that hidden checks still come at grading time."""
    _cells.note_passed(name)
    tail = " Hidden checks run when your notebook is graded." if n_hidden else ""
    print(f"✓ `{name}`: all visible checks passed.{tail}")
    if warned := _cells.warned():  # worth a look, yet no failure: not on stderr, which fails
        print(f"  Note:{warned}")  # the cell in nbgrader's Validate
        _cells.WARNED.clear()
