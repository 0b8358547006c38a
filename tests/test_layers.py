"""The layers of attnlib, the grader and the hub: a module imports only from its own layer or
the ones below, and no import cycle, so the folders read bottom-up. Every import counts, those
inside functions too.

The layer order, bottom-up (a module's layer is the first prefix of its name listed here):
"""

import ast
from pathlib import Path

from grader.course import REPO_ROOT

LAYERS = (
    # the notebooks' runtime: what a notebook, its checks and the grader import of attnlib
    ("attnlib",),
    # the learner's lab commands (`make lab`, update, reset) and the `make data` model factory,
    # each over the runtime, neither importing the other (attnlib.setup_lab: lab's former name)
    ("attnlib.lab", "attnlib.setup_lab", "attnlib.factory"),
    # the grader's base: the exception, the course, settings, the kernel side (grader/__init__.py,
    # wire.py and kernel/ are what the sandbox mounts) and the catalogue of hidden checks
    ("grader.errors", "grader.logs", "grader.course", "grader.configfile", "grader.settings",
     "grader.lifeline", "grader.processes", "grader.wire", "grader.seeds", "grader.release",
     "grader.kernel", "grader.hidden", "grader"),
    ("grader.results",),  # results, messages, OUT's files, gradebook, report, deadlines
    ("grader.intake",),  # submissions read, notebooks rebuilt from the release, answers scanned
    ("grader.run",),  # a notebook run in its sandboxed kernels
    ("grader.judging",),  # the trusted facts and the judge of what a kernel recorded
    ("grader.batch",),  # one job graded; the local pool or the Dask cluster of jobs
    ("grader.commands",),  # one module per `python -m grader` command
    ("grader.cli", "grader.__main__", "hub"),  # the entry points, and the hub on top
)  # fmt: skip
PACKAGES = ("attnlib", "grader", "hub")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for pkg in PACKAGES for p in sorted((REPO_ROOT / pkg).rglob("*.py"))}


def layer(module: str) -> int:
    """The index in LAYERS of ``module``: its longest matching prefix wins."""
    found = [
        (len(prefix), i)
        for i, prefixes in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    assert found, f"{module} is in no layer of tests/test_layers.py's LAYERS"
    return max(found)[1]


def imports(path: Path) -> set[str]:
    """The project modules ``path`` imports, at any depth of its code."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:  # `from pkg import module` imports pkg.module
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
    return {name for name in found if name in MODULES}


GRAPH = {name: imports(path) for name, path in MODULES.items()}


def _upward() -> list[str]:
    """Every import of a module of a layer above the importer's, in words."""
    return [
        f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
        for module, targets in sorted(GRAPH.items())
        for target in sorted(targets)
        if layer(target) > layer(module)
    ]


def _cycle() -> list[str] | None:
    """One import cycle of GRAPH, as the modules along it, or None."""
    state: dict[str, str] = {}  # module -> "open" while on the current path, then "done"

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = "open"
        path = [*path, module]
        for target in sorted(GRAPH[module]):
            if state.get(target) == "open":
                return path[path.index(target) :] + [target]
            if target not in state and (found := visit(target, path)):
                return found
        state[module] = "done"
        return None

    for module in sorted(GRAPH):
        if module not in state and (found := visit(module, [])):
            return found
    return None


def test_no_module_imports_one_of_a_layer_above():
    wrong = _upward()
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle():
    cycle = _cycle()
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_checks_see_what_they_must(monkeypatch):
    """The two checks can fail: every layer has modules, imports inside functions are seen,
    and a made-up upward import (the old `UserError` in cli.py) and its cycle are caught."""
    assert {layer(m) for m in MODULES} == set(range(len(LAYERS)))
    assert "grader.judging.judge" in GRAPH["grader.batch.pool"]  # imported in a function
    monkeypatch.setitem(GRAPH, "grader.settings", GRAPH["grader.settings"] | {"grader.cli"})
    assert "grader.settings (layer 2) imports grader.cli (layer 9)" in _upward()
    assert _cycle() == ["grader.cli", "grader.settings", "grader.cli"]


def test_the_runtime_imports_neither_the_lab_nor_the_factory(monkeypatch):
    """attnlib's runtime is below its lab commands and its model factory: a notebook's import
    never loads them, and an import of one by the runtime is caught."""
    assert layer("attnlib.shipped") < layer("attnlib.factory.make_data")
    assert layer("attnlib.paths") < layer("attnlib.lab.workspace")
    assert layer("attnlib.lab") == layer("attnlib.factory") < layer("grader.course")
    rooms = {"attnlib.lab": "attnlib.factory", "attnlib.factory": "attnlib.lab"}
    across = [
        f"{module} imports {target}"
        for module, targets in sorted(GRAPH.items())
        for room, other in rooms.items()
        if module == room or module.startswith(room + ".")
        for target in sorted(targets)
        if target == other or target.startswith(other + ".")
    ]
    assert not across, "\n".join(across)  # the lab and the factory stay apart
    monkeypatch.setitem(
        GRAPH, "attnlib.realsource", GRAPH["attnlib.realsource"] | {"attnlib.factory.realsource"}
    )
    assert "attnlib.realsource (layer 0) imports attnlib.factory.realsource (layer 1)" in _upward()
    assert _cycle() == [
        "attnlib.factory.realsource",
        "attnlib.realsource",
        "attnlib.factory.realsource",
    ]
