"""The grader's settings: one traitlets object, read from ``nbgrader_config.py``.

Every limit the grader applies lives here, as ``c.GraderSettings.<name> = ...`` in the course's
``nbgrader_config.py`` (the file nbgrader itself reads, so Validate's ``c.Execute.timeout`` is
set there from ``c.GraderSettings.validate_timeout``). ``autograde`` and ``handouts`` both use
:func:`load`; command-line options override single values. ``nbgrader_config.py`` never
imports the grader: learners' Validate reads it too.
"""

import os

from traitlets import Bool, Float, Integer, Unicode, default
from traitlets.config import Configurable, PyFileConfigLoader

from grader.course import REPO_ROOT

CONFIG_FILE = "nbgrader_config.py"


class GraderSettings(Configurable):
    """Limits and knobs of a grading run (``c.GraderSettings.<name>``)."""

    cell_timeout = Integer(30, help="Seconds per cell when grading.").tag(config=True)
    notebook_timeout = Integer(300, help="Seconds per notebook when grading.").tag(config=True)
    validate_timeout = Integer(
        120,
        help="Seconds per cell for Validate and the handouts (nbgrader_config.py copies it "
        "into c.Execute.timeout, which nbgrader reads).",
    ).tag(config=True)
    memory_mb = Integer(
        3072,
        help="Memory of one student's sandbox as a whole (MB): all its processes, its /tmp, "
        "scratch and /dev/shm together (a cgroup, where the host allows one); also the "
        "address space of each of its processes.",
    ).tag(config=True)
    sandbox_cpus = Float(
        1.0, help="Cores one sandbox may use at once, all its processes together (a cgroup)."
    ).tag(config=True)
    shm_mb = Integer(64, help="Size of a sandbox's /dev/shm (MB), within memory_mb.").tag(
        config=True
    )
    file_mb = Integer(256, help="Largest file a kernel may write (MB).").tag(config=True)
    scratch_mb = Integer(
        512, help="Size of a sandbox's private scratch folder and of its /tmp (MB each)."
    ).tag(config=True)
    max_processes = Integer(
        256, help="Processes and threads one sandbox may run at once (sandboxed runs only)."
    ).tag(config=True)
    max_output_chars = Integer(
        100_000, help="Output kept per cell, in characters of text and of encoded figures."
    ).tag(config=True)
    max_restarts = Integer(4, help="Kernel restarts per notebook before giving up.").tag(
        config=True
    )
    judge_seconds = Float(
        60.0, help="Wall-clock limit of judging one notebook (its own process)."
    ).tag(config=True)
    judge_memory_mb = Integer(
        2048, help="Memory the judging process may add to what it starts with (MB)."
    ).tag(config=True)
    stream_grace = Float(
        10.0,
        help="Seconds to wait, after a test cell finished, for the kernel's end-of-cell "
        "marker; a marker that never comes means the instrumentation was tampered with.",
    ).tag(config=True)
    seed = Integer(
        None,
        allow_none=True,
        help="Seed of the hidden inputs (default: ATTN_GRADER_SEED, else the one OUT recorded, "
        "else a fresh one per OUT: grader.seeds).",
    ).tag(config=True)
    workers = Integer(0, help="Parallel workers; 0 means one per core.").tag(config=True)
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
        help="When the grader runs as root, worker slot N runs its kernels as uid "
        "sandbox_uid + N (no account needed).",
    ).tag(config=True)
    sandbox_slots = Integer(64, help="Uids reserved for worker slots.").tag(config=True)
    unpack_mb = Integer(
        200,
        help="Bytes one student's zip files may unpack to, zips inside zips included (MB), "
        "counted as they are written; over it, that student is not graded and says why.",
    ).tag(config=True)
    unpack_files = Integer(2000, help="Files one student's zip files may unpack to.").tag(
        config=True
    )
    unpack_depth = Integer(
        3, help="Levels of zips opened: 1 opens the zips handed in, not the zips inside them."
    ).tag(config=True)
    batch_unpack_mb = Integer(
        10_000,
        help="Bytes the zip files of a whole run may unpack to together (MB); the students "
        "unpacked once it is spent are not graded and say why.",
    ).tag(config=True)
    batch_unpack_files = Integer(
        200_000, help="Files the zip files of a whole run may unpack to together."
    ).tag(config=True)
    release_cache = Unicode(
        help="Where trusted releases built from solutions/, and the empty gradebooks made "
        "from them, are cached (by content hash)."
    ).tag(config=True)

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


def load(overrides: dict | None = None, path=REPO_ROOT) -> GraderSettings:
    """The settings from ``path/nbgrader_config.py``, then ``overrides`` (None values skipped)."""
    config = PyFileConfigLoader(CONFIG_FILE, path=str(path)).load_config()
    settings = GraderSettings(config=config)
    for name, value in (overrides or {}).items():
        if value is not None:
            setattr(settings, name, value)
    return settings
