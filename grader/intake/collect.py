"""An LMS's bulk download, laid out as grading expects: ``SUBMISSIONS/<student>/<file>``.

Canvas's "Download Submissions" zip names each file
``<sortable name>_[LATE_]<Canvas user id>_<submission id>_<file as handed in>`` (a file
handed in again gets ``-1``, ``-2``... before its extension); Moodle's "Download all
submissions" puts each in ``<Full Name>_<participant id>_assignsubmission_file_/<file>``.
``c.GraderSettings.lms`` picks one, ``c.GraderSettings.lms_pattern`` (a regular expression
with the groups ``file`` and ``id`` or ``name``) reads any other naming. Each file goes to
the roster student (``grader export``'s roster CSV) whose ``id`` or ``sis_user_id`` is the
id in its name, else whose name (``name`` column, or the student id itself) it carries,
in either order and without spaces, as Canvas writes it; a file whose id is one student's
and name another's goes to neither (Moodle's participant number is per assignment, so it can
be another student's roster id). A student's latest file (the
zip's time, then the resubmission number) of each name is kept; every file left out says
why. Canvas's ``LATE_``, the LMS's own verdict, is kept in the collect report
(``lms_late``), which grading reads beside SUBMISSIONS to show it beside the lateness it
computes (grader.results.deadlines); the zip's times carry no zone and are read in
``c.GraderSettings.zip_timezone`` (UTC unless set). The zip is hostile input: members are
streamed within the run's unpack budgets (``batch_unpack_mb``, ``batch_unpack_files``),
only stored or deflated, never a link. Everything is unpacked into a hidden staging folder
first and moved into SUBMISSIONS at the end, so an interrupted collect leaves SUBMISSIONS
as it was; rerunning is safe.
"""

import os
import re
import shutil
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo

from grader.errors import UserError
from grader.intake.submissions import (
    CHUNK,
    MB,
    METHODS,
    UNREADABLE,
    Budget,
    OverBudget,
    directory_bytes,
)
from grader.printable import holds_control
from grader.results import csvfile
from grader.settings import GraderSettings

# Anchored on the zip's top level, where the LMS writes: a look-alike folder or file deeper
# down is inside some student's own submission, and names no one.
PATTERNS = {
    "canvas": r"(?P<name>[^/_]+)_(?P<late>LATE_)?(?P<id>\d+)_\d+_(?P<file>[^/]+)",
    "moodle": r"(?P<name>[^/_]+)_(?P<id>\d+)_assignsubmission_[a-z]+_/?(?P<file>[^/]+)",
}
RESUBMITTED = re.compile(r"-(\d+)(?=\.[^./]+$)")  # Canvas's "-1" of a file handed in again
STAGING = ".collecting"  # in SUBMISSIONS; intake skips hidden names


@dataclass(frozen=True)
class Member:
    student: str
    file: str  # the name it is written under
    info: zipfile.ZipInfo
    late: bool | None  # the LMS's own verdict (Canvas's LATE_), None where it gives none

    @property
    def order(self) -> tuple[tuple[int, int, int, int, int, int], int]:
        again = RESUBMITTED.search(self.info.filename.rpartition("/")[2])
        return (self.info.date_time, int(again.group(1)) if again else 0)


@dataclass
class Collected:
    files: dict[str, list[str]] = field(default_factory=dict)  # student -> [file names written]
    taken: list[Member] = field(default_factory=list)
    older: list[tuple[str, str, str]] = field(default_factory=list)  # (member, student, later)
    unmatched: list[tuple[str, str]] = field(default_factory=list)  # (member, why)

    def report(self) -> list[tuple[str, ...]]:
        """REPORT_COLUMNS of every member of the zip it looked at, names as in the zip
        (collect_report.csv; the command escapes them)."""
        return [
            *((m.info.filename, "taken", m.student, m.file, _yes_no(m.late), "the latest")
              for m in self.taken),
            *((m, "older, left out", s, "", "", f"a later file of that name: {later}")
              for m, s, later in self.older),
            *((m, "not collected", "", "", "", why) for m, why in self.unmatched),
        ]  # fmt: skip


REPORT = "collect_report.csv"  # beside SUBMISSIONS: inside it, intake would list it as ignored
REPORT_COLUMNS = ["file", "outcome", "student", "written_as", "lms_late", "why"]


def _yes_no(late: bool | None) -> str:
    return "" if late is None else "yes" if late else "no"


def lms_late(submissions: Path) -> dict[tuple[str, str], bool]:
    """{(student, file written): whether the LMS marked it late} from the collect report
    beside ``submissions`` ({} without one, or for an LMS that marks nothing)."""
    path = submissions.resolve().parent / REPORT
    if not path.is_file():
        return {}
    return {
        (row["student"], row["written_as"]): row["lms_late"] == "yes"
        for row in csvfile.read(path)
        if row["outcome"] == "taken" and row["lms_late"] in ("yes", "no")
    }


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def name_keys(student: str, name: str) -> set[str]:
    """The forms a roster student's name takes in a file name: its words run together in
    any rotation ("Ada Lovelace" and "Lovelace, Ada" both give adalovelace, lovelaceada),
    and the student id's."""
    keys = {"".join(_words(student))}
    words = _words(name)
    keys |= {"".join(words[i:] + words[:i]) for i in range(len(words))}
    return keys - {""}


class RosterIndex:
    """Finds the roster student a file name's id or name belongs to."""

    def __init__(self, roster: Mapping[str, Mapping[str, str]]):
        self.by_id: dict[str, set[str]] = {}
        self.by_name: dict[str, set[str]] = {}
        for student, columns in roster.items():
            for key in (columns.get("ID"), columns.get("SIS User ID")):
                if key:
                    self.by_id.setdefault(key, set()).add(student)
            for key in name_keys(student, columns.get("Student", "")):
                self.by_name.setdefault(key, set()).add(student)

    def student(self, found: dict[str, str | None]) -> tuple[str | None, str]:
        """(the student, "") or (None, why not)."""
        ids = self.by_id.get(found.get("id") or "", set())
        names = self.by_name.get("".join(_words(found.get("name") or "")), set())
        if ids and names and not ids & names:  # e.g. Moodle's participant number, which is
            # per assignment, is another student's roster id: neither is guessed
            return None, (f"its id is {', '.join(sorted(ids))}'s and its name "
                          f"{', '.join(sorted(names))}'s in the roster")  # fmt: skip
        match = (ids & names) or ids or names
        if len(match) == 1:
            return next(iter(match)), ""
        if match:
            return None, f"matches {len(match)} roster students: {', '.join(sorted(match))}"
        return None, "no roster student has its id or name"


def read_members(archive: Path, pattern: str, index: RosterIndex, done: Collected) -> list[Member]:
    """The zip's members that belong to a roster student, as Members; the rest go to
    ``done.unmatched``."""
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
    except UNREADABLE as err:
        raise UserError(f"{archive} is not a readable zip ({type(err).__name__})") from None
    members = []
    for info in infos:
        name = info.filename.replace("\\", "/")
        if info.is_dir() or "__MACOSX/" in name or name.rpartition("/")[2].startswith("."):
            continue
        member, why = _member(info, name, pattern, index)
        if member is None:
            done.unmatched.append((name, why))
            continue
        members.append(member)
    return members


def _member(
    info: zipfile.ZipInfo, name: str, pattern: str, index: RosterIndex
) -> tuple[Member | None, str]:
    """(the Member ``info`` is, "") or (None, why it is none)."""
    found = re.fullmatch(pattern, name)
    why = _unsafe(info, name) or ("" if found else "its name does not follow the pattern")
    if why or found is None:
        return None, why
    if _named_below_top(found):
        return None, "it names its student below the zip's top level, inside a submission"
    student, why = index.student(found.groupdict())
    if student is None:
        return None, why
    file = RESUBMITTED.sub("", found.group("file"))
    if "/" in file or file.startswith(".") or not file.strip():
        return None, f"no file name to keep ({file!r})"
    late = "late" in found.re.groupindex
    return Member(student, file, info, bool(found.group("late")) if late else None), ""


def _named_below_top(found: re.Match[str]) -> bool:
    """Whether ``lms_pattern`` took the id or name from below the first folder: only the
    LMS writes the top level, anything deeper is a student's own (issue 46)."""
    top = found.string.find("/")
    return top >= 0 and any(
        found.start(group) > top for group in ("id", "name") if found.re.groupindex.get(group)
    )


def _unsafe(info: zipfile.ZipInfo, name: str) -> str:
    if (info.external_attr >> 16) & 0o170000 == 0o120000:
        return "a link"
    if info.compress_type not in METHODS:
        return "neither stored nor deflated"
    if name.startswith("/") or ".." in name.split("/"):
        return "an unsafe path"
    if holds_control(name):  # it would become a student's file name (grader.printable)
        return "its name holds a control character"
    return ""


def latest(members: list[Member], done: Collected) -> list[Member]:
    """Each student's latest member of each file name; the others go to ``done.older``."""
    chosen: dict[tuple[str, str], Member] = {}
    for m in sorted(members, key=lambda m: m.order):
        older = chosen.get((m.student, m.file))
        if older is not None:
            done.older.append((older.info.filename, m.student, m.info.filename))
        chosen[(m.student, m.file)] = m
    return sorted(chosen.values(), key=lambda m: (m.student, m.file))


def collect(
    archive: Path,
    roster: Mapping[str, Mapping[str, str]],
    submissions: Path,
    settings: GraderSettings,
) -> Collected:
    """Lay out ``archive`` (an LMS bulk download) in ``submissions`` for ``roster``'s
    students; see the module's doc."""
    pattern = settings.lms_pattern or PATTERNS[settings.lms]
    zone = ZoneInfo(settings.zip_timezone)  # checked when the settings loaded
    done = Collected()
    chosen = latest(read_members(archive, pattern, RosterIndex(roster), done), done)
    staging = submissions / STAGING
    shutil.rmtree(staging, ignore_errors=True)  # an interrupted collect's
    budget = Budget(
        settings.batch_unpack_mb * MB,
        settings.batch_unpack_files,
        f"it unpacks to more than {settings.batch_unpack_mb} MB (c.GraderSettings.batch_unpack_mb)",
        f"it holds more than {settings.batch_unpack_files} files "
        "(c.GraderSettings.batch_unpack_files)",
    )
    try:
        budget.admit_directory(directory_bytes(archive))
        with zipfile.ZipFile(archive) as zf:
            for m in chosen:
                _unpack(zf, m, staging / m.student / m.file, budget, zone)
        for m in chosen:
            target = submissions / m.student / m.file
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / m.student / m.file, target)
            done.files.setdefault(m.student, []).append(m.file)
            done.taken.append(m)
    except OverBudget as err:
        raise UserError(f"{archive}: nothing collected: {err}") from None
    except UNREADABLE as err:
        raise UserError(f"{archive}: nothing collected: a damaged member ({err})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return done


def _unpack(zf: zipfile.ZipFile, m: Member, target: Path, budget: Budget, zone: tzinfo) -> None:
    """One member, streamed within ``budget``, with the zip's time, read in ``zone``, as its
    modification time (what grader.results.deadlines reads when no timestamp.txt comes with
    it)."""
    budget.charge(n_files=1)
    target.parent.mkdir(parents=True, exist_ok=True)
    with zf.open(m.info) as src, open(target, "wb") as out:
        while chunk := src.read(CHUNK):
            budget.charge(n_bytes=len(chunk))  # before it is written
            out.write(chunk)
    when = datetime(*m.info.date_time, tzinfo=zone).timestamp()
    os.utime(target, (when, when))
