"""The learner's annotated notebook reads like the notebook (issue 51): its markdown rendered
(headings, emphasis, code, a hint's <details>), sanitized, each check's verdict under its test
cell and the points under the answer, as nbgrader's feedback shows them; still no cell output
and no script, event handler or outside address, whatever a written answer holds."""

import json
import re
from html.parser import HTMLParser

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from grader.results import annotated

HONEST = """## 4. Hard lookup

Return the *value* of the best-matching key with `np.argmax`.

<details><summary>Hint</summary>

Use `scores.argmax()`.

</details>
"""
HOSTILE = """My answer: keys and values differ.

<script>window.pwned = 1</script>
<img src=x onerror="window.pwned = 2">
<a href="javascript:window.pwned = 3">click</a>
<iframe src="https://evil.example/"></iframe>
<style>body{display:none}</style>
<form action="https://evil.example/"><input name=q></form>
<img src="https://evil.example/track.png" alt="tracker">
"""
SECRET_OUTPUT = "hidden input: 0.1234567"


def _cell(cell, grade_id, **extra):
    cell.metadata["nbgrader"] = {"grade_id": grade_id, **extra}
    return cell


def page():
    """The annotated page of a notebook with an honest markdown cell, an answer, its test
    cell (whose output quotes a hidden input), and a hostile written answer."""
    test = _cell(new_code_cell("checks.check_hard_lookup(hard_lookup)"), "test_hard_lookup")
    test.outputs = [new_output("stream", name="stdout", text=SECRET_OUTPUT)]
    nb = new_notebook(cells=[
        new_markdown_cell(HONEST),
        _cell(new_code_cell("def hard_lookup(q, k, v):\n    return v[0]"), "hard_lookup"),
        test,
        _cell(new_markdown_cell(HOSTILE), "keys_vs_values"),
    ])  # fmt: skip
    tests = {"test_hard_lookup": {"points": 0, "max_points": 2, "message": "Expected `v[2]`."}}
    rows = [
        {"student": "ann", "notebook": "01", "exercise": "hard_lookup", "points": "0",
         "max_points": "2", "message": "Expected `v[2]`.", "comment": "", "by_hand": ""},
        {"student": "ann", "notebook": "01", "exercise": "keys_vs_values", "points": "1.5",
         "max_points": "2", "message": "", "comment": "Good.", "by_hand": ""},
    ]  # fmt: skip
    return annotated.render(json.dumps(nbformat.from_dict(nb)), "01: ann", tests, rows)


class Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def _elements(html):
    parser = Elements()
    parser.feed(html)
    return parser.found


def test_markdown_is_rendered_as_the_notebook_shows_it():
    html = page()
    assert "<h2>4. Hard lookup</h2>" in html and "¶" not in html
    assert "<em>value</em>" in html and "<code>np.argmax</code>" in html
    assert "<details><summary>Hint</summary>" in html and "<code>scores.argmax()</code>" in html
    assert "## 4." not in html and "&lt;details&gt;" not in html  # no longer shown as source


def test_each_verdict_is_under_its_test_cell_and_the_points_under_the_answer():
    html = page()
    under_test = html.split("checks.check_hard_lookup(hard_lookup)</pre></div>", 1)[1]
    assert under_test.startswith("<div class='fail'>✗ Expected <code>v[2]</code>.</div>")
    under_answer = html.split("keys and values differ.", 1)[1]
    assert "<b>keys_vs_values</b>: 1.5 / 2 points" in under_answer
    assert SECRET_OUTPUT not in html and "0.1234567" not in html  # no output, ever


def test_a_hostile_written_answer_keeps_its_text_and_loses_every_active_part():
    html = page()
    elements = _elements(html)
    tags = [tag for tag, _ in elements]
    assert "script" not in tags and "iframe" not in tags and "form" not in tags
    assert "style" in tags and tags.count("style") == 1  # the page's own, in <head>
    assert all(not name.startswith("on") for _, attrs in elements for name in attrs)
    assert all("javascript:" not in (attrs.get("href") or "") for _, attrs in elements)
    assert "pwned" not in html  # a script's and a handler's code gone with them
    assert "My answer: keys and values differ." in html and ">click</a>" in html
    csp = next(
        a["content"] for t, a in elements if a.get("http-equiv") == "Content-Security-Policy"
    )
    assert re.search(r"default-src 'none'", csp) and "img-src data:" in csp
    assert "script-src" not in csp  # so no script runs, not even one the sanitizer missed
    # an outside image keeps its alt text, and the policy keeps the browser from fetching it
    assert ("img", {"src": "https://evil.example/track.png", "alt": "tracker"}) in elements
