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
"""

import filecmp
import os
import shutil

import nbformat
import pytest
from fixtures import hub_exchange
from fixtures.adversarial import honest
from fixtures.hub_exchange import STUDENT, as_user, home, release, submit
from fixtures.small_class import AUTOGRADED, NB
from test_deadlines import _cli, _rows

from grader import csvfile
from grader.course import release_path
from hub import instructor

ATTACKER, VICTIM = STUDENT, "daemon"  # two host accounts with no rights
LATER = "2099-01-01 00:00:00.000000 UTC"  # newer than any honest submission
hub_root = hub_exchange.hub_root  # the fixture


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
    assert os.stat(inbound).st_mode & 0o7777 == 0o3733, "attendees may list or replace"
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
