"""The student release: the notebooks of `solutions/` regenerated (`python -m grader release`,
``grader.commands.release``; the trusted release cache, ``grader.judging.trusted``).

nbgrader's generate_assignment clears solutions and hidden tests, locks the
test cells and strips outputs. Each released notebook then gets its release in its
metadata (``attn_release``: which notebook it is and a version, the hash of its source),
so a submission says which release it was made from. The result is byte-identical on a
rerun.
"""

import hashlib
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from grader.course import RELEASE, REPO_ROOT, assignments, source_path

METADATA_KEY = "attn_release"


def version(assignment: str) -> str:
    """The release version of ``assignment``: the hash of its source notebook."""
    return hashlib.sha256(source_path(assignment).read_bytes()).hexdigest()[:12]


def _stamp(path: Path, assignment: str) -> None:
    nb = nbformat.read(path, as_version=4)
    nb.metadata[METADATA_KEY] = {"notebook": assignment, "version": version(assignment)}
    nbformat.write(nb, path)


def _generate(assignment: str, dest: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "nbgrader",
            "generate_assignment",
            assignment,
            "--no-db",
            "--force",
            "--log-level=WARN",
            f"--CourseDirectory.release_directory={dest}",
        ],
        cwd=REPO_ROOT,
        check=True,
    )
    _stamp(dest / assignment / f"{assignment}.ipynb", assignment)


def release(dest: Path = RELEASE) -> list[Path]:
    """Generate every assignment into ``dest`` (one nbgrader per core at a time); return
    the notebooks written."""
    dest = dest.resolve()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(lambda a: _generate(a, dest), assignments()))
    return sorted(dest.glob("*/*.ipynb"))
