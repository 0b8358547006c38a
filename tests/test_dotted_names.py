"""Every dotted name of the project that a docstring, a comment or a config file's comment
points to (``grader.run.sandbox.read_roots``, ``hub.instructor``, ``attnlib.checks._cells``)
names a module of the checkout, or a name a module defines: a module moved or renamed leaves
no pointer to where it was. Read from the source, nothing imported: a second."""

import ast
import functools
import io
import re
import tokenize
from pathlib import Path

import pytest

from grader.course import REPO_ROOT

PACKAGES = ("grader", "hub", "attnlib")
# Files whose comments tell where a setting is read; their `#` comments are read too.
CONFIG_FILES = ("nbgrader_config.py", "pyproject.toml", "Makefile", "environment.yml")
# A dotted name of the project, not part of a path (grader/run/...), a file name or a URL.
DOTTED = re.compile(r"(?<![\w./-])((?:grader|hub|attnlib)(?:\.[A-Za-z_]\w*)+)(?![\w/-])")
FILE_SUFFIXES = {"py", "toml", "json", "cfg", "yml", "yaml", "txt", "css", "js", "mplstyle"}


def _python_texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each comment and docstring of a Python file."""
    source = path.read_text()
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append((node.body[0].lineno, doc))
    return found


def _config_texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each `#` comment of a config file (TOML, YAML, Makefile)."""
    return [
        (n, line[line.index("#") :])
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "#" in line
    ]


def pointers(root: Path = REPO_ROOT) -> list[tuple[str, str]]:
    """[(dotted name, "file:line")] of every pointer in the packages and config files."""
    sources = [p for pkg in PACKAGES for p in sorted((root / pkg).rglob("*.py"))]
    configs = [root / name for name in CONFIG_FILES if (root / name).is_file()]
    found = []
    for path in sources + configs:
        texts = _python_texts(path) if path.suffix == ".py" else _config_texts(path)
        for line, text in texts:
            for match in DOTTED.finditer(text):
                name = match.group(1)
                if name.rpartition(".")[2] not in FILE_SUFFIXES:
                    found.append((name, f"{path.relative_to(root)}:{line}"))
    return found


def _module_file(root: Path, parts: list[str]) -> Path | None:
    base = root.joinpath(*parts)
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    if base.is_dir():  # a folder of modules (a namespace package)
        return base
    # a package's data file, named as its loader names it (the style "attnlib.course" is
    # attnlib/course.mplstyle)
    return next(base.parent.glob(f"{base.name}.*"), None) if base.parent.is_dir() else None


@functools.cache
def _body(path: Path) -> list[ast.stmt]:
    return ast.parse(path.read_text(), str(path)).body


def _defined(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """{name: its statement} of what a module's or a class's body defines."""
    names: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name.partition(".")[0], node) for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = node
        elif isinstance(node, (ast.If, ast.Try, ast.With)):  # e.g. TYPE_CHECKING, a fallback
            inner = list(node.body) + list(getattr(node, "orelse", []))
            names.update(_defined(inner))
    return names


def resolves(name: str, root: Path = REPO_ROOT) -> bool:
    """Whether ``name`` is a module of the checkout, or a module's name followed by names it
    (and its classes) define; a name it imports counts as defined."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        path = _module_file(root, parts[:cut])
        if path is None:
            continue
        rest = parts[cut:]
        if not rest:
            return True
        if path.suffix != ".py":
            return False
        body = _body(path)
        for part in rest:
            node = _defined(body).get(part)
            if node is None:
                return False
            if not isinstance(node, ast.ClassDef):  # a function, a value, an import: found
                return True
            body = node.body
        return True
    return False


def test_every_dotted_name_in_a_docstring_or_comment_resolves():
    found = pointers()
    assert len(found) > 100, "the scan found too few pointers: is DOTTED still right?"
    stale = sorted({f"{where}: {name}" for name, where in found if not resolves(name)})
    assert not stale, "pointers to nothing (moved or renamed?):\n" + "\n".join(stale)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("grader.run.sandbox", True),  # a module
        ("grader.kernel", True),  # a package
        ("grader.run.sandbox.read_roots", True),  # a function
        ("grader.settings.GraderSettings.seed", True),  # a class's attribute
        ("grader.sandbox", False),  # moved to grader.run.sandbox
        ("grader.run.sandbox.kernel_settings", False),  # no such name there
        ("grader.settings.GraderSettings.no_such_setting", False),
        ("attnlib.course", True),  # attnlib/course.mplstyle, a matplotlib style
        ("attnlib.course.palette", False),
    ],
)
def test_a_pointer_resolves_only_to_what_exists(name, expected):
    assert resolves(name) is expected


def test_pointers_are_read_from_comments_docstrings_and_config_comments(tmp_path):
    (tmp_path / "grader").mkdir()
    (tmp_path / "grader" / "a.py").write_text(
        '"""Uses ``grader.b.f``."""\n\nX = "grader.not_a_pointer"  # see grader.c\n'
    )
    (tmp_path / "pyproject.toml").write_text('x = "grader.d"  # from grader.e.g, not grader/f.py\n')
    assert sorted(n for n, _ in pointers(tmp_path)) == ["grader.b.f", "grader.c", "grader.e.g"]
