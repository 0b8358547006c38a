"""The grader's diagnostics: :mod:`logging` under the ``grader`` logger, one handler on
stderr set up by :func:`configure` (the CLI's ``--log-level``/``--debug``, and each local
worker process with the same choice). What a command prints is its output, never a log."""

import argparse
import logging
import sys
from typing import TextIO

from grader.printable import printable_lines

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
FORMAT = "%(levelname)s: %(message)s"
DEBUG_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


def add_options(
    parser: argparse.ArgumentParser, again: bool = False, default: str = "WARNING"
) -> None:
    """``--log-level`` and ``--debug``; ``again``: an earlier parse set their defaults."""
    group = parser.add_argument_group("diagnostics")
    group.add_argument(
        "--log-level",
        type=str.upper,
        choices=LEVELS,
        default=argparse.SUPPRESS if again else default,
        help=f"the least severe diagnostics shown on stderr (default: {default})",
    )
    group.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS if again else False,
        help="every diagnostic (--log-level DEBUG), and a traceback behind an error",
    )


class _Handler(logging.StreamHandler[TextIO]):
    """Ours, so that configuring again replaces it (commands run in one process in tests),
    writing to the stderr of the moment (a test captures it anew)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)

    def format(self, record: logging.LogRecord) -> str:
        # a diagnostic may name a student or a file: never a control character raw
        return printable_lines(super().format(record))


def configure(level: str, debug: bool, package: str = "grader") -> None:
    """Diagnostics of ``package``'s loggers to stderr from ``level``, or every one with
    ``debug`` (with time, process and logger)."""
    logger = logging.getLogger(package)
    for handler in [h for h in logger.handlers if isinstance(h, _Handler)]:
        logger.removeHandler(handler)
    handler = _Handler()
    handler.setFormatter(logging.Formatter(DEBUG_FORMAT if debug else FORMAT))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug else level)


def choice(package: str = "grader") -> tuple[str, bool]:
    """(level, debug) as :func:`configure` last set them, for a worker process to repeat."""
    level = logging.getLogger(package).getEffectiveLevel()
    return logging.getLevelName(level), level <= logging.DEBUG
