"""`make formgrader` in a real browser: the instructor grades a written answer by hand.

Starts the command `make formgrader OUT=...` runs (read from the Makefile) on the small
graded class (``fixtures/small_class.py``), drives Debian's Chromium through formgrader's
pages as an instructor clicks them, gives alice's written answer its points, runs
`make totals` and reads them in ``totals.csv``. It also checks the instructor's launch shows
nbgrader's instructor tools, and that formgrader's Autograde button refuses (stock
``nbgrader autograde`` would run student code unsandboxed) and points to the course grader.
"""

import csv
import os
import re
import shutil
import subprocess
import sys

import pytest
from fixtures.small_class import AUTOGRADED, NB, STUDENTS, WRITTEN
from test_browser import CHROMIUM, SHOTS, STEP, Lab, browser, nbgrader_tools

from grader.course import REPO_ROOT

MAKEFILE = (REPO_ROOT / "Makefile").read_text()


def _recipe(target: str, out) -> list[str]:
    """What `make <target> OUT=out` runs."""
    line = re.search(rf"^{target}:.*\n\t(.+)$", MAKEFILE, re.M).group(1)
    words = line.replace("$(PY)", sys.executable).replace("$(OUT)", str(out)).split()
    assert "$(" not in " ".join(words), f"unexpected make variable in `{target}`: {line}"
    return words


@pytest.fixture(scope="module")
def formgrader(small_class, tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing: run `make browser` (make test does).")
    server = Lab(_recipe("formgrader", small_class), REPO_ROOT, tmp_path_factory.mktemp("home"))
    server.out = small_class
    yield server
    server.stop()
    assert server.proc.returncode is not None, "the formgrader server is still running"


@pytest.fixture(scope="module")
def page(formgrader, tmp_path_factory):
    url = f"{formgrader.url}/formgrader?token={formgrader.token}"
    with browser(url, tmp_path_factory.mktemp("chromium")) as page:
        yield page


def _graded_notebook(out, student):
    return out / "nbgrader" / "autograded" / student / NB / f"{NB}.ipynb"


def test_formgrader_lists_assignments_and_submissions(formgrader, page):
    page.goto(f"{formgrader.url}/formgrader/manage_assignments")
    row = page.locator("#main-table tr", has_text=NB)
    row.wait_for()
    page.screenshot(path=SHOTS / "formgrader-1-assignments.png")
    assert row.locator(".num-submissions a").inner_text() == str(len(STUDENTS))
    assert page.locator("#warning-exchange").count() == 0, "formgrader warns about the exchange"
    assert [a["name"] for a in formgrader.api("formgrader/api/assignments")] == [NB]

    page.get_by_role("link", name="Manual Grading").first.click()
    page.get_by_role("link", name=NB).first.click()  # the assignment
    page.get_by_role("link", name=NB).first.click()  # its notebook
    _show_names(page)
    shown = page.locator("#main-table tr").all_inner_texts()
    page.screenshot(path=SHOTS / "formgrader-2-submissions.png")
    assert len(shown) == len(STUDENTS), shown
    assert all(any(s in row for row in shown) for s in STUDENTS), shown


def _show_names(page):
    """On a notebook's submissions page: wait for the list, then show the students' names."""
    page.locator("#main-table tr", has_text="Submission #").first.wait_for()
    page.get_by_text("Show All Names").click()
    page.locator("#main-table a", has_text=next(iter(STUDENTS))).first.wait_for()


def test_hand_entered_points_reach_totals(formgrader, page):
    page.goto(f"{formgrader.url}/formgrader/gradebook/{NB}/{NB}")
    _show_names(page)
    page.locator("#main-table a", has_text="alice").first.click()
    score = page.locator(f"input.score#{WRITTEN.grade_id}")
    score.wait_for()
    score.fill(f"{WRITTEN.max_points:g}")
    score.press("Tab")  # formgrader saves on change
    page.wait_for_function(
        "() => [...document.querySelectorAll('.score-saved')].some(e => e.offsetParent)",
        timeout=STEP,
    )
    page.screenshot(path=SHOTS / "formgrader-3-points.png")

    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    proc = subprocess.run(["make", "-s", "totals", f"OUT={formgrader.out}"], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    with open(formgrader.out / "totals.csv", newline="") as fh:
        alice = next(r for r in csv.DictReader(fh) if r["student"] == "alice")
    assert alice[NB] == f"{AUTOGRADED + WRITTEN.max_points:g}", alice
    assert alice["pending_hand_grading"] == "0", alice


def test_instructor_launch_shows_the_instructor_tools(formgrader, page):
    assert formgrader.page_config()["disabledExtensions"] == [], "the instructor sees all"
    page.goto(f"{formgrader.url}/lab")
    page.locator("#jp-MainMenu").get_by_text("Nbgrader", exact=True).wait_for()
    page.wait_for_timeout(2000)  # the plugins add their menu items as they start
    shown = nbgrader_tools(page)
    page.screenshot(path=SHOTS / "formgrader-4-instructor-lab.png")
    assert {"Formgrader", "Course List", "Create assignment"} <= set(shown["menu"]), shown
    assert any("Create Assignment" in t for t in shown["sidebar"]), shown


def test_autograde_button_refuses_and_points_to_the_course_grader(formgrader, page):
    # alice's notebook collected the way `nbgrader collect` lays it out: stock autograde
    # would now get far enough to run it, so the course's exporter must stop it.
    collected = formgrader.out / "nbgrader" / "submitted" / "alice" / NB
    shutil.copy(STUDENTS["alice"], collected / f"{NB}.ipynb")
    graded = {s: _graded_notebook(formgrader.out, s).read_bytes() for s in STUDENTS}
    page.goto(f"{formgrader.url}/formgrader/manage_submissions/{NB}")
    said = {}
    for student in STUDENTS:  # bob's notebook was not collected: nbgrader stops on its own
        page.locator("#main-table tr", has_text=student).locator(".autograde a").click()
        modal = page.locator("#error-modal")
        modal.wait_for()
        said[student] = modal.inner_text()
        page.screenshot(path=SHOTS / f"formgrader-5-autograde-{student}.png")
        modal.get_by_role("button", name="OK").click()
        modal.wait_for(state="detached")
    assert "outside the course grader's sandbox" in said["alice"], said["alice"]
    assert f"make grade SUBMISSIONS=<folder> OUT={formgrader.out}" in said["alice"]
    assert "No notebooks were matched" in said["bob"], said["bob"]
    for student, before in graded.items():
        assert _graded_notebook(formgrader.out, student).read_bytes() == before, student
    (collected / f"{NB}.ipynb").unlink()
