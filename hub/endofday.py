"""``python -m hub end``: the end of the workshop day, in one command (as root).

1. Stops the hub if it runs (which stops every server and the proxy).
2. Backs up what the day produced: the exchange (releases, submissions, released feedback)
   and the instructors' grading folder (gradebook, CSVs, feedback, report, collected
   notebooks) into ``ROOT/backups/<date_time>.tar.gz`` (root only), with the accounts list.
3. Wipes the people: every unix account the hub made (members of its group) with its home
   and processes, the groups, the exchange, the grading folders, the hub's database and
   passwords. The course environment, the student materials and the backups stay, so the
   next day starts with ``make hub`` again.

Attendees take their work home before that, from their Lab: right-click a folder (or the
file browser's background) and choose "Download as an Archive".
"""

import grp
import os
import pwd
import shutil
import signal
import subprocess
import tarfile
import time
from datetime import datetime
from pathlib import Path

from hub import limits
from hub.settings import Settings


def accounts(s: Settings) -> list[str]:
    """The unix accounts the hub made (members of its group)."""
    try:
        return sorted(grp.getgrnam(s.group).gr_mem)
    except KeyError:
        return []


def stop_hub(s: Settings, wait: float = 60) -> bool:
    """Stop a running hub (its pid file); True if one was running."""
    pid_file = s.state / "jupyterhub.pid"
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return False
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if not _running(pid):
            return True
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    return True


def _running(pid: int) -> bool:
    """Alive and not a zombie (an exited hub whose parent has not reaped it yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def backup(s: Settings) -> Path:
    """A tar.gz of the exchange and the grading folders, readable by root only."""
    s.backups.mkdir(parents=True, exist_ok=True)
    os.chmod(s.backups, 0o700)
    target = s.backups / f"{datetime.now():%Y-%m-%d_%H%M%S}.tar.gz"
    listing = s.state / "accounts.txt"
    listing.write_text("".join(f"{name}\n" for name in accounts(s)))
    with tarfile.open(target, "w:gz") as tar:
        for folder in (s.exchange, s.grading, s.collected, listing):
            if folder.exists():
                tar.add(folder, arcname=str(folder.relative_to(s.root)))
    os.chmod(target, 0o600)
    return target


def _uids_processes(uid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def remove_account(s: Settings, name: str) -> None:
    """End the account's processes, then remove it with its home and cgroup folders."""
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return
    limits.kill_until_gone(lambda: _uids_processes(uid))
    subprocess.run(["userdel", "--remove", name], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    limits.remove(limits.folders(name, s.group))


def wipe(s: Settings) -> list[str]:
    """Remove the people and their data; return the accounts removed."""
    removed = accounts(s)
    for name in removed:
        remove_account(s, name)
    for group in (s.group, s.instructor_group):
        subprocess.run(["groupdel", group], check=False, stderr=subprocess.DEVNULL)
    for path in (s.exchange, s.instructor, s.homes, s.state):
        shutil.rmtree(path, ignore_errors=True)
    s.settings_file.unlink(missing_ok=True)
    for controller in ("", *limits.V1):
        try:
            (limits.CGROUP_FS / controller / s.group).rmdir()
        except OSError:
            pass
    return removed


def end(s: Settings) -> tuple[Path, list[str]]:
    stop_hub(s)
    target = backup(s)
    return target, wipe(s)
