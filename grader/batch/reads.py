"""The files grading one notebook reads, found by reading the code: the resume key
(``grader.batch.job.job_key``) hashes exactly these, so an edit elsewhere reuses its results.

- ``grader/``: the grading machinery, all of it, but of the per-notebook modules
  (``grader/hidden/nb<notebook>.py``) only the notebook's own;
- ``attnlib/``: every module that the grader's code, the notebook's hidden checks and its
  solution import, transitively (``import``, ``from ... import``, relative imports, and
  ``importlib.import_module`` of a named module; one that names a package's modules in an
  f-string, ``f"attnlib.checks.{name}"``, counts the package's modules, of its per-notebook
  ones only the notebook's own), each with its packages' ``__init__.py``, and the other
  files of ``attnlib/`` such a module names (``explorer.css``);
- ``data/``, all of it, when one of those modules loads data (calls ``data_file`` or
  ``data_dir``, attnlib.paths' only ways in).

A student's own imports are in their submission, which the key hashes whole.
"""

import ast
import json
import re
from pathlib import Path

from grader import pysource

LIBRARY = "attnlib"
DATA_CALLS = frozenset({"data_file", "data_dir"})
PER_NOTEBOOK = re.compile(r"nb\d\d_\w+")  # nb01_soft_lookup: a module of one notebook only
MAGIC = re.compile(r"^\s*[%!].*$", re.MULTILINE)  # IPython lines, not Python


def notebook_files(root: Path, notebook: str) -> list[Path]:
    """Every file grading ``notebook`` reads under ``root`` (a checkout), sorted."""
    grader = [p for p in _files(root / "grader") if _for_notebook(p, notebook)]
    sources = [(_package_of(root, p), p.read_text()) for p in grader if p.suffix == ".py"]
    sources += _notebook_code(root / "solutions" / notebook / f"{notebook}.ipynb")
    modules = _closure(root, notebook, sources)
    named = [p for p in _files(root / LIBRARY) if p.suffix != ".py" and _named_in(p, modules)]
    data = _files(root / "data") if any(_loads_data(root, m) for m in modules) else []
    return sorted({*grader, *modules, *named, *data})


def _files(folder: Path) -> list[Path]:
    """The files under ``folder`` at any depth, compiled caches left out."""
    return [
        p
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    ]


def _for_notebook(path: Path, notebook: str) -> bool:
    """False for another notebook's own module (grader/hidden/nb10_real_text.py for 01)."""
    return not PER_NOTEBOOK.fullmatch(path.stem) or path.stem == f"nb{notebook}"


def _notebook_code(path: Path) -> list[tuple[str, str]]:
    """The code cells of a notebook (its magics left out), as sources with no package."""
    if not path.is_file():
        return []
    cells = json.loads(path.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return [("", MAGIC.sub("", text)) for text in code]


def _closure(root: Path, notebook: str, sources: list[tuple[str, str]]) -> set[Path]:
    """The library's module files ``sources`` import, and what those import, transitively."""
    found: set[Path] = set()
    todo = [name for package, text in sources for name in _imports(package, text)]
    while todo:
        name = todo.pop()
        for path in _module_files(root, name, notebook):
            if path not in found:
                found.add(path)
                package = _package_of(root, path)
                todo.extend(_imports(package, path.read_text()))
    return found


def _package_of(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1])


def _imports(package: str, text: str) -> list[str]:
    """The dotted names of the modules ``text`` imports (those of a package's f-string
    import end in ``.*``); a source that does not parse imports nothing we can read."""
    try:
        tree = pysource.parse(text)
    except SyntaxError:
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names += _from_import(package, node)
        elif isinstance(node, ast.Call) and _calls(node, "import_module") and node.args:
            names += _dynamic(node.args[0])
    return names


def _from_import(package: str, node: ast.ImportFrom) -> list[str]:
    """``from a.b import c``: a.b and, when c is a module, a.b.c (tried by _module_files)."""
    if node.level:
        up = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*up, node.module] if node.module else up)
    else:
        base = node.module or ""
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _dynamic(arg: ast.expr) -> list[str]:
    """``import_module("a.b")`` names a.b; ``import_module(f"a.b.{x}")`` every module of a.b."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if isinstance(arg, ast.JoinedStr) and arg.values:
        first = arg.values[0]
        if isinstance(first, ast.Constant) and str(first.value).endswith("."):
            return [str(first.value) + "*"]
    return []


def _calls(node: ast.Call, name: str) -> bool:
    func = node.func
    return (isinstance(func, ast.Name) and func.id == name) or (
        isinstance(func, ast.Attribute) and func.attr == name
    )


def _module_files(root: Path, name: str, notebook: str) -> list[Path]:
    """The files importing ``name`` runs, when it is the library's: its packages'
    ``__init__.py`` and the module itself (``a.b.*``: each module of package a.b that is
    for ``notebook``)."""
    parts = name.split(".")
    if parts[0] != LIBRARY:
        return []
    files = [root.joinpath(*parts[:i], "__init__.py") for i in range(1, len(parts))]
    if parts[-1] == "*":
        folder = root.joinpath(*parts[:-1])
        files += [p for p in folder.glob("*.py") if _for_notebook(p, notebook)]
    else:
        files += [root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")]
    return [p for p in files if p.is_file()]


def _named_in(path: Path, modules: set[Path]) -> bool:
    """Whether a module of the same folder names the file ``path`` (``explorer.css``)."""
    return any(m.parent == path.parent and path.name in m.read_text() for m in modules)


def _loads_data(root: Path, module: Path) -> bool:
    """Whether ``module`` calls data_file or data_dir (attnlib.paths, which defines them,
    calls them only for its callers)."""
    if module == root / LIBRARY / "paths.py":
        return False
    tree = pysource.parse(module.read_text())
    return any(
        isinstance(node, ast.Call) and any(_calls(node, name) for name in DATA_CALLS)
        for node in ast.walk(tree)
    )
