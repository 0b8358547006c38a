"""ruff (lint and format) over the packages and the notebooks' code cells (solutions/).

One test per folder and tool, so a failure names the folder; the message lists the files.
Fix with `.venv/bin/ruff check --fix PATH` and `.venv/bin/ruff format PATH`.
"""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from grader.course import REPO_ROOT

RUFF = Path(sys.executable).with_name("ruff")
TARGETS = ["attnlib", "grader", "bench", "tests", "solutions"]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(RUFF), *args, "--no-cache"], cwd=REPO_ROOT, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def _present(target: str) -> str:
    if not (REPO_ROOT / target).is_dir():
        pytest.skip(f"{target}/ does not exist yet")
    return target


@pytest.mark.parametrize("target", TARGETS)
def test_ruff_check(target):
    out = _ruff("check", "--output-format=concise", _present(target))
    problems = [line for line in out.stdout.splitlines() if re.match(r"\S+:\d+:\d+: ", line)]
    files = sorted({line.split(":")[0] for line in problems})
    assert out.returncode == 0, (
        f"ruff check: {len(problems)} problem(s) in {', '.join(files) or target}:\n"
        + "\n".join(problems[:40]) + out.stderr[-2000:]
    )  # fmt: skip


@pytest.mark.parametrize("target", TARGETS)
def test_ruff_format(target):
    out = _ruff("format", "--check", "--output-format=concise", _present(target))
    files = sorted(
        {line.split(":")[0] for line in out.stdout.splitlines() if "unformatted" in line}
    )
    assert out.returncode == 0, (
        f"ruff format would change {len(files)} file(s): {', '.join(files)} "
        f"(run `.venv/bin/ruff format {target}`)\n{out.stderr[-2000:]}"
    )


def test_ruff_sees_the_notebooks():
    """The notebook code cells really are linted (ruff reads .ipynb via pyproject.toml)."""
    listed = _ruff("check", "--show-files", "solutions").stdout
    notebooks = sorted(p.relative_to(REPO_ROOT) for p in REPO_ROOT.glob("solutions/*/*.ipynb"))
    assert notebooks and all(str(nb) in listed for nb in notebooks), listed[-2000:]


# --------------------------------------------------------------------------------- mypy

MYPY = Path(sys.executable).with_name("mypy")
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["mypy"]


def _pending() -> set[str]:
    """The modules pyproject.toml still exempts from mypy strict (``ignore_errors``)."""
    return {
        module
        for override in PYPROJECT.get("overrides", [])
        if override.get("ignore_errors")
        for module in override["module"]
    }


def _ini_value(value) -> str:
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


def _without_exemptions(path: Path) -> Path:
    """pyproject.toml's mypy settings as a mypy.ini, but no module exempt from its errors."""
    lines = ["[mypy]"]
    lines += [f"{k} = {_ini_value(v)}" for k, v in PYPROJECT.items() if k != "overrides"]
    for override in PYPROJECT.get("overrides", []):
        if not override.get("ignore_errors"):
            lines.append(f"[mypy-{','.join(override['module'])}]")
            lines += [f"{k} = {_ini_value(v)}" for k, v in override.items() if k != "module"]
    path.write_text("\n".join(lines) + "\n")
    return path


def _module(path: str) -> str:
    parts = list(Path(path).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_mypy_strict_is_clean_but_for_the_modules_listed_pending(tmp_path):
    """mypy strict on grader/ and hub/ (as `make lint` runs it), every error counted: a module
    not listed pending in pyproject.toml has none, and a listed one still has some (once it
    is clean, take it off the list, so it stays clean)."""
    config = _without_exemptions(tmp_path / "mypy.ini")
    # mypy's own incremental cache (.mypy_cache, as `make lint` uses): a rerun checks only
    # what changed, in seconds
    out = subprocess.run([str(MYPY), "--config-file", str(config)], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    errors = [ln for ln in out.stdout.splitlines() if re.match(r"\S+\.py:\d+: error:", ln)]
    assert errors or out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    by_module: dict[str, list[str]] = {}
    for line in errors:
        by_module.setdefault(_module(line.split(":")[0]), []).append(line)
    unlisted = [ln for m, found in sorted(by_module.items()) if m not in _pending() for ln in found]
    assert not unlisted, f"mypy strict: {len(unlisted)} error(s):\n" + "\n".join(unlisted[:40])
    clean = sorted(_pending() - set(by_module))
    assert not clean, f"now clean under mypy strict, take them off pyproject.toml's list: {clean}"
