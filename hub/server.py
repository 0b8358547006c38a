"""``python -m hub start``: lay out ROOT for a room, then run JupyterHub in the foreground.

As root, it makes the two unix groups (everyone the hub makes; the instructors), a fresh
release of ``solutions/`` published as the student materials (``ROOT/course``) and as the
instructors' release folder, the course environment (``hub.environment``), nbgrader's
exchange with the course's folders owned by root and the instructors (``hub.exchange``), the
launch profiles, and the instructors' folder (``hub.instructor``). Then it replaces itself
with ``jupyterhub`` (Ctrl-C stops the hub, every attendee's server and the proxy). Rerunning
it keeps accounts, work, submissions and grades, and refreshes the course from the checkout.
"""

import grp
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

from grader.release import release
from hub import answers, environment, exchange, instructor, settings, tls
from hub.settings import REPO_ROOT, Settings

CONFIG_FILE = Path(__file__).with_name("jupyterhub_config.py")
log = logging.getLogger(__name__)


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise environment.SetupError(f"{what} makes and removes unix users: run it as root")


def ensure_group(name: str, made: Path) -> int:
    """The gid of the hub's group ``name``, made (and listed in ``made``) if need be. A group
    the host already had is refused: the end of the day removes the group and its members."""
    listed = json.loads(made.read_text()) if made.is_file() else []
    try:
        gid = grp.getgrnam(name).gr_gid
    except KeyError:
        subprocess.run(["groupadd", "--system", name], check=True)
        made.write_text(json.dumps([*listed, name]))
        return grp.getgrnam(name).gr_gid
    if name not in listed:
        raise environment.SetupError(
            f"the group {name!r} already exists and this hub did not make it (the end of the "
            "day removes its groups and their members): pick others with --group and "
            "--instructor-group"
        )
    return gid


def _release_key() -> str:
    """What the release is made from: ``solutions/``, the course's nbgrader settings and
    the release command."""
    digest = hashlib.sha256()
    sources = sorted((REPO_ROOT / "solutions").rglob("*.ipynb"))
    for path in [*sources, REPO_ROOT / "nbgrader_config.py", REPO_ROOT / "grader" / "release.py"]:
        digest.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def fresh_release(folder: Path) -> Path:
    """A release of ``solutions/`` in ``folder``, made again only when its sources changed
    (a restart of the hub need not regenerate every notebook)."""
    key, stamp = _release_key(), folder / ".made-from"
    if not (stamp.is_file() and stamp.read_text() == key):
        shutil.rmtree(folder, ignore_errors=True)
        release(folder)
        stamp.write_text(key)
    return folder


def lay_out(s: Settings) -> None:
    """Everything under ROOT the hub needs, as root."""
    s.root.mkdir(parents=True, exist_ok=True)
    os.chmod(s.root, 0o755)
    s.save()
    ensure_group(s.group, s.groups_file)
    gid = ensure_group(s.instructor_group, s.groups_file)
    exchange.lay_out(s, gid)  # before anyone signs in: no attendee takes a folder first
    for path in answers.close_to_others():
        log.warning("made %s unreadable to attendees (chmod o-rwx): answers or grader output", path)
    print(f"Laying out {s.root}: the release, the course and the grading folder...", flush=True)
    notebooks = fresh_release(s.release)
    environment.write_course(s.course, notebooks)
    instructor.prepare(s, notebooks, gid)
    print(f"The course environment in {s.env} (the first start copies it: minutes)...",
          flush=True)  # fmt: skip
    # The instructors' copy first: only they can open it (it has the grader).
    environment.build_env(s.env, s.python_home, [s.private_course, s.course])
    s.homes.mkdir(exist_ok=True)
    os.chmod(s.homes, 0o755)
    instructor.write_profiles(s)


def _as_nobody() -> None:
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def require_own_pid_namespaces() -> None:
    """Attendees' servers each run in a PID namespace of their own (``hub.spawner``): refuse
    to start where an unprivileged user cannot make one."""
    from hub.spawner import OWN_PROCESSES

    probe = subprocess.run([*OWN_PROCESSES, "true"], preexec_fn=_as_nobody, cwd="/",
                           capture_output=True, text=True)  # fmt: skip
    if probe.returncode:
        said = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        raise environment.SetupError(
            f"an unprivileged user cannot get a PID namespace here ({said}), so attendees would "
            "see every process: allow unprivileged user namespaces (sysctl "
            "kernel.unprivileged_userns_clone=1, or user.max_user_namespaces > 0)"
        )


PLAIN_HTTP = [
    "  !!! PLAIN HTTP, NO TLS: every password, notebook and grade crosses the room's network in",
    "  !!! clear, readable by anyone on it. Start with --ssl-cert/--ssl-key or --self-signed.",
]


def _transport(s: Settings, pair: tuple[Path, Path] | None) -> list[str]:
    """What the banner says of encryption: the certificate's fingerprint, or a loud warning."""
    if not pair:
        return PLAIN_HTTP
    check = ["    self-signed: browsers warn; attendees compare it with the one they show"]
    return [
        f"  TLS: browser to hub encrypted; certificate {pair[0]}, SHA-256 fingerprint",
        f"    {tls.fingerprint(pair[0])}",
        *(check if s.self_signed else []),
    ]


def banner(s: Settings, passwords: dict[str, str], pair: tuple[Path, Path] | None) -> str:
    where = "this machine's address" if s.ip in ("0.0.0.0", "") else s.ip
    return "\n".join([
        f"Workshop server for {s.course_id}: {'https' if pair else 'http'}://{where}:{s.port}/",
        *_transport(s, pair),
        "  everyone picks their own password at their first sign-in, with a code in the",
        "  second field of the login form; later sign-ins need their own password only",
        f"  attendees: any new user name, code (the room's password) {passwords['students']}",
        f"  instructors ({', '.join(s.instructors)}): code {passwords['instructors']}",
        f"  codes are kept in {s.passwords_file} (root only)",
        "  Ctrl-C stops the hub and every server; `make hub-end` backs up and wipes.",
    ])  # fmt: skip


def private_database(path: Path) -> None:
    """JupyterHub's database (the user list with admin flags, every server's port) root's
    alone, made before JupyterHub opens it (SQLite gives its journals the same mode)."""
    path.touch(mode=0o600)
    os.chmod(path, 0o600)


def start(s: Settings, students: str | None, instructors: str | None) -> None:
    require_root("the workshop server")
    if not settings.proxy_command().is_file():
        raise environment.SetupError(
            f"JupyterHub's proxy is missing ({settings.proxy_command()}): run `make hub-setup`"
        )
    require_own_pid_namespaces()
    s.save()  # ROOT/hub root's alone (0700) before a secret goes in it
    passwords = settings.passwords(s, students, instructors)  # refused before the long part
    pair = tls.prepare(s)
    lay_out(s)
    print(banner(s, passwords, pair), flush=True)
    env = dict(os.environ, **{settings.ROOT_VARIABLE: str(s.root)})
    private_database(s.state / "jupyterhub.sqlite")
    os.chdir(s.state)
    cmd = [sys.executable, "-m", "jupyterhub", "-f", str(CONFIG_FILE)]
    os.execve(sys.executable, cmd, env)
