"""The learner's own notebook, annotated: each check's message under its cell and the points
of each exercise under its answer (``feedback/<student>/<notebook>.html``, linked from
``feedback/<student>.html``), as nbgrader's ``generate_feedback`` gives, beside the
exercise table.

Built from the graded notebook (``OUT/nbgrader/autograded``: the trusted release with the
learner's answers in it, so test cells hold the release's visible calls only, never a hidden
test) and from the result and grade rows. Cell outputs are never shown: once a hidden input
has reached the kernel, any later output could quote it (README, "What the sandbox
guarantees"); under a test cell is the judge's verdict only, the message grades.csv has.
Markdown is rendered as the notebook shows it (headings, lists, emphasis, code, tables, a
hint's ``<details>``), math as its TeX (the page loads no MathJax), sanitized by nh3
(``grader.results.inert.safe_markdown2html``: a learner's written answer is theirs to type,
HTML included, so no script, event handler, iframe, form or ``javascript:`` URL is kept); the
page's Content-Security-Policy runs no script at all and loads nothing from elsewhere (an
image only from ``data:``), should anything get past the sanitizer.
"""

import functools
import hashlib
import html
import json
import re
import unicodedata
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import quote

import nbformat

from grader.course import grade_id
from grader.results import out as out_files
from grader.results.inert import safe_markdown2html
from grader.results.result import Result


class GradeRow(TypedDict):
    """One row of grades.csv (``grader.results.report.GRADES_COLUMNS``), every cell text:
    made by ``grader.results.report.rows``, read here too (this module is below it)."""

    student: str
    notebook: str
    exercise: str
    points: str  # "" while a written answer waits for hand grading
    max_points: str
    message: str
    comment: str
    by_hand: str


STYLE = """<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;
color:#222}.cell{margin:.6rem 0}pre{background:#f6f6f6;padding:.5rem;overflow-x:auto;
white-space:pre-wrap}.md{padding:.2rem .5rem}.md img{max-width:100%}.pass{color:#176b2c}
.fail{color:#a1221b}.points{border-left:4px solid #888;padding:.3rem .6rem;background:#fafafa}
</style>"""
# No script runs and nothing loads from elsewhere, whatever a markdown cell holds.
CSP = (
    "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
    "style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'\">"
)


def graded_notebook_path(out: Path, student: str, notebook: str) -> Path:
    return out_files.autograded_path(out, student, notebook)


def safe_name(student: str) -> str:
    """A student id as a name in feedback/: a lower-case id of letters, digits and ``-_.`` as
    it is; any other (a capital: ``Ann`` and ``ann`` are one name on a case-insensitive disk,
    a laptop's or a zip unpacked there; a space, a newline, a slash: an id may be any folder
    name; ``.``, ``..``) with those characters as ``_``, then ``~`` and a hash of the whole
    id, so no two ids share a page or a folder, whatever the disk (no id kept as it is holds
    ``~``, and a hash is lower-case hex)."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in student)
    if safe == student and safe.strip(".") and _one_case(student):
        return safe
    digest = hashlib.sha256(student.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{safe}~{digest}"


def _one_case(name: str) -> bool:
    """Whether ``name`` is the one spelling of itself a case-insensitive disk knows: its own
    case-fold (``ß``, ``ς`` are not) and lower case of its upper case (``ı`` is not: ``I``),
    composed (macOS also takes a decomposed ``é`` for a composed one)."""
    return name == name.casefold() == name.upper().lower() == unicodedata.normalize("NFC", name)


def page_path(out: Path, student: str, notebook: str) -> Path:
    return out / out_files.FEEDBACK.path / safe_name(student) / f"{notebook}.html"


def link(student: str, notebook: str) -> str:
    """The page's address relative to ``feedback/<student>.html``."""
    return f"{quote(safe_name(student))}/{quote(notebook)}.html"


CODE = re.compile(r"`([^`]+)`")


def message_html(text: str) -> str:
    """Text as HTML: escaped, its `code` spans as <code>."""
    return CODE.sub(r"<code>\1</code>", html.escape(text))


def paragraphs(text: str) -> str:
    """A comment as HTML that keeps its paragraphs (blank lines) and line breaks."""
    parts = re.split(r"\n\s*\n", text.strip())
    return "".join(f"<p>{html.escape(p).replace(chr(10), '<br>')}</p>" for p in parts)


def _verdict(test: dict[str, Any]) -> str:
    if test["points"] >= test["max_points"]:
        return "<div class='pass'>✓ passed</div>"
    return f"<div class='fail'>✗ {message_html(test['message'])}</div>"


def _points(row: GradeRow, checked: bool) -> str:
    """An exercise's points; its message too when no test cell shows it (a written answer)."""
    shown = "pending" if row["points"] == "" else row["points"]
    lines = [f"<b>{html.escape(row['exercise'])}</b>: {shown} / {row['max_points']} points"]
    if row.get("by_hand"):
        lines.append(f"Points by your instructor: {html.escape(row['by_hand'])}")
    if row["message"] and not checked:
        lines.append(message_html(row["message"]))
    if row["comment"]:
        lines.append(f"<b>Comment from your instructor:</b> {paragraphs(row['comment'])}")
    return "<div class='points'>" + "<br>".join(lines) + "</div>"


@functools.lru_cache(maxsize=4096)
def _markdown(source: str) -> str:
    """A markdown cell as sanitized HTML; once per text: a class's pages share the release's
    cells (about 30 ms a notebook rendered afresh, 2600 pages for 200 students)."""
    return safe_markdown2html(source, anchors=False)


def render(
    notebook_json: str, title: str, tests: dict[str, dict[str, Any]], rows: list[GradeRow]
) -> str:
    """The page: every cell's source in order; under a test cell its verdict (``tests``: the
    result's {test id: {points, max_points, message}}), under an answer cell its grade row."""
    cells = nbformat.from_dict(json.loads(notebook_json)).cells  # as graded: no validation
    by_exercise = {r["exercise"]: r for r in rows}
    body = [f"<h1>{html.escape(title)}</h1>"]
    for cell in cells:
        source = "".join(cell.source)  # a file keeps it as a list of lines
        if cell.cell_type == "markdown":
            body.append(f"<div class='cell md'>{_markdown(source)}</div>")
        else:
            body.append(f"<div class='cell'><pre>{html.escape(source)}</pre></div>")
        gid = grade_id(cell)
        if gid in tests:
            body.append(_verdict(tests[gid]))
        if gid in by_exercise:
            checked = any(t.startswith(f"test_{gid}") for t in tests)  # grader.course's rule
            body.append(_points(by_exercise[gid], checked))
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'>{CSP}<title>"
        f"{html.escape(title)}</title>{STYLE}</head><body>{''.join(body)}</body></html>\n"
    )


def write(out: Path, result: Result, rows: list[GradeRow]) -> bool:
    """Write one graded notebook's page; False when OUT holds no graded notebook for it
    (not submitted, not graded)."""
    path = graded_notebook_path(out, result.student, result.notebook)
    if not result.tests or not path.is_file():
        return False
    title = f"{result.notebook}: {result.student}'s notebook, with the checks' messages"
    page = render(path.read_text(encoding="utf-8"), title, result.tests, rows)
    out_files.write_text(page_path(out, result.student, result.notebook), page)
    return True
