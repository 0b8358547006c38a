"""What a learner sees when a cell stops: one red line that points back to the exercise.

``install`` (called when ``attnlib.checks`` is imported) sets one IPython exception handler: a
failed check, a call to an unwritten exercise, a misnamed answer and an error in a later cell
that needs an unfinished exercise (directly, or through what earlier cells computed from it)
each show as one red line, hint first (so does an error in a cell that needs an exercise whose
check has not passed since its answer cell last ran: a result of the wrong shape stops a demo
cell there, and names the exercise); any other error keeps its ordinary traceback. A cell
that stops this way shows no half-drawn figure. The line is wrapped at ``WIDTH`` columns, so
that `nbgrader validate` in a terminal (which cuts lines at ``Validator.width`` - 3, indent
included) shows it whole; a warning the learner's function gave meanwhile is folded into it.
"""

import ast
import difflib
import re
import sys
import textwrap

FAILED: dict = {}  # exercise -> the learner's function whose visible check last failed
PASSED: dict = {}  # exercise -> the learner's function whose visible check last passed
WARNED: dict = {}  # (function, warning text) -> the first such warning of this cell's calls
_CHECK_FAILED = AssertionError  # the checks' own exception class, set by ``install``
# The red message's width: `nbgrader validate` indents it by 4 and cuts lines at
# Validator.width - 3 (80 in nbgrader_config.py, tests/test_validate.py checks they fit).
WIDTH = 72


def red(text):
    """The message as a learner sees it: red, after a ✗, wrapped at ``WIDTH`` columns (a
    word longer than that stays whole)."""
    lines = []
    for paragraph in f"✗ {text}".split("\n"):
        lines += textwrap.wrap(
            paragraph,
            WIDTH,
            subsequent_indent="  ",
            break_long_words=False,
            break_on_hyphens=False,
        ) or [""]
    return ["\n".join(f"\x1b[1;31m{line}\x1b[0m" for line in lines)]


def _where(caught) -> str:
    """The learner's line a warning points at, briefly (`` (at `e = np.exp(x)`)``)."""
    import linecache

    line = linecache.getline(caught.filename, caught.lineno).strip() if caught.filename else ""
    return f" (at `{line[:60]}{'…' if len(line) > 60 else ''}`)" if line else ""


def warned() -> str:
    """The warnings the learner's functions gave during this cell's checks, as a sentence to
    add to a failed check's message (they are often the cause: overflow in exp)."""
    if not WARNED:
        return ""
    shown = [f"{text}{_where(caught)}" for (_, text), caught in list(WARNED.items())[:2]]
    names = ", ".join(dict.fromkeys(f"`{name}`" for name, _ in WARNED))
    return f" Python warned while {names} ran: {'; '.join(shown)}."


def note_warnings(name, caught) -> None:
    """Keep what ``name`` warned (``warnings.catch_warnings(record=True)``'s list), once
    each."""
    for w in caught:
        WARNED.setdefault((name, f"{w.category.__name__}: {w.message}"), w)


def from_cell(code) -> bool:
    return "ipykernel" in code.co_filename or code.co_filename.startswith("<ipython")


def frames(tb):
    while tb is not None:
        yield tb.tb_frame.f_code
        tb = tb.tb_next


def stub_name(tb):
    """The learner's function that raised NotImplementedError, if it was defined in a cell."""
    *_, code = frames(tb)
    return code.co_name if from_cell(code) and code.co_name != "<module>" else None


def brief(err) -> str:
    """An exception in one line of at most ~160 characters (NumPy's gufunc signature, and the
    end of a long message, say nothing a learner needs)."""
    text = re.sub(r", with gufunc signature \S+", "", " ".join(str(err).split())).rstrip(".")
    if not text:
        return type(err).__name__
    return f"{type(err).__name__}: {text[:150] + ('…' if len(text) > 150 else '')}"


def _unwritten(namespace) -> list[str]:
    """Exercise functions in the notebook that are still the release's stub."""
    found: dict[str, None] = {}  # by the function's own name, so aliases are listed once
    for obj in list(namespace.values()):
        code = getattr(obj, "__code__", None)
        if code is not None and from_cell(code) and "NotImplementedError" in code.co_names:
            found[code.co_name] = None
    return list(found)


def _unfinished(namespace) -> dict[str, str]:
    """{exercise: why a later cell cannot rely on it}: still a stub, or failed its check."""
    found = {name: "isn't written yet" for name in _unwritten(namespace)}
    for name, fn in FAILED.items():
        if namespace.get(name) is fn:
            found.setdefault(name, "hasn't passed its check")
    return found


def note_passed(name) -> None:
    """``name``'s visible check passed: keep which of the learner's functions it passed."""
    FAILED.pop(name, None)
    shell = _shell()
    if shell is not None:
        PASSED[name] = shell.user_ns.get(name)


def _exercises() -> set[str]:
    """The exercises of the notebooks whose checks are imported (``check_<name>``)."""
    modules = [m for n, m in list(sys.modules.items()) if n.startswith("attnlib.checks.nb")]
    return {n.removeprefix("check_") for m in modules for n in vars(m) if n.startswith("check_")}


def _unchecked(namespace) -> dict[str, str]:
    """{exercise: why}: written exercises whose function in ``namespace`` never passed its
    check (it was not run, or the answer cell ran again since)."""
    return {
        name: "hasn't passed its check yet"
        for name in sorted(_exercises())
        if (code := getattr(namespace.get(name), "__code__", None)) is not None
        and from_cell(code)
        and PASSED.get(name) is not namespace[name]
    }


def _statements(source: str) -> list:
    try:
        return ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # nested past the parser
        return []


def _base(node):
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _names(statement) -> tuple[set, set, set]:
    """(names a statement reads, names it binds, names whose content it changes:
    ``results[key] = ...``, ``obj.attr = ...``)."""
    read, bound, changed = set[str](), set[str](), set[str]()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            changed.add(_base(node))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        # Its parameters and locals are its own: a body's `X` is not the notebook's `X`.
        params = {a.arg for a in ast.walk(statement.args) if isinstance(a, ast.arg)}
        return read - bound - params, {statement.name}, set()
    return read, bound, changed - {None}


def needed(cells: list[str], unfinished, line=None) -> list[str]:
    """The unfinished exercises that the last of ``cells`` (in the order they ran), up to its
    ``line``, relies on: directly, or through names that earlier statements computed from
    them. A statement after one that needs an exercise may never have run (the cell stopped
    there), so what it binds needs that exercise too."""
    came_from: dict[str, set] = {}
    needs: set = set()
    for k, source in enumerate(cells):
        needs = set()
        for statement in _statements(source):
            if k == len(cells) - 1 and line is not None and statement.lineno > line:
                break
            read, bound, changed = _names(statement)
            needs |= (read & unfinished.keys()).union(*(came_from.get(n, ()) for n in read))
            for name in bound:
                came_from[name] = set(needs)
            for name in changed:  # a container keeps what it held, and gains this
                came_from[name] = came_from.get(name, set()) | needs
    return [name for name in unfinished if name in needs]


def _cell_frame(tb):
    """The traceback entry of the cell's own code (its ``<module>``), if there is one."""
    while tb is not None:
        code = tb.tb_frame.f_code
        if from_cell(code) and code.co_name == "<module>":
            return tb
        tb = tb.tb_next
    return None


def _checked(tb) -> list[str]:
    """The exercises whose visible check the cell that raised calls (``check_<name>``)."""
    cell = _cell_frame(tb)
    names = cell.tb_frame.f_code.co_names if cell else ()
    return [n.removeprefix("check_") for n in names if n.startswith("check_")]


def _needs_message(names, unfinished, err) -> str:
    quoted = [f"`{n}`" for n in names]
    listed = quoted[0] if len(names) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"
    if len(names) == 1:
        why = unfinished[names[0]]
        todo = "finish it" if why == "isn't written yet" else "fix it"
        return (
            f"This cell needs {listed}, which {why}: {todo} above (its check must pass), "
            f"then run the cells from there again. (It stopped with {brief(err)}.)"
        )
    return (
        f"This cell needs {listed}, which aren't finished yet: make their checks pass above, "
        f"then run the cells from there again. (It stopped with {brief(err)}.)"
    )


def _similar(name, namespace) -> str:
    """For a near miss, the sentence that names it (a cell defines `soft_max`, the exercise is
    `softmax`); else nothing."""
    written = [
        key
        for key, obj in namespace.items()
        if (code := getattr(obj, "__code__", None)) is not None
        and from_cell(code)
        and "NotImplementedError" not in code.co_names
        and key != name
    ]
    close = difflib.get_close_matches(name, written, n=1, cutoff=0.7)
    return f" A cell defines `{close[0]}`: did you mean `{name}`?" if close else ""


def uses_unfinished(other: str, unwritten: bool = False) -> str:
    """The sentence before a failed check's message when the check relies on ``other``, an
    earlier exercise that is unfinished (the grader's judge says it too)."""
    if unwritten:
        return f"This check uses your `{other}`, which isn't written yet: finish `{other}` first. "
    return f"This check uses your `{other}`, which fails its own check: fix `{other}` first. "


def _after_unfinished(checked, cells, unfinished, message) -> str:
    """When the checked exercise relies on another that is unfinished (it calls it, or uses
    what a cell computed with it), the sentence that says so first; else nothing (also when
    the message already says it)."""
    others = {n: why for n, why in unfinished.items() if n not in checked}
    for other in needed(cells, others) if checked and others else ():
        if f"`{other}` first" not in message:
            return uses_unfinished(other, others[other] == "isn't written yet")
    return ""


def _explain(shell, etype, value, tb) -> str | None:
    """The one line a learner sees instead of a traceback, or None for the traceback."""
    namespace = shell.user_ns
    if issubclass(etype, _CHECK_FAILED):
        checked = _checked(tb)
        unfinished = _unfinished(namespace)
        for name in checked:
            FAILED[name] = namespace.get(name)
        unwritten = [n for n in checked if unfinished.get(n) == "isn't written yet"]
        near_miss = "".join(_similar(n, namespace) for n in unwritten)
        cells = shell.history_manager.input_hist_parsed
        before = _after_unfinished(checked, cells, unfinished, str(value))
        return before + str(value) + near_miss + warned()
    if issubclass(etype, NotImplementedError) and (name := stub_name(tb)):
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
    if unfinished and (names := needed(cells, unfinished, cell and cell.tb_lineno)):
        return _needs_message(names, unfinished, value)
    unchecked = _unchecked(namespace)
    if unchecked and (names := needed(cells, unchecked, cell and cell.tb_lineno)):
        return _needs_message(names, unchecked, value)
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
            value._render_traceback_ = lambda: red(text)
        except (AttributeError, TypeError):  # an exception type that takes no attributes
            text = None
        else:
            _close_figures()
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def _shell():
    """The running IPython shell, or None (plain Python: ordinary tracebacks are fine)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def install(check_failed) -> None:
    """Set the handler in the running IPython, if any (``check_failed``: the checks' own
    exception class). The grader's kernel snapshots this handler after the imports."""
    global _CHECK_FAILED
    _CHECK_FAILED = check_failed
    shell = _shell()
    if shell is not None:
        shell.set_custom_exc((Exception,), _one_line)
        shell.events.register("pre_run_cell", _forget_warnings)


def _forget_warnings(*_info) -> None:
    WARNED.clear()
