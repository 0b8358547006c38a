"""`python -m hub COMMAND`: the workshop server.

The host (as root):      start, end
An instructor (in a terminal of their Lab on the hub):
                         release NOTEBOOK..., grade NOTEBOOK... [--scheduler ADDRESS],
                         feedback NOTEBOOK..., totals
"""

import argparse
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from grader import logs
from hub import settings
from hub.environment import SetupError


def _start_options(parser: argparse.ArgumentParser) -> None:
    defaults = settings.Settings(course_id="-")  # the course's own id is never an option
    for name, trait in sorted(settings.Settings.class_traits(config=True).items()):
        if name in ("root", "course_id"):
            continue
        option, value = "--" + name.replace("_", "-"), getattr(defaults, name)
        text = f"{trait.help.rstrip('.')} (default: {value})"
        if name == "instructors":
            parser.add_argument(option, nargs="+", metavar="NAME", help=text)
        elif isinstance(value, bool):  # --self-signed, --no-self-signed
            parser.add_argument(option, action=argparse.BooleanOptionalAction, help=text)
        else:
            parser.add_argument(option, type=type(value), help=text)
    parser.add_argument("--student-password", help="the room's password (default: made once)")
    parser.add_argument("--instructor-password", help="at least 32 characters (default: made)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hub", description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path,
                        help=f"the server's folder (default: ${settings.ROOT_VARIABLE} or "
                        f"{settings.DEFAULT_ROOT})")  # fmt: skip
    logs.add_options(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _start_options(sub.add_parser("start", help="lay out ROOT and run JupyterHub (as root)"))
    end = sub.add_parser("end", help="stop, back up the day, wipe the attendees (as root)")
    end.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    for name, summary in (
        ("release", "release notebooks to the exchange"),
        ("grade", "collect and grade with the course grader"),
        ("feedback", "generate and release the feedback"),
    ):
        command = sub.add_parser(name, help=summary)
        command.add_argument("notebooks", nargs="+", metavar="NOTEBOOK")
        if name == "grade":
            command.add_argument(
                "--scheduler",
                metavar="ADDRESS",
                help="grade on the Dask cluster whose scheduler is at ADDRESS, e.g. "
                "tcp://head:8786, outside this server's limits (default: inside them)",
            )
    sub.add_parser("totals", help="hand-entered points into grading/'s outputs")
    return parser


def _settings_for_start(args: argparse.Namespace) -> settings.Settings:
    given = {name: getattr(args, name) for name in settings.Settings.class_trait_names(config=True)
             if getattr(args, name, None) is not None}  # fmt: skip
    root = settings.root_folder(args.root)
    try:  # a restart keeps the options of the last start unless given again
        saved = settings.load(root).values() if settings.settings_file(root).is_file() else {}
    except SetupError:
        saved = {}
    saved.pop("course_id", None)  # always the course's own
    return settings.Settings(**saved | given | {"root": root.resolve()})


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for package in ("hub", "grader"):
        logs.configure(args.log_level, args.debug, package)
    try:
        if args.command == "start":
            from hub import server

            server.start(_settings_for_start(args), args.student_password,
                         args.instructor_password)  # fmt: skip
            return 0
        s = settings.load(args.root)
        if args.command == "end":
            return _end(s, args.yes)
        from hub import instructor

        if args.command == "totals":
            return instructor.totals(s)
        if args.command == "grade":
            return instructor.grade(s, args.notebooks, args.scheduler)
        command: Callable[[settings.Settings, list[str]], int] = getattr(instructor, args.command)
        return command(s, args.notebooks)
    except SetupError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: run the same command again to finish", file=sys.stderr)
        return 130
    except (OSError, sqlite3.Error, subprocess.CalledProcessError) as err:
        print(f"error: `python -m hub {args.command}` failed: {err}", file=sys.stderr)
        return 1


def _end(s: settings.Settings, yes: bool) -> int:
    from hub import endofday, server

    server.require_root("`python -m hub end`")
    people = endofday.accounts(s)
    if not yes:
        answer = input(f"Back up, then remove {len(people)} accounts and their work? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing changed")
            return 1
    target, removed = endofday.end(s)
    print(f"backup: {target}\nremoved {len(removed)} accounts: {', '.join(removed) or 'none'}")
    return 0
