"""`python -m grader COMMAND ...`: one entry point, one module per command.

Each command module defines ``add_arguments(parser)`` and ``run(args) -> int``; one with
``TAKES_SETTINGS = True`` also gets ``args.settings`` (``grader.settings.load``: the course's
``nbgrader_config.py``, then the command line's ``--GraderSettings.<name>=`` and short options).
Errors the user can fix are raised as :class:`grader.errors.UserError` and printed in one line.
What a command prints is its output (results, progress, that one line); diagnostics go through
:mod:`logging` (the ``grader`` logger's children), shown from ``--log-level`` (default WARNING)
or, with ``--debug``, all of them with the traceback behind an error.
"""

import argparse
import importlib
import logging
import sys
from types import ModuleType

from grader import logs
from grader.errors import UserError
from grader.printable import printable

COMMANDS = {
    "release": ("grader.commands.release", "regenerate notebooks/ from solutions/"),
    "collect": (
        "grader.commands.collect",
        "lay out an LMS's bulk download (Canvas, Moodle) as SUBMISSIONS",
    ),
    "autograde": ("grader.commands.autograde", "grade a folder of submissions into OUT/grades.csv"),
    "formgrader": ("grader.commands.formgrader", "open nbgrader's formgrader on a graded class"),
    "totals": (
        "grader.commands.totals",
        "carry hand-entered points into OUT's CSVs, feedback, report",
    ),
    "export": ("grader.commands.export", "final grades as a Canvas import CSV and a long CSV"),
    "bundle": ("grader.commands.bundle", "zip the student release for handing out"),
    "handouts": ("grader.commands.handouts", "HTML and PDF handouts of every notebook"),
}
log = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__.splitlines()[0])
    logs.add_options(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_module, summary) in COMMANDS.items():
        sub.add_parser(name, help=summary, add_help=False)
    args, rest = parser.parse_known_args(argv)
    module = importlib.import_module(COMMANDS[args.command][0])
    command = argparse.ArgumentParser(
        prog=f"python -m grader {args.command}",
        description=COMMANDS[args.command][1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    module.add_arguments(command)
    logs.add_options(command, again=True)  # after the command's name too
    try:
        args = _parse(module, command, rest, args)
        logs.configure(args.log_level, args.debug)
        log.debug("python -m grader %s: %s", args.command, vars(args))
        code: int = module.run(args) or 0
        return code
    except UserError as err:
        log.debug("the user error's traceback", exc_info=True)
        print(printable(f"error: {err}"), file=sys.stderr)  # it may quote a name
        return 2


def _parse(
    module: ModuleType,
    command: argparse.ArgumentParser,
    argv: list[str],
    namespace: argparse.Namespace,
) -> argparse.Namespace:
    """The command's arguments, added to ``namespace`` (the options before its name)."""
    if not getattr(module, "TAKES_SETTINGS", False):
        return command.parse_args(argv, namespace)
    from grader import settings

    command.epilog = settings.options_help()
    ours, rest = settings.split_argv(argv)
    args = command.parse_args(rest, namespace)
    args.settings = settings.load(argv=ours)
    return args
