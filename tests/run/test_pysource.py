"""grader.pysource.parse against CPython 3.11's shared AST recursion counter (gh-106905): a
thread whose garbage collection runs another thread's parse mid-conversion. The control,
ast.parse, fails there; parse never does. Seen on a Dask worker (test_cluster), where a
traceback formatted in the event loop parses its source line while the task thread parses."""

import ast
import gc
import sys
import threading
import time

import pytest

from grader import pysource

SOURCE = pysource.__file__


class _ParsesWhenCollected:
    def __del__(self):
        try:
            ast.parse("x = (1 + 2) * 3")
        except SystemError:
            pass  # this thread's own parse broken by the other's: not what is measured


def _churn(stop: threading.Event) -> None:
    """Cycles for the collector, each parsing as it is collected, and parses of its own."""
    while not stop.is_set():
        cycle = _ParsesWhenCollected()
        cycle.self = cycle
        del cycle
        try:
            ast.parse("y = [i for i in range(3)]")
        except SystemError:
            pass


def _failures(parse, seconds: float = 1.5) -> int:
    text = open(SOURCE).read() * 20
    stop = threading.Event()
    other = threading.Thread(target=_churn, args=(stop,))
    threshold = gc.get_threshold()
    gc.set_threshold(50)
    other.start()
    failures, end = 0, time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            try:
                parse(text)
            except SystemError:
                failures += 1
    finally:
        stop.set()
        other.join()
        gc.set_threshold(*threshold)
    return failures


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="CPython 3.12 fixed the counter")
def test_ast_parse_fails_when_another_thread_parses_during_a_collection():
    assert _failures(ast.parse) > 0


def test_parse_never_fails_so():
    assert _failures(pysource.parse) == 0
    assert gc.isenabled()
