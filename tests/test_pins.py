"""Every version is pinned, and environment.yml (the learner's environment, which the student
bundle ships) pins exactly pyproject.toml's dependencies (the learner's set): no instructor,
host or test extra."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS = PROJECT["optional-dependencies"]


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
