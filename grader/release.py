"""`python -m grader release`: regenerate the student notebooks from `solutions/`.

nbgrader's generate_assignment clears solutions and hidden tests, locks the
test cells and strips outputs. The result is byte-identical on a rerun.
"""

import subprocess
import sys
from pathlib import Path

from grader.course import RELEASE, REPO_ROOT, assignments


def add_arguments(parser):
    parser.add_argument(
        "--dest", type=Path, default=RELEASE, help="release folder (default: notebooks/)"
    )


def release(dest: Path = RELEASE) -> list[Path]:
    """Generate every assignment into ``dest``; return the notebooks written."""
    dest = dest.resolve()
    for assignment in assignments():
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
    return sorted(dest.glob("*/*.ipynb"))


def run(args) -> int:
    for path in release(args.dest):
        print(f"released {path.relative_to(path.parent.parent.parent)}")
    return 0
