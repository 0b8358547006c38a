"""The machinery every check module shares: calling the learner's function safely,
comparing shapes and values, and reporting in one friendly line.

In a notebook, importing this module installs one IPython exception handler: a failed check,
a call to an unwritten exercise, and an error in a later cell that needs an unfinished
exercise (directly, or through what an earlier cell computed from it) each show as one red
line that points back to the exercise. Any other error keeps its ordinary traceback.
"""

import ast
import difflib
import importlib
import numbers
import pkgutil
import re
import sys

import numpy as np


class CheckFailed(AssertionError):
    """A check failed; the message says what is wrong and, where it can tell, why."""

    def _render_traceback_(self):  # IPython's protocol: how this exception is displayed
        return _red(str(self))


# --------------------------------------------------------------------------- in the notebook

_FAILED: dict = {}  # exercise -> the learner's function whose visible check last failed


def _red(text):
    return [f"\x1b[1;31m✗ {text}\x1b[0m"]


def _from_cell(code) -> bool:
    return "ipykernel" in code.co_filename or code.co_filename.startswith("<ipython")


def _frames(tb):
    while tb is not None:
        yield tb.tb_frame.f_code
        tb = tb.tb_next


def _stub_name(tb):
    """The learner's function that raised NotImplementedError, if it was defined in a cell."""
    *_, code = _frames(tb)
    return code.co_name if _from_cell(code) and code.co_name != "<module>" else None


def _unwritten(namespace) -> list[str]:
    """Exercise functions in the notebook that are still the release's stub."""
    found = {}  # by the function's own name, so aliases are listed once
    for obj in list(namespace.values()):
        code = getattr(obj, "__code__", None)
        if code is not None and _from_cell(code) and "NotImplementedError" in code.co_names:
            found[code.co_name] = None
    return list(found)


def _unfinished(namespace) -> dict[str, str]:
    """{exercise: why a later cell cannot rely on it}: still a stub, or failed its check."""
    found = {name: "isn't written yet" for name in _unwritten(namespace)}
    for name, fn in _FAILED.items():
        if namespace.get(name) is fn:
            found.setdefault(name, "hasn't passed its check")
    return found


def _statements(source: str) -> list:
    try:
        return ast.parse(source).body
    except SyntaxError:
        return []


def _base(node):
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _names(statement) -> tuple[set, set, set]:
    """(names a statement reads, names it binds, names whose content it changes:
    ``results[key] = ...``, ``obj.attr = ...``)."""
    read, bound, changed = set(), set(), set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            changed.add(_base(node))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return read, bound, changed - {None}


def _needed(cells: list[str], unfinished, line=None) -> list[str]:
    """The unfinished exercises that the last of ``cells`` (in the order they ran), up to its
    ``line``, relies on: directly, or through names that earlier statements computed from
    them."""
    came_from: dict[str, set] = {}
    needs: set = set()
    for k, source in enumerate(cells):
        needs = set()
        for statement in _statements(source):
            if k == len(cells) - 1 and line is not None and statement.lineno > line:
                break
            read, bound, changed = _names(statement)
            these = (read & unfinished.keys()).union(*(came_from.get(n, ()) for n in read))
            needs |= these
            for name in bound:
                came_from[name] = these
            for name in changed:  # a container keeps what it held, and gains this
                came_from[name] = came_from.get(name, set()) | these
    return [name for name in unfinished if name in needs]


def _cell_frame(tb):
    """The traceback entry of the cell's own code (its ``<module>``), if there is one."""
    while tb is not None:
        code = tb.tb_frame.f_code
        if _from_cell(code) and code.co_name == "<module>":
            return tb
        tb = tb.tb_next
    return None


def _checked(tb) -> list[str]:
    """The exercises whose visible check the cell that raised calls (``check_<name>``)."""
    cell = _cell_frame(tb)
    names = cell.tb_frame.f_code.co_names if cell else ()
    return [n.removeprefix("check_") for n in names if n.startswith("check_")]


def _brief(err) -> str:
    """An exception in one line of at most ~160 characters (NumPy's gufunc signature, and the
    end of a long message, say nothing a learner needs)."""
    text = re.sub(r", with gufunc signature \S+", "", " ".join(str(err).split())).rstrip(".")
    return f"{type(err).__name__}: {text[:150] + ('…' if len(text) > 150 else '')}"


def _needs_message(names, unfinished, err) -> str:
    quoted = [f"`{n}`" for n in names]
    listed = quoted[0] if len(names) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"
    if len(names) == 1:
        why = unfinished[names[0]]
        todo = "finish it" if why == "isn't written yet" else "fix it"
        return (
            f"This cell needs {listed}, which {why}: {todo} above (its check must pass), "
            f"then run the cells from there again. (It stopped with {_brief(err)}.)"
        )
    return (
        f"This cell needs {listed}, which aren't finished yet: make their checks pass above, "
        f"then run the cells from there again. (It stopped with {_brief(err)}.)"
    )


def _similar(name, namespace) -> str:
    """ " A cell defines `soft_max`: did you mean `softmax`?" for a near miss, else nothing."""
    written = [
        key
        for key, obj in namespace.items()
        if (code := getattr(obj, "__code__", None)) is not None
        and _from_cell(code)
        and "NotImplementedError" not in code.co_names
        and key != name
    ]
    close = difflib.get_close_matches(name, written, n=1, cutoff=0.7)
    return f" A cell defines `{close[0]}`: did you mean `{name}`?" if close else ""


def _after_unfinished(checked, namespace, unfinished) -> str:
    """ "`b` uses `a`, which hasn't passed its check: fix `a` first." when the checked
    exercise calls another that is unfinished, else nothing."""
    for name in checked:
        code = getattr(namespace.get(name), "__code__", None)
        for other in code.co_names if code is not None else ():
            if other != name and other in unfinished:
                return f"`{name}` uses `{other}`, which {unfinished[other]}: fix `{other}` first. "
    return ""


def _explain(shell, etype, value, tb) -> str | None:
    """The one line a learner sees instead of a traceback, or None for the traceback."""
    namespace = shell.user_ns
    if issubclass(etype, CheckFailed):
        checked = _checked(tb)
        unfinished = _unfinished(namespace)
        for name in checked:
            _FAILED[name] = namespace.get(name)
        unwritten = [n for n in checked if unfinished.get(n) == "isn't written yet"]
        near_miss = "".join(_similar(n, namespace) for n in unwritten)
        return _after_unfinished(checked, namespace, unfinished) + str(value) + near_miss
    if issubclass(etype, NotImplementedError) and (name := _stub_name(tb)):
        return (
            f"This cell uses `{name}`, which isn't written yet: finish its exercise above "
            "(replace `raise NotImplementedError()`), run that cell, then this one."
        )
    missing = getattr(value, "name", None) if issubclass(etype, NameError) else None
    if missing and missing in _checked(tb):
        return (
            f"`{missing}` is not defined: run its answer cell above (it must define "
            f"`def {missing}(...)` and run without an error), then this check."
            + _similar(missing, namespace)
        )
    unfinished = _unfinished(namespace)
    cell = _cell_frame(tb)
    cells = shell.history_manager.input_hist_parsed
    if unfinished and (names := _needed(cells, unfinished, cell and cell.tb_lineno)):
        return _needs_message(names, unfinished, value)
    return None


def _close_figures():
    """A cell stopped halfway: drop the figure it started, rather than show empty axes."""
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


def _one_line(shell, etype, value, tb, tb_offset=None):
    """IPython's custom exception handler: one red line where ``_explain`` has one. The
    error is still sent as an error output, so nbgrader counts the cell as failed."""
    try:
        text = _explain(shell, etype, value, tb)
    except Exception:  # noqa: BLE001 (explaining must never hide the error itself)
        text = None
    if text is not None:
        try:  # IPython shows an exception through its _render_traceback_, when it has one
            value._render_traceback_ = lambda: _red(text)
        except (AttributeError, TypeError):  # an exception type that takes no attributes
            text = None
        else:
            _close_figures()
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def _install_one_line_errors():
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: ordinary tracebacks are fine
        return
    shell = get_ipython()
    if shell is not None:
        shell.set_custom_exc((Exception,), _one_line)


_install_one_line_errors()


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
    for code in reversed(list(_frames(err.__traceback__))):
        if not _from_cell(code):
            continue
        for other in (code.co_name, *code.co_names):
            if other != name and other in _FAILED:
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
        hint = f"it calls `{other}`, which hasn't passed its check: fix `{other}` first"
    elif missing := _undefined_name(err):
        hint = (
            f"it uses `{missing}`, which is not defined: run the cell that defines it "
            "(and check the spelling)"
        )
    text = _brief(err)
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
    """Call the learner's ``fn``; turn a stub, a crash or a result less precise than its
    inputs into a clear CheckFailed. ``hint`` says what a crash on these inputs likely means
    (otherwise the exercise's registered ``crash_hints`` do)."""
    name = name or getattr(fn, "__name__", "your function")
    if not callable(fn):
        raise CheckFailed(f"`{name}` should be a function, but it is a {type(fn).__name__}.")
    try:
        result = fn(*args, **kwargs)
    except NotImplementedError as err:
        stub = _stub_name(err.__traceback__)
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


def passed(name, n_hidden=True):
    """Say what passed, and that hidden checks still come at grading time."""
    _FAILED.pop(name, None)
    tail = " Hidden checks run when your notebook is graded." if n_hidden else ""
    print(f"✓ `{name}`: all visible checks passed.{tail}")
