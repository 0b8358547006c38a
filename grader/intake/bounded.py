"""Reading a submitted notebook within bounds, never in the worker's own memory.

A notebook is hostile input: a few MB of empty cells cost a parser minutes and gigabytes,
and one nested deep enough overflows it. So :func:`read` first checks what needs no parsing
(its bytes; a cell count from its bytes), then parses, checks and reduces it to the cells
grading uses (``grader.intake.rebuild``) in a process of its own, limited in time and memory
(the judging server's, ``grader.judging.judge``), checking its cells, each cell's source and
its nesting depth before anything else is done with it. Over a bound, :class:`Unreadable`
says which (``c.GraderSettings.<name>``): that notebook scores 0, flagged, and the batch goes
on. The bounds are settings (``grader.settings``); the worker gets only the cells back.
"""

import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from grader import lifeline
from grader.intake import rebuild as rebuilding
from grader.intake.rebuild import Unreadable
from grader.processes import STARTUP_SECONDS, context, limit_memory
from grader.settings import Snapshot

MB, KB = 2**20, 2**10
Release = tuple[str, str, str]  # notebook, release version, the file's name as handed in
Read = tuple[tuple[rebuilding.SubmittedCell, ...], tuple[str, ...]]  # cells, notes
REAP_SECONDS = 5


@dataclass(frozen=True)
class Bounds:
    notebook_mb: int  # the file's bytes
    notebook_cells: int
    cell_kb: int  # one cell's source
    notebook_depth: int  # lists and objects inside each other
    read_seconds: float  # parsing and checking, in its own process
    read_memory_mb: int

    @classmethod
    def of(cls, settings: Snapshot) -> "Bounds":
        """The bounds of a job's settings (``GraderSettings.snapshot()``)."""
        return cls(**{name: getattr(settings, name) for name in cls.__dataclass_fields__})


def over(name: str, what: str) -> Unreadable:
    return Unreadable(f"{what} (c.GraderSettings.{name})")


def check_bytes(raw: bytes, bounds: Bounds) -> None:
    """What needs no parsing: the size, and the key ``"cell_type"`` outside strings (inside
    one its quotes are escaped), which every cell of a notebook written as UTF-8 has once
    and nbgrader's metadata once more: over twice the bound, so are the cells. Other
    encodings, and the cells exactly, are counted once parsed."""
    if len(raw) > bounds.notebook_mb * MB:
        raise over("notebook_mb", f"the notebook file is larger than {bounds.notebook_mb} MB")
    if raw.count(b'"cell_type"') > 2 * bounds.notebook_cells:
        raise _too_many_cells(bounds)


def _too_many_cells(bounds: Bounds) -> Unreadable:
    return over("notebook_cells", f"the notebook has more than {bounds.notebook_cells} cells")


def _too_deep(bounds: Bounds) -> Unreadable:
    return over("notebook_depth", f"it nests deeper than {bounds.notebook_depth} levels")


def depth_over(value: object, bound: int) -> bool:
    """Lists and objects nest more than ``bound`` deep in ``value`` (no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            if level > bound:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return False


def check_parsed(data: dict[str, Any], bounds: Bounds) -> None:
    """The bounds on what was parsed, before it is validated or used."""
    if depth_over(data, bounds.notebook_depth):
        raise _too_deep(bounds)
    cells = rebuilding.raw_cells(data)
    if len(cells) > bounds.notebook_cells:
        raise _too_many_cells(bounds)
    for cell in cells:
        source = cell.get("source", cell.get("input", "")) if isinstance(cell, dict) else ""
        size = sum(len(s) for s in source) if isinstance(source, list) else len(str(source))
        if size > bounds.cell_kb * KB:
            raise over("cell_kb", f"a cell holds more than {bounds.cell_kb} kB of source")


def parse(raw: bytes, bounds: Bounds, release: Release) -> Read:
    """(cells, notes) of a submission within ``bounds`` (in any process); ``release`` is
    (notebook, version, name) for the notes on the release it came from."""
    check_bytes(raw, bounds)
    try:
        data, notes = rebuilding.parse(raw, check=lambda data: check_parsed(data, bounds))
    except RecursionError:  # deeper than the parser follows (notebook_depth stays below it)
        raise _too_deep(bounds) from None
    notes += rebuilding.release_notes(data, *release)
    return tuple(rebuilding.submitted_cells(data)), tuple(notes)


def _child(conn: Connection, raw: bytes, bounds: Bounds, release: Release) -> None:
    lifeline.die_with_parent()
    conn.send("started")  # the time limit counts from here, not from the server's start
    try:
        limit_memory(bounds.read_memory_mb)
        result: tuple[str, Any] = ("read", parse(raw, bounds, release))
    except MemoryError:
        result = ("memory", None)
    except Unreadable as err:
        result = ("unreadable", str(err))
    try:
        conn.send(result)
    except MemoryError:
        conn.send(("memory", None))
    conn.close()


def read(raw: bytes, bounds: Bounds, release: Release) -> Read:
    """:func:`parse` in a fresh process limited to ``read_seconds`` and ``read_memory_mb``
    more memory; over either (or a process that dies), :class:`Unreadable` names it."""
    check_bytes(raw, bounds)  # before a byte is copied to another process
    ctx = context()
    mine, theirs = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(theirs, raw, bounds, release), daemon=True)
    process.start()
    theirs.close()
    kind, late = "memory", False
    value: Any = None  # what the child sent with its kind
    try:
        if mine.poll(STARTUP_SECONDS) and mine.recv() == "started":
            start = time.monotonic()
            if mine.poll(bounds.read_seconds):
                kind, value = mine.recv()
            late = time.monotonic() - start >= bounds.read_seconds
    except (EOFError, OSError):
        pass
    finally:
        if process.is_alive():
            process.kill()
        process.join(REAP_SECONDS)
        mine.close()
    if kind == "read":
        cells, notes = value
        return tuple(cells), tuple(notes)
    if kind == "unreadable":
        raise Unreadable(value)
    if late:
        raise over("read_seconds", f"reading it took more than {bounds.read_seconds:g} s")
    raise over("read_memory_mb", f"reading it took more than {bounds.read_memory_mb} MB")
