"""pyproject.toml and environment.yml must pin the same packages to the same versions
(the dependencies and the workshop server's `hub` extra; the test tools are not in the
conda environment)."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pyproject_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + project["optional-dependencies"]["hub"]
    return dict(d.split("==") for d in deps)


def _environment_pins():
    lines = (ROOT / "environment.yml").read_text().splitlines()
    pins = [ln.strip()[2:] for ln in lines if "==" in ln and ln.strip().startswith("- ")]
    return dict(p.split("==") for p in pins)


def test_every_dependency_is_pinned_exactly():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [d for group in project["optional-dependencies"].values() for d in group]
    deps = project["dependencies"] + extras
    assert deps and all("==" in d for d in deps), deps


def test_environment_yml_agrees_with_pyproject():
    assert _environment_pins() == _pyproject_pins()


def test_torch_is_the_cpu_build_on_disk():
    assert _pyproject_pins()["torch"] == "2.13.0"
