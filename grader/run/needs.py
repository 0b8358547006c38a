"""Which cells grading needs to run: demo cells that only teach are left out.

A code cell of the trusted release is a *demo* cell when ``solutions/`` marks it so (cell
metadata ``"attn": {"demo": true}``; STYLE_GUIDE.md says when). Grading leaves a demo cell
out only when no cell that runs after it reads a name it may change, as far as reading the
code can tell: the names it binds (assignments, ``def``, imports, loop targets, ...), the
objects it assigns into (``x[i] = ...``), calls a method of (``rng.normal()``) or passes to a
call (``train(model)``), and a module whose global state it sets (``torch.manual_seed``).
What a cell reads is what it reads at the top level plus what its functions read from the
notebook's namespace (a comprehension's own variables are not read from it); the student's
functions may run at any later point, so what answer cells read counts wherever they stand.

Anything that cannot be read with certainty makes the notebook run in full: code that does
not parse (magics, syntax errors, nesting past the parser's limits); names looked up at run
time (``globals()``, ``dir()``, ``eval``, ``getattr``, ``__dict__``, frames, the kernel's
``In``/``Out`` history, ``__main__``, ``inspect``, ``sys``, ...); star imports, ``global``;
and answers that may keep state between calls (classes, decorators, defaults that are not
constants, functions that change names outside their own scope) or use a global random
generator, since demo cells call the student's functions and draw from those generators.
``grader.batch.job`` also runs the notebook in full whenever a check fails or a limit is hit in the
shorter run, so the shorter run can only confirm full marks.
"""

import ast
import re
from collections.abc import Set
from typing import TYPE_CHECKING

from grader import pysource

if TYPE_CHECKING:
    from nbformat import NotebookNode

DEMO_KEY = "attn"  # cell metadata: {"attn": {"demo": true}}
# Reading any of these names, attributes or modules makes a cell unclear: they reach
# namespaces, frames or the kernel's history, where a cell can see which cells ran.
DYNAMIC = frozenset(
    {"globals", "locals", "vars", "dir", "eval", "exec", "compile", "getattr", "setattr",
     "delattr", "hasattr", "__import__", "__builtins__", "get_ipython", "In", "Out", "_ih",
     "_oh", "_dh", "_i", "_ii", "_iii", "_", "__", "___", "exit", "quit"}
)  # fmt: skip
FRAME_ATTRIBUTES = frozenset(
    {"f_globals", "f_locals", "f_back", "f_builtins", "gi_frame", "cr_frame", "ag_frame",
     "tb_frame", "_getframe", "currentframe", "modules", "sys", "get_ipython"}
)  # fmt: skip
DYNAMIC_MODULES = frozenset(
    {"__main__", "sys", "inspect", "gc", "builtins", "importlib", "ctypes", "IPython",
     "traceback", "types", "code", "pdb", "runpy", "threading", "signal"}
)  # fmt: skip
HISTORY = re.compile(r"_i?\d+$")  # IPython's numbered history names: _i3, _5
# Answers that use a global random generator get other numbers when demo cells that draw
# from it are left out: such answers run the notebook in full.
GLOBAL_RNG = frozenset(
    {"random", "rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial",
     "get_rng_state", "set_rng_state", "initial_seed", "seed", "manual_seed", "default_generator"}
)  # fmt: skip


# Module functions that change what later code computes (seeds, threads, defaults).
GLOBAL_STATE = frozenset(
    {"seed", "manual_seed", "set_num_threads", "set_printoptions", "set_default_dtype",
     "use_deterministic_algorithms", "chdir", "use", "rc", "style"}
)  # fmt: skip


Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


class Unclear(Exception):
    """A cell whose names cannot be read with certainty."""


def is_demo(cell: "NotebookNode") -> bool:
    return cell.cell_type == "code" and bool(cell.metadata.get(DEMO_KEY, {}).get("demo"))


def _tree(source: str) -> ast.AST:
    try:
        return pysource.parse(source)
    except SyntaxError as err:
        raise Unclear(f"does not parse ({err.msg})") from None
    except (RecursionError, MemoryError, ValueError) as err:  # nested past the parser's limits
        raise Unclear(f"does not parse ({type(err).__name__})") from None


def names(source: str) -> tuple[set[str], set[str]]:
    """(names the cell reads, names it binds); :class:`Unclear` when that cannot be told."""
    reads: set[str] = set()
    binds: set[str] = set()
    for node in ast.walk(_tree(source)):
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else binds).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            binds.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                raise Unclear("star import")
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            if found := [m for m in modules if m.split(".")[0] in DYNAMIC_MODULES]:
                raise Unclear(f"imports `{found[0]}`")
            binds |= imported(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            raise Unclear(f"`{type(node).__name__.lower()}` statement")
        elif isinstance(node, ast.Attribute) and (
            node.attr.startswith("__") or node.attr in FRAME_ATTRIBUTES
        ):
            raise Unclear(f"reads `{node.attr}`")
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            binds.add(node.name)
    if found := sorted(n for n in reads if n in DYNAMIC or HISTORY.match(n)):
        raise Unclear(f"looks names up at run time (`{found[0]}`)")
    return reads, binds


def uses_global_rng(source: str) -> bool:
    """Whether code draws from (or looks at) numpy's, torch's or Python's global generator:
    ``np.random.<anything>``, ``torch.rand(...)``, ``import random``."""
    for node in ast.walk(_tree(source)):
        if isinstance(node, ast.Attribute) and node.attr in GLOBAL_RNG:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            if any(name.split(".")[-1] == "random" for name in found):
                return True
    return False


def imported(node: ast.Import | ast.ImportFrom) -> set[str]:
    return {alias.asname or alias.name.split(".")[0] for alias in node.names}


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def changes(source: str, modules: Set[str]) -> set[str]:
    """Names a cell may change (see the module's docstring). A module counts only when the
    cell assigns into it (``plt.rcParams[...] = ...``) or calls one of its global-state
    functions (``torch.manual_seed(0)``)."""
    changed = set(names(source)[1])
    for node in ast.walk(_tree(source)):
        if isinstance(node, (ast.Assign, ast.Delete)):
            changed |= {name for name in map(_root, node.targets) if name}
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            changed |= {name for name in [_root(node.target)] if name}
        elif isinstance(node, ast.Call):
            touched = [*node.args, *(k.value for k in node.keywords)]
            if isinstance(node.func, ast.Attribute):
                if node.func.attr in GLOBAL_STATE and _root(node.func.value):
                    changed.add(f"module:{_root(node.func.value)}")
                touched.append(node.func.value)
            changed |= {name for name in map(_root, touched) if name and name not in modules}
    return {n.removeprefix("module:") for n in changed}


def _own_names(fn: Function) -> set[str]:
    """The names local to a function: its parameters and what its own scope binds (not
    nested functions' or comprehensions' scopes, so reading through them stays free)."""
    args = fn.args
    own = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    own |= {a.arg for a in (args.vararg, args.kwarg) if a}
    stack: list[ast.AST] = list(fn.body) if isinstance(fn.body, list) else [fn.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(node.name)
            continue
        if isinstance(
            node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
        ):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            own.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            own |= imported(node)
        stack.extend(ast.iter_child_nodes(node))
    return own


def _functions(tree: ast.AST) -> list[Function]:
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    return [node for node in ast.walk(tree) if isinstance(node, kinds)]


COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _free(node: ast.AST, local: set[str], reads: set[str]) -> None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        outer = [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
        for part in [*outer, *getattr(node, "decorator_list", [])]:  # run where it is defined
            _free(part, local, reads)
        inner = local | _own_names(node)
        for part in node.body if isinstance(node.body, list) else [node.body]:
            _free(part, inner, reads)
        return
    if isinstance(node, COMPREHENSIONS):  # its targets are its own; the first iterable is not
        first, *rest = node.generators
        _free(first.iter, local, reads)
        targets = [n for g in node.generators for n in ast.walk(g.target)]
        inner = local | {n.id for n in targets if isinstance(n, ast.Name)}
        body = [getattr(node, f) for f in ("elt", "key", "value") if hasattr(node, f)]
        for part in [*first.ifs, *rest, *body]:
            _free(part, inner, reads)
        return
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local:
        reads.add(node.id)
    for child in ast.iter_child_nodes(node):
        _free(child, local, reads)


def global_reads(source: str) -> set[str]:
    """The names a cell reads from the notebook's namespace: everything it reads at the top
    level, and what its functions read that is not local to them (when they are called)."""
    reads: set[str] = set()
    try:
        _free(_tree(source), set(), reads)
    except RecursionError:
        raise Unclear("nested past the analysis's limits") from None
    return reads


def _plain_default(node: ast.expr) -> bool:
    """A constant (``-1``, ``None``) or a dotted name (``np.float64``)."""
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    if isinstance(node, ast.Attribute):
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name)
    return isinstance(node, ast.Constant)


def check_answer(source: str, modules: Set[str]) -> None:
    """:class:`Unclear` when the student's code may keep state between calls, so that demo
    cells calling it could change what later checks see: classes, decorators, defaults that
    are not plain constants, functions that change names outside their own scope
    (``f.calls += 1``, ``_log.append(...)``, a closure's list), or a global random
    generator."""
    tree = _tree(source)
    if uses_global_rng(source):
        raise Unclear("uses a global random generator")
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            raise Unclear("defines a class")
    for fn in _functions(tree):
        if getattr(fn, "decorator_list", None):
            raise Unclear("decorates a function")
        defaults = [*fn.args.defaults, *(d for d in fn.args.kw_defaults if d)]
        if not all(_plain_default(d) for d in defaults):
            raise Unclear("a default argument that is not a constant")
        own = _own_names(fn)
        for node in ast.walk(fn):
            touched: list[ast.expr] = []
            if isinstance(node, (ast.Assign, ast.Delete)):
                touched = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                touched = [node.target]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                touched = [node.func.value]
            for target in touched:
                if isinstance(target, ast.Name):
                    continue  # binding a name: local to this function (no `global` here)
                root = _root(target)
                if root and root not in own and root not in modules:
                    raise Unclear(f"a function changes `{root}`, outside its own scope")


def skippable(
    sources: list[str], demo: Set[int], modules: Set[str], answers: Set[int] = frozenset()
) -> set[int]:
    """Of the ``demo`` cells (indexes into ``sources``, a notebook's code in order), those
    that no later cell which runs depends on; ``modules``: names bound to imported modules;
    ``answers``: the student's cells, read with :func:`check_answer` too, and whose
    functions may run at any later point, so what they read counts wherever they stand.
    :class:`Unclear` for any unclear cell."""
    for idx, source in enumerate(sources):
        names(source)
        if idx in answers:
            check_answer(source, modules)
    read_later: set[str] = set().union(*(global_reads(sources[i]) for i in answers))
    skip = set()
    for idx in range(len(sources) - 1, -1, -1):
        if idx in demo and not changes(sources[idx], modules) & read_later:
            skip.add(idx)
        else:
            read_later |= global_reads(sources[idx])
    return skip
