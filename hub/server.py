"""``python -m hub start``: lay out ROOT for a room, then run JupyterHub in the foreground.

As root, it makes the two unix groups (everyone the hub makes; the instructors), a fresh
release of ``solutions/`` published as the student materials (``ROOT/course``) and as the
instructors' release folder, the course environment (``hub.environment``), nbgrader's
exchange with the permissions nbgrader documents (writable by everyone; sticky, so nobody
removes what others put there), the launch profiles, and the instructors' folder
(``hub.instructor``). Then it replaces itself with ``jupyterhub`` (Ctrl-C stops the hub,
every attendee's server and the proxy). Rerunning it keeps accounts, work, submissions and
grades, and refreshes the course from the checkout.
"""

import grp
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.release import release
from hub import environment, instructor, settings
from hub.settings import Settings

CONFIG_FILE = Path(__file__).with_name("jupyterhub_config.py")


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise environment.SetupError(f"{what} makes and removes unix users: run it as root")


def ensure_group(name: str) -> int:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        subprocess.run(["groupadd", "--system", name], check=True)
        return grp.getgrnam(name).gr_gid


def lay_out(s: Settings) -> None:
    """Everything under ROOT the hub needs, as root."""
    ensure_group(s.group)
    gid = ensure_group(s.instructor_group)
    s.root.mkdir(parents=True, exist_ok=True)
    os.chmod(s.root, 0o755)
    s.save()
    with tempfile.TemporaryDirectory(prefix="hub-release-") as tmp:
        release(Path(tmp))
        environment.write_course(s.course, Path(tmp))
        instructor.prepare(s, Path(tmp), gid)
    environment.build_env(s.env, s.course)
    s.exchange.mkdir(exist_ok=True)
    os.chmod(s.exchange, 0o1777)
    s.homes.mkdir(exist_ok=True)
    os.chmod(s.homes, 0o755)
    instructor.write_profiles(s)


def banner(s: Settings, passwords: dict) -> str:
    where = "this machine's address" if s.ip in ("0.0.0.0", "") else s.ip
    return "\n".join([
        f"Workshop server for {s.course_id}: http://{where}:{s.port}/",
        f"  attendees: any user name, password {passwords['students']}",
        f"  instructors ({', '.join(s.instructors)}): password {passwords['instructors']}",
        f"  passwords are kept in {s.passwords_file} (root only)",
        "  Ctrl-C stops the hub and every server; `make hub-end` backs up and wipes.",
    ])  # fmt: skip


def start(s: Settings, students: str | None, instructors: str | None) -> None:
    require_root("the workshop server")
    if not settings.proxy_command().is_file():
        raise environment.SetupError(
            f"JupyterHub's proxy is missing ({settings.proxy_command()}): run `make hub-setup`"
        )
    lay_out(s)
    passwords = settings.passwords(s, students, instructors)
    print(banner(s, passwords), flush=True)
    env = dict(os.environ, **{settings.ROOT_VARIABLE: str(s.root)})
    os.chdir(s.state)
    cmd = [sys.executable, "-m", "jupyterhub", "-f", str(CONFIG_FILE)]
    os.execve(sys.executable, cmd, env)
