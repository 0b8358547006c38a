"""Static scan of answer cells: FLAG suspicious code for a human, never zero it.

The grade never depends on this scan (the sandbox and the outside judge already make these
tricks worthless); it tells the instructor who tried what, with the line that did it.
"""

import ast
import re
from collections.abc import Callable
from functools import cache

from grader import pysource
from grader.hidden import shortcuts

IPYTHON_HOOKS = {
    "input_transformers_cleanup",
    "input_transformers_post",
    "ast_transformers",
    "set_custom_exc",
    "showtraceback",
    "_showtraceback",
    "showsyntaxerror",
    "events",
    "register_magic_function",
    "excepthook",
    "settrace",
    "setprofile",
    "addaudithook",
    "run_cell",
    "run_line_magic",
    "run_cell_magic",
    "user_ns_hidden",
}
RISKY_MODULES = {
    "grader": "imports the course grader",
    "sqlite3": "opens a database",
    "subprocess": "starts processes",
    "ctypes": "loads native code",
    "cffi": "loads native code",
    "marshal": "loads compiled code",
    "gc": "walks live objects",
    "inspect": "inspects the caller's frames",
    "importlib": "imports modules by path",
    "socket": "opens network connections",
    "builtins": "edits Python's builtins",
    "shutil": "copies or deletes files",
    "pickle": "loads pickled objects",
    "IPython": "reaches into IPython",
    "unittest": "patches with unittest.mock",
}
RISKY_CALLS = {
    "exec": "runs generated code",
    "eval": "evaluates generated code",
    "compile": "compiles generated code",
    "__import__": "imports dynamically",
    "setattr": "sets attributes dynamically",
    "get_ipython": "reaches into IPython",
    "_exit": "kills the process",
    "globals": "edits global names",
}
# What reaches the grader's instrumentation in the kernel (its modules, its stream).
INSTRUMENTATION = {
    "sys.modules": "reaches loaded modules, the grader's too",
    "sys._getframe": "inspects the caller's frames",
    "os.close": "closes file descriptors",
    "os.dup2": "replaces file descriptors",
    "os.closerange": "closes file descriptors",
}
COMPARISON_DUNDERS = {
    "__eq__",
    "__ne__",
    "__array_ufunc__",
    "__array_function__",
    "__array_finalize__",
    "__array_priority__",
    "__bool__",
    "__float__",
    "__abs__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
}
SECRET_WORDS = re.compile(
    r"solutions/|hidden/|gradebook|\.db\b|autograded/|submitted/|"
    r"grader[/.]|\.\./|/proc/|/work/|\.git\b",
    re.I,
)
Flag = Callable[[ast.AST, str], None]  # records one flag: (the node, what it does)
LIBRARY_ROOTS = {
    "np",
    "numpy",
    "torch",
    "scipy",
    "math",
    "checks",
    "attnlib",
    "nn",
    "F",
    "sys",
    "builtins",
    "IPython",
    "plt",
    "matplotlib",
    "os",
}


@cache
def _shortcut_names(exercise: str) -> frozenset[str]:
    """Names that implement ``exercise`` in one call (the tripwire's list, by name only)."""
    rules = shortcuts().get(exercise, {})
    return frozenset(name for names in rules.values() for name in names)


def _root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _clean(source: str) -> str:
    """IPython magics and shell escapes are not Python: blank them, they are flagged apart."""
    return "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
    )


def _import_flags(tree: ast.AST, grade_id: str, flag: Flag) -> set[str]:
    """Flag risky imports; return the names the cell binds to modules."""
    local_modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            base = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
            for alias in node.names:
                full = f"{base}.{alias.name}" if base else alias.name
                local_modules.add(alias.asname or alias.name.split(".")[0])
                top = full.split(".")[0]
                if top in RISKY_MODULES:
                    flag(node, f"imports `{full}` ({RISKY_MODULES[top]})")
                if top == "attnlib":
                    flag(
                        node,
                        f"imports `{full}` from the course's helper package (is it the "
                        f"course's own version of `{grade_id}`?)",
                    )
                elif alias.name in _shortcut_names(grade_id):
                    flag(node, f"whole-solution shortcut: imports `{full}`")
                if "unittest.mock" in full or alias.name == "mock":
                    flag(node, "imports mock (monkeypatching)")
    return local_modules


def _assignment_flags(
    node: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete, roots: set[str], flag: Flag
) -> None:
    targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Attribute) and _root(sub) in roots:
                flag(node, f"monkeypatches `{_dotted(sub)}`")
            elif isinstance(sub, ast.Attribute) and sub.attr in IPYTHON_HOOKS:
                flag(node, f"replaces IPython hook `{_dotted(sub)}`")
            elif isinstance(sub, ast.Subscript) and _root(sub.value) == "__builtins__":
                flag(node, "edits `__builtins__`")
            elif isinstance(sub, ast.Name) and sub.id in ("__builtins__", "__class__"):
                flag(node, f"rebinds `{sub.id}`")
            elif isinstance(sub, ast.Attribute) and sub.attr in ("__class__", "__code__"):
                flag(node, f"rewrites `{sub.attr}`")


def _attribute_flags(
    node: ast.Attribute, grade_id: str, roots: set[str], course_aliases: set[str], flag: Flag
) -> None:
    dotted = _dotted(node)
    if node.attr in IPYTHON_HOOKS and isinstance(node.ctx, ast.Load):
        flag(node, f"uses IPython/sys hook `{dotted}`")
    if node.attr in _shortcut_names(grade_id):
        flag(node, f"whole-solution shortcut: uses `{dotted}`")
    elif _root(node) in course_aliases and isinstance(node.ctx, ast.Load):
        flag(node, f"uses the course's helper `{dotted}` in an answer")
    elif node.attr == grade_id and _root(node) in roots:
        flag(node, f"calls a library `{dotted}` instead of writing `{grade_id}`")
    if node.attr in ("_exit", "system", "popen", "kill", "settrace", "setprofile"):
        flag(node, f"calls `{dotted}`")
    if dotted in INSTRUMENTATION:
        flag(node, f"uses `{dotted}` ({INSTRUMENTATION[dotted]})")


def _other_flags(node: ast.AST, exercises: set[str], flag: Flag) -> None:
    """Risky calls, files, objects that fool comparisons, grading paths, global rebinding."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id in RISKY_CALLS:
            flag(node, f"calls `{node.func.id}` ({RISKY_CALLS[node.func.id]})")
        if node.func.id == "open":
            flag(node, "opens a file")
    elif isinstance(node, ast.FunctionDef) and node.name in COMPARISON_DUNDERS:
        flag(node, f"defines `{node.name}` (objects that fool comparisons)")
    elif isinstance(node, ast.ClassDef):
        for base in node.bases:
            if _dotted(base).endswith(("ndarray", "Tensor", "float", "list", "tuple")):
                flag(node, f"subclasses `{_dotted(base)}` (objects that fool comparisons)")
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        if SECRET_WORDS.search(node.value):
            flag(node, f"mentions a grading path: {node.value[:60]!r}")
    elif isinstance(node, ast.Global) and set(node.names) & exercises:
        flag(node, f"rebinds exercise names globally: {sorted(set(node.names) & exercises)}")


def scan_cell(
    grade_id: str, source: str, modules: dict[str, str], exercises: set[str]
) -> list[str]:
    """Flags for one answer cell. ``modules``: {name: module} the notebook's imports bind."""
    flags = []
    course_aliases = {k for k, v in modules.items() if v.split(".")[0] == "attnlib"}

    def flag(node: ast.AST, what: str) -> None:
        line = getattr(node, "lineno", 0)
        flags.append(f"`{grade_id}` line {line}: {what}")

    for i, line in enumerate(source.splitlines(), 1):
        if line.lstrip().startswith(("%", "!")):
            flags.append(
                f"`{grade_id}` line {i}: IPython magic or shell command `{line.strip()[:40]}`"
            )
    try:
        tree = pysource.parse(_clean(source))
    except SyntaxError:
        return flags  # graded as a syntax error; nothing to scan
    roots = set(modules) | LIBRARY_ROOTS | _import_flags(tree, grade_id, flag)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            _assignment_flags(node, roots, flag)
        elif isinstance(node, ast.Attribute):
            _attribute_flags(node, grade_id, roots, course_aliases, flag)
        else:
            _other_flags(node, exercises, flag)
    return list(dict.fromkeys(flags))


def module_names(source: str) -> dict[str, str]:
    """{name: module} a (trusted) cell binds to imports, e.g. {"np": "numpy", "checks": ...}."""
    try:
        tree = pysource.parse(source)
    except SyntaxError:
        return {}
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name.split(".")[0]: a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
    return names
