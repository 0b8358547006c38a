"""Which cells grading needs to run: demo cells that only teach are left out.

A code cell of the trusted release is a *demo* cell when ``solutions/`` marks it so (cell
metadata ``"attn": {"demo": true}``; STYLE_GUIDE.md says when). Grading leaves a demo cell
out only when no cell that runs after it reads a name it may change, as far as reading the
code can tell: the names it binds (assignments, ``def``, imports, loop targets, ...), the
objects it assigns into (``x[i] = ...``), calls a method of (``rng.normal()``) or passes to a
call (``train(model)``); imported modules aside. The student's answer cells are read at
grading time. Code that cannot be read with certainty makes the notebook run in full: it does
not parse (magics, syntax errors), looks names up at run time (``globals()``, ``eval``,
``getattr``, ``__dict__``, ...), star-imports, or declares ``global``. ``grader.job`` also
runs the notebook in full whenever a check fails or a limit is hit in the shorter run, so the
shorter run can only confirm full marks.
"""

import ast

DEMO_KEY = "attn"  # cell metadata: {"attn": {"demo": true}}
DYNAMIC = frozenset(
    {"globals", "locals", "vars", "eval", "exec", "compile", "getattr", "setattr", "delattr",
     "hasattr", "__import__", "__builtins__", "get_ipython", "importlib", "sys", "builtins"}
)  # fmt: skip


# Module functions that change what later code computes (seeds, threads, defaults).
GLOBAL_STATE = frozenset(
    {"seed", "manual_seed", "set_num_threads", "set_printoptions", "set_default_dtype",
     "use_deterministic_algorithms", "chdir", "use", "rc", "style"}
)  # fmt: skip


class Unclear(Exception):
    """A cell whose names cannot be read with certainty."""


def is_demo(cell) -> bool:
    return cell.cell_type == "code" and bool(cell.metadata.get(DEMO_KEY, {}).get("demo"))


def _tree(source: str) -> ast.AST:
    try:
        return ast.parse(source)
    except SyntaxError as err:
        raise Unclear(f"does not parse ({err.msg})") from None


def names(source: str) -> tuple[set, set]:
    """(names the cell reads, names it binds); :class:`Unclear` when that cannot be told."""
    reads, binds = set(), set()
    for node in ast.walk(_tree(source)):
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else binds).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            binds.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                raise Unclear("star import")
            binds |= imported(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            raise Unclear(f"`{type(node).__name__.lower()}` statement")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            raise Unclear(f"reads `{node.attr}`")
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            binds.add(node.name)
    if found := sorted(reads & DYNAMIC):
        raise Unclear(f"looks names up at run time (`{found[0]}`)")
    return reads, binds


def imported(node: ast.Import | ast.ImportFrom) -> set:
    return {alias.asname or alias.name.split(".")[0] for alias in node.names}


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def changes(source: str, modules: set) -> set:
    """Names a cell may change (see the module's docstring). A module counts only when the
    cell assigns into it (``plt.rcParams[...] = ...``) or calls one of its global-state
    functions (``torch.manual_seed(0)``)."""
    changed = set(names(source)[1])
    for node in ast.walk(_tree(source)):
        if isinstance(node, (ast.Assign, ast.Delete)):
            changed |= {name for name in map(_root, node.targets) if name}
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            changed |= {_root(node.target)} - {None}
        elif isinstance(node, ast.Call):
            touched = [*node.args, *(k.value for k in node.keywords)]
            if isinstance(node.func, ast.Attribute):
                if node.func.attr in GLOBAL_STATE and _root(node.func.value):
                    changed.add(f"module:{_root(node.func.value)}")
                touched.append(node.func.value)
            changed |= {name for name in map(_root, touched) if name and name not in modules}
    return {n.removeprefix("module:") for n in changed}


def skippable(sources: list[str], demo: set[int], modules: set) -> set[int]:
    """Of the ``demo`` cells (indexes into ``sources``, a notebook's code in order), those
    that no later cell which runs depends on; ``modules``: names bound to imported modules.
    :class:`Unclear` for any unclear cell."""
    read_later: set = set()
    skip = set()
    for idx in range(len(sources) - 1, -1, -1):
        if idx in demo and not changes(sources[idx], modules) & read_later:
            skip.add(idx)
        else:
            read_later |= names(sources[idx])[0]
    return skip
