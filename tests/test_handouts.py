"""`make handouts`: HTML and PDF handouts, student and solution, with no solution leaking.

Builds the handouts of the first and the last notebook only (the make target does all).
"""

import html
import re
import subprocess
from pathlib import Path

import nbformat
import pytest
from accessibility import violations

from attnlib.plotting import MIN_ALT_WORDS
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
    math_text,
    secret_lines,
    shipped_text,
)
from grader.course import assignments, release_path, source_path

PLOTTING = re.compile(r"\b(plt\.(?!style\.)|heatmap\(|\.plot\(|\.imshow\(|subplots\()")
PNG = re.compile(r'<img[^>]+src="data:image/png;base64,')
IMG = re.compile(r"<img\b[^>]*>")
ALT = re.compile(r'\balt="([^"]*)"')
# A tagged PDF's figures (Chromium's structure elements), each with its alt text: a literal
# string (ASCII), or UTF-16 in hex.
PDF_FIGURE = re.compile(rb"/S /Figure\b(?:\s*/Alt (?:<FEFF([0-9A-Fa-f]*)>|\(((?:\\.|[^\\)])*)\)))?")


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


def test_html_handouts_load_offline_with_no_failed_request_or_wcag_violation(handouts):
    """Offline, in English, and no WCAG 2.1 A/AA violation (axe) on the student and solution
    pages (every solution page is checked in tests/test_figures.py, 07's student page with
    its explorer in tests/test_browser.py)."""
    from playwright.sync_api import sync_playwright

    out, _ = handouts
    failed, found = [], {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.route(re.compile(r"^(?!file:|data:)"), lambda route: route.abort())
        page.on("requestfailed", lambda request: failed.append(request.url))
        for path in sorted(out.glob("*/*.html")):
            page.goto(path.resolve().as_uri(), wait_until="load")
            assert page.evaluate("document.documentElement.lang") == "en", path.name
            found[f"{path.parent.name}/{path.name}"] = violations(page)
        browser.close()
    assert not failed, f"requests a handout made offline: {sorted(set(failed))}"
    assert not any(found.values()), found


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


def _pdf_text(utf16: bytes, literal: bytes) -> str | None:
    """A PDF string's text: hex UTF-16, or a literal with backslash escapes (None: neither)."""
    if utf16:
        return bytes.fromhex(utf16.decode()).decode("utf-16-be")
    if literal:
        unescape = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"(": b"(", b")": b")", b"\\": b"\\"}
        return re.sub(rb"\\([nrt()\\])", lambda m: unescape[m.group(1)], literal).decode("latin-1")
    return None


def _alts(page: str) -> list[tuple[str, str | None]]:
    """(class, alt text) of every <img> of a page (None: it has no alt)."""
    found = []
    for tag in IMG.findall(page):
        alt, kind = ALT.search(tag), re.search(r'\bclass="([^"]*)"', tag)
        found.append((kind.group(1) if kind else "", html.unescape(alt.group(1)) if alt else None))
    return found


def test_every_image_of_a_handout_says_what_it_shows_in_html_and_pdf(handouts):
    """Figures with their alt text (attnlib.plotting.show), math as words, never nbconvert's
    placeholder or raw TeX; the tagged PDF's figures carry the same alt texts."""
    out, _ = handouts
    seen = 0
    for path in sorted(out.glob("*/*.html")):
        images = _alts(path.read_text())
        figures = [alt for kind, alt in images if kind != "math"]
        maths = [alt for kind, alt in images if kind == "math"]
        seen += len(figures)
        bad = [
            alt for alt in figures
            if alt is None or len(alt.split()) < MIN_ALT_WORDS or "No description" in alt
        ]  # fmt: skip
        assert not bad, f"{path}: figures without a description: {bad[:3]}"
        assert all(alt and not re.search(r"[\\{}^_$]", alt) for alt in maths), (path, maths)
        pdf = path.with_suffix(".pdf").read_bytes()
        tagged = [_pdf_text(utf16, literal) for utf16, literal in PDF_FIGURE.findall(pdf)]
        assert None not in tagged, f"{path.with_suffix('.pdf')}: a figure with no alt text"
        assert set(figures) <= set(tagged), f"{path.with_suffix('.pdf')}: alt texts lost in print"
    assert seen, "no figure in the handouts: the test checks nothing"


def test_math_reads_as_words():
    """The handouts' math is an SVG; its alt text reads as words, not TeX."""
    softmax = r"\mathrm{softmax}(x)_i = e^{x_i} / \sum_j e^{x_j}"
    assert math_text(softmax) == (
        "softmax (x) sub i equals e to the power x sub i divided by the sum over j of e to the "
        "power x sub j"
    )
    assert math_text(r"\frac{Q K^\top}{\sqrt{d_k}}") == (
        "Q K transposed over the square root of d sub k"
    )
    page = _html(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"$${softmax}$$")]), "m"
    )
    ((kind, alt),) = _alts(page)
    assert kind == "math" and alt == math_text(softmax)


def test_a_figure_prints_as_wide_as_tests_test_figures_assumes(handouts):
    """The printed column (A4 less the PDF's margins, 703 CSS px, less the output prompt and
    padding) is PRINT_COLUMN_PX, which tests/test_figures.py prints every figure's text in."""
    from playwright.sync_api import sync_playwright
    from test_figures import PRINT_COLUMN_PX

    out, _ = handouts
    widths = set()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 703, "height": 1000})
        page.route(re.compile(r"^(?!file:|data:)"), lambda route: route.abort())
        page.emulate_media(media="print")
        for path in sorted(out.glob("solution/*.html")):
            page.goto(path.resolve().as_uri(), wait_until="load")
            page.add_style_tag(content=PRINT_CSS)
            widths |= set(
                page.evaluate(
                    """() => [...document.querySelectorAll('.jp-OutputArea-output img')].map(i => {
                        const o = i.closest('.jp-OutputArea-output'), s = getComputedStyle(o);
                        return o.clientWidth - parseFloat(s.paddingLeft)
                               - parseFloat(s.paddingRight); })"""
                )
            )
        browser.close()
    assert widths, "no figure to measure"
    assert all(abs(w - PRINT_COLUMN_PX) <= 2 for w in widths), widths
