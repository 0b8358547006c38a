"""The course as a learner meets it: JupyterLab in a real browser.

Starts JupyterLab the way `make lab` does (its command is read from the Makefile), in a
copy of the course in a temporary folder, and drives Debian's Chromium with Playwright
(the installed browser: nothing is downloaded). It checks the first open is quiet, steps
through a student notebook cell by cell, then runs a finished notebook and presses
nbgrader's Validate button; it checks the learner's launch shows none of nbgrader's
instructor tools and that saving writes the learner's copy ``work/``, never the release.
The attention-map explorer is driven there by mouse and by keyboard alone, and axe-core
checks the Lab with 07, 08 and 10's explorers and a course figure (its alt text shown), and
07's student HTML handout, for WCAG 2.1 A/AA violations (tests/accessibility.py; every
solution handout in tests/test_figures.py).
Screenshots go to artifacts/browser/.
"""

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import nbformat
import numpy as np
import pytest
from accessibility import violations
from exercises.catalogue import failures
from fixtures.batches import Batch

from attnlib.lab import INSTRUCTOR_PLUGINS
from attnlib.lab import settings as setup_lab
from attnlib.plotting import MIN_ALT_WORDS
from grader.course import RELEASE, REPO_ROOT, assignments, source_path
from grader.hidden import catalogue, compile_answer

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
SHOTS = REPO_ROOT / "artifacts" / "browser"
COPY_IGNORE = shutil.ignore_patterns(
    ".venv", ".git", "artifacts", "handouts", "dist", "out", "work", "__pycache__",
    ".pytest_cache", ".ruff_cache", "*.egg-info", ".ipynb_checkpoints", "gradebook.db",
)  # fmt: skip
STEP = 90_000  # ms: the longest any one browser action or cell may take
UNWRITTEN = re.compile(r"^✗ .+ (isn't|aren't) written yet\b.*$")  # the expected one-line message


def _lab_command(course: Path) -> list[str]:
    """`make lab`'s command, for a course copy in ``course`` (run from there, it uses the
    copy's ``attnlib``)."""
    recipe = re.search(r"^lab:.*\n\t(.+)$", (REPO_ROOT / "Makefile").read_text(), re.M).group(1)
    recipe = recipe.replace("$(LAB_OPTIONS)", "")  # none given, as `make lab` alone
    words = recipe.replace("$(PY)", sys.executable).replace("$(CURDIR)", str(course)).split()
    assert "$(" not in " ".join(words), f"unexpected make variable in the lab recipe: {recipe}"
    return words


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def released(release: Path = RELEASE) -> list[str]:
    """The student notebooks' folders, in course order."""
    return [d.name for d in sorted(release.iterdir()) if (d / f"{d.name}.ipynb").is_file()]


class Lab:
    """A JupyterLab server on 127.0.0.1 with a token, started and stopped cleanly.

    ``cmd`` is the launch command (`make lab`'s, or `make formgrader`'s), run in ``cwd``."""

    def __init__(self, cmd: list[str], cwd: Path, home: Path):
        self.port, self.token = _free_port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR",
                    "JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR", "IPYTHONDIR",
                    "MPLCONFIGDIR"):  # fmt: skip
            env[var] = str(home / var.lower())  # a first-time user: nothing saved yet
        env.pop("MAKELEVEL", None)
        cmd = cmd + [
            "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
        ]  # fmt: skip
        self.log = (home / "lab.log").open("w")
        self.proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"JupyterLab exited:\n{self.log_text()}"
            try:
                self.api("api/status")
                break
            except OSError:
                time.sleep(0.5)
        else:
            self.stop()
            pytest.fail(f"JupyterLab did not answer within 90 s:\n{self.log_text()}")
        served = re.search(r"Serving notebooks from local directory: (.+)", self.log_text())
        self.root = Path(served.group(1).strip())

    def api(self, path, method="GET"):
        body = self.get(path, method)
        return json.loads(body) if body else None

    def get(self, path, method="GET") -> bytes:
        req = urllib.request.Request(f"{self.url}/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})  # fmt: skip
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.read()

    def status(self, path) -> int:
        try:
            self.get(path)
            return 200
        except urllib.error.HTTPError as err:
            return err.code

    def page_config(self) -> dict:
        """The page config JupyterLab serves (which plugins are disabled, ...)."""
        html = self.get("lab").decode()
        found = re.search(r'id="jupyter-config-data"[^>]*>(.*?)</script>', html, re.S)
        return json.loads(found.group(1))

    def log_text(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.api("api/shutdown", method="POST")  # shuts its kernels down too
                self.proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing: run `make browser` (make test does).")
    course = tmp_path_factory.mktemp("course") / "attention-step-by-step"
    shutil.copytree(REPO_ROOT, course, ignore=COPY_IGNORE)
    server = Lab(_lab_command(course), course, tmp_path_factory.mktemp("home"))
    installed = json.loads(setup_lab.settings_path().read_text())
    assert installed == setup_lab.SETTINGS, "the course's JupyterLab settings are stale"
    server.release, server.work = course / "notebooks", course / "work"
    assert server.root.resolve() == server.work.resolve(), "make lab must open the work copy"
    # A finished copy of the first notebook, next to the learner's, for the Validate button.
    first = released(server.release)[0]
    shutil.copy(source_path(first), server.work / first / f"{first}_finished.ipynb")
    yield server
    server.stop()
    assert server.proc.returncode is not None, "JupyterLab is still running"
    assert not (REPO_ROOT / "work" / first / f"{first}_finished.ipynb").exists(), (
        "the test wrote into the checkout"
    )


@contextmanager
def browser(url: str, profile: Path):
    """A Chromium page (Playwright) on ``url``."""
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM),
            headless=True, args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000},
        )  # fmt: skip
        context.set_default_timeout(STEP)
        page = context.new_page()
        page.goto(url, wait_until="domcontentloaded")
        try:
            yield page
        finally:
            context.close()


@pytest.fixture(scope="module")
def page(lab, tmp_path_factory):
    with browser(f"{lab.url}/lab?token={lab.token}", tmp_path_factory.mktemp("chromium")) as page:
        page.locator(".jp-DirListing-item").first.wait_for()
        yield page


def _listing(page) -> list[str]:
    page.locator(".jp-DirListing-item").first.wait_for()
    return page.locator(".jp-DirListing-itemText").all_inner_texts()


def _open_notebook(page, relpath: str):
    """Open a notebook and wait until its kernel is idle."""
    page.goto(page.url.split("/lab")[0] + f"/lab/tree/{relpath}", wait_until="domcontentloaded")
    panel = page.locator(".jp-NotebookPanel:visible")
    panel.locator(".jp-Cell").first.wait_for()
    _wait_idle(page)
    page.wait_for_timeout(1500)  # the kernel reports idle a moment before it takes requests
    return panel


def _wait_idle(page):
    """Wait until the notebook's kernel is connected and idle (status bar: "<kernel> | Idle")."""
    page.wait_for_function(
        """() => { const bar = document.querySelector('#jp-main-statusbar');
                   return bar && /\\| Idle/.test(bar.innerText)
                          && !/No Kernel/.test(bar.innerText); }""",
        timeout=STEP,
    )


def _run_cell_by_cell(page, panel, n_cells: int) -> int:
    """Shift+Enter through every cell, as a learner does; return the number of code cells run.

    Stepping (rather than Run All) keeps going past the expected failing checks.
    """
    panel.locator(".jp-Cell").first.locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")  # command mode, first cell active
    ran = 0
    for i in range(n_cells):
        cell = panel.locator(".jp-Cell.jp-mod-active").element_handle()
        is_code = "jp-CodeCell" in (cell.get_attribute("class") or "")
        page.keyboard.press("Shift+Enter")
        if is_code:
            ran += 1
            deadline = time.monotonic() + STEP / 1000
            prompt = cell.query_selector(".jp-InputArea-prompt")
            while not re.fullmatch(r"\[\d+\]:", prompt.text_content().strip()):
                assert time.monotonic() < deadline, f"cell {i} did not finish"
                time.sleep(0.1)
    _wait_idle(page)
    return ran


def _shown_errors(panel) -> list[str]:
    """Every error or stderr output the learner sees, as text."""
    sel = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
    return [t.strip() for t in panel.locator(sel).all_text_contents()]


def _gist(error: str) -> str:
    """Where an error happened and what it was, in one line."""
    lines = [line for line in error.splitlines() if line.strip() and set(line.strip()) != {"-"}]
    where = next((line.strip() for line in lines if line.startswith("Cell In[")), "")
    return f"  {where} → {lines[-1].strip() if lines else '(empty)'}"[:300]


def _rendered_figures(panel) -> list[int]:
    """Width in pixels of every figure, once decoded (0 would be a broken image)."""
    return panel.evaluate(
        """async p => Promise.all([...p.querySelectorAll('.jp-OutputArea-output img')].map(
            async img => { try { await img.decode(); } catch (e) {} return img.naturalWidth; }))"""
    )


def _figure_cells(nb, skip_if_calling=()) -> int:
    """How many code cells draw a figure; optionally skip those that use the named functions."""
    plotting = re.compile(r"\b(plt\.(?!style\.)|heatmap\(|\.plot\(|\.imshow\(|subplots\()")
    names = "|".join(map(re.escape, skip_if_calling))
    calls = re.compile(rf"\b({names})\b") if names else None
    return sum(
        c.cell_type == "code" and bool(plotting.search(c.source))
        and not (calls and calls.search(c.source))
        for c in nb.cells
    )  # fmt: skip


def _exercise_names(nb) -> list[str]:
    return [
        c.metadata["nbgrader"]["grade_id"] for c in nb.cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
    ]  # fmt: skip


def test_first_open_is_quiet_and_in_course_order(lab, page):
    page.wait_for_timeout(3000)  # news, update and kernel prompts appear within a second or two
    page.screenshot(path=SHOTS / "1-first-open.png")
    listing = _listing(page)
    in_order = released(lab.release)
    assert listing == in_order, "the file browser should list the notebooks in course order"
    assert page.locator(".jp-Dialog").count() == 0, page.locator(".jp-Dialog").all_inner_texts()
    toasts = page.locator(".Toastify__toast").all_inner_texts()
    assert not toasts, f"pop-ups on first open: {toasts}"

    # Opening the first notebook by double-clicks starts its kernel without asking.
    first = released(lab.release)[0]
    page.locator(".jp-DirListing-item", has_text=first).first.dblclick()
    page.locator(".jp-DirListing-item", has_text=f"{first}.ipynb").first.dblclick()
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for()
    _wait_idle(page)
    page.wait_for_timeout(1500)
    page.screenshot(path=SHOTS / "2-notebook-opened.png")
    assert page.locator(".jp-Dialog").count() == 0, (
        f"a dialog opened with the notebook: {page.locator('.jp-Dialog').all_inner_texts()}"
    )
    kernel = page.locator(".jp-NotebookPanel:visible .jp-KernelName").inner_text()
    assert "Python 3" in kernel, f"kernel shown: {kernel!r}"
    assert not page.locator(".Toastify__toast").all_inner_texts()


def test_student_notebook_runs_with_only_friendly_messages(lab, page):
    first = released(lab.release)[0]
    panel = _open_notebook(page, f"{first}/{first}.ipynb")
    student = nbformat.read(lab.release / first / f"{first}.ipynb", as_version=4)
    ran = _run_cell_by_cell(page, panel, len(student.cells))
    assert ran == sum(c.cell_type == "code" for c in student.cells)
    widths = _rendered_figures(panel)
    if widths:
        panel.locator(".jp-OutputArea-output img").first.scroll_into_view_if_needed()
    page.screenshot(path=SHOTS / f"3-student-{first}.png")

    errors = _shown_errors(panel)
    unexpected = [  # one message each (wrapped at attnlib.checks._cells.WIDTH), no traceback
        e for e in errors if not (UNWRITTEN.match(" ".join(e.split())) and e.count("✗") == 1)
    ]
    assert not unexpected, (
        "cells show errors a learner should not see (only the one "
        "'✗ ... isn't written yet' is expected):\n" + "\n".join(_gist(e) for e in unexpected)
    )
    visible_checks = [  # test cells with code left in the release (hidden ones are emptied)
        c for c in student.cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
        and any(line.strip() and not line.lstrip().startswith("#") for line in c.source.split("\n"))
    ]  # fmt: skip
    for name in _exercise_names(student):  # each check names its own unwritten exercise
        assert any(e.startswith(f"✗ `{name}` isn't written yet") for e in errors), (
            f"the check of `{name}` should say it isn't written yet; saw:\n"
            + "\n".join(_gist(e) for e in errors)
        )
    assert len(errors) >= len(visible_checks)
    assert all(w > 0 for w in widths), f"broken figure(s): widths {widths}"
    alts = panel.evaluate(
        "p => [...p.querySelectorAll('.jp-OutputArea-output img')].map(i => i.alt)"
    )
    assert all(len(alt.split()) >= MIN_ALT_WORDS for alt in alts), f"a figure without alt: {alts}"
    demos = _figure_cells(student, skip_if_calling=_exercise_names(student))
    assert len(widths) >= demos, f"{demos} demo figure(s) expected, {len(widths)} rendered"


def test_finished_notebook_passes_validate(lab, page):
    first = released(lab.release)[0]
    panel = _open_notebook(page, f"{first}/{first}_finished.ipynb")
    page.locator("#jp-MainMenu").get_by_text("Run", exact=True).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    _wait_idle(page)
    prompts = panel.locator(".jp-CodeCell .jp-InputArea-prompt")
    deadline = time.monotonic() + STEP / 1000
    while not all(re.fullmatch(r"\[\d+\]:", t.strip()) for t in prompts.all_text_contents()):
        if time.monotonic() > deadline:
            page.screenshot(path=SHOTS / f"4-finished-{first}.png")
            pytest.fail(f"Run All did not finish: {prompts.all_text_contents()}")
        time.sleep(0.2)
    errors = _shown_errors(panel)
    assert not errors, f"the finished notebook shows errors: {errors}"
    expected = _figure_cells(nbformat.read(source_path(first), as_version=4))
    deadline = time.monotonic() + STEP / 1000  # the last figures may still be arriving
    while len(widths := _rendered_figures(panel)) < expected and time.monotonic() < deadline:
        time.sleep(0.5)
    assert all(w > 0 for w in widths), f"broken figure(s): widths {widths}"
    assert len(widths) >= expected, "a plotting cell showed no figure"
    page.screenshot(path=SHOTS / f"4-finished-{first}.png")

    panel.locator(".validate-button").click()
    verdict = page.locator(".jp-Dialog #validation-message")
    verdict.wait_for(timeout=180_000)
    page.screenshot(path=SHOTS / f"5-validate-{first}.png")
    text = verdict.inner_text()
    assert "validation-success" in (verdict.get_attribute("class") or ""), text
    assert "Success" in text and "passes all the tests" in text, text
    page.locator(".jp-Dialog").get_by_role("button").last.click()


def nbgrader_tools(page) -> dict:
    """What the page shows of nbgrader: the Nbgrader menu's items, the right sidebar's tabs."""
    page.locator("#jp-MainMenu").get_by_text("Nbgrader", exact=True).click()
    items = page.locator(".lm-Menu:visible .lm-Menu-item:not(.lm-mod-hidden)").all_inner_texts()
    page.keyboard.press("Escape")
    tabs = page.locator(".jp-SideBar.jp-mod-right .lm-TabBar-tab").evaluate_all(
        "tabs => tabs.map(t => t.getAttribute('title') || t.innerText)"
    )
    return {"menu": [i.strip() for i in items], "sidebar": tabs}


def test_learner_sees_no_instructor_tools(lab, page):
    """nbgrader's instructor extensions are off in the learner's launch (its page config and
    server config), while the environment still has them installed for the instructor."""
    _open_notebook(page, f"{released(lab.release)[0]}/{released(lab.release)[0]}.ipynb")
    shown = nbgrader_tools(page)
    page.screenshot(path=SHOTS / "6-learner-tools.png")
    assert shown["menu"] == ["Assignment List"], shown
    assert not any("Create Assignment" in t for t in shown["sidebar"]), shown
    assert page.locator(".jp-NotebookPanel:visible .validate-button").count() == 1, "no Validate"
    disabled = lab.page_config()["disabledExtensions"]
    assert set(disabled) == set(INSTRUCTOR_PLUGINS), disabled
    assert lab.status("formgrader") == 404, "formgrader's server extension must be off"


def _whole_json(data: bytes):
    """A file's JSON, or None while it is being written (jupyter_server's atomic writing
    keeps a backup but rewrites the file in place: it can be read empty or in part)."""
    try:
        return json.loads(data)
    except json.JSONDecodeError:
        return None


def test_saving_writes_the_learner_copy_never_the_release(lab, page):
    first = released(lab.release)[0]
    copy = lab.work / first / f"{first}.ipynb"
    before = copy.read_bytes()
    _open_notebook(page, f"{first}/{first}.ipynb")
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + STEP / 1000
    while (now := copy.read_bytes()) == before or (saved := _whole_json(now)) is None:
        assert time.monotonic() < deadline, "JupyterLab did not save the notebook"
        time.sleep(0.2)
    assert "version" in saved["metadata"]["language_info"]
    for path in sorted(RELEASE.glob("*/*.ipynb")):  # the copy's release is still the shipped one
        shipped = lab.release / path.relative_to(RELEASE)
        assert shipped.read_bytes() == path.read_bytes(), f"{shipped} changed"


def _longest_visible_message(notebook, namespace):
    """(exercise, mistake, message): the catalogue mistake whose visible check says most."""
    found = []
    for name, spec in catalogue(notebook).items():
        for mistake in (m for m in spec.mistakes if m.caught_by != "hidden"):
            fn = compile_answer(mistake.source, name, namespace)
            with np.errstate(all="ignore"):
                message = failures(notebook, name, fn, checks=("visible",))["visible"]
            found.append((len(message), name, mistake, message))
    return max(found, key=lambda f: f[0])[1:]


_SHOWN = """(pre) => {
    const range = document.createRange();
    range.selectNodeContents(pre);
    const box = (r) => ({left: r.left, right: r.right, top: r.top, bottom: r.bottom});
    const view = pre.closest('.jp-Dialog-body') || pre.closest('.jp-Dialog-content');
    return {lines: [...range.getClientRects()].map(box), dialog: box(view.getBoundingClientRect()),
            viewport: {left: 0, top: 0, right: innerWidth, bottom: innerHeight},
            scroll: [pre.scrollWidth, pre.clientWidth]};
}"""


def _inside(rect, frame) -> bool:
    return all(
        (rect[a] >= frame[a] - 1) if a in ("left", "top") else (rect[a] <= frame[a] + 1)
        for a in ("left", "right", "top", "bottom")
    )


def test_validate_dialog_shows_the_whole_message_of_a_failed_check(lab, page, solution):
    """Notebooks 01, 05 and the course's last: a learner's notebook with the catalogue mistake
    whose visible message is longest; Validate's dialog shows that message whole, every
    line of it inside the dialog and on screen (the course's custom CSS wraps it)."""
    assert setup_lab.css_path().read_text() == setup_lab.DIALOG_CSS, "stale course CSS: make setup"
    names = released(lab.release)
    for notebook in dict.fromkeys([names[0], next(n for n in names if n[:2] == "05"), names[-1]]):
        exercise, mistake, message = _longest_visible_message(notebook, solution(notebook))
        wrong = Batch(notebook, ((exercise, mistake),)).submission(demos=False)
        # next to the learner's copy, which the Lab serves (the release stays untouched)
        nbformat.write(wrong, lab.work / notebook / f"{notebook}_wrong.ipynb")
        panel = _open_notebook(page, f"{notebook}/{notebook}_wrong.ipynb")
        panel.locator(".validate-button").click()
        verdict = page.locator(".jp-Dialog #validation-message")
        verdict.wait_for(timeout=180_000)
        pre = verdict.locator("pre", has_text=message[:40]).first
        pre.scroll_into_view_if_needed()
        page.screenshot(path=SHOTS / f"6-validate-wrong-{notebook}.png")
        shown = pre.evaluate(_SHOWN)
        assert f"✗ {' '.join(message.split())}" in " ".join(pre.inner_text().split()), (
            f"{notebook}: the dialog does not show the check's message"
        )
        assert shown["scroll"][0] <= shown["scroll"][1], (
            f"{notebook}: the message overflows: {shown}"
        )
        for rect in shown["lines"]:
            assert _inside(rect, shown["dialog"]) and _inside(rect, shown["viewport"]), (
                f"{notebook} ({exercise}, {mistake.label}): a line of the message is off the "
                f"dialog or the screen: {rect} vs {shown['dialog']}"
            )
        page.locator(".jp-Dialog").get_by_role("button").last.click()


def _imports_cell(nb) -> str:
    return next(
        c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "imports"
    )


def test_notebooks_without_torch_do_not_import_it():
    """Time to first feedback: a notebook that never uses torch must not load it."""
    probe = "\nimport sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    torch_free = []
    for assignment in assignments():
        nb = nbformat.read(source_path(assignment), as_version=4)
        if any(c.cell_type == "code" and re.search(r"\btorch\b", c.source) for c in nb.cells):
            continue
        out = subprocess.run(
            [sys.executable, "-c", _imports_cell(nb) + probe], capture_output=True, text=True,
            timeout=120, cwd=source_path(assignment).parent,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "[]", f"{assignment}'s imports load torch: {out.stdout[:200]}"
        torch_free.append(assignment)
    assert "01_soft_lookup" in torch_free, "notebook 01 needs no torch and must not mention it"


# -- The attention-map explorer (attnlib.explorer): in the Lab and in the HTML handout.
EXPLORER_CELL = """\
import torch

from attnlib import tasks
from attnlib.explorer import explore
from attnlib.shipped import load_shipped

tokens = tasks.repeat_twice(torch.Generator().manual_seed(7), 1, 10)[0]  # notebook 07's
explore(load_shipped(), tokens)"""
QUERY = 15  # a token of the second copy
FIGURE_ALT = "A line rising from 0 to 1: look at its slope, which is 1 all the way."


def _model_weights():
    """[n_layers, n_heads, T, T] of the RoPE model on notebook 07's sequence."""
    import torch

    from attnlib import tasks
    from attnlib.shipped import load_shipped

    tokens = tasks.repeat_twice(torch.Generator().manual_seed(7), 1, 10)[0]
    _, weights = load_shipped().attention(tokens)
    return np.stack([w.numpy() for w in weights])


def _shaded_rows(root) -> dict:
    """{(layer, head): the weights the page shades the text with}, and the query it shows."""
    rows = root.evaluate(
        """r => [...r.querySelectorAll('.attn-line')].map(line => [line.dataset.head,
               [...line.querySelectorAll('.attn-tok')].map(t => t.dataset.w)])"""
    )
    query = int(root.locator(".attn-line").first.locator(".attn-query").get_attribute("data-k"))
    return {tuple(map(int, h.split("."))): [float(w) for w in ws] for h, ws in rows}, query


def _point_and_read_back(root, weights):
    """Pointing at a token makes it the query; the shaded weights are the model's, exactly."""
    root.locator(".attn-map canvas").first.wait_for()
    assert root.locator(".attn-map canvas").count() == weights.shape[0] * weights.shape[1]
    before, query = _shaded_rows(root)
    assert query == weights.shape[-1] - 1, "the explorer opens on the last token"
    root.locator(".attn-line").first.locator(f'.attn-tok[data-k="{QUERY}"]').hover()
    after, query = _shaded_rows(root)
    assert query == QUERY and after.keys() == before.keys() and after != before
    for (layer, head), shaded in after.items():
        assert shaded == weights[layer, head, QUERY].tolist(), f"head {layer}.{head}"
    root.locator(".attn-line").first.locator(f'.attn-tok[data-k="{QUERY}"]').click()  # kept
    root.locator(".attn-layer").last.click()  # all heads of the last layer
    every, query = _shaded_rows(root)
    assert query == QUERY, "a clicked token stays the query when the pointer leaves the text"
    assert sorted(every) == [(weights.shape[0] - 1, h) for h in range(weights.shape[1])]
    assert all(row == weights[k][QUERY].tolist() for k, row in every.items())


def _explorer_in_the_lab(lab, page):
    """(panel, explorer): notebook 07's explorer cell, run in the Lab (or the one already shown)."""
    panel = page.locator(".jp-NotebookPanel:visible")
    if panel.locator(".attn-explorer[data-drawn]").count() == 1:
        return panel, panel.locator(".attn-explorer[data-drawn]")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(EXPLORER_CELL)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, lab.work / "explorer_check.ipynb")
    panel = _open_notebook(page, "explorer_check.ipynb")
    _run_cell_by_cell(page, panel, 1)
    root = panel.locator(".attn-explorer[data-drawn]")
    root.wait_for()
    return panel, root


def test_the_explorer_renders_in_the_lab_and_shades_the_pointed_token_s_row(lab, page):
    panel, root = _explorer_in_the_lab(lab, page)
    _point_and_read_back(root, _model_weights())
    page.screenshot(path=SHOTS / "7-explorer-lab.png")
    assert not _shown_errors(panel)


def test_the_html_handout_of_notebook_07_carries_the_explorer(page, tmp_path):
    """`make handouts`' command for 07, then its student handout, offline, in a tab of the same
    browser: it requests nothing, has no WCAG 2.1 A/AA violation (axe), the explorer draws
    itself and reads as in the Lab; printed (the PDF), its maps stay and its hint goes."""
    made = subprocess.run(
        [sys.executable, "-m", "grader", "handouts", "--out", str(tmp_path),
         "--only", "07_positions"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    assert (tmp_path / "student" / "07_positions.pdf").stat().st_size > 10_000
    offline = page.context.new_page()
    failed = []
    try:
        offline.route(re.compile(r"^(?!file:|data:)"), lambda route: route.abort())
        offline.on("requestfailed", lambda request: failed.append(request.url))
        offline.goto((tmp_path / "student" / "07_positions.html").as_uri(), wait_until="load")
        root = offline.locator(".attn-explorer[data-drawn]")
        assert root.count() == 1, "the handout shows no explorer"
        root.scroll_into_view_if_needed()
        assert not failed, f"the handout reaches for the network: {failed}"
        found = violations(offline)  # the handout kind's one axe run, explorer included
        assert not found, "\n".join(found)
        _point_and_read_back(root, _model_weights())
        offline.screenshot(path=SHOTS / "8-explorer-handout.png")
        offline.emulate_media(media="print")
        assert root.locator(".attn-map canvas").first.is_visible()
        assert not root.locator(".attn-hint").is_visible()
    finally:
        offline.close()


# JupyterLab's own WCAG failures, not the course's (axe-core 4.14, JupyterLab 4.6), excused by
# rule and selector; everything else on the page, the notebook's outputs first, is checked.
LAB_OWN = {
    # toolbar buttons (nbgrader's Validate is one) are <jp-button>s with no role, yet say
    # aria-pressed: jupyterlab/jupyterlab#16891
    "aria-allowed-attr": "jp-button",
    # cell editors (CodeMirror's textbox) have no accessible name; CodeMirror leaves the name
    # to the application (codemirror/dev#1127): jupyterlab/jupyterlab#9399
    "aria-input-field-name": ".jp-Cell .cm-content",
    # the notebook's windowed list holds cells without a list item role:
    # jupyterlab/jupyterlab#14804
    "aria-required-children": ".jp-WindowedPanel-viewport",
}
# The lowest WCAG contrast of a shaded token's text on its background, as the page draws them.
LOWEST_CONTRAST = """root => {
    const lum = (css) => { const [r, g, b] = css.match(/\\d+/g).slice(0, 3).map(c => c / 255)
        .map(c => c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
        return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
    return Math.min(...[...root.querySelectorAll('.attn-tok:not(.attn-future)')].map(t => {
        const s = getComputedStyle(t), [a, b] = [lum(s.color), lum(s.backgroundColor)];
        return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); }));
}"""
FOCUSED = "() => document.activeElement.dataset.key || document.activeElement.tagName"
SAID = re.compile(r"position (\d+) ‘[^’]*’ (\d\.\d\d)")


def _press(page, *keys) -> str:
    for key in keys:
        page.keyboard.press(key)
    return page.evaluate(FOCUSED)


def test_the_explorer_works_by_keyboard_alone(lab, page):
    """From the layer buttons, keys only: a layer's heads (focus stays), a head picked in the
    grid, a query moved and kept in the text; the live region then says the model's weights."""
    panel, root = _explorer_in_the_lab(lab, page)
    weights = _model_weights()
    layer, head = weights.shape[0] - 1, 1
    cells = panel.locator(".jp-Cell").count()
    root.locator('[data-key="layer-0"]').focus()  # where Tab from the notebook comes to
    assert _press(page, "Enter") == "layer-0", "focus lost on the layer button's redraw"
    assert root.locator('[data-key="layer-0"]').get_attribute("aria-pressed") == "true"
    assert _press(page, "Tab") == "map-0-0", "the maps' tab stop follows the layer button"
    moves = ["ArrowDown"] * layer + ["Home"] + ["ArrowRight"] * head
    assert _press(page, *moves, "Enter") == f"map-{layer}-{head}"
    chosen = root.locator(f'[data-key="map-{layer}-{head}"]')
    assert chosen.get_attribute("aria-pressed") == "true"
    assert root.locator('.attn-map[aria-pressed="true"]').count() == 1
    kept = _shaded_rows(root)[1]  # the last token, or what a test before kept
    assert _press(page, "Tab") == f"tok-0-{kept}", "the text's tab stop is the query"
    assert _press(page, "Home") == "tok-0-0"
    lowest = [root.evaluate(LOWEST_CONTRAST)]
    for _ in range(QUERY):  # every query on the way: its weights, the text's contrast
        page.keyboard.press("ArrowRight")
        lowest.append(root.evaluate(LOWEST_CONTRAST))
    assert page.evaluate(FOCUSED) == f"tok-0-{QUERY}"
    assert min(lowest) >= 4.5, f"token text under 4.5:1: {min(lowest):.2f}"
    assert _press(page, "Enter", "ArrowRight", "ArrowRight", "Escape") == f"tok-0-{QUERY}"
    shaded, query = _shaded_rows(root)
    assert query == QUERY and list(shaded) == [(layer, head)], "Escape went back to the kept query"
    assert root.locator(f'[data-key="tok-0-{QUERY}"]').get_attribute("aria-selected") == "true"
    said = root.locator('[aria-live="polite"]').inner_text()
    assert said.startswith(f"Query {QUERY} "), said
    top = [(int(k), float(w)) for k, w in SAID.findall(said)]
    row = weights[layer, head, QUERY, : QUERY + 1].astype(float)
    assert [w for _, w in top] == [round(w, 2) for w in sorted(row, reverse=True)[:3]], said
    assert all(round(float(row[k]), 2) == w for k, w in top), said
    assert panel.locator(".jp-Cell").count() == cells, "a key reached JupyterLab's shortcuts"
    page.screenshot(path=SHOTS / "7-explorer-keyboard.png")


# Notebooks 07, 08 and 10's explorers as their cells draw them (07: two models, a menu; 10: a
# real-text model on held-out source, a menu of texts), and a figure shown as the course does.
EXPLORERS_CELLS = [
    """\
import matplotlib.pyplot as plt
import torch

from attnlib import realsource, tasks
from attnlib.explorer import explore, explore_text
from attnlib.plotting import show
from attnlib.shipped import load_shipped

plt.style.use("attnlib.course")
tokens = tasks.repeat_twice(torch.Generator().manual_seed(7), 1, 10)[0]
labels = tasks.token_labels(tokens)""",
    """\
models = {"RoPE": load_shipped("induction"), "no positions": load_shipped("no_positions")}
explore(models, tokens, labels, title="Where each token looks: [BOS] + r + r, len(r) = 10")""",
    """\
explore(load_shipped(), tokens, labels, title="Where each token looks: [BOS] + r + r")""",
    """\
explore_text(realsource.load(0), sample=realsource.held_out_sample(),
             title="Where each character of held-out source looks (seed 0)")""",
    f"""\
fig, ax = plt.subplots(figsize=(4, 3))
ax.plot([0, 1], [0, 1])
ax.set_title("a rising line")
show(fig, alt={FIGURE_ALT!r})""",
]


def test_the_lab_with_07_08_and_10_s_explorers_has_no_wcag_violation_of_the_course_s_own(lab, page):
    """axe over the Lab with the three notebooks' explorers drawn and a course figure, whose
    alt text JupyterLab shows as the <img>'s."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in EXPLORERS_CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, lab.work / "explorers_check.ipynb")
    panel = _open_notebook(page, "explorers_check.ipynb")
    _run_cell_by_cell(page, panel, len(EXPLORERS_CELLS))
    drawn = panel.locator(".attn-explorer[data-drawn]")
    drawn.nth(2).wait_for()
    assert drawn.count() == 3 and panel.locator(".attn-explorer select").count() == 2
    assert panel.locator(".jp-OutputArea-output img").evaluate_all("i => i.map(x => x.alt)") == [
        FIGURE_ALT
    ]
    assert not _shown_errors(panel)
    found = violations(page, LAB_OWN)
    page.screenshot(path=SHOTS / "9-explorers-lab.png", full_page=True)
    assert not found, "\n".join(found)
