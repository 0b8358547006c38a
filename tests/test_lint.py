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


def test_mypy_strict_is_clean():
    """mypy strict on attnlib/, grader/ and hub/, as `make lint` runs it, with pyproject.toml's
    settings: no error, and no module exempt from its errors."""
    exempt = [o["module"] for o in PYPROJECT.get("overrides", []) if o.get("ignore_errors")]
    assert not exempt, f"modules exempt from mypy's errors: {exempt}"
    # mypy's own incremental cache (.mypy_cache, as `make lint` uses): a rerun checks only
    # what changed, in seconds
    out = subprocess.run([str(MYPY)], cwd=REPO_ROOT, capture_output=True, text=True,
                         timeout=600)  # fmt: skip
    errors = [ln for ln in out.stdout.splitlines() if re.match(r"\S+\.py:\d+: error:", ln)]
    assert out.returncode == 0 and not errors, out.stdout[-4000:] + out.stderr[-2000:]
