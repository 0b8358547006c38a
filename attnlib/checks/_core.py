"""The machinery every check module shares: calling the learner's function
safely, comparing shapes and values, and reporting in one friendly line."""

import inspect
import numbers

import numpy as np


class CheckFailed(AssertionError):
    """A check failed; the message says what is wrong and, where it can tell, why."""


def _from_cell(code) -> bool:
    return "ipykernel" in code.co_filename or code.co_filename.startswith("<ipython")


def _stub_name(tb):
    """The learner's function that raised NotImplementedError, if it was defined in a cell."""
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return code.co_name if _from_cell(code) and code.co_name != "<module>" else None


def _unwritten(shell):
    """Exercise functions in the notebook that are still the release's stub."""
    found = {}  # by the function's own name, so aliases are listed once
    for obj in list(shell.user_ns.values()):
        code = getattr(obj, "__code__", None)
        if code is not None and _from_cell(code) and "NotImplementedError" in code.co_names:
            found[code.co_name] = None
    return list(found)


def _red(text):
    return [f"\x1b[1;31m✗ {text}\x1b[0m"]


def _one_line(shell, etype, value, tb, tb_offset=None):
    """Show a failed check, a call to an unwritten exercise, or what follows from one,
    as one red line. It is still sent as an error output, so nbgrader counts the cell
    as failed. Anything else keeps its ordinary traceback.
    """
    stubs = _unwritten(shell)
    if issubclass(etype, CheckFailed):
        stb = _red(value)
    elif issubclass(etype, NotImplementedError) and (name := _stub_name(tb)):
        stb = _red(
            f"This cell uses `{name}`, which isn't written yet: finish its exercise above "
            "(replace `raise NotImplementedError()`), run that cell, then this one."
        )
    elif issubclass(etype, NameError) and stubs:
        listed = ", ".join(f"`{n}`" for n in stubs)
        verb, it = ("isn't", "it") if len(stubs) == 1 else ("aren't", "them")
        stb = _red(
            f"{value}: probably an earlier cell stopped because {listed} {verb} written yet. "
            f"Finish {it}, then run the cells from there again (or check the spelling)."
        )
    else:
        stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    shell._showtraceback(etype, value, stb)
    return stb


def _install_one_line_errors():
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: ordinary tracebacks are fine
        return
    shell = get_ipython()
    if shell is not None:
        shell.set_custom_exc((CheckFailed, NotImplementedError, NameError), _one_line)


_install_one_line_errors()


def call(fn, *args, name=None, **kwargs):
    """Call the learner's ``fn``; turn a stub, a crash, or a change to its input arrays
    (the caller's data would change) into a clear CheckFailed."""
    name = name or getattr(fn, "__name__", "your function")
    if not callable(fn):
        raise CheckFailed(f"`{name}` should be a function, but it is a {type(fn).__name__}.")
    given = [*args, *kwargs.values()]
    before = {i: a.copy() for i, a in enumerate(given) if isinstance(a, np.ndarray)}
    try:
        result = fn(*args, **kwargs)
    except NotImplementedError:
        raise CheckFailed(
            f"`{name}` isn't written yet: replace `raise NotImplementedError()` with your code, "
            "run that cell, then run this check again."
        ) from None
    except CheckFailed:
        raise
    except Exception as err:  # the learner's bug: say what it was, briefly
        raise CheckFailed(f"`{name}` raised {type(err).__name__}: {err}") from None
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
    return result


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


def expect_shape(out, shape, name, hint=""):
    """Shape first: most bugs show up here, and the message is easy to act on."""
    out = as_array(out, name)
    if out.shape != tuple(shape):
        raise CheckFailed(
            f"`{name}` returned shape {out.shape}, expected {tuple(shape)}."
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


def expect_close(out, expected, name, hint="", atol=1e-6, rtol=1e-5):
    """Values next: compare, and report the worst entry."""
    out = expect_shape(out, np.shape(expected), name)
    if not np.allclose(out, expected, atol=atol, rtol=rtol):
        idx = (
            np.unravel_index(np.argmax(np.abs(out - expected)), np.shape(expected))
            if out.ndim
            else ()
        )
        raise CheckFailed(
            f"`{name}` gave {np.asarray(out)[idx]:.4g} at index {tuple(int(i) for i in idx)}, "
            f"expected {np.asarray(expected)[idx]:.4g}." + (f" {hint}" if hint else "")
        )
    return out


def passed(name, n_hidden=True):
    """Say what passed, and that hidden checks still come at grading time."""
    tail = " Hidden checks run when your notebook is graded." if n_hidden else ""
    print(f"✓ `{name}`: all visible checks passed.{tail}")
