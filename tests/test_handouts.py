"""`make handouts`: HTML and PDF handouts, student and solution, with no solution leaking.

Builds the handouts of the first and the last notebook only (the make target does all).
"""

import html
import re
import subprocess
from pathlib import Path

import nbformat
import pytest

from grader.cli import main
from grader.commands.handouts import (
    CHROMIUM,
    CHROMIUM_ARGS,
    HANDOUT_CSS,
    MIN_LEAK,
    NEEDS_YOUR_CODE,
    PRINT_CSS,
    WIDGET_STATE,
    WIDGET_VIEW,
    _html,
    _visible_text,
    build,
    leaks,
    secret_lines,
    shipped_text,
)
from grader.course import assignments, release_path, source_path

PLOTTING = re.compile(r"\b(plt\.(?!style\.)|heatmap\(|\.plot\(|\.imshow\(|subplots\()")
PNG = re.compile(r'<img[^>]+src="data:image/png;base64,')


def _chosen() -> list[str]:
    released = [a for a in assignments() if release_path(a).is_file()]
    return sorted({released[0], released[-1]})


@pytest.fixture(scope="module")
def handouts(tmp_path_factory):
    out = tmp_path_factory.mktemp("handouts")
    written = build(out, _chosen())
    return out, written


def _plots(cell) -> bool:
    return cell.cell_type == "code" and bool(PLOTTING.search(cell.source))


def _pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf))


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_every_handout_exists_with_pages(handouts):
    out, written = handouts
    expected = {
        out / kind / f"{a}.{ext}"
        for a in _chosen()
        for kind in ("student", "solution")
        for ext in ("html", "pdf")
    }
    assert set(written) == expected
    for path in expected:
        data = path.read_bytes()
        assert len(data) > 1000, path
        if path.suffix == ".pdf":
            assert data.startswith(b"%PDF-"), path
            assert _pages(data) >= 1, f"{path} has no pages"
        else:
            assert b"<html" in data[:2000].lower(), path


@pytest.mark.parametrize("assignment", _chosen())
def test_no_solution_reaches_the_student_handout(handouts, assignment):
    out, _ = handouts
    page = (out / "student" / f"{assignment}.html").read_text()
    secrets = [_squash(line) for line in secret_lines(assignment) if len(_squash(line)) >= MIN_LEAK]
    shipped = _squash(shipped_text(assignment))
    secrets = [s for s in secrets if s not in shipped]  # what students get anyway is no secret
    assert secrets, "the scan needs solution lines to look for"
    seen, raw = _squash(_visible_text(page)), _squash(html.unescape(page))
    shown = [s for s in secrets if s in seen or s in raw]
    assert not shown, f"solution or hidden-test text in the student handout: {shown[:3]}"
    assert "BEGINSOLUTION" not in raw and "BEGINHIDDENTESTS" not in raw
    # The scan does find them where they belong: in the solution handout.
    solution = (out / "solution" / f"{assignment}.html").read_text()
    assert leaks(assignment, _visible_text(solution)), "the scan finds nothing, even in solutions"


@pytest.mark.parametrize("assignment", _chosen())
def test_student_handout_has_prompts_and_demo_figures(handouts, assignment):
    out, _ = handouts
    page = (out / "student" / f"{assignment}.html").read_text()
    text = _visible_text(page)
    release = nbformat.read(release_path(assignment), as_version=4)
    answers = [
        c for c in release.cells if c.metadata.get("nbgrader", {}).get("solution")
    ]  # fmt: skip
    for cell in answers:  # each exercise's stub, and each written question's answer box
        if cell.cell_type == "code":
            assert f"def {cell.metadata['nbgrader']['grade_id']}(" in text
        else:
            assert "YOUR ANSWER HERE" in text
    assert "Traceback" not in text and "isn't written yet" not in text, "error outputs shown"
    names = re.compile(rf"\b({'|'.join(c.metadata['nbgrader']['grade_id'] for c in answers)})\b")
    demos = sum(  # plotting cells that do not use the learner's functions
        _plots(c) and not names.search(c.source)
        for c in release.cells
    )  # fmt: skip
    assert len(PNG.findall(page)) >= demos, "a demo figure is missing from the student handout"
    solution = (out / "solution" / f"{assignment}.html").read_text()
    plots = sum(
        _plots(c) for c in nbformat.read(source_path(assignment), as_version=4).cells
    )  # fmt: skip
    assert len(PNG.findall(solution)) >= plots, "a figure is missing from the solution handout"


def test_unknown_notebook_is_a_clear_error(tmp_path, capsys):
    assert main(["handouts", "--out", str(tmp_path), "--only", "99_nope"]) == 2
    assert "unknown notebook" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_student_handout_marks_outputs_that_need_the_learners_code(handouts):
    out, _ = handouts
    last = _chosen()[-1]
    text = _visible_text((out / "student" / f"{last}.html").read_text())
    assert NEEDS_YOUR_CODE.strip() in text  # in place of the dropped error output


def test_printed_code_wraps_at_the_page_margin(handouts):
    """Without the print style some code block is wider than an A4 text column; with it, none."""
    from playwright.sync_api import sync_playwright

    out, _ = handouts
    too_wide = (
        "[...document.querySelectorAll('pre')].filter(p => p.scrollWidth > p.clientWidth + 1)"
    )
    before, after = {}, {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 700, "height": 1000})  # A4 minus margins
        page.route(re.compile(r"^(?!file:|data:)"), lambda route: route.abort())
        for path in sorted(out.glob("*/*.html")):
            page.goto(path.resolve().as_uri(), wait_until="load")
            before[path.name] = page.evaluate(too_wide + ".length")
            page.add_style_tag(content=PRINT_CSS)
            after[path.name] = page.evaluate(too_wide + ".length")
        browser.close()
    assert sum(before.values()) > 0, "no long line to wrap: the test shows nothing"
    assert not any(after.values()), after


def test_a_learner_install_gets_a_one_line_error(monkeypatch, tmp_path, capsys):
    """Playwright is an instructor's tool (the `grader` extra), not in `pip install -e .`."""
    from grader.commands import handouts

    monkeypatch.setattr(handouts, "find_spec", lambda name: None)
    assert main(["handouts", "--out", str(tmp_path), "--only", _chosen()[0]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: Playwright is missing: install the instructor's tools, "
        "`pip install -e '.[grader]'` (as `make handouts` does)"
    ], err
    assert not any(tmp_path.iterdir()), "nothing is written before the error"


def test_pdf_handouts_are_tagged_in_english_with_an_outline(handouts):
    """A screen reader reads a tagged PDF's structure, in the language /Lang names."""
    out, written = handouts
    for pdf in (p for p in written if p.suffix == ".pdf"):
        info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True)
        assert re.search(r"^Tagged:\s+yes$", info.stdout, re.M), f"{pdf.name}:\n{info.stdout}"
        data = pdf.read_bytes()
        assert b"/Lang (en)" in data and b"/Outlines" in data, pdf.name


def test_html_handouts_load_offline_with_no_failed_request(handouts):
    from playwright.sync_api import sync_playwright

    out, _ = handouts
    failed = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.route(re.compile(r"^(?!file:|data:)"), lambda route: route.abort())
        page.on("requestfailed", lambda request: failed.append(request.url))
        for path in sorted(out.glob("*/*.html")):
            page.goto(path.resolve().as_uri(), wait_until="load")
            assert page.evaluate("document.documentElement.lang") == "en", path.name
        browser.close()
    assert not failed, f"requests a handout made offline: {sorted(set(failed))}"


def _contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two #rrggbb colours."""

    def luminance(colour):
        rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted([luminance(a), luminance(b)], reverse=True)
    return (high + 0.05) / (low + 0.05)


def full(colour: str) -> str:
    """#rgb as #rrggbb."""
    return colour if len(colour) == 7 else "#" + "".join(2 * x for x in colour[1:])


def test_the_handout_s_code_colours_and_prompts_reach_aa_on_code_cells():
    """Every syntax colour of JupyterLab's light theme under 4.5:1 on code cells' #f5f5f5
    (comments, numbers, operators, ...) is one HANDOUT_CSS sets again, at 4.5:1 or more."""
    from nbconvert import HTMLExporter

    theme = next(
        p for d in HTMLExporter(template_name="lab").template_paths
        if (p := Path(d) / "static" / "theme-light.css").is_file()
    )  # fmt: skip
    colour = re.compile(r"--(jp-mirror-editor-[\w-]+-color):\s*(#[0-9a-fA-F]{3,6})\b")
    short = {n for n, c in colour.findall(theme.read_text()) if _contrast(full(c), "#f5f5f5") < 4.5}
    assert short, "the theme's colours all pass: this test checks nothing"
    ours = {n: full(c) for n, c in colour.findall(HANDOUT_CSS)}
    assert short <= set(ours), f"not recoloured: {sorted(short - set(ours))}"
    assert all(_contrast(c, "#f5f5f5") >= 4.5 for c in ours.values()), ours
    assert "--jp-cell-prompt-not-active-opacity: 1" in HANDOUT_CSS  # the grey prompts, whole


def test_progress_bars_are_text_and_no_script_comes_from_a_cdn():
    """tqdm's bar (a widget) reads as the text it ended on; the page loads no script."""
    bar = {"model_id": "box", "version_major": 2, "version_minor": 0}
    widget = nbformat.v4.new_output("display_data", data={"text/plain": "HBox()", WIDGET_VIEW: bar})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("train()", outputs=[widget])])
    state = {
        "box": {"state": {"children": ["IPY_MODEL_desc", "IPY_MODEL_bar", "IPY_MODEL_rate"]}},
        "desc": {"state": {"value": "training: "}},
        "bar": {"state": {"value": 300.0, "max": 400.0}},
        "rate": {"state": {"value": " 300/400 [00:03&lt;00:01, 99.5step/s]"}},
    }
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": state}}
    page = _html(nb, "widgets")
    assert "training: 75% 300/400 [00:03&lt;00:01, 99.5step/s]" in page
    assert not re.search(r"<script[^>]*\bsrc=", page), "a script from elsewhere"
    assert not re.search(r"mathjax|require\.js|embed-amd", page, re.I)
    assert '<html lang="en">' in page
