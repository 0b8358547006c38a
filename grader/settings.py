"""The grader's settings: one traitlets object, read from ``nbgrader_config.py``.

Every limit the grader applies lives here, as ``c.GraderSettings.<name> = ...`` in the course's
``nbgrader_config.py`` (the file nbgrader itself reads, so Validate's ``c.Execute.timeout`` is
set there from ``c.GraderSettings.validate_timeout``). ``autograde`` and ``handouts`` both use
:func:`load`; on the command line ``--GraderSettings.<name>=<value>`` sets any of them
(traitlets' own parsing and checks), and :data:`ALIASES` and :data:`FLAGS` are the short
options. ``nbgrader_config.py`` never imports the grader: learners' Validate reads it too.
"""

import argparse
import ast
import copy
import itertools
import math
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from os import PathLike
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import dateutil.parser
from traitlets import (
    Bool,
    Dict,
    Enum,
    Float,
    Integer,
    TraitError,
    Unicode,
    default,
    validate,
)
from traitlets.config import Config, Configurable
from traitlets.config.loader import KVArgParseConfigLoader, PyFileConfigLoader
from traitlets.utils.bunch import Bunch

from grader import course
from grader.course import REPO_ROOT
from grader.errors import UserError

CONFIG_FILE = "nbgrader_config.py"
LatePolicy = Literal["none", "per_hour", "per_day", "refuse"]
LATE_POLICIES: list[LatePolicy] = ["none", "per_hour", "per_day", "refuse"]
Lms = Literal["canvas", "moodle"]
LMSES: list[Lms] = ["canvas", "moodle"]
# extensions[student]: hours later for every notebook, or {notebook: hours}
Extension = float | Mapping[str, float]


class GraderSettings(Configurable):
    """Limits and knobs of a grading run (``c.GraderSettings.<name>``)."""

    cell_timeout = Integer(30, min=1, help="Seconds per cell when grading.").tag(config=True)
    notebook_timeout = Integer(300, min=1, help="Seconds per notebook when grading.").tag(
        config=True
    )
    validate_timeout = Integer(
        120,
        min=1,
        help="Seconds per cell for Validate and the handouts (nbgrader_config.py copies it "
        "into c.Execute.timeout, which nbgrader reads).",
    ).tag(config=True)
    memory_mb = Integer(
        3072,
        min=1,
        help="Memory of one student's sandbox as a whole (MB): all its processes, its /tmp, "
        "scratch and /dev/shm together (a cgroup, where the host allows one); also the "
        "address space of each of its processes.",
    ).tag(config=True)
    sandbox_cpus = Float(
        1.0, help="Cores one sandbox may use at once, all its processes together (a cgroup)."
    ).tag(config=True)
    shm_mb = Integer(64, min=1, help="Size of a sandbox's /dev/shm (MB), within memory_mb.").tag(
        config=True
    )
    file_mb = Integer(256, min=1, help="Largest file a kernel may write (MB).").tag(config=True)
    scratch_mb = Integer(
        512, min=1, help="Size of a sandbox's private scratch folder and of its /tmp (MB each)."
    ).tag(config=True)
    max_processes = Integer(
        256, min=1, help="Processes and threads one sandbox may run at once (sandboxed runs only)."
    ).tag(config=True)
    max_output_chars = Integer(
        100_000, min=1, help="Output kept per cell, in characters of text and of encoded figures."
    ).tag(config=True)
    max_restarts = Integer(4, min=0, help="Kernel restarts per notebook before giving up.").tag(
        config=True
    )
    judge_seconds = Float(
        60.0, help="Wall-clock limit of judging one notebook (its own process)."
    ).tag(config=True)
    judge_memory_mb = Integer(
        2048, min=1, help="Memory the judging process may add to what it starts with (MB)."
    ).tag(config=True)
    stream_grace = Float(
        10.0,
        help="Seconds to wait, after a test cell finished, for the kernel's end-of-cell "
        "marker; a marker that never comes means the instrumentation was tampered with.",
    ).tag(config=True)
    seed = Integer(
        None,
        allow_none=True,
        min=0,
        help="Seed of the hidden inputs (default: ATTN_GRADER_SEED, else the one OUT recorded, "
        "else a fresh one per OUT: grader.seeds).",
    ).tag(config=True)
    workers = Integer(0, min=0, help="Parallel workers; 0 means one per core.").tag(config=True)
    skip_demo_cells = Bool(
        True,
        help="Leave out the demo cells no check depends on (grader.run.needs); a notebook that "
        "loses any point that way runs again in full.",
    ).tag(config=True)
    sandbox = Bool(
        True, help="Run every kernel in the bubblewrap sandbox (off: trusted submissions only)."
    ).tag(config=True)
    sandbox_uid = Integer(
        61000,
        min=1,
        help="When the grader runs as root, worker slot N runs its kernels as uid "
        "sandbox_uid + N (no account needed).",
    ).tag(config=True)
    sandbox_slots = Integer(64, min=1, help="Uids reserved for worker slots.").tag(config=True)
    unpack_mb = Integer(
        200,
        min=1,
        help="Bytes one student's zip files may unpack to, zips inside zips included (MB), "
        "counted as they are written; over it, that student is not graded and says why.",
    ).tag(config=True)
    unpack_files = Integer(2000, min=1, help="Files one student's zip files may unpack to.").tag(
        config=True
    )
    unpack_depth = Integer(
        3,
        min=1,
        help="Levels of zips opened: 1 opens the zips handed in, not the zips inside them.",
    ).tag(config=True)
    batch_unpack_mb = Integer(
        10_000,
        min=1,
        help="Bytes the zip files of a whole run may unpack to together (MB); the students "
        "unpacked once it is spent are not graded and say why.",
    ).tag(config=True)
    batch_unpack_files = Integer(
        200_000, min=1, help="Files the zip files of a whole run may unpack to together."
    ).tag(config=True)
    # Reading one submitted notebook (grader.intake.bounded): over a bound, it scores 0.
    notebook_mb = Integer(32, min=1, help="Bytes of one submitted notebook file (MB).").tag(
        config=True
    )
    notebook_cells = Integer(2000, min=1, help="Cells of one submitted notebook.").tag(config=True)
    cell_kb = Integer(1024, min=1, help="Source of one cell of a submitted notebook (kB).").tag(
        config=True
    )
    notebook_depth = Integer(
        100, min=2, max=900, help="Levels of lists and objects nested in a submitted notebook."
    ).tag(config=True)
    read_seconds = Float(
        60.0, help="Wall-clock limit of reading one submitted notebook (its own process)."
    ).tag(config=True)
    read_memory_mb = Integer(
        1024, min=1, help="Memory reading one submitted notebook may add (its own process, MB)."
    ).tag(config=True)
    private_outputs = Bool(
        True,
        help="Make OUT its owner's alone (0700): other users of the machine reach nothing in "
        "it (answered notebooks, the seed); off for a folder shared on purpose (the hub's "
        "instructors' grading folder is their group's).",
    ).tag(config=True)
    seccomp = Bool(
        True,
        help="Load the system-call filter (grader.run.seccomp) in every sandbox; off only to "
        "measure what it costs (make bench).",
    ).tag(config=True)
    release_cache = Unicode(
        help="Where trusted releases built from solutions/, and the empty gradebooks made "
        "from them, are cached (by content hash)."
    ).tag(config=True)
    due_dates: "Dict[str, str]" = Dict(  # quoted: Dict is generic to type checkers only
        key_trait=Unicode(),
        value_trait=Unicode(),
        help="{notebook: due date}, e.g. {'01_soft_lookup': '2026-12-10 17:00 +01:00'} (no "
        "zone: UTC); grader.results.deadlines. Applied by `grader totals`, never part of a "
        "grade's key.",
    ).tag(config=True)
    extensions: "Dict[str, Extension]" = Dict(
        key_trait=Unicode(),
        help="Extensions: {student: hours later for every notebook, or {notebook: hours}}.",
    ).tag(config=True)
    late_policy: Enum[LatePolicy] = Enum(
        LATE_POLICIES,
        "none",
        help="Late work: none (only stated), per_hour or per_day (late_penalty of the "
        "notebook's points per started hour or day), refuse (it scores 0).",
    ).tag(config=True)
    late_penalty = Float(
        0.1, min=0.0, max=1.0, help="Share of a notebook's points per late hour or day."
    ).tag(config=True)

    lms: Enum[Lms] = Enum(
        LMSES,
        "canvas",
        help='Whose bulk download `grader collect` reads: Canvas\'s "Download Submissions" '
        'zip or Moodle\'s "Download all submissions" (grader.intake.collect).',
    ).tag(config=True)
    lms_pattern = Unicode(
        "",
        help="How `grader collect` reads a file's path in the bulk download: a regular "
        "expression with the groups file and id or name (default: the lms's own naming).",
    ).tag(config=True)

    keep_changed_hand_grades = Bool(
        False,
        help="Keep formgrader's points, extra credit and comment on an answer a regrade finds "
        "changed (a resubmission), with a note; off: they are dropped, with a note to grade "
        "that answer again (grader.results.handgrades).",
    ).tag(config=True)

    zip_timezone = Unicode(
        "UTC",
        help="The zone of the times in an LMS's bulk download (a zip stores local times with "
        "no zone): a zone name such as Europe/Paris; `grader collect` states it.",
    ).tag(config=True)

    canvas_assignments: "Dict[str, str]" = Dict(
        key_trait=Unicode(),
        help="{notebook: the Canvas assignment (its id or name)} that `grader export "
        "--canvas-gradebook` writes its points under; a notebook not named goes to the "
        "assignment of its own name.",
    ).tag(config=True)

    @validate("canvas_assignments")
    def _canvas_assignments(self, proposal: Bunch) -> dict[str, str]:
        given: dict[str, object] = proposal.value
        for notebook, assignment in given.items():
            _known_notebook(notebook)
            if not isinstance(assignment, (str, int)) or isinstance(assignment, bool):
                raise Refused(f"{notebook}: {assignment!r} is no assignment id or name")
        return {notebook: str(assignment) for notebook, assignment in given.items()}

    @validate("zip_timezone")
    def _zip_zone(self, proposal: Bunch) -> str:
        value: str = proposal.value
        _zone("", value)
        return value

    @validate("sandbox_cpus", "judge_seconds", "stream_grace", "read_seconds")
    def _positive(self, proposal: Bunch) -> float:
        value: float = proposal.value
        # Float's min is inclusive (0 would not limit, it would stall) and lets inf through
        if not (0 < value < math.inf):
            raise Refused(f"{value} refused")
        return value

    @validate("late_penalty")
    def _finite(self, proposal: Bunch) -> float:
        value: float = proposal.value
        if math.isnan(value):  # nan passes Float's bounds
            raise Refused(f"{value} refused")
        return value

    @validate("due_dates")
    def _due_dates(self, proposal: Bunch) -> dict[str, str]:
        value: dict[str, str] = proposal.value
        for notebook, text in value.items():
            _known_notebook(notebook)
            parse_due(text, notebook)
        return value

    @validate("lms_pattern")
    def _pattern(self, proposal: Bunch) -> str:
        value: str = proposal.value
        try:
            groups: Mapping[str, int] = re.compile(value).groupindex if value else {"file": 0}
        except re.error as err:
            raise Refused(f"{value!r} is no regular expression ({err})") from None
        if "file" not in groups or value and not {"id", "name"} & set(groups):
            raise Refused(f"{value!r} lacks a group it needs")
        return value

    @validate("extensions")
    def _extensions(self, proposal: Bunch) -> dict[str, Extension]:
        given_by_student: dict[str, object] = proposal.value  # the command line gives text
        return {
            _student_name(student): _extension(student, given)
            for student, given in given_by_student.items()
        }

    @default("seed")
    def _seed_default(self) -> int | None:
        value = os.environ.get("ATTN_GRADER_SEED")
        return int(value) if value else None

    @default("release_cache")
    def _cache_default(self) -> str:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        return os.path.join(base, "attention-step-by-step", "releases")

    @property
    def jobs(self) -> int:
        return self.workers or os.cpu_count() or 1

    def snapshot(self) -> "Snapshot":
        """Every setting, frozen and typed (what a job carries to its worker)."""
        values = {f.name: getattr(self, f.name) for f in fields(Snapshot)}
        values["due_dates"] = dict(values["due_dates"])  # a copy: later changes stay out
        values["canvas_assignments"] = dict(values["canvas_assignments"])
        values["extensions"] = copy.deepcopy(values["extensions"])
        return Snapshot(**values)


@dataclass(frozen=True)
class Snapshot:
    """The value of every :class:`GraderSettings` trait, frozen and typed: plain data a job
    carries to its worker process (picklable). One field per configurable trait, of the
    trait's type: the settings are defined in ``GraderSettings`` only, and
    tests/test_settings_cli.py fails when the two differ. The mappings are copies, typed
    read-only."""

    batch_unpack_files: int
    batch_unpack_mb: int
    canvas_assignments: Mapping[str, str]
    cell_kb: int
    cell_timeout: int
    due_dates: Mapping[str, str]
    extensions: Mapping[str, Extension]
    file_mb: int
    judge_memory_mb: int
    judge_seconds: float
    keep_changed_hand_grades: bool
    late_penalty: float
    late_policy: LatePolicy
    lms: Lms
    lms_pattern: str
    max_output_chars: int
    max_processes: int
    max_restarts: int
    memory_mb: int
    notebook_cells: int
    notebook_depth: int
    notebook_mb: int
    notebook_timeout: int
    private_outputs: bool
    read_memory_mb: int
    read_seconds: float
    release_cache: str
    sandbox: bool
    sandbox_cpus: float
    sandbox_slots: int
    sandbox_uid: int
    scratch_mb: int
    seccomp: bool
    seed: int | None
    shm_mb: int
    skip_demo_cells: bool
    stream_grace: float
    unpack_depth: int
    unpack_files: int
    unpack_mb: int
    validate_timeout: int
    workers: int
    zip_timezone: str


class Refused(TraitError):
    """A setting's value refused by a check of ours: its message says why; ``says_accepts``
    when it already says what is accepted too."""

    def __init__(self, why: str, says_accepts: bool = False):
        super().__init__(why)
        self.says_accepts = says_accepts


DUE_EXAMPLE = "'2026-12-10 17:00 +01:00' or '2026-12-10 17:00 Europe/Paris'"
ACCEPTS = {
    "due_dates": f"{{notebook: due date}}, a date as {DUE_EXAMPLE} (no zone: UTC)",
    "extensions": "{student: hours, or {notebook: hours}}, hours a number of at least 0",
    "release_cache": "a folder",
    "lms_pattern": "a regular expression with the groups (?P<file>...) and (?P<id>...) or "
    "(?P<name>...)",
    "zip_timezone": "a time zone name such as UTC or Europe/Paris",
    "canvas_assignments": "{notebook: Canvas assignment id or name}",
}
POSITIVE = ("sandbox_cpus", "judge_seconds", "stream_grace", "read_seconds")


def accepts(name: str) -> str:
    """What setting ``name`` accepts, in words."""
    trait = GraderSettings.class_traits()[name]
    if name in ACCEPTS:
        return ACCEPTS[name]
    if isinstance(trait, Enum):
        return "one of " + ", ".join(trait.values or ())
    if isinstance(trait, Bool):
        return "True or False"
    if name in POSITIVE:
        return "a finite number above 0"
    kind = "a whole number" if isinstance(trait, Integer) else "a number"
    # every other setting is an Integer or a Float (ACCEPTS says what the rest accept)
    assert isinstance(trait, (Integer, Float))
    low: float | None = trait.min
    high: float | None = trait.max
    if low is not None and high is not None:
        kind += f" from {low:g} to {high:g}"
    elif low is not None:
        kind += f" of at least {low:g}"
    return kind + (", or None" if trait.allow_none else "")


def parse_due(text: str, notebook: str = "") -> datetime:
    """A due date as the settings write it, as aware UTC: a date, a time, then an offset
    (``+01:00``, ``Z``, ``UTC``) or a zone name (``Europe/Paris``); no zone means UTC. A
    part missing (no year), or a zone abbreviation dateutil cannot place (``CET``), is
    refused rather than guessed."""
    where = f"{notebook}: " if notebook else ""
    head, _, last = text.strip().rpartition(" ")
    zone = _zone(where, last) if "/" in last else None
    when: datetime  # dateutil has no types
    other: datetime
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", dateutil.parser.UnknownTimezoneWarning)
            when, other = (
                dateutil.parser.parse(head if zone else text, default=datetime(d, d, d))
                for d in (1, 2)
            )
    except (ValueError, OverflowError, dateutil.parser.UnknownTimezoneWarning):
        raise Refused(f"{where}{text!r} is not a date with a known zone") from None
    if when.date() != other.date():
        raise Refused(f"{where}{text!r} is not a whole date (year, month and day)")
    if zone is not None and when.tzinfo is None:
        when = when.replace(tzinfo=zone)
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _zone(where: str, name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise Refused(f"{where}unknown time zone {name!r}") from None


def _known_notebook(name: str) -> str:
    known = course.assignments()
    if name not in known:
        raise Refused(f"unknown notebook {name!r}; the notebooks: {', '.join(known)}", True)
    return name


def _student_name(name: str) -> str:
    """A student id is the name of a folder in SUBMISSIONS (grader.intake.submissions)."""
    if not name.strip() or name.startswith((".", "__")) or any(c in name for c in "/\\\0"):
        raise Refused(f"{name!r} is no student id (the name of a student's folder)")
    return name


def _extension(student: str, given: object) -> Extension:
    """``extensions[student]``: hours, or {notebook: hours} (the command line gives text)."""
    if isinstance(given, str):
        given = _literal(given)
    if isinstance(given, dict):
        return {_known_notebook(nb): _hours(f"{student}: {nb}", h) for nb, h in given.items()}
    return _hours(student, given)


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def _hours(where: str, hours: object) -> float:
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not 0 <= hours < math.inf:
        raise Refused(f"{where}: {hours!r} is not a number of hours")
    return float(hours)


# The options `python -m grader autograde` always had, as traitlets aliases and flags.
ALIASES = {
    "jobs": "GraderSettings.workers",
    "cell-timeout": "GraderSettings.cell_timeout",
    "notebook-timeout": "GraderSettings.notebook_timeout",
    "memory-mb": "GraderSettings.memory_mb",
    "judge-seconds": "GraderSettings.judge_seconds",
    "judge-memory-mb": "GraderSettings.judge_memory_mb",
    "seed": "GraderSettings.seed",
}
FLAGS = {
    "no-sandbox": (
        {"GraderSettings": {"sandbox": False}},
        "run kernels without the OS sandbox: for trusted submissions only",
    ),
    "full-run": (
        {"GraderSettings": {"skip_demo_cells": False}},
        "run every cell of every notebook (default: leave out the demo cells that no check "
        "depends on)",
    ),
}
PREFIX = "GraderSettings."


def split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """(the settings' options in ``argv``, the rest): aliases with their value, flags and
    ``--GraderSettings.<name>[=value]``, in their order; everything after ``--`` is the rest."""
    ours, rest = [], []
    tokens = iter(argv)
    for token in tokens:
        name, equals, _value = token.removeprefix("--").partition("=")
        if token == "--":
            rest += [token, *tokens]
        elif not token.startswith("--"):
            rest.append(token)
        elif name in FLAGS:
            ours.append(token)
        elif name in ALIASES or name.startswith(PREFIX):
            ours += [token] if equals else [token, *itertools.islice(tokens, 1)]
        else:
            rest.append(token)
    return ours, rest


def _typed(argv: Sequence[str]) -> dict[str, str]:
    """{setting name: the option that set it, as typed} of the settings' options ``argv``."""
    typed: dict[str, str] = {}
    for token in argv:
        option = token.partition("=")[0]
        name = option.removeprefix("--")
        if name in FLAGS:
            typed |= dict.fromkeys(FLAGS[name][0]["GraderSettings"], option)
        elif name in ALIASES:
            typed[ALIASES[name].removeprefix(PREFIX)] = option
        elif name.startswith(PREFIX):
            typed[name.removeprefix(PREFIX)] = option
    return typed


def _command_line(argv: Sequence[str]) -> Config:
    """The settings ``argv`` gives, parsed by traitlets; a mistake is a UserError."""
    loader = KVArgParseConfigLoader(
        list(argv),
        ALIASES,
        FLAGS,  # type: ignore[arg-type]  # traitlets types flags as dict[str, str]; it takes these
        classes=[GraderSettings],
        exit_on_error=False,
    )
    try:
        config: Config = loader.load_config()
    except argparse.ArgumentError as err:
        raise UserError(str(err)) from None
    known = GraderSettings.class_trait_names(config=True)
    unknown = sorted(set(config.GraderSettings) - set(known))
    if unknown:  # traitlets only warns: a mistyped limit must not be silently ignored
        raise UserError(f"unknown setting --{PREFIX}{unknown[0]}; see grader/settings.py")
    return config


def options_help() -> str:
    """The settings' options, for a command's --help."""
    defaults = GraderSettings()
    lines = ["settings (nbgrader_config.py: c.GraderSettings.<name>; these override it):"]
    for alias, target in ALIASES.items():
        name = target.removeprefix(PREFIX)
        text = GraderSettings.class_traits()[name].help.split(" (")[0].rstrip(".")
        lines.append(f"  --{alias} VALUE  {text} ({name}; default {getattr(defaults, name)})")
    lines += [f"  --{flag}  {text}" for flag, (_config, text) in FLAGS.items()]
    lines.append(f"  --{PREFIX}<name>=VALUE  any setting of grader/settings.py")
    return "\n".join(lines)


def course_id(path: str | PathLike[str] = REPO_ROOT) -> str:
    """The course id, from its one source: ``c.CourseDirectory.course_id``, which nbgrader's
    own apps read too."""
    config = PyFileConfigLoader(CONFIG_FILE, path=str(path)).load_config()
    course: str = config.CourseDirectory.course_id
    return course


def load(
    overrides: Mapping[str, object] | None = None,
    path: str | PathLike[str] = REPO_ROOT,
    argv: Sequence[str] = (),
) -> GraderSettings:
    """The settings from ``path/nbgrader_config.py``, then ``argv`` (options as
    :func:`split_argv` picks them), then ``overrides`` (None values skipped), each checked as
    it is set: a bad one is a UserError naming it as it was given."""
    config = PyFileConfigLoader(CONFIG_FILE, path=str(path)).load_config()
    typed = _typed(argv)
    given = [(f"{CONFIG_FILE}: c.{PREFIX}{n}", n, v) for n, v in config.GraderSettings.items()]
    given += [(typed[n], n, v) for n, v in _command_line(argv).GraderSettings.items()]
    given += [(n, n, v) for n, v in (overrides or {}).items() if v is not None]
    settings = GraderSettings()
    for where, name, value in given:
        _set(settings, where, name, value)
    return settings


def _set(settings: GraderSettings, where: str, name: str, value: object) -> None:
    if name not in GraderSettings.class_trait_names(config=True):
        raise UserError(f"{where}: unknown setting; see grader/settings.py")
    try:
        settings.update_config(Config({"GraderSettings": {name: value}}))
    except TraitError as err:
        if isinstance(err, Refused) and err.says_accepts:
            raise UserError(f"{where}: {err}") from None
        why = str(err) if isinstance(err, Refused) else f"{_shown(value)} refused"
        raise UserError(f"{where}: {why}; {name} accepts {accepts(name)}") from None


def _shown(value: object) -> str:
    if isinstance(value, list) and len(value) == 1:  # the command line's form of one item
        value = value[0]
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
