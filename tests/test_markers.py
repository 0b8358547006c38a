"""`make test-fast` leaves out what is slow (the graded batch, grading, the hub, the browser,
the bundle's venv, and by name the quick modules' tests that build a release, start a kernel
or run a notebook's experiment) by the markers tests/conftest.py sets, and keeps the quick
tests."""

import re
import subprocess
import sys
import tomllib

from conftest import SLOW_TESTS

from grader.course import REPO_ROOT

MAKEFILE = (REPO_ROOT / "Makefile").read_text()
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def _fast_expression() -> str:
    recipe = re.search(r"^test-fast:.*\n\t\$\(PY\) -m pytest -m \"([^\"]+)\"$", MAKEFILE, re.M)
    assert recipe, "`make test-fast` runs no `pytest -m`"
    return recipe.group(1)


def test_make_test_fast_leaves_out_every_registered_marker():
    markers = PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]
    registered = {line.split(":")[0] for line in markers}
    assert set(re.findall(r"\w+", _fast_expression())) - {"not", "or", "and"} == registered
    all_tests = r"^test: .*\n\t\$\(PY\) -m pytest -n 2$"
    assert re.search(all_tests, MAKEFILE, re.M), "make test runs all"


def test_the_fast_subset_keeps_quick_tests_and_leaves_out_slow_ones():
    """Collected with the recipe's expression: no hub test, no test of the graded batch, every
    test of test_pins.py, the tests of test_intake.py that grade nothing, and test_release_sync
    without the test that builds a release."""
    files = [
        "tests/test_hub.py",
        "tests/test_pins.py",
        "tests/test_intake.py",
        "tests/test_release_sync.py",
    ]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-m", _fast_expression(), *files],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
    ).stdout  # fmt: skip
    ids = [line for line in collected.splitlines() if "::" in line]
    assert not [i for i in ids if i.startswith("tests/test_hub.py")]
    assert len([i for i in ids if i.startswith("tests/test_pins.py")]) >= 10
    intake = [i for i in ids if i.startswith("tests/test_intake.py")]
    assert intake and not [i for i in intake if "graded" in _fixtures_of(i)], intake
    sync = [i.split("::")[1] for i in ids if i.startswith("tests/test_release_sync.py")]
    assert "test_release_is_up_to_date" not in sync and "test_no_outputs_are_committed" in sync


def test_every_test_marked_slow_by_name_exists():
    """SLOW_TESTS names the tests of quick modules that cost a minute or more from a clean
    clone (they build notebooks/ or the trusted release cache, keyed by the content of
    solutions/ and grader/), start kernels, or run notebook 09's eviction experiment on the
    shipped weights. A renamed one would silently join `make test-fast`."""
    for module, names in SLOW_TESTS.items():
        text = (REPO_ROOT / "tests" / f"{module}.py").read_text()
        gone = [n for n in sorted(names) if not re.search(rf"^def {n}\(", text, re.M)]
        assert not gone, f"tests/{module}.py has no {gone}: update SLOW_TESTS in conftest.py"


def _fixtures_of(test_id: str) -> str:
    """The signature line of the test ``test_id`` names (its fixtures)."""
    path, name = test_id.split("::")
    name = name.split("[")[0]
    text = (REPO_ROOT / path).read_text()
    return re.search(rf"^def {name}\((.*)\):", text, re.M).group(1)


def test_make_test_runs_each_module_whole_in_one_worker():
    """`make test`'s two workers (tests/conftest.py): every test of a module in one worker,
    and the modules of ONCE_MODULES (they share the batches built once) in one worker too."""
    files = ["tests/test_layers.py", "tests/test_lab_args.py", "tests/test_result.py",
             "tests/test_attacks_intake.py"]  # fmt: skip
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider",
         "-m", _fast_expression(), *files],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=300,
    ).stdout  # fmt: skip
    workers: dict[str, set[str]] = {}
    for worker, module in re.findall(r"^\[(gw\d)\] .*PASSED (tests/\w+\.py)::", ran, re.M):
        workers.setdefault(module, set()).add(worker)
    assert set(workers) == set(files), ran[-2000:]
    assert all(len(w) == 1 for w in workers.values()), workers
    assert workers["tests/test_result.py"] == workers["tests/test_attacks_intake.py"], workers
    assert len(set().union(*workers.values())) == 2, "both workers ran tests"
