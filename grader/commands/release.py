"""`python -m grader release`: regenerate the student notebooks from `solutions/` (the build
itself: ``grader.release``)."""

import argparse
from pathlib import Path

from grader.course import RELEASE
from grader.release import release


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dest", type=Path, default=RELEASE, help="release folder (default: notebooks/)"
    )


def run(args: argparse.Namespace) -> int:
    for path in release(args.dest):
        print(f"released {path.relative_to(path.parent.parent.parent)}")
    return 0
