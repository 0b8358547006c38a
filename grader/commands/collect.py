"""`python -m grader collect ZIP --roster ROSTER [--into SUBMISSIONS]`: an LMS's bulk
download (Canvas by default, Moodle with ``--GraderSettings.lms=moodle``) laid out as
`make grade` expects, one folder per roster student (grader.intake.collect). Every file it
could not match to a roster student, or left out as older, is listed, one line each; and
``collect_report.csv`` beside SUBMISSIONS keeps every file taken, left out or not matched,
and why (its owner's alone, as SUBMISSIONS is); nothing is graded."""

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from grader.errors import UserError
from grader.intake import roster as class_roster
from grader.intake.collect import REPORT, REPORT_COLUMNS, Collected, collect
from grader.printable import printable
from grader.results import csvfile

TAKES_SETTINGS = True  # lms, lms_pattern and the unpack budgets


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("zip", type=Path, help="the LMS's bulk download (a zip)")
    parser.add_argument(
        "--roster", type=Path, required=True, help="CSV: student,name,id,sis_user_id,..."
    )
    parser.add_argument(
        "--into",
        type=Path,
        default=Path("submitted"),
        help="the SUBMISSIONS folder to lay the files out in (default: submitted)",
    )


def run(args: argparse.Namespace) -> int:
    if not args.zip.is_file():
        raise UserError(f"{args.zip} is not a file (the LMS's bulk download, a zip)")
    roster = class_roster.read(args.roster)
    if args.settings.private_outputs:  # every student's work: its owner's alone, as OUT is
        args.into.mkdir(parents=True, exist_ok=True)
        os.chmod(args.into, 0o700)
    done = collect(args.zip, roster, args.into, args.settings)
    n_files = sum(len(files) for files in done.files.values())
    print(
        f"collected {n_files} files of {len(done.files)} of the roster's {len(roster)} "
        f"students into {args.into}"
        + (f"; {len(done.older)} older submissions left out" if done.older else "")
    )
    print(f"the zip's times read as {args.settings.zip_timezone} (c.GraderSettings.zip_timezone)")
    for name, _, _ in done.older:
        print(printable(f"  older, left out: {name}"))  # names are the zip's: the students'
    for name, why in done.unmatched:
        print(printable(f"  not collected: {name}: {why}"))
    report = args.into.resolve().parent / REPORT
    with _private(args.settings.private_outputs):
        write_report(report, done)
    print(printable(f"every file and why: {report}"))
    return 0


def write_report(path: Path, done: Collected) -> None:
    """collect_report.csv: one row per member, every cell escaped as the terminal's lines
    are (a name is the zip's, so a student's: no control character reaches a viewer)."""
    rows = [[printable(cell) for cell in row] for row in done.report()]
    csvfile.write(path, REPORT_COLUMNS, rows)


@contextmanager
def _private(private: bool) -> Iterator[None]:
    """Files made in the block are their owner's alone (0600) from their creation, when
    ``private``: the report names every student, as SUBMISSIONS (0700) does."""
    previous = os.umask(0o077) if private else None
    try:
        yield
    finally:
        if previous is not None:
            os.umask(previous)
