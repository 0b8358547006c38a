"""`make formgrader` in a real browser: the instructor grades a written answer by hand.

Starts the command `make formgrader OUT=...` runs (read from the Makefile) on the small
graded class (``fixtures/small_class.py``), drives Debian's Chromium through formgrader's
pages as an instructor clicks them, gives alice's written answer its points, runs
`make totals` and reads them in ``totals.csv``. It also checks the instructor's launch shows
nbgrader's instructor tools, and that formgrader's Autograde button refuses (stock
``nbgrader autograde`` would run student code unsandboxed) and points to the course grader.
The class also holds mallory (``fixtures/page_attacks.py``), whose outputs and written
answer carry scripts: on her submission page none runs, and the page still grades.
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys

import nbformat
import pytest
from fixtures import page_attacks
from fixtures.small_class import BEFORE, NB, WRITTEN, copy_out
from fixtures.small_class import STUDENTS as HONEST
from test_browser import CHROMIUM, SHOTS, STEP, Lab, browser, nbgrader_tools

from grader.commands.formgrader import prepare
from grader.course import REPO_ROOT, exercises, release_path

MAKEFILE = (REPO_ROOT / "Makefile").read_text()
STUDENTS = [*HONEST, page_attacks.STUDENT]


def _recipe(target: str, out) -> list[str]:
    """What `make <target> OUT=out` runs (an optional `$(if $(PORT),...)` unset: nothing)."""
    line = re.search(rf"^{target}:.*\n\t(.+)$", MAKEFILE, re.M).group(1)
    line = re.sub(r"\$\(if \$\((\w+)\),[^$()]*\$\(\1\)\)", "", line)
    words = line.replace("$(PY)", sys.executable).replace("$(OUT)", str(out)).split()
    assert "$(" not in " ".join(words), f"unexpected make variable in `{target}`: {line}"
    return words


@pytest.fixture(scope="module")
def formgrader(small_class, tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing: run `make browser` (make test does).")
    tmp = tmp_path_factory.mktemp("formgrader")
    out = copy_out(small_class, tmp / "out")  # it grades by hand
    subs = tmp / "submissions"
    shutil.copytree(small_class.parent / "submissions", subs)
    page_attacks.hand_in(subs)
    cmd = ["autograde", subs, "--out", out, "--students", page_attacks.STUDENT, "--quiet"]
    proc = subprocess.run([sys.executable, "-m", "grader", *map(str, cmd)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    server = Lab(_recipe("formgrader", out), REPO_ROOT, tmp_path_factory.mktemp("home"))
    server.out = out
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
    page.wait_for_url("**/formgrader/submissions/**", timeout=STEP)
    score = page.locator(f"input.score#{WRITTEN.grade_id}")
    # The input is in the page before formgrader has fetched the grades and bound its "save
    # on change" to it: points typed earlier are never sent. (Not `formgrader.loaded`: offline,
    # the rest of its init stops where MathJax, from a CDN, is missing.)
    page.wait_for_function("() => formgrader.grades && formgrader.grades.loaded", timeout=STEP)
    score.fill(f"{WRITTEN.max_points:g}")
    # formgrader saves on change; its "saved" tick shows for a second only, which a loaded
    # machine can miss: wait for the save request's answer instead.
    saving = "/formgrader/api/grade/"
    with page.expect_response(
        lambda r: saving in r.url and r.request.method == "PUT", timeout=STEP
    ) as saved:
        score.press("Tab")
    assert saved.value.ok, f"formgrader did not save the points: HTTP {saved.value.status}"
    page.screenshot(path=SHOTS / "formgrader-3-points.png")

    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    proc = subprocess.run(["make", "-s", "totals", f"OUT={formgrader.out}"], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    with open(formgrader.out / "totals.csv", newline="") as fh:
        alice = next(r for r in csv.DictReader(fh) if r["student"] == "alice")
    assert alice[NB] == f"{BEFORE + WRITTEN.max_points:g}", alice
    assert alice["pending_hand_grading"] == "0", alice


def _submission_id(formgrader, student):
    listed = formgrader.api(f"formgrader/api/submitted_notebooks/{NB}/{NB}")
    return next(s["id"] for s in listed if s["student"] == student)


def test_student_scripts_never_run_on_formgrader_s_submission_page(formgrader, page):
    """mallory's scripts (outputs and written answer) and a script added to her page after
    it loaded (what the Content-Security-Policy alone must stop) send no sentinel request,
    while the watch sees one the test sends itself; the page still saves a hand grade."""
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if "/sentinel-" in r.url else None)
    sid = _submission_id(formgrader, page_attacks.STUDENT)
    with page.expect_response(lambda r: r.url.rstrip("/").endswith(sid)) as answer:
        page.goto(f"{formgrader.url}/formgrader/submissions/{sid}/")
    policy = answer.value.headers.get("content-security-policy", "")
    assert "script-src 'self' 'unsafe-hashes' 'sha256-" in policy, policy
    assert "unsafe-inline" not in policy.split("style-src")[0], policy
    page.wait_for_function("() => formgrader.grades && formgrader.grades.loaded", timeout=STEP)
    page.evaluate(
        """() => { const s = document.createElement("script");
        s.textContent = "fetch('/api/contents/sentinel-added-later.txt', {method: 'PUT'})";
        document.body.appendChild(s); }"""
    )
    text = page.locator("body").inner_text()
    assert "A key is compared with queries" in text, "mallory's written answer is not shown"
    assert "[not shown here: text/html]" in text, "her HTML output is not named as left out"

    score = page.locator(f"input.score#{WRITTEN.grade_id}")
    score.fill("1")
    with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url, timeout=STEP) as saved:
        score.press("Tab")
    assert saved.value.ok, f"the page no longer grades: HTTP {saved.value.status}"
    page.screenshot(path=SHOTS / "formgrader-6-hostile-submission.png")
    assert sent == [], f"student script ran as the instructor: {sent}"

    page.evaluate(f"() => fetch('{page_attacks.sentinel('control')}', {{method: 'PUT'}})")
    page.wait_for_timeout(500)
    assert [u.rsplit("/", 1)[-1] for u in sent] == ["sentinel-control.txt"], sent


def test_the_hostile_submission_scores_like_the_honest_one(formgrader):
    """mallory's attacks neither cost nor earn a point: her autograded cells score as
    alice's, and her graded notebook keeps no output a browser would run."""
    autograded = {e.grade_id for e in exercises(NB) if e.autograded}
    with open(formgrader.out / "grades.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["exercise"] in autograded]
    points = {s: [r["points"] for r in rows if r["student"] == s] for s in ("alice", "mallory")}
    assert points["mallory"] == points["alice"] and points["alice"], points
    graded = nbformat.read(_graded_notebook(formgrader.out, page_attacks.STUDENT), as_version=4)
    kinds = {k for c in graded.cells if c.cell_type == "code" for o in c.outputs
             for k in o.get("data", {})}  # fmt: skip
    assert kinds <= {"text/plain", "image/png", "image/jpeg"}, kinds


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
    graded = {s: _graded_notebook(formgrader.out, s).read_bytes() for s in STUDENTS}
    for student in STUDENTS:  # laid out for formgrader, so stock autograde would run it
        assert (formgrader.out / "nbgrader" / "submitted" / student / NB / f"{NB}.ipynb").is_file()
    page.goto(f"{formgrader.url}/formgrader/manage_submissions/{NB}")
    for student in STUDENTS:
        page.locator("#main-table tr", has_text=student).locator(".autograde a").click()
        modal = page.locator("#error-modal")
        modal.wait_for()
        said = modal.inner_text()
        page.screenshot(path=SHOTS / f"formgrader-5-autograde-{student}.png")
        assert "outside the course grader's sandbox" in said, said
        assert f"make grade SUBMISSIONS=<folder> OUT={formgrader.out}" in said, said
        modal.get_by_role("button", name="OK").click()
        modal.wait_for(state="detached")
    for student, before in graded.items():
        assert _graded_notebook(formgrader.out, student).read_bytes() == before, student


def test_prepare_lays_out_nbgrader_s_folders_and_the_profile(small_class, tmp_path):
    """What `make formgrader` adds to OUT before it starts the server (no browser needed)."""
    out = copy_out(small_class, tmp_path / "out")
    root = out / "nbgrader"
    shutil.rmtree(root / "submitted", ignore_errors=True)
    _graded_notebook(out, "bob").unlink()  # as if bob had not handed notebook 01 in
    profile = prepare(out)
    assert (root / "source" / NB / f"{NB}.ipynb").read_bytes() == release_path(NB).read_bytes()
    laid_out = nbformat.read(root / "submitted" / "alice" / NB / f"{NB}.ipynb", as_version=4)
    assert not any(c.get("outputs") for c in laid_out.cells if c.cell_type == "code")
    answers = [c.source for c in laid_out.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert answers and all("NotImplementedError" not in a for a in answers)
    assert not (root / "submitted" / "bob").exists()
    page_config = json.loads((profile / "labconfig" / "page_config.json").read_text())
    assert set(page_config["disabledExtensions"].values()) == {False}
    server = json.loads((profile / "jupyter_server_config.json").read_text())
    assert server["ServerApp"]["jpserver_extensions"]["nbgrader.server_extensions.formgrader"]
    assert server["ServerApp"]["jpserver_extensions"]["grader.results.formgrade_csp"]
    config = (profile / "nbgrader_config.py").read_text()
    assert (
        f"c.Exchange.root = {str(root / 'exchange')!r}" in config and (root / "exchange").is_dir()
    )
    assert "c.Autograde.exporter_class = 'grader.commands.formgrader.CourseGraderOnly'" in config


def test_formgrader_on_a_folder_that_was_never_graded(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "grader", "formgrader", str(tmp_path)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: {tmp_path} holds no graded")
    assert len(proc.stderr.strip().splitlines()) == 1
