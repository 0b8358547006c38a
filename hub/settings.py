"""The workshop server's settings: one object, saved as ``ROOT/settings.json``.

``python -m hub start`` makes it from its options and saves it; JupyterHub's config file,
the spawner, the instructor's commands and ``python -m hub end`` read it back (from
``ATTN_HUB_ROOT``, which the hub sets for every server it starts). Every folder of the
server lives under ROOT; the course id is the course's own (``nbgrader_config.py``).
"""

import json
import os
import secrets
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from grader.course import REPO_ROOT  # noqa: F401 (hub/ and grader/ always sit in one checkout)
from grader.errors import UserError
from grader.settings import course_id

DEFAULT_ROOT = Path("/opt/attention-course")
ROOT_VARIABLE = "ATTN_HUB_ROOT"


def proxy_command() -> Path:
    """configurable-http-proxy, as `make hub-setup` installs it (npm) next to the venv."""
    return Path(sys.prefix, "chp", "node_modules", ".bin", "configurable-http-proxy")


@dataclass
class Settings:
    root: Path = DEFAULT_ROOT
    ip: str = "0.0.0.0"  # every interface: attendees reach the host over the room's network
    port: int = 8000  # the proxy's public port (the address attendees open)
    hub_port: int = 8081  # the hub and the proxy's API listen on 127.0.0.1 only
    proxy_api_port: int = 8001
    instructors: list[str] = field(default_factory=lambda: ["instructor"])
    memory_mb: int = 3072  # per attendee (all their processes, with a cgroup)
    cpus: float = 1.0  # per attendee, in cores (cgroup only)
    processes: int = 256  # per attendee (threads count too)
    idle_timeout: int = 3600  # s without activity before a server is stopped
    cull_every: int = 300  # s between the idle culler's checks
    activity_interval: int = 300  # s between activity reports (servers and proxy)
    group: str = "attention-course"  # unix group of every account the hub made
    instructor_group: str = "attention-instructors"
    course_id: str = field(default_factory=course_id)

    # Everything the server keeps, under root.
    @property
    def env(self) -> Path:  # the course environment every attendee's server runs
        return self.root / "env"

    @property
    def python_home(self) -> Path:  # a copy of the course's Python, if its own is private
        return self.root / "python"

    @property
    def release(self) -> Path:  # the last release of solutions/ (kept while they are unchanged)
        return self.root / "release"

    @property
    def course(self) -> Path:  # the student materials (what `make bundle` ships)
        return self.root / "course"

    @property
    def exchange(self) -> Path:  # nbgrader's exchange
        return self.root / "exchange"

    @property
    def instructor(self) -> Path:  # the instructors' Lab: readable by them only
        return self.root / "instructor"

    @property
    def private_course(self) -> Path:  # the course with solutions/ and grader/
        return self.instructor / "course"

    @property
    def grading(self) -> Path:  # the course grader's OUT
        return self.instructor / "grading"

    @property
    def course_root(self) -> Path:  # nbgrader's course folder (formgrader, collect, feedback)
        return self.grading / "nbgrader"

    @property
    def collected(self) -> Path:  # the collected notebooks, as the course grader reads them
        return self.instructor / "collected"

    @property
    def homes(self) -> Path:
        return self.root / "home"

    @property
    def profiles(self) -> Path:  # per-role Jupyter config folders
        return self.root / "profiles"

    @property
    def state(self) -> Path:  # JupyterHub's database, cookie secret, logs: root's alone
        return self.root / "hub"

    @property
    def settings_file(self) -> Path:  # readable by all: instructors' commands read it
        return settings_file(self.root)

    @property
    def backups(self) -> Path:
        return self.root / "backups"

    @property
    def groups_file(self) -> Path:  # the unix groups this hub made (the end removes them)
        return self.state / "groups.json"

    @property
    def passwords_file(self) -> Path:
        return self.state / "passwords.json"

    def save(self) -> Path:
        """These settings (no secret in them) in ROOT; ROOT/hub made root's alone (0700): it
        holds the user list with admin flags and every server's port (the database)."""
        self.state.mkdir(parents=True, exist_ok=True)
        os.chmod(self.state, 0o700)
        path = self.settings_file
        data = asdict(self) | {"root": str(self.root)}
        path.write_text(json.dumps(data, indent=1) + "\n")
        os.chmod(path, 0o644)
        return path


def settings_file(root: Path) -> Path:
    return root / "settings.json"


def root_folder(root: Path | None = None) -> Path:
    """``root``, or ``ATTN_HUB_ROOT``, or the default."""
    return Path(root or os.environ.get(ROOT_VARIABLE) or DEFAULT_ROOT)


def load(root: Path | None = None) -> Settings:
    """The settings the server at ``root`` (or ``ATTN_HUB_ROOT``, or the default) runs with."""
    root = root_folder(root)
    path = settings_file(root)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        raise UserError(
            f"no workshop server at {root} (no readable {path}): "
            "start one with `make hub` (or pass --root)"
        ) from None
    known = {f.name for f in fields(Settings)}
    data = {k: v for k, v in data.items() if k in known}
    return Settings(**data | {"root": Path(data["root"])})


def passwords(settings: Settings, students: str | None = None, instructors: str | None = None):
    """{"students": ..., "instructors": ...}: given ones replace the saved ones; missing ones
    are made (a short one to write on the board, a long one for instructors; JupyterHub's
    shared-password login asks at least 8 and 32 characters) and saved (0600)."""
    path = settings.passwords_file
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        saved = {}
    found = {
        "students": students or saved.get("students") or secrets.token_urlsafe(9),
        "instructors": instructors or saved.get("instructors") or secrets.token_urlsafe(32),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    os.chmod(path, 0o600)
    path.write_text(json.dumps(found, indent=1) + "\n")
    return found
