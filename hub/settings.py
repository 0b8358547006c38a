"""The workshop server's settings: one traitlets object, saved as ``ROOT/settings.json``.

The same machinery as the grader's settings (``grader.settings.GraderSettings``): typed
traits, each checked as it is set, a bad value one line of error. ``python -m hub start``
makes them from its options and saves them; JupyterHub's config file, the spawner, the
instructor's commands and ``python -m hub end`` read them back (from ``ATTN_HUB_ROOT``,
which the hub sets for every server it starts). Every folder of the server lives under
ROOT; the course id is the course's own (``nbgrader_config.py``).
"""

import ipaddress
import json
import math
import os
import re
import secrets
import sys
from pathlib import Path
from typing import Any

from traitlets import Bool, Float, Integer, List, TraitError, TraitType, Unicode, default, validate
from traitlets.config import Configurable

from grader.course import REPO_ROOT as REPO_ROOT  # hub/ and grader/ sit in one checkout
from grader.errors import UserError
from grader.settings import course_id

DEFAULT_ROOT = Path("/opt/attention-course")
ROOT_VARIABLE = "ATTN_HUB_ROOT"


def proxy_command() -> Path:
    """configurable-http-proxy, as `make hub-setup` installs it (npm) next to the venv."""
    return Path(sys.prefix, "chp", "node_modules", ".bin", "configurable-http-proxy")


UNIX_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")  # a user or group name useradd accepts


class PathTrait(TraitType[Path, Path | str]):
    """A folder, as a Path (JSON and the command line give text)."""

    info_text = "a folder"

    def validate(self, obj: Any, value: Any) -> Path:
        if isinstance(value, (str, Path)) and str(value):
            return Path(value)
        self.error(obj, value)


def _port(value: int, text: str) -> Integer[int, int]:
    return Integer(value, min=1, max=65535, help=text).tag(config=True)


def _count(value: int, text: str) -> Integer[int, int]:
    return Integer(value, min=1, help=text).tag(config=True)


class Settings(Configurable):
    """The workshop server's settings (saved in ``ROOT/settings.json``, never a secret)."""

    root = PathTrait(DEFAULT_ROOT, help="The server's folder: everything it keeps.").tag(
        config=True
    )
    ip = Unicode(
        "0.0.0.0", help="Where the proxy listens: every interface, for the room's network."
    ).tag(config=True)
    port = _port(8000, "The proxy's public port (the address attendees open).")
    hub_port = _port(8081, "The hub's port; it and the proxy's API listen on 127.0.0.1 only.")
    proxy_api_port = _port(8001, "The proxy's API port.")
    instructors = List(Unicode(), ["instructor"], minlen=1, help="Instructor user names.").tag(
        config=True
    )
    memory_mb = _count(3072, "Memory per attendee, all their processes (MB; with a cgroup).")
    cpus = Float(1.0, help="Cores per attendee (cgroup only).").tag(config=True)
    processes = _count(256, "Processes per attendee (threads count too).")
    idle_timeout = _count(3600, "Seconds without activity before a server is stopped.")
    cull_every = _count(300, "Seconds between the idle culler's checks.")
    activity_interval = _count(300, "Seconds between activity reports (servers and proxy).")
    group = Unicode("attention-course", help="Unix group of every account the hub made.").tag(
        config=True
    )
    instructor_group = Unicode("attention-instructors", help="Unix group of instructors.").tag(
        config=True
    )
    course_id = Unicode(help="The course's id (its nbgrader_config.py).").tag(config=True)
    ssl_cert = Unicode(
        "", help="TLS certificate (PEM, a chain may follow) for the public address, with --ssl-key"
    ).tag(config=True)
    ssl_key = Unicode("", help="TLS private key (PEM) of --ssl-cert").tag(config=True)
    self_signed = Bool(
        False,
        help="TLS with a certificate the hub makes (kept in ROOT/hub) for a room without "
        "a domain; attendees check its fingerprint",
    ).tag(config=True)

    def __init__(self, **values: Any) -> None:
        """Every value checked as it is set: a bad one is a UserError naming it."""
        try:
            super().__init__(**values)
        except TraitError as err:
            raise UserError(f"workshop server settings: {err}") from None

    @default("course_id")
    def _course_id(self) -> str:
        return course_id()

    @validate("ip")
    def _ip(self, proposal: Any) -> str:
        value: str = proposal.value
        if value:
            try:
                ipaddress.ip_address(value)
            except ValueError:
                raise TraitError(f"ip: {value!r} is no IP address") from None
        return value

    @validate("ssl_cert", "ssl_key")
    def _absolute(self, proposal: Any) -> str:
        """JupyterHub runs in ROOT/hub: a path given relative to the caller's folder is made
        absolute."""
        return str(Path(proposal.value).resolve()) if proposal.value else ""

    @validate("cpus")
    def _cpus(self, proposal: Any) -> float:
        if not 0 < proposal.value < math.inf:
            raise TraitError(f"cpus: {proposal.value} is not a number of cores above 0")
        return float(proposal.value)

    @validate("instructors", "group", "instructor_group")
    def _unix_names(self, proposal: Any) -> Any:
        names = proposal.value if isinstance(proposal.value, list) else [proposal.value]
        bad = [n for n in names if not UNIX_NAME.fullmatch(n)]
        if bad:
            raise TraitError(f"{proposal.trait.name}: {bad[0]!r} is no unix user or group name")
        return proposal.value

    def values(self) -> dict[str, Any]:
        """{name: value} of every setting, as JSON writes them."""
        found = {name: getattr(self, name) for name in self.trait_names(config=True)}
        return found | {"root": str(self.root)}

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
    def passwords_file(self) -> Path:  # the room's and the instructors' passwords
        return self.state / "passwords.json"

    @property
    def own_passwords(self) -> Path:  # each account's own password (bcrypt hashes; dbm)
        return self.state / "own-passwords.dbm"

    def save(self) -> Path:
        """These settings (no secret in them) in ROOT; ROOT/hub made root's alone (0700): it
        holds the user list with admin flags and every server's port (the database)."""
        self.state.mkdir(parents=True, exist_ok=True)
        os.chmod(self.state, 0o700)
        path = self.settings_file
        path.write_text(json.dumps(self.values(), indent=1, sort_keys=True) + "\n")
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
    known = Settings.class_trait_names(config=True)
    return Settings(**{k: v for k, v in data.items() if k in known})


def passwords(
    settings: Settings, students: str | None = None, instructors: str | None = None
) -> dict[str, str]:
    """{"students": ..., "instructors": ...}, the codes that make an account (each account then
    has its own password, ``hub.spawner``): given ones replace the saved ones; missing ones
    are made (a short one to write on the board, a long one for instructors) and saved (0600)."""
    for given, option, least in ((students, "--student-password", 8),
                                 (instructors, "--instructor-password", 32)):  # fmt: skip
        if given is not None and len(given) < least:
            raise UserError(f"{option}: at least {least} characters")
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
