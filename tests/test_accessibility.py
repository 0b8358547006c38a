"""The pages the grader writes for people, checked by axe-core in Chromium: a learner's
feedback page and the class report have no WCAG 2.1 A/AA violation (one axe run each).
Every notebook's handout is checked in tests/test_figures.py (and tests/test_handouts.py),
07's student handout and JupyterLab with 07, 08 and 10's explorers in tests/test_browser.py,
the explorer's keyboard use there too."""

import re

import pytest
from accessibility import violations

from grader.commands.handouts import CHROMIUM, CHROMIUM_ARGS
from grader.results import report
from grader.results.result import GRADED, Result

NB = "01_soft_lookup"


def _row(student, exercise, points, message="", comment="", by_hand=""):
    cells = {"exercise": exercise, "points": points, "max_points": "2", "message": message}
    return {"student": student, "notebook": NB, **cells, "comment": comment, "by_hand": by_hand}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A small class's feedback and report: full marks, a failed check with `code` in its
    message, a written answer waiting for hand grading, an instructor's comment, a flag."""
    out = tmp_path_factory.mktemp("out")
    rows = [
        _row("ann", "softmax", "2"),
        _row("ann", "explain_weights", "", message="graded by hand"),
        _row(
            "bob",
            "softmax",
            "0",
            message="`softmax([1, 2])` should sum to 1, not 3.0",
            comment="Look at the denominator.\n\nThen run the check again.",
        ),  # fmt: skip
        _row("bob", "explain_weights", "1", by_hand="1"),
    ]
    results = [
        Result("ann", NB, GRADED, (), flags=(), notes=(), sandboxed=True, timings={"total": 2.5}),
        Result("bob", NB, GRADED, (), flags=("took longer than most: 9.1 s",),
               notes=("submitted as `01 (1).ipynb`",), sandboxed=True, timings={"total": 9.1}),
    ]  # fmt: skip
    extra = {("bob", NB): {"comments": ["Good start.\n\nMore next time."]}}
    report.write_feedback(out, rows, results, extra)
    totals = report.totals(rows, [NB])
    report.write_class_report(out, rows, totals, results, [], extra)
    return out


def test_the_feedback_page_and_the_class_report_have_no_wcag_violation(written):
    from playwright.sync_api import sync_playwright

    pages = [report.feedback_path(written, "bob"), written / "report" / "index.html"]
    found = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.route(re.compile(r"^(?!file:|data:)"), lambda route: route.abort())
        for path in pages:
            page.goto(path.as_uri(), wait_until="load")
            assert page.locator("table").count() >= 1, f"{path.name}: nothing to check"
            found[path.name] = violations(page)
        browser.close()
    assert not any(found.values()), found


def test_the_annotated_notebook_runs_nothing_fetches_nothing_and_has_no_wcag_violation(tmp_path):
    """A written answer with a script, an event handler, a javascript: link and an outside
    image (tests/test_feedback_markdown.py), as a learner's browser opens the page: nothing
    runs, no dialog opens, no request leaves the file; the page, axe added under a browser
    that ignores its policy (axe is a script), has no WCAG 2.1 A/AA violation."""
    from playwright.sync_api import sync_playwright
    from test_feedback_markdown import page as annotated_page

    path = tmp_path / "ann.html"
    path.write_text(annotated_page())
    left, blocked, dialogs = [], [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.route(re.compile(r"^(?!file:|data:)"),
                   lambda route: (left.append(route.request.url), route.abort()))  # fmt: skip
        page.on("requestfailed", lambda r: blocked.append((r.url, r.failure)))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(path.as_uri(), wait_until="load")
        page.locator("a", has_text="click").click()
        page.wait_for_timeout(300)
        assert page.evaluate("window.pwned") is None
        assert page.locator("h2", has_text="4. Hard lookup").count() == 1
        axed = browser.new_page(bypass_csp=True)
        axed.route(re.compile(r"^(?!file:|data:)"), lambda route: route.abort())
        axed.goto(path.as_uri(), wait_until="load")
        found = violations(axed, {"image-alt": "img[src='x']"})  # the attack's, alt-less
        browser.close()
    assert left == [] and not dialogs  # nothing reached the network, no script ran
    assert ("https://evil.example/track.png", "csp") in blocked  # the page's policy stopped it
    assert found == [], found
