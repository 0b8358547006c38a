"""`make handouts`: HTML and PDF handouts, student and solution, with no solution leaking.

Builds the handouts of the first and the last notebook only (the make target does all).
"""

import html
import re

import nbformat
import pytest

from grader.cli import main
from grader.commands.handouts import (
    CHROMIUM,
    CHROMIUM_ARGS,
    MIN_LEAK,
    NEEDS_YOUR_CODE,
    PRINT_CSS,
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
