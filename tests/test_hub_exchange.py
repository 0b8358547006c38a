"""On the workshop server, a submission counts only for the attendee who made it.

nbgrader's collect takes the student from the inbound folder's name, which the submitting
attendee writes. Here one attendee (``ATTACKER``) hands in through nbgrader's own
ExchangeSubmit, then, as their unix user, dresses their work as another's (``VICTIM``, who
submitted honestly): renamed to the victim's name, to ``..`` (which would write outside
``submitted/``), a link to the victim's folder under their own name, a folder whose
notebook is a link to the victim's, and one holding a FIFO (what the copy, which never
follows a link, refuses; tests/test_nofollow.py swaps a link in mid-copy). The hub's
collect (``ReceivedCollect``) refuses each in one line, leaves it in place and lists it;
the victim's own work is graded, unchanged.

Before that, the exchange itself: `hub start` lays out the course's folders (``hub.exchange``)
so that no attendee takes one before the first release, a rerun restores them or refuses
one an attendee made, and an instructor who is not root releases into them.
"""

import filecmp
import os
import pwd
import shutil
from pathlib import Path

import nbformat
import pytest
from fixtures import hub_exchange
from fixtures.adversarial import honest
from fixtures.hub_exchange import (
    INSTRUCTOR,
    INSTRUCTORS_GID,
    STUDENT,
    as_user,
    exchange_run,
    home,
    lay_out,
    release,
    role_config,
    submit,
)
from fixtures.small_class import AUTOGRADED, NB
from nbgrader.exchange.default import ExchangeFetchAssignment, ExchangeReleaseAssignment
from test_deadlines import _cli, _rows

from grader.course import release_path
from grader.results import csvfile
from hub import exchange, instructor
from hub.environment import SetupError

ATTACKER, VICTIM = STUDENT, "daemon"  # two host accounts with no rights
LATER = "2099-01-01 00:00:00.000000 UTC"  # newer than any honest submission
hub_root = hub_exchange.hub_root  # the fixture
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="acts as other unix users: run as root")


def _modes(s) -> dict[str, tuple[int, int, int]]:
    """{folder under the exchange: (uid, gid, mode)} of the exchange and the course's folders."""
    course = s.exchange / s.course_id
    folders = [s.exchange, course, *(course / name for name in exchange.COURSE_FOLDERS)]
    return {
        str(f.relative_to(s.exchange.parent)): (
            f.stat().st_uid,
            f.stat().st_gid,
            f.stat().st_mode & 0o7777,
        )
        for f in folders
    }


def _laid_out(s) -> dict[str, tuple[int, int, int]]:
    g = INSTRUCTORS_GID
    return {
        "exchange": (0, 0, 0o755),
        f"exchange/{s.course_id}": (0, g, 0o2775),
        f"exchange/{s.course_id}/outbound": (0, g, 0o2775),
        f"exchange/{s.course_id}/inbound": (0, g, 0o3773),
        f"exchange/{s.course_id}/feedback": (0, g, 0o2771),
    }


@as_root
def test_start_lays_out_the_exchange_for_root_and_the_instructors(hub_root):
    lay_out(hub_root)
    assert _modes(hub_root) == _laid_out(hub_root)


@as_root
def test_attendees_cannot_take_the_exchange_before_a_release(hub_root):
    """What nbgrader left to the first release is taken: as an attendee, each way to own a
    course folder, or to add to the exchange, is refused by the OS."""
    s = hub_root
    lay_out(s)
    course = s.exchange / s.course_id
    attempts = {
        "a file in the exchange root": lambda: (s.exchange / "mine").write_text("x"),
        "another course folder": lambda: (s.exchange / "course2").mkdir(),
        "a file in the course folder": lambda: (course / "mine").write_text("x"),
        "a fake release": lambda: (course / "outbound" / NB).mkdir(),
        "a look at others' submissions": lambda: os.listdir(course / "inbound"),
    }
    for name in ("", "inbound", "outbound", "feedback"):  # to make its own in its place
        folder = course / name if name else course
        attempts[f"moving {folder.name} away"] = lambda f=folder: f.rename(f.with_name("taken"))
        attempts[f"removing {folder.name}"] = lambda f=folder: f.rmdir()

    def attempt_each():
        allowed = []
        for what, action in attempts.items():
            try:
                action()
                allowed.append(what)
            except PermissionError:
                pass
        assert not allowed, allowed

    as_user(attempt_each)
    assert _modes(s) == _laid_out(s)
    assert sorted(os.listdir(s.exchange)) == [s.course_id]
    assert sorted(os.listdir(course)) == sorted(exchange.COURSE_FOLDERS)


@as_root
def test_a_rerun_restores_the_exchange(hub_root):
    """A rerun of `hub start` restores modes and owners, and keeps what is in the folders; a
    course folder an instructor made (nbgrader's first release, before this) becomes root's."""
    s = hub_root
    lay_out(s)
    inbound = s.exchange / s.course_id / "inbound"
    (inbound / "kept").mkdir()
    for folder in (s.exchange, inbound, inbound.parent):
        os.chown(folder, pwd.getpwnam(INSTRUCTOR).pw_uid, 0)
        os.chmod(folder, 0o777)
    lay_out(s)
    assert _modes(s) == _laid_out(s)
    assert (inbound / "kept").is_dir()


@as_root
@pytest.mark.parametrize("taken", ["", "inbound", "elsewhere"])
def test_a_rerun_refuses_in_one_line_a_folder_an_attendee_made(hub_root, taken):
    """An exchange an attendee could write (nbgrader's own layout, 1777) where they made the
    course folder, its inbound, or another entry: the rerun says which, in one line, and
    changes nothing of theirs; it has already closed the exchange root to them."""
    s = hub_root
    s.exchange.mkdir(parents=True)
    os.chmod(s.exchange, 0o1777)
    course = s.exchange / s.course_id
    if taken == "inbound":
        course.mkdir(mode=0o777)
        os.chmod(course, 0o777)
    path = {"": course, "inbound": course / "inbound", "elsewhere": s.exchange / "course2"}[taken]
    as_user(path.mkdir)
    with pytest.raises(SetupError) as refused:
        lay_out(s)
    said = str(refused.value)
    assert "\n" not in said and str(path) in said and STUDENT in said, said
    assert path.stat().st_uid == pwd.getpwnam(STUDENT).pw_uid, "it changed the attendee's folder"
    assert os.stat(s.exchange).st_mode & 0o7777 == 0o755


@as_root
def test_an_instructor_releases_and_attendees_fetch_from_the_folders_root_owns(hub_root):
    """An instructor who is not root releases with nbgrader's own exchange and the hub's
    settings, into the folders `hub start` made; an attendee fetches it and submits."""
    s = hub_root
    lay_out(s)

    def release_as_instructor():
        exchange_run(ExchangeReleaseAssignment, role_config(s, "instructor"))

    as_user(release_as_instructor, INSTRUCTOR)
    released = s.exchange / s.course_id / "outbound" / NB / f"{NB}.ipynb"
    assert released.is_file() and released.stat().st_uid == pwd.getpwnam(INSTRUCTOR).pw_uid
    work = s.root / f"home-{STUDENT}"
    work.mkdir()
    shutil.chown(work, STUDENT)

    def fetch():
        exchange_run(ExchangeFetchAssignment, role_config(s, "student"), assignment_dir=str(work))

    as_user(fetch)
    assert filecmp.cmp(work / NB / f"{NB}.ipynb", released, shallow=False)
    made = submit(s, STUDENT, work)
    assert Path(made, f"{NB}.ipynb").is_file() and made.stat().st_gid == INSTRUCTORS_GID


def _collect(s, capfd) -> list[str]:
    """Collect as `python -m hub grade` does; the lines it said about refused folders."""
    assert instructor._nbgrader(s, "collect", NB, "--update") == 0
    return [line for line in capfd.readouterr().err.splitlines() if "refused" in line]


@pytest.mark.grading  # grades one notebook (about a minute on a busy machine)
@pytest.mark.skipif(os.geteuid() != 0, reason="submits as other unix users: run as root")
def test_a_submission_counts_only_for_the_attendee_who_made_it(hub_root, capfd):
    s = hub_root
    release(s, {})
    victim = submit(s, VICTIM, home(s, VICTIM, honest(NB)))
    inbound = victim.parent
    assert os.stat(inbound).st_mode & 0o7777 == 0o3773, "attendees may list or replace"
    own = submit(s, ATTACKER, home(s, ATTACKER, nbformat.read(release_path(NB), 4)))
    forged = {
        f"{VICTIM}+{NB}+{LATER}+forged": f"it names '{VICTIM}' but '{ATTACKER}' made it",
        f"..+{NB}+{LATER}+up": "a hidden name (nbgrader collects none)",
        f"{ATTACKER}+{NB}+{LATER}+link": "a link or file, not a folder",
        f"{ATTACKER}+{NB}+{LATER}+inner": f"it holds a link ({NB}.ipynb)",
        f"{ATTACKER}+{NB}+{LATER}+pipe": "pipe is not a plain file",  # refused by the copy
    }
    names = iter(forged)

    def dress_up():
        shutil.copytree(own, inbound / next(names))
        own.rename(inbound / next(names))
        os.symlink(victim, inbound / next(names))
        inner = inbound / next(names)
        inner.mkdir()
        os.symlink(victim / f"{NB}.ipynb", inner / f"{NB}.ipynb")
        piped = inbound / next(names)  # no link, so only the copy itself can refuse it
        piped.mkdir()
        os.mkfifo(piped / "pipe")

    as_user(dress_up, ATTACKER)
    for _ in range(2):  # a rerun refuses them again, and lists them once
        said = _collect(s, capfd)
        assert len(said) == len(forged), said
        for name, reason in forged.items():
            assert os.path.lexists(inbound / name), "a refused folder was moved"
            assert [line for line in said if name in line and reason in line], (name, said)
        listed = csvfile.read(s.grading / "report" / "refused_submissions.csv")
        assert {r["folder"]: r["reason"] for r in listed} == forged
        assert {r["notebook"] for r in listed} == {NB}

    assert instructor._stage(s, NB) == [VICTIM]
    assert not (s.course_root / NB).exists(), "`..` wrote outside submitted/"
    staged = s.collected / VICTIM / NB / f"{NB}.ipynb"
    assert filecmp.cmp(staged, victim / f"{NB}.ipynb", shallow=False)
    _cli("autograde", s.collected, "--out", s.grading, "--quiet", "--cell-timeout", 15)
    (total,) = _rows(s.grading, "totals.csv")
    assert (total["student"], float(total[NB])) == (VICTIM, AUTOGRADED)
