"""The grader's settings: one traitlets object, read from ``nbgrader_config.py``.

Every limit the grader applies lives here, as ``c.GraderSettings.<name> = ...`` in the course's
``nbgrader_config.py`` (the file nbgrader itself reads, so Validate's ``c.Execute.timeout`` is
set there from ``c.GraderSettings.validate_timeout``). ``autograde`` and ``handouts`` both use
:func:`load`; on the command line ``--GraderSettings.<name>=<value>`` sets any of them
(traitlets' own parsing and checks), and :data:`ALIASES` and :data:`FLAGS` are the short
options. ``nbgrader_config.py`` never imports the grader: learners' Validate reads it too.
"""

import argparse
import itertools
import os

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
from traitlets.config import Config, Configurable, KVArgParseConfigLoader, PyFileConfigLoader

from grader.cli import UserError
from grader.course import REPO_ROOT

CONFIG_FILE = "nbgrader_config.py"


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
        help="Leave out the demo cells no check depends on (grader.needs); a notebook that "
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
    release_cache = Unicode(
        help="Where trusted releases built from solutions/, and the empty gradebooks made "
        "from them, are cached (by content hash)."
    ).tag(config=True)
    due_dates = Dict(
        value_trait=Unicode(),
        help="{notebook: due date}, e.g. {'01_soft_lookup': '2026-12-10 17:00 +01:00'} (no "
        "zone: UTC); grader.deadlines. Applied by `grader totals`, never part of a grade's key.",
    ).tag(config=True)
    extensions = Dict(
        help="Extensions: {student: hours later for every notebook, or {notebook: hours}}."
    ).tag(config=True)
    late_policy = Enum(
        ["none", "per_hour", "per_day", "refuse"],
        "none",
        help="Late work: none (only stated), per_hour or per_day (late_penalty of the "
        "notebook's points per started hour or day), refuse (it scores 0).",
    ).tag(config=True)
    late_penalty = Float(0.1, help="Share of a notebook's points per late hour or day.").tag(
        config=True
    )

    @validate("sandbox_cpus", "judge_seconds", "stream_grace")
    def _positive(self, proposal):
        if proposal.value <= 0:  # Float's min is inclusive: 0 would not limit, it would stall
            raise TraitError(f"{proposal.trait.name} must be positive, not {proposal.value}")
        return proposal.value

    @default("seed")
    def _seed_default(self):
        value = os.environ.get("ATTN_GRADER_SEED")
        return int(value) if value else None

    @default("release_cache")
    def _cache_default(self):
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        return os.path.join(base, "attention-step-by-step", "releases")

    @property
    def jobs(self) -> int:
        return self.workers or os.cpu_count() or 1

    def snapshot(self) -> dict:
        """Every setting as plain data (what a job carries to its worker)."""
        return {name: getattr(self, name) for name in sorted(self.trait_names(config=True))}


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


def _option(name: str) -> str:
    short = [alias for alias, target in ALIASES.items() if target == PREFIX + name]
    return "--" + (short[0] if short else PREFIX + name)


def _command_line(argv: list[str]) -> Config:
    """The settings ``argv`` gives, parsed by traitlets; a mistake is a UserError."""
    loader = KVArgParseConfigLoader(
        list(argv), ALIASES, FLAGS, classes=[GraderSettings], exit_on_error=False
    )
    try:
        config = loader.load_config()
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


def course_id(path=REPO_ROOT) -> str:
    """The course id, from its one source: ``c.CourseDirectory.course_id``, which nbgrader's
    own apps read too."""
    return PyFileConfigLoader(CONFIG_FILE, path=str(path)).load_config().CourseDirectory.course_id


def load(overrides: dict | None = None, path=REPO_ROOT, argv: list[str] = ()) -> GraderSettings:
    """The settings from ``path/nbgrader_config.py``, then ``argv`` (options as
    :func:`split_argv` picks them), then ``overrides`` (None values skipped)."""
    config = PyFileConfigLoader(CONFIG_FILE, path=str(path)).load_config()
    try:
        settings = GraderSettings(config=config)
    except TraitError as err:
        raise UserError(f"{CONFIG_FILE}: {err}") from None
    for name, value in _command_line(argv).GraderSettings.items():
        try:
            settings.update_config(Config({"GraderSettings": {name: value}}))
        except TraitError as err:
            raise UserError(f"{_option(name)}: {err}") from None
    for name, value in (overrides or {}).items():
        if value is not None:
            setattr(settings, name, value)
    return settings
