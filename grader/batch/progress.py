"""How `grader autograde` shows its progress: tqdm's bar on a terminal; elsewhere (a log file,
CI) one line per graded notebook, since a bar redrawn in place prints nothing there until
the end: the count, the time so far and an estimate of what is left."""

import sys
from time import monotonic
from typing import Protocol, TextIO


class Progress(Protocol):
    """tqdm's bar, or :class:`Lines`."""

    def update(self, n: int = 1) -> object: ...
    def close(self) -> None: ...


class Lines:
    """tqdm's ``update``/``close`` as one line per notebook."""

    def __init__(self, total: int, initial: int, stream: TextIO):
        self.total, self.done, self.stream = total, initial, stream
        self.initial, self.start = initial, monotonic()

    def update(self, n: int = 1) -> None:
        self.done += n
        elapsed = monotonic() - self.start
        graded_now = self.done - self.initial
        left = (self.total - self.done) * elapsed / graded_now if graded_now else 0.0
        estimate = f", about {_duration(left)} left" if self.done < self.total else ""
        print(
            f"graded {self.done} of {self.total} notebooks, {_duration(elapsed)}{estimate}",
            file=self.stream,
            flush=True,
        )

    def close(self) -> None:
        pass


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


def shown(total: int, initial: int, quiet: bool, stream: TextIO | None = None) -> Progress:
    """The progress display of a run of ``total`` notebooks, ``initial`` of them reused:
    nothing when ``quiet``, the bar on a terminal, else :class:`Lines`."""
    from tqdm import tqdm

    stream = stream or sys.stderr
    if quiet or stream.isatty():
        bar: Progress = tqdm(total=total, initial=initial, desc="grading", unit="notebook",
                             disable=quiet, file=stream)  # fmt: skip
        return bar
    return Lines(total, initial, stream)
