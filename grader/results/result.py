"""The result of grading one student's notebook, as ``grader.batch.job.grade`` returns it and
``OUT/work/results/STUDENT/NOTEBOOK.json`` keeps it.

``Result.to_json()`` is that file's content (with ``autograded``, the graded notebook, which
``grader.commands.autograde`` writes apart); ``Result.from_json`` reads it back, and a key a result
does not have (``tests`` of a notebook not graded, ``key`` of a crashed worker's) stays
missing both ways.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

from grader.course import Exercise
from grader.settings import Snapshot

GRADED = "graded"
NOT_GRADED = "not graded"
NO_RESULT = "no result"  # grader.commands.totals: OUT holds no result for this notebook yet
_OPTIONAL = ("key", "tests", "autograded", "limits", "demo_cells_left_out")


class Exercises(Protocol):
    """What rows are made from: a grader.judging.trusted.Trusted (a layer above)."""

    @property
    def exercises(self) -> tuple[Exercise, ...]: ...


class Graded(Protocol):
    """What a result is made for: a grader.batch.job.Job (a layer above)."""

    @property
    def student(self) -> str: ...
    @property
    def notebook(self) -> str: ...
    @property
    def trusted(self) -> Exercises: ...
    @property
    def settings(self) -> Snapshot: ...


@dataclass(frozen=True)
class Row:
    """One exercise's line of grades.csv: ``points`` is "" while a human has not graded it."""

    exercise: str
    points: float | str
    max_points: float
    message: str
    autograded: bool

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Result:
    student: str
    notebook: str
    status: str  # GRADED, NOT_GRADED (or NO_RESULT, made by grader.commands.totals, never kept)
    rows: tuple[Row, ...]
    flags: tuple[str, ...]
    notes: tuple[str, ...]
    sandboxed: bool
    timings: dict[str, float] = field(default_factory=dict)  # step -> seconds, and a few counts
    key: str | None = None  # grader.batch.job.job_key: a resumed run reuses a result with its key
    tests: dict[str, dict[str, Any]] | None = None  # test id -> {"points", "max_points", "message"}
    autograded: str | None = None  # the graded notebook's JSON, written apart from the result
    limits: str | None = None  # "cgroup", "rlimits" or "" (without the sandbox)
    demo_cells_left_out: int | None = None

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data |= {"rows": [r.to_json() for r in self.rows], "flags": list(self.flags)}
        data["notes"] = list(self.notes)
        return {k: v for k, v in data.items() if k not in _OPTIONAL or v is not None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Result":
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["rows"] = tuple(Row(**row) for row in data["rows"])
        values["flags"] = tuple(data["flags"])
        values["notes"] = tuple(data["notes"])
        return cls(**values)

    def with_timings(self, timings: dict[str, float], key: str) -> "Result":
        return replace(self, timings=timings, key=key)


def exercise_rows(
    trusted: Exercises,
    points: dict[str, float],
    said: dict[str, str],
    written: dict[str, tuple[float | str, str]],
) -> tuple[Row, ...]:
    """The rows of ``trusted``'s exercises (a grader.judging.trusted.Trusted): an autograded one
    scores its tests' ``points`` (with the first failing test's message), a hand-graded one
    what ``written`` says, if anything."""
    rows = []
    for ex in trusted.exercises:
        if ex.autograded:
            scored = sum(points.get(t, 0.0) for t in ex.test_ids)
            msg = next((said[t] for t in ex.test_ids if said.get(t)), "")
            message = "" if scored >= ex.max_points else msg
            rows.append(Row(ex.grade_id, scored, ex.max_points, message, True))
        else:
            got, message = written.get(ex.grade_id, ("", "graded by hand"))
            rows.append(Row(ex.grade_id, got, ex.max_points, message, False))
    return tuple(rows)


def ungraded_result(
    job: Graded, message: str, flags: Iterable[str] = (), notes: Iterable[str] = ()
) -> Result:
    """The result of a notebook that could not be graded: every row scores 0 with ``message``."""
    rows = tuple(
        replace(row, points=0.0, message=message) for row in exercise_rows(job.trusted, {}, {}, {})
    )
    return Result(
        student=job.student,
        notebook=job.notebook,
        status=NOT_GRADED,
        rows=rows,
        flags=tuple(flags),
        notes=tuple(notes),
        sandboxed=job.settings.sandbox,
    )
