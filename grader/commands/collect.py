"""`python -m grader collect ZIP --roster ROSTER [--into SUBMISSIONS]`: an LMS's bulk
download (Canvas by default, Moodle with ``--GraderSettings.lms=moodle``) laid out as
`make grade` expects, one folder per roster student (grader.intake.collect). Every file it
could not match to a roster student is listed, one line each; nothing is graded."""

import argparse
from pathlib import Path

from grader.errors import UserError
from grader.intake import roster as class_roster
from grader.intake.collect import collect

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
    done = collect(args.zip, roster, args.into, args.settings)
    n_files = sum(len(files) for files in done.files.values())
    print(
        f"collected {n_files} files of {len(done.files)} of the roster's {len(roster)} "
        f"students into {args.into}"
        + (f"; {len(done.older)} older submissions left out" if done.older else "")
    )
    for name in done.older:
        print(f"  older, left out: {name}")
    for name, why in done.unmatched:
        print(f"  not collected: {name}: {why}")
    return 0
