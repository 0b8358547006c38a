"""`python -m grader collect ZIP --roster ROSTER [--into SUBMISSIONS]`: an LMS's bulk
download (Canvas by default, Moodle with ``--GraderSettings.lms=moodle``) laid out as
`make grade` expects, one folder per roster student (grader.intake.collect). Every file it
could not match to a roster student is listed, one line each; nothing is graded."""

import argparse
import os
from pathlib import Path

from grader.errors import UserError
from grader.intake import roster as class_roster
from grader.intake.collect import collect
from grader.printable import printable

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
    for name in done.older:
        print(printable(f"  older, left out: {name}"))  # names are the zip's: the students'
    for name, why in done.unmatched:
        print(printable(f"  not collected: {name}: {why}"))
    return 0
