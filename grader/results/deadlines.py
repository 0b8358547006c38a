"""Due dates, extensions and the late policy (``c.GraderSettings`` in ``nbgrader_config.py``).

A submission's time is, in this order: the time the workshop server's exchange received it
(a record in ``OUT/work/received/``, written by ``hub.instructor.ReceivedCollect`` from the
file system's change times, which no student can set); nbgrader's ``timestamp.txt``
(``nbgrader submit`` writes it) next to the notebook, in the student's notebook folder or in
the student's folder; else the handed-in file's modification time (a zip's own, for a
notebook inside a zip). The last two are written on the student's side, so a student can
forge them (README, "What is best-effort"). Each time keeps its source, which feedback states.
``grader autograde`` records the times in ``OUT/work/times.json``; ``grader totals`` applies
the policy of the settings as they are then, so a changed due date or a new extension needs
only ``make totals``.
"""

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NotRequired, Protocol, TypedDict

from nbgrader.utils import parse_utc

from grader.results import out as out_files
from grader.settings import parse_due  # checked when the settings load

STAMP = "timestamp.txt"
LATE_ROW = "late_penalty"  # the grades.csv row of a late notebook's penalty


class Policy(Protocol):
    """What the rules read of the settings (a grader.settings.GraderSettings)."""

    @property
    def due_dates(self) -> Mapping[str, str]: ...
    @property
    def extensions(self) -> Mapping[str, float | Mapping[str, float]]: ...
    @property
    def late_policy(self) -> str: ...
    @property
    def late_penalty(self) -> float: ...


class Handed(Protocol):
    """A notebook handed in (a grader.intake.submissions.Handed, a layer above)."""

    @property
    def name(self) -> str: ...


class Student(Protocol):
    """A student's submission (a grader.intake.submissions.Submission, a layer above)."""

    @property
    def student(self) -> str: ...
    @property
    def notebooks(self) -> Mapping[str, Handed]: ...


class SubmissionTime(TypedDict):
    time: str  # ISO UTC
    source: str  # how we know it, as feedback states it
    lms_late: NotRequired[bool]  # the LMS's own verdict (Canvas's LATE_), when collected


Times = dict[str, dict[str, SubmissionTime]]  # OUT/work/times.json: student -> notebook -> time


class Lateness(TypedDict):
    hours: float  # 0 when on time
    due: datetime
    time: datetime
    source: str
    fraction: float  # of the notebook's maximum taken off
    policy: str
    lms_late: bool | None  # the LMS's own verdict, None when it gave none


def _stamp_time(path: Path) -> datetime | None:
    try:
        stamp: datetime = parse_utc(path.read_text().strip())  # nbgrader: untyped
        return stamp.replace(tzinfo=UTC)
    except (OSError, ValueError, OverflowError):
        return None  # unreadable: fall back to the file time


def submission_time(entry: Path, assignment: str, handed_name: str) -> SubmissionTime:
    """{"time": ISO UTC, "source": ...} of one handed-in notebook; ``entry`` is the student's
    folder or zip in SUBMISSIONS, ``handed_name`` the file's name as submitted."""
    handed = next(entry.rglob(handed_name), None) if entry.is_dir() else None
    folders = [handed.parent] if handed else []
    folders += [entry / assignment, entry] if entry.is_dir() else []
    for folder in folders:
        if (when := _stamp_time(folder / STAMP)) is not None:
            return {"time": when.isoformat(), "source": f"{STAMP} of the submission"}
    path = handed or entry
    when = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return {"time": when.isoformat(), "source": f"modification time of {path.name}"}


RECEIVED = "file-system time of the hub's exchange"


def received_record(out: Path, student: str, assignment: str) -> Path:
    """Where the hub records when its exchange received ``student``'s ``assignment``."""
    return out / out_files.WORK / "received" / student / f"{assignment}.json"


def write_received(path: Path, when: datetime) -> None:
    out_files.write_text(path, json.dumps({"time": when.isoformat(), "source": RECEIVED}) + "\n")


def received(out: Path, student: str, assignment: str) -> SubmissionTime | None:
    """The hub's record of ``student``'s ``assignment`` ({time, source}), if any."""
    try:
        record: SubmissionTime = json.loads(received_record(out, student, assignment).read_text())
        return record
    except (OSError, ValueError):
        return None  # not collected from the hub's exchange


def times_path(out: Path) -> Path:
    return out / out_files.WORK / "times.json"


def load_times(out: Path) -> Times:
    try:
        times: Times = json.loads(times_path(out).read_text())
        return times
    except (OSError, ValueError):
        return {}


def extension_hours(settings: Policy, student: str, notebook: str) -> float:
    """``extensions[student]``: hours for every notebook, or {notebook: hours} (numbers:
    grader.settings checks them when it loads)."""
    given = settings.extensions.get(student, 0)
    return float(given.get(notebook, 0) if isinstance(given, Mapping) else given)


def due(settings: Policy, student: str, notebook: str) -> datetime | None:
    text = settings.due_dates.get(notebook)
    if not text:
        return None
    return parse_due(text) + timedelta(hours=extension_hours(settings, student, notebook))


def penalty_fraction(settings: Policy, hours_late: float) -> float:
    """The share of the notebook's maximum taken off (1 is everything)."""
    if hours_late <= 0 or settings.late_policy == "none":
        return 0.0
    if settings.late_policy == "refuse":
        return 1.0
    units = math.ceil(hours_late / (24 if settings.late_policy == "per_day" else 1))
    return min(1.0, units * settings.late_penalty)


def lateness(settings: Policy, student: str, notebook: str, times: Times) -> Lateness | None:
    """How late one notebook was: {hours, due, time, source, fraction, policy}; None without
    a due date or a recorded time (not submitted)."""
    deadline = due(settings, student, notebook)
    stamp = times.get(student, {}).get(notebook)
    if deadline is None or stamp is None:
        return None
    hours = (datetime.fromisoformat(stamp["time"]) - deadline).total_seconds() / 3600
    return {
        "hours": max(hours, 0.0),
        "due": deadline,
        "time": datetime.fromisoformat(stamp["time"]),
        "source": stamp["source"],
        "fraction": penalty_fraction(settings, hours),
        "policy": settings.late_policy,
        "lms_late": stamp.get("lms_late"),
    }


def describe(late: Lateness) -> str:
    """One line for the learner: when it was due, when handed in (and how we know), and
    what the LMS said."""
    return _computed(late) + lms_note(late)


def _computed(late: Lateness) -> str:
    when = f"Handed in {late['time']:%Y-%m-%d %H:%M} UTC ({late['source']})"
    due_at = f"due {late['due']:%Y-%m-%d %H:%M} UTC"
    if late["hours"] <= 0:
        return f"{when}, {due_at}: on time."
    late_by = f"{when}, {due_at}: {_duration(late['hours'])} late"
    if late["policy"] == "refuse":
        return f"{late_by}; late work is not accepted, so it scores 0."
    if late["fraction"]:
        return f"{late_by}; penalty {late['fraction']:.0%} of the notebook's points."
    return f"{late_by}; no penalty."


def disagrees(late: Lateness) -> bool:
    """Whether the LMS's verdict differs from the lateness computed here."""
    return late["lms_late"] is not None and late["lms_late"] != (late["hours"] > 0)


def lms_note(late: Lateness) -> str:
    """What the LMS said, beside the computed lateness ("" when it said nothing); where they
    disagree, a note to check (its times, its due date or an extension may differ)."""
    if late["lms_late"] is None:
        return ""
    said = " The LMS marked it late" if late["lms_late"] else " The LMS did not mark it late"
    if disagrees(late):
        return f"{said}: they disagree; check its submission time and due date."
    return f"{said} either." if not late["lms_late"] else f"{said} too."


def _duration(hours: float) -> str:
    if hours < 48:
        n = math.ceil(hours)
        return f"{n} hour" + ("s" if n != 1 else "")
    n = math.ceil(hours / 24)
    return f"{n} days"


def record_submissions(
    out: Path,
    students: Sequence[Student],
    entries: Mapping[str, Sequence[Path]],
    assignments: list[str],
    lms_late: Mapping[tuple[str, str], bool],
) -> None:
    """Record the time of each notebook handed in by ``students`` (intake's Submissions),
    with the LMS's verdict where ``lms_late`` ({(student, file name): late}) has one; a
    chosen notebook a student no longer hands in loses its old time."""
    times = load_times(out)
    for sub in students:
        mine = times.setdefault(sub.student, {})
        for a in assignments:
            handed = sub.notebooks.get(a)
            if handed is None:
                mine.pop(a, None)
            else:
                mine[a] = received(out, sub.student, a) or submission_time(
                    entries[sub.student][0], a, handed.name
                )
                if (sub.student, handed.name) in lms_late:
                    mine[a]["lms_late"] = lms_late[(sub.student, handed.name)]
    out_files.write_text(times_path(out), json.dumps(times, indent=1, sort_keys=True) + "\n")
