"""Every version is pinned, and environment.yml (the learner's environment, which the student
bundle ships) pins exactly pyproject.toml's dependencies (the learner's set): no instructor,
host or test extra. constraints.txt is the whole environment as installed, every package our
code imports is declared, and every library whose internals we override is pinned and tested."""

import ast
import re
import subprocess
import sys
import sysconfig
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS = PROJECT["optional-dependencies"]


def canonicalize_name(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(requirements) -> dict[str, str]:
    return dict(r.split("==") for r in requirements)


def _environment_pins():
    lines = (ROOT / "environment.yml").read_text().splitlines()
    pins = [ln.strip()[2:] for ln in lines if "==" in ln and ln.strip().startswith("- ")]
    return _pins(pins)


def test_every_dependency_is_pinned_exactly():
    deps = PROJECT["dependencies"] + [d for group in EXTRAS.values() for d in group]
    assert deps and all("==" in d for d in deps), deps


def test_environment_yml_is_the_learner_set_of_pyproject():
    assert _environment_pins() == _pins(PROJECT["dependencies"])


def test_learners_install_no_instructor_host_or_test_tool():
    learner = {name.split("[")[0] for name in _pins(PROJECT["dependencies"])}
    assert {"dask", "playwright"} <= {n.split("[")[0] for n in _pins(EXTRAS["grader"])}
    assert {"jupyterhub", "jupyterhub-idle-culler"} <= set(_pins(EXTRAS["hub"]))
    assert {"pytest", "ruff"} <= set(_pins(EXTRAS["test"]))
    for extra, group in EXTRAS.items():
        assert not learner & {n.split("[")[0] for n in _pins(group)}, extra


def test_torch_is_the_cpu_build_on_disk():
    assert _pins(PROJECT["dependencies"])["torch"] == "2.13.0"


def _constraints() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    pins = [ln for ln in lines if ln.strip() and not ln.startswith("#")]
    assert all(ln.count("==") == 1 and " " not in ln for ln in pins), "every pin exact"
    return {canonicalize_name(name): version for name, version in map(_split_pin, pins)}


def _split_pin(pin: str) -> tuple[str, str]:
    name, version = pin.split("==")
    return name.split("[")[0], version


def _installed() -> dict[str, str]:
    """{distribution: version} of this environment but the course itself, local labels
    (torch's ``+cpu``) left out as pip's ``==`` does."""
    paths = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    # this environment's site-packages only: setuptools puts its vendored copies on sys.path
    found = {canonicalize_name(d.metadata["Name"]): d.version
             for d in metadata.distributions(path=paths)}  # fmt: skip
    found.pop(canonicalize_name(PROJECT["name"]), None)
    return {name: version.split("+")[0] for name, version in found.items()}


def test_constraints_are_what_is_installed():
    """constraints.txt is this environment, every package exact, and agrees with pyproject."""
    pinned, installed = _constraints(), _installed()
    assert pinned["torch"] == "2.13.0"
    differ = {n: (pinned.get(n), installed.get(n)) for n in set(pinned) | set(installed)
              if pinned.get(n) != installed.get(n)}  # fmt: skip
    assert differ == {}, "constraints.txt vs installed: " + repr(differ)
    declared = PROJECT["dependencies"] + [d for group in EXTRAS.values() for d in group]
    for name, version in map(_split_pin, declared):
        assert pinned[canonicalize_name(name)] == version, name


def test_the_makefile_installs_with_the_constraints():
    makefile = (ROOT / "Makefile").read_text()
    installs = re.findall(r"^\t.*pip install.*$|^PIP :=.*$", makefile, re.M)
    assert installs and all("-c constraints.txt" in ln or "$(PIP)" in ln for ln in installs)
    assert re.search(r"^PIP := .*pip install .*-c constraints\.txt$", makefile, re.M)


def _imports(folder: str) -> set[str]:
    """Top-level modules that ``folder``'s Python files import (``pytest.importorskip`` too),
    neither the standard library's nor the course's own."""
    found = set()
    for path in (ROOT / folder).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip"
                  and node.args and isinstance(node.args[0], ast.Constant)):  # fmt: skip
                found.add(node.args[0].value)
    tops = {name.split(".")[0] for name in found}
    local = {p.stem for p in (ROOT / folder).rglob("*") if p.suffix == ".py" or p.is_dir()}
    # _typeshed: the standard library's stubs, imported for type checkers only
    stdlib = set(sys.stdlib_module_names) | {"_typeshed"}
    return tops - stdlib - {"attnlib", "grader", "hub", "bench"} - local


def _declared(*groups: str) -> set[str]:
    requirements = PROJECT["dependencies"] + [d for g in groups for d in EXTRAS[g]]
    return {canonicalize_name(_split_pin(r)[0]) for r in requirements}


@pytest.mark.parametrize(
    ("folder", "groups"),
    [
        ("attnlib", ()),  # the learner's package: the learner's set only
        ("grader", ("grader",)),
        ("hub", ("hub",)),
        ("tests", tuple(EXTRAS)),
        ("bench", tuple(EXTRAS)),
    ],
)
def test_every_imported_package_is_declared(folder, groups):
    distributions = metadata.packages_distributions()
    imported = _imports(folder)
    assert not imported - set(distributions), f"{folder} imports what nothing installs"
    used = {canonicalize_name(distributions[m][0]) for m in imported}
    assert used - _declared(*groups) == set(), f"{folder} imports undeclared packages"


# Where our code overrides another library's internals: that library is pinned exactly in
# the learner's set, and the comment at the override names the test that exercises it.
OVERRIDE = re.compile(r"# Overrides (\S+) internals \(pinned in pyproject\.toml\); guarded by\n"
                      r"\s*# (tests/\S+\.py)::(test_\w+)")  # fmt: skip
OVERRIDDEN = {"nbclient", "jupyter_client", "nbgrader"}


def _overrides() -> list[tuple[str, str, str]]:
    """(library, test file, test) of every override marker in grader/ and hub/, any depth."""
    paths = [*(ROOT / "grader").rglob("*.py"), *(ROOT / "hub").rglob("*.py")]
    return [m.groups() for p in paths for m in OVERRIDE.finditer(p.read_text())]


def test_every_override_of_a_library_is_pinned_and_tested():
    """...by a test `make test-fast` runs, so a library bump that changes one fails there."""
    from conftest import SLOW_MODULES, SLOW_TESTS

    found = _overrides()
    assert {library for library, _, _ in found} == OVERRIDDEN, found
    slow = {m for modules in SLOW_MODULES.values() for m in modules}
    for _, test_file, test in found:
        module = Path(test_file).stem
        assert module not in slow and test not in SLOW_TESTS.get(module, ()), (test_file, test)
    learner = {canonicalize_name(n): v for n, v in map(_split_pin, PROJECT["dependencies"])}
    for library, test_file, test in found:
        assert canonicalize_name(library) in learner, f"{library} is overridden, not pinned"
        assert f"\ndef {test}(" in (ROOT / test_file).read_text(), f"{test_file}::{test}"


def test_nbformat_imports_without_building_lark_parsers():
    """With rfc3987 installed (pyproject.toml), jsonschema's IRI check leaves rfc3987-syntax
    out: it would build its Lark parsers in every process that imports nbformat (1.2 s)."""
    probe = "import sys, nbformat; print(sorted(m for m in sys.modules if 'rfc3987' in m))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['rfc3987']"
