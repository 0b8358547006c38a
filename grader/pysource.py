"""Python source parsed safely in a threaded process (a Dask worker, the local pool)."""

import ast
import gc


def parse(source: str | bytes) -> ast.Module:
    """``ast.parse(source)`` with the garbage collector paused. CPython 3.11 keeps one AST
    recursion counter per interpreter (gh-106905): a collection during the conversion can
    run another thread that parses too (a traceback being formatted on a Dask worker), and
    the conversion then fails with ``SystemError: AST constructor recursion depth mismatch``.
    Without a collection nothing else runs until the conversion ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        if enabled:
            gc.enable()
