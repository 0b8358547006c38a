"""JupyterHub's authenticator and spawner for the workshop server.

:class:`WorkshopAuthenticator`: each account has a password of its own, set at its first
sign-in (jupyterhub-firstuseauthenticator, The Littlest JupyterHub's login; bcrypt hashes in
``ROOT/hub``), so no shared secret opens an account someone already has. Making an account
takes a code in the login form's second field: the room's password for an attendee, the
instructors' (long) one for an instructor (the hub's admins) or to take back an account whose
own password is gone (deleted in the admin panel: the reset). The first sign-in makes the unix
account (JupyterHub's ``LocalAuthenticator``), in the course's group, with a private home
under ``ROOT/home``. A name that is already an account on the host and not one the hub made
(``root``, the host's own users) is refused.

:class:`CourseSpawner`: JupyterHub's local-process spawner running each server from the course
environment as its user, with the role's launch profile (``attnlib.lab``): attendees get the
Assignments tab and Validate, instructors formgrader and Create Assignment, opening their
course folder. It adds the per-attendee limits of ``hub.limits`` and, when a server stops,
ends whatever it left running. An attendee's server runs in a PID namespace of its own with
its own ``/proc`` (bubblewrap, unprivileged, nothing of the host changed): their terminals'
``ps`` and ``/proc`` show their own processes only, none of the other attendees' or the
instructors' (whose servers run without one).
"""

import asyncio
import dbm
import grp
import hmac
import os
import pwd
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from firstuseauthenticator import FirstUseAuthenticator
from jupyterhub.auth import LocalAuthenticator
from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Unicode

from hub import instructor as hub_instructor
from hub import limits, settings

# JupyterHub's shell_cmd (the server's command is its last argument); bwrap's own init is the
# namespace's pid 1, and when bwrap is stopped everything in the namespace ends with it.
OWN_PROCESSES = ["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc",
                 "--die-with-parent", "--", "/bin/bash", "-c"]  # fmt: skip


def in_group(username: str, group: str) -> bool:
    try:
        entry = grp.getgrnam(group)
        account = pwd.getpwnam(username)
    except KeyError:
        return False
    return username in entry.gr_mem or account.pw_gid == entry.gr_gid


def add_to_group(username: str, group: str) -> None:
    if not in_group(username, group):
        subprocess.run(["gpasswd", "--add", username, group], check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip


def role_env(s: settings.Settings, instructor: bool) -> dict[str, str]:
    """What a server (and its terminals) gets on top of JupyterHub's variables: the course
    environment first on PATH and the role's launch profile (the environment's path file
    makes the instructors' private course, with ``grader`` and ``hub``, importable for them)."""
    paths = hub_instructor.config_path(s) if instructor else [s.profiles / "student"]
    return {
        settings.ROOT_VARIABLE: str(s.root),
        "VIRTUAL_ENV": str(s.env),
        "PATH": os.pathsep.join([str(s.env / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
        "JUPYTERHUB_ACTIVITY_INTERVAL": str(s.activity_interval),
        "JUPYTER_CONFIG_PATH": os.pathsep.join(map(str, paths)),
    }


class Account(Protocol):
    """What ``add_user`` is given: JupyterHub's ``User``, or its ``orm.User`` at start."""

    name: str


BCRYPT_BYTES = 72  # bcrypt reads no further (and bcrypt 5 refuses a longer password)


# misc: jupyterhub is untyped, its classes are Any to mypy (CourseSpawner's likewise)
class WorkshopAuthenticator(LocalAuthenticator, FirstUseAuthenticator):  # type: ignore[misc]
    """Each account's own password, set at its first sign-in with the room's (or the
    instructors') password as the code; the unix account made on first login."""

    room_password = Unicode(help="The code that makes an attendee's account.").tag(config=True)
    instructor_password = Unicode(
        help="The code that makes an instructor's account, or takes back a reset one."
    ).tag(config=True)

    def _has_own_password(self, username: str) -> bool:
        with dbm.open(self.dbm_path, "c", 0o600) as db:
            return username.encode() in db

    def _code(self, username: str) -> str:
        """The code that makes ``username``'s account: an existing unix account without its own
        password (reset in the admin panel) is taken back with the instructors' code only."""
        try:
            pwd.getpwnam(username)
            existing = True
        except KeyError:
            existing = False
        instructor = username in self.admin_users or existing
        return str(self.instructor_password if instructor else self.room_password)

    def _unfit(self, password: str) -> str:
        """Why ``password`` cannot be an account's own ("" if it can)."""
        if len(password.encode()) > BCRYPT_BYTES:
            return f"Passwords are at most {BCRYPT_BYTES} bytes."
        shared = (str(self.room_password), str(self.instructor_password))
        if any(hmac.compare_digest(password.encode(), s.encode()) for s in shared):
            return "Choose a password of your own, not the room's: anyone in the room knows that."
        return ""

    def _refusal(self, username: str, data: dict[str, Any]) -> str:
        """Why this sign-in may not go on ("" if it may); the account's own password, once set,
        is checked by FirstUseAuthenticator."""
        password = str(data.get("password", ""))
        if self._has_own_password(username):
            too_long = len(password.encode()) > BCRYPT_BYTES  # never its password: refused
            return f"Passwords are at most {BCRYPT_BYTES} bytes." if too_long else ""
        code = str(data.get("otp", "")).encode()
        if not hmac.compare_digest(code, self._code(username).encode()):
            return (
                "A new account needs the room's password in the second field (an "
                "instructor's: the instructors' password)."
            )
        return self._unfit(password)

    def reset_password(self, username: str, new_password: str) -> str:
        """The change-password page (/hub/auth/change-password) holds to the same rules."""
        said: str = self._unfit(new_password) or super().reset_password(username, new_password)
        return said

    async def authenticate(self, handler: Any, data: dict[str, Any]) -> str | None:
        username = self.normalize_username(str(data.get("username", "")))
        if not self.check_blocked_users(username):  # before a password is stored for it
            return None
        refused = self._refusal(username, data)
        if refused:
            handler.custom_login_error = refused
            self.log.warning("refused %r: %s", username, refused)
            return None
        name: str | None = await super().authenticate(handler, data)
        return name

    def check_blocked_users(
        self, username: str, authentication: dict[str, object] | None = None
    ) -> bool:
        """Block every account of the host the workshop did not make (``root``, the host's
        own users); JupyterHub asks this of every login (``allow_all`` skips the allow
        list, never the block list)."""
        if not super().check_blocked_users(username, authentication):
            return False
        try:
            pwd.getpwnam(username)
        except KeyError:  # a new attendee: the account is made in add_user
            return True
        if in_group(username, settings.load().group):
            return True
        self.log.warning("refused %r: a unix account the workshop did not make", username)
        return False

    async def add_user(self, user: Account) -> None:
        await super().add_user(user)
        s = settings.load()
        os.chmod(pwd.getpwnam(user.name).pw_dir, 0o700)
        if user.name in self.admin_users:
            add_to_group(user.name, s.instructor_group)


class CourseSpawner(LocalProcessSpawner):  # type: ignore[misc]  # jupyterhub is untyped
    """A local server from the course environment, with its role's tools and limits."""

    _cgroups: list[Path]  # the server's cgroup folders (none where none is allowed)

    def _limits(self, s: settings.Settings) -> limits.Limits:
        return limits.Limits(s.memory_mb, s.cpus, s.processes)

    def get_env(self) -> dict[str, str]:
        env: dict[str, str] = super().get_env()
        env.pop("PYTHONPATH", None)
        return env | role_env(settings.load(), instructor=self.user.admin)

    def make_preexec_fn(self, name: str) -> Callable[[], None]:
        become_user = super().make_preexec_fn(name)
        folders, bounds = self._cgroups, self._limits(settings.load())
        umask = 0o007 if self.user.admin else 0o077  # instructors share their course folder

        def preexec() -> None:
            limits.join(folders)
            limits.set_rlimits(bounds, memory=not folders)
            os.umask(umask)
            become_user()

        return preexec

    async def start(self) -> tuple[str, int]:
        s = settings.load()
        home = pwd.getpwnam(self.user.name).pw_dir
        os.chmod(home, 0o700)
        if self.user.admin:
            add_to_group(self.user.name, s.instructor_group)
            self.notebook_dir = str(s.instructor)
        else:
            self.notebook_dir = home
        self.shell_cmd = [] if self.user.admin else OWN_PROCESSES
        self._cgroups = limits.create(self.user.name, self._limits(s), s.group)
        applied = "a cgroup" if self._cgroups else "rlimits (no cgroup allowed here)"
        self.log.info("limits for %s: %s, %s", self.user.name, applied, self._limits(s))
        address: tuple[str, int] = await super().start()  # (ip, port)
        return address

    async def stop(self, now: bool = False) -> None:
        await super().stop(now=now)
        folders = limits.folders(self.user.name, settings.load().group)
        await asyncio.to_thread(limits.end_processes, folders)
        limits.remove(folders)
