"""Student content on formgrader's submission page, rendered without a server or browser.

mallory's notebook (``fixtures/page_attacks.py``: scripts in outputs and in her written
answer) through formgrader's exporter with this course's settings, and her page's names
hostile too: nothing on the page can run but the template's own scripts, which the
Content-Security-Policy lists. Honest controls: her answer's text, a PNG and text outputs
are still shown; the stock exporter (nbgrader's settings alone) lets every attack through,
so the attacks are real. tests/test_formgrader.py opens the page in Chromium.
"""

import base64
from html.parser import HTMLParser

import nbformat
import pytest
from fixtures import page_attacks
from nbconvert.exporters import HTMLExporter
from traitlets.config import Config

from grader.results import formgrade_csp
from grader.results.formgrade_csp import empty_page, source_hash
from grader.results.inert import inert_outputs

HOSTILE_NAME = "<img src=x onerror=alert(1)>"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()
EMBEDDING = {"iframe", "frame", "object", "embed", "svg", "math", "base", "form", "meta"}


class Active(HTMLParser):
    """What a browser could run or load on a page: inline scripts and handlers (their
    hashes, as the policy lists them), embedding elements, ``javascript:`` URLs."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.embedding: list[str] = []
        self.urls: list[str] = []
        self.feed(page)
        self.hashes = formgrade_csp.template_hashes(page)

    def handle_starttag(self, tag, attrs):
        self.embedding += [tag] if tag in EMBEDDING - {"meta"} else []
        self.urls += [v for k, v in attrs if v and v.strip().lower().startswith("javascript:")]


def _graded(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with the outputs its answer cell makes when run (as the kernel reports them)."""
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == page_attacks.ANSWER_ID:
            html = '<img src=x onerror="' + "fetch('/x')" + '">'
            cell.outputs = [
                nbformat.v4.new_output("display_data", data={"text/html": html,
                                       "text/plain": "<IPython.core.display.HTML object>"}),
                nbformat.v4.new_output("display_data", data={"application/javascript": "x()"}),
                nbformat.v4.new_output("display_data", data={"image/png": PNG},
                                       metadata={"image/png": {"width": '1" onload="x()'}}),
                nbformat.v4.new_output("stream", name="stdout", text="<b>plain</b>\n"),
            ]  # fmt: skip
    return nb


def _page(exporter: HTMLExporter) -> str:
    names = {"student": HOSTILE_NAME, "last_name": HOSTILE_NAME, "first_name": "x"}
    resources = formgrade_csp.page_resources(**names, notebook_path=HOSTILE_NAME)
    page, _ = exporter.from_notebook_node(_graded(page_attacks.notebook()), resources=resources)
    return str(page)


@pytest.fixture(scope="module")
def page() -> str:
    return _page(formgrade_csp.formgrade_exporter())


def test_the_course_s_page_holds_no_active_content_but_the_template_s(page):
    found, template = Active(page), Active(empty_page())
    assert found.hashes == template.hashes and found.hashes
    assert found.embedding == template.embedding == [] and found.urls == []
    assert "&lt;img src=x onerror=alert(1)&gt;, x" in page, "the names are shown escaped"


def test_the_honest_parts_of_the_page_are_still_shown(page):
    assert "A key is compared with queries; a value is what is returned." in page
    assert f"data:image/png;base64,{PNG}" in page
    assert "&lt;b&gt;plain&lt;/b&gt;" in page, "a stream's text is shown as text"
    assert "[not shown here: text/html]" in page


def test_the_stock_page_runs_every_attack():
    """Control: without the course's settings the same notebook and names are live."""
    from nbgrader.server_extensions.formgrader import handlers

    stock = HTMLExporter(
        config=Config(
            {
                "HTMLExporter": {
                    "template_name": "formgrade",
                    "extra_template_basedirs": [handlers.template_path],
                }
            }
        )
    )
    found = Active(_page(stock))
    handlers_and_scripts = [h for h in found.hashes if h not in Active(empty_page()).hashes]
    assert len(handlers_and_scripts) >= 6, "outputs, written answer and name: all live"
    assert {"iframe", "svg"} <= set(found.embedding), found.embedding


def test_the_policy_allows_the_template_s_scripts_only(page):
    hashes = formgrade_csp.template_hashes(empty_page())
    policy = formgrade_csp.policy(hashes, page)
    ids = formgrade_csp.IDS_SCRIPT.search(page)
    assert ids and source_hash(ids.group(1)) in policy
    injected = "fetch('/api/contents/sentinel-x.txt', {method: 'PUT'})"
    assert source_hash(injected) not in policy
    assert "'unsafe-inline'" not in policy.split("; style-src")[0], policy
    # An ids script of another form (a value that could close its string) is not allowed.
    forged = page.replace('var notebook_id = "-"', 'var notebook_id = "-\\"+x()+\\""')
    assert not formgrade_csp.IDS_SCRIPT.search(forged)


@pytest.mark.parametrize(
    ("output", "kept"),
    [
        ({"output_type": "display_data", "data": {"text/html": "<b>", "text/plain": "t"}},
         {"text/plain": "t\n[not shown here: text/html]"}),
        ({"output_type": "display_data", "data": {"image/png": '" onerror="x'}},
         {"text/plain": "[not shown here: image/png]"}),
        ({"output_type": "display_data", "data": {"image/png": PNG}}, {"image/png": PNG}),
    ],
)  # fmt: skip
def test_outputs_keep_text_and_checked_images_only(output, kept):
    (made,) = inert_outputs([output])
    assert made["data"] == kept and made["metadata"] == {}
