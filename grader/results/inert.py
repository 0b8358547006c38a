"""Student content made inert for the pages an instructor opens.

Formgrader renders graded notebooks on the instructor's own Jupyter server: a script in a
student's output or written answer would run with the instructor's session (the contents
API, terminals). Three guards, each on an extension point of nbgrader, nbconvert or the
Jupyter server:

- :func:`inert_outputs` keeps of a cell's outputs only text and PNG/JPEG images; the course
  grader applies it to every output it writes into ``OUT/nbgrader/autograded``, and
  :class:`InertSubmission` (a preprocessor of formgrader's exporter) again at render time,
  for notebooks graded before, with raw cells sanitized and the page's names escaped;
- :func:`safe_markdown2html` replaces the exporter's markdown filter: markdown rendered,
  then sanitized by nh3 (script, event handlers, iframes, SVG and ``javascript:`` gone);
- formgrader's submission page is served with a Content-Security-Policy that runs only the
  scripts of its own template (:mod:`grader.results.formgrade_csp`).
"""

import base64
import binascii
import html
from typing import Any

import nbformat
import nh3
from nbconvert.filters.markdown import markdown2html
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode

# What a graded output may keep: text the page escapes, and images checked to be base64.
TEXT = "text/plain"
IMAGES = ("image/png", "image/jpeg")
# Resources formgrader's template prints unescaped (its Jinja environment has no autoescape).
PAGE_NAMES = ("student", "first_name", "last_name", "notebook_id", "assignment_id",
              "notebook_path", "filename")  # fmt: skip


def _is_base64(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _data(data: dict[str, Any]) -> dict[str, Any]:
    """A display's MIME bundle with only inert types; a note names what was dropped."""
    kept: dict[str, Any] = {k: "".join(data[k].split()) for k in IMAGES if _is_base64(data.get(k))}
    dropped = sorted(k for k in data if k not in kept and k != TEXT)
    note = f"[not shown here: {', '.join(dropped)}]" if dropped else ""
    text = "\n".join(filter(None, [_text(data.get(TEXT)), note]))
    return kept | ({TEXT: text} if text else {})


def _text(value: object) -> str:
    return "".join(map(str, value)) if isinstance(value, list) else str(value or "")


def _output(out: dict[str, Any]) -> NotebookNode | None:
    kind = out.get("output_type")
    if kind == "stream":
        name = "stderr" if out.get("name") == "stderr" else "stdout"
        made: NotebookNode = nbformat.v4.new_output(
            "stream", name=name, text=_text(out.get("text"))
        )
        return made
    if kind == "error":
        trace = out.get("traceback")
        made = nbformat.v4.new_output(
            "error", ename=_text(out.get("ename")), evalue=_text(out.get("evalue")),
            traceback=[_text(line) for line in trace] if isinstance(trace, list) else [],
        )  # fmt: skip
        return made
    if kind in ("display_data", "execute_result"):
        data = _data(out.get("data") or {})
        return nbformat.v4.new_output("display_data", data=data) if data else None
    return None  # an unknown kind: nothing to show


def inert_outputs(outputs: list[Any]) -> list[NotebookNode]:
    """``outputs`` as text and checked images only, rebuilt field by field, without metadata
    (a display's width and height land in attributes): nothing there can run a script."""
    return [o for o in (_output(out) for out in outputs if isinstance(out, dict)) if o]


def safe_markdown2html(source: str, anchors: bool = True) -> str:
    """Markdown to HTML, sanitized by nh3 (its defaults: no script, style, event handler,
    iframe, SVG, form or ``javascript:`` URL); ``anchors=False``: headings without the
    ``¶`` link nbconvert adds (a page of its own, with no table of contents)."""
    if anchors:
        return nh3.clean(markdown2html(source))
    renderer = IPythonRenderer(escape=False, exclude_anchor_links=True)
    rendered: str = MarkdownWithMath(renderer=renderer).render(source)
    return nh3.clean(rendered)


class InertSubmission(Preprocessor):
    """Formgrader's exporter: every cell of a submission made inert before it is rendered."""

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[Any, Any]:
        for key in PAGE_NAMES:
            if isinstance(resources.get(key), str):
                resources[key] = html.escape(resources[key])
        for key in ("widgets", "title"):  # widget state becomes a script; a title, raw HTML
            nb.metadata.pop(key, None)
        done: tuple[Any, Any] = super().preprocess(nb, resources)  # type: ignore[no-untyped-call]
        return done

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        cell.pop("attachments", None)
        cell.metadata.pop("tags", None)  # printed into a class attribute
        if cell.cell_type == "raw":
            cell.source = nh3.clean(cell.source)
        elif cell.cell_type == "code":
            cell.outputs = inert_outputs(cell.outputs)
            count = cell.get("execution_count")
            cell.execution_count = count if isinstance(count, int) else None
        return cell, resources
