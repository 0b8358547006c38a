"""`python -m grader handouts --out DIR`: HTML and PDF handouts of every notebook.

For each notebook, two handouts:

- ``DIR/student/NN_slug.html|.pdf``: the student release, executed, so the prompts come
  with the demo figures and printed numbers. Cells that need the learner's code fail in
  the release; their error outputs (the "isn't written yet" lines, and tracebacks of
  demos built on an exercise) are dropped, leaving the cell for the learner to run.
  Nothing from ``solutions/`` goes in: the release has no solutions or hidden tests,
  and every student handout is scanned for them before it is written (:func:`leaks`).
- ``DIR/solution/NN_slug.html|.pdf``: the source notebook, executed (answers, hidden
  tests and all): the instructor's copy.

Notebooks run in a scratch folder, so nothing in the course changes. Handouts need no
network: math is drawn with matplotlib's mathtext into the HTML, nbconvert's scripts from
CDNs (MathJax, require.js, the widget manager, Mermaid) are left out of the page, and
progress bars are printed as the text they ended on. The page is in English (``lang``),
its prompts and code colours reach WCAG AA contrast (:data:`HANDOUT_CSS`). PDFs are
printed by Debian's headless Chromium (via Playwright, one of the instructor's tools:
``pip install -e '.[grader]'``, which `make handouts` runs), with every non-local request
blocked, as tagged PDFs with an outline (for screen readers, and bookmarks).
"""

import argparse
import base64
import html
import io
import re
import shutil
import tempfile
from collections.abc import Iterable
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode
from nbgrader.utils import is_solution
from traitlets.config import Config

from grader.course import REPO_ROOT, assignments, release_path, source_path
from grader.errors import UserError
from grader.settings import load

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
MIN_LEAK = 12  # characters (spaces ignored): shorter solution lines are too generic to flag
MATH = re.compile(r"(?<![\\$])(\$\$?)(?!\s)(.+?)(?<![\\\s])\1", re.S)
NEEDS_YOUR_CODE = "(This cell needs your code: its output appears when you run it.)\n"
# Printed code and outputs wrap at the page margin instead of running off it.
PRINT_CSS = "pre { white-space: pre-wrap !important; overflow-wrap: anywhere; }"
# JupyterLab's light theme, recoloured where it falls short of WCAG AA (4.5:1) on code cells'
# #f5f5f5: prompts (grey at half opacity, 2.2:1), and the syntax colours below 4.5:1.
HANDOUT_CSS = """:root {
  --jp-cell-prompt-not-active-opacity: 1; --jp-cell-inprompt-font-color: #1a5fa0;
  --jp-cell-outprompt-font-color: #a84a2f; --jp-mirror-editor-keyword-color: #007000;
  --jp-mirror-editor-atom-color: #3c3cb4; --jp-mirror-editor-number-color: #007000;
  --jp-mirror-editor-variable-3-color: #006f00; --jp-mirror-editor-operator-color: #8322d0;
  --jp-mirror-editor-comment-color: #336b6b; --jp-mirror-editor-meta-color: #8322d0;
  --jp-mirror-editor-builtin-color: #007000; --jp-mirror-editor-bracket-color: #6b6b40;
  --jp-mirror-editor-quote-color: #007000; --jp-mirror-editor-error-color: #c00000;
  --jp-mirror-editor-hr-color: #666666;
}"""
# nbconvert's lab template without what it fetches from CDNs, with HANDOUT_CSS last.
TEMPLATE = (
    "{%- extends 'lab/index.html.j2' -%}\n"
    "{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}\n"
    "{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}\n"
    "{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}\n"
    "{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}\n"
    f"{{%- block html_head_css -%}}<style>{HANDOUT_CSS}</style>{{%- endblock html_head_css -%}}\n"
)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="folder for the handouts")
    parser.add_argument("--only", nargs="+", metavar="NN_slug", help="only these notebooks")


def run(args: argparse.Namespace) -> int:
    for path in build(args.out, args.only):
        print(f"wrote {path}")
    return 0


def build(out: Path, only: Iterable[str] | None = None) -> list[Path]:
    """Write the handouts of ``only`` (default: every notebook); return the files written."""
    chosen = list(only or assignments())
    unknown = [a for a in chosen if a not in assignments()]
    if unknown:
        raise UserError(f"unknown notebook(s): {', '.join(unknown)}; known: {assignments()}")
    missing = [a for a in chosen if not release_path(a).is_file()]
    if missing:
        raise UserError(f"no student release for {', '.join(missing)}: run `make release`")
    if not CHROMIUM.exists():
        raise UserError(f"{CHROMIUM} is missing: run `make browser` (Debian's chromium)")
    if find_spec("playwright") is None:
        raise UserError("Playwright is missing: install the instructor's tools, "
                        "`pip install -e '.[grader]'` (as `make handouts` does)")  # fmt: skip
    pages = []
    for assignment in chosen:
        student = _execute(release_path(assignment), allow_errors=True)
        _drop_errors(student)
        solution = _execute(source_path(assignment), allow_errors=False)
        for kind, nb in (("student", student), ("solution", solution)):
            text = _html(nb, f"{assignment} · {kind}")
            if kind == "student" and (found := leaks(assignment, _visible_text(text))):
                raise UserError(f"{assignment}: solution text in the student handout: {found[0]!r}")
            path = Path(out) / kind / f"{assignment}.html"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            pages.append(path)
    _print_pdfs(pages)
    return [p for html_path in pages for p in (html_path, html_path.with_suffix(".pdf"))]


def _execute(path: Path, allow_errors: bool) -> NotebookNode:
    """Run a notebook top to bottom in a fresh kernel, in a scratch copy of its folder."""
    from nbclient import NotebookClient

    nb: NotebookNode = nbformat.read(path, as_version=4)  # nbformat's readers: untyped
    with tempfile.TemporaryDirectory(prefix="handout-") as scratch:
        work = Path(scratch) / path.parent.name
        shutil.copytree(path.parent, work)
        # Unix sockets beside the connection file, an absolute path (the kernel runs in
        # `work`): a TCP port found free can be taken by another kernel before this one binds.
        sockets = {"transport": "ipc", "connection_file": f"{scratch}/kernel.json"}
        client = NotebookClient(
            nb, timeout=load().validate_timeout, kernel_name="python3", allow_errors=allow_errors,
            resources={"metadata": {"path": str(work)}}, config=Config({"KernelManager": sockets}),
        )  # fmt: skip
        client.execute()
    return nb


def _drop_errors(nb: NotebookNode) -> None:
    """Replace each error output by a note, so prose about a cell's output is not left hanging."""
    for cell in nb.cells:
        if cell.cell_type == "code" and any(o.output_type == "error" for o in cell.outputs):
            kept = [o for o in cell.outputs if o.output_type != "error"]
            note = nbformat.v4.new_output("stream", name="stdout", text=NEEDS_YOUR_CODE)
            cell.outputs = [*kept, note]


# TeX read as words, for the math's alt text (a screen reader reads "\\sum_j" as it is).
_TEX_WORDS = {
    r"\propto": " is proportional to ", r"\cdot": " times ", r"\times": " times ",
    r"\approx": " is about ", r"\leq": " is at most ", r"\le": " is at most ",
    r"\geq": " is at least ", r"\ge": " is at least ", r"\neq": " is not ", r"\in": " in ",
    r"\infty": " infinity ", r"\to": " to ", r"\top": " transposed ", r"\ldots": " dots ",
    r"\dots": " dots ", r"\exp": " exp ", r"\log": " log ", r"\max": " max ", "/": " divided by ",
    "=": " equals ", "+": " plus ", "-": " minus ", "<": " is less than ", ">": " is more than ",
}  # fmt: skip
_GREEK = re.compile(r"\\(alpha|beta|gamma|delta|epsilon|theta|lambda|mu|pi|sigma|tau|phi|omega)\b")


def math_text(tex: str) -> str:
    """TeX as words a screen reader reads: ``e^{x_i} / \\sum_j e^{x_j}`` is "e to the power x
    sub i divided by the sum over j of e to the power x sub j"."""
    group = r"(\{[^{}]*\}|\\?[A-Za-z0-9])"  # a {group} holding no other, or one symbol
    rules = [
        (r"\\(?:mathrm|text|operatorname|mathbf|mathit)\{([^{}]*)\}", r" \1 "),
        (r"\^(\{\\top\}|\\top|T\b)", " transposed "),
        (r"\\sum_" + group + r"\^" + group, r" the sum over \1 to \2 of "),
        (r"\\sum_" + group, r" the sum over \1 of "),
        (r"\\sqrt" + group, r" the square root of \1 "),
        (r"\\frac" + group + group, r" \1 over \2 "),
        (r"_" + group, r" sub \1 "),
        (r"\^" + group, r" to the power \1 "),
    ]
    text = _GREEK.sub(r" \1 ", tex)
    while True:  # innermost groups first, until nothing changes
        before = text
        for pattern, words in rules:
            text = re.sub(pattern, words, text)
        text = re.sub(r"(?<![\\a-z}_^])\{([^{}]*)\}", r" \1 ", text)  # a bare {group}
        if text == before:
            break
    for sign, words in _TEX_WORDS.items():
        text = text.replace(sign, words)
    text = text.replace("\\", " ").replace("{", " ").replace("}", " ")
    return " ".join(text.split()).replace(" )", ")").replace("( ", "(")


def _math_svg(tex: str, display: bool) -> str | None:
    """TeX drawn as an inline SVG by matplotlib's mathtext (None if it cannot parse it)."""
    from matplotlib import mathtext

    buf = io.BytesIO()
    try:
        mathtext.math_to_image(f"${tex}$", buf, dpi=100, format="svg")
    except (ValueError, RuntimeError):
        return None
    src = "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode()
    style = "display:block;margin:0.5em auto" if display else "vertical-align:-0.3em"
    alt = html.escape(math_text(tex))  # the TeX itself reads as its backslashes and braces
    return f'<img class="math" alt="{alt}" style="{style}" src="{src}">'


def _render_math(nb: NotebookNode) -> None:
    for cell in nb.cells:
        if cell.cell_type == "markdown" and "$" in cell.source:
            cell.source = MATH.sub(
                lambda m: _math_svg(m.group(2), m.group(1) == "$$") or m.group(0), cell.source
            )


def _widget_text(state: dict[str, Any], model_id: str) -> str:
    """What a widget last showed, as text: a box its children's, a progress bar its share
    done, a label its value (tqdm's bar: "training: 100% 400/400 [00:03<00:00, ...]")."""
    model = state.get(model_id, {}).get("state", {})
    if "children" in model:
        shown = (_widget_text(state, c.removeprefix("IPY_MODEL_")) for c in model["children"])
        return " ".join(s for s in shown if s)
    if "max" in model and "value" in model:
        return f"{model['value'] / model['max']:.0%}" if model["max"] else ""
    return html.unescape(re.sub(r"<[^>]*>", "", str(model.get("value", "")))).strip()


def _widgets_as_text(nb: NotebookNode) -> None:
    """Each widget output becomes its last text: a handout has no widget manager (it would
    come from a CDN), and offline the bar was an empty box that still took focus."""
    state = nb.metadata.pop("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            view = output.get("data", {}).pop(WIDGET_VIEW, None)
            if view is not None:
                text = _widget_text(state, view.get("model_id", ""))
                output.data["text/plain"] = text or output.data.get("text/plain", "")


def _html(nb: NotebookNode, title: str) -> str:
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    nb = nbformat.from_dict(nb)  # a copy: the math and widget rewrites are for the handout only
    _render_math(nb)
    _widgets_as_text(nb)
    nb.metadata["title"] = title
    exporter = HTMLExporter(
        template_name="lab", template_file="handout.html.j2",
        extra_loaders=[DictLoader({"handout.html.j2": TEMPLATE})],
    )  # fmt: skip
    body, _ = exporter.from_notebook_node(nb)
    return body


def _visible_text(page: str) -> str:
    """The text a reader of the HTML sees (scripts and styles removed)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    for tag in soup(["script", "style"]):
        tag.decompose()
    return soup.get_text()


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def secret_lines(assignment: str) -> list[str]:
    """Lines that must never reach a student: solution regions, written answers, hidden tests."""
    found = []
    for cell in nbformat.read(source_path(assignment), as_version=4).cells:
        if cell.cell_type == "markdown" and is_solution(cell):
            found += cell.source.splitlines()  # a written answer: all of it is the answer
            continue
        inside = False
        for line in cell.source.splitlines():
            marker = line.strip()
            if marker in ("### BEGIN SOLUTION", "### BEGIN HIDDEN TESTS"):
                inside = True
            elif marker in ("### END SOLUTION", "### END HIDDEN TESTS"):
                inside = False
            elif inside:
                found.append(line)
    return found


def shipped_text(assignment: str) -> str:
    """What students get anyway: the release notebook and the helper package's source."""
    release = nbformat.read(release_path(assignment), as_version=4)
    helpers = sorted((REPO_ROOT / "attnlib").rglob("*.py"))
    return "\n".join([c.source for c in release.cells] + [p.read_text() for p in helpers])


def leaks(assignment: str, student_text: str) -> list[str]:
    """Secret lines (see :func:`secret_lines`) that appear in ``student_text``.

    Spaces are ignored. Lines that students get anyway (:func:`shipped_text`, e.g. a demo
    printing a helper's source) and very short ones are not secrets, so not reported.
    """
    given = _squash(shipped_text(assignment))
    shown = _squash(student_text)
    return [
        line.strip() for line in secret_lines(assignment)
        if len(s := _squash(line)) >= MIN_LEAK and s not in given and s in shown
    ]  # fmt: skip


def _print_pdfs(pages: list[Path]) -> None:
    """Print each HTML file to a PDF next to it, with headless Chromium, offline."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="handout-chromium-") as profile:
        with sync_playwright() as pw:
            browser = pw.chromium.launch_persistent_context(
                profile, executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            browser.set_default_timeout(60_000)
            browser.route(
                re.compile(r"^(?!file:|data:)"), lambda route: route.abort()
            )  # no CDN scripts: the handout is self-contained
            page = browser.new_page()
            for path in pages:
                page.goto(path.resolve().as_uri(), wait_until="load")
                page.add_style_tag(content=PRINT_CSS)
                page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
                page.pdf(
                    path=str(path.with_suffix(".pdf")), format="A4", print_background=True,
                    margin={"top": "15mm", "bottom": "15mm", "left": "12mm", "right": "12mm"},
                    tagged=True, outline=True,  # a structure tree for screen readers; bookmarks
                )  # fmt: skip
            browser.close()
