"""Figures a learner can read (issues 47 and 49): every figure of the executed solutions says
what it shows (alt text, shown by attnlib.plotting.show), is at least 100 dpi as displayed and
twice that in its PNG (sharp at 200% zoom), its smallest text is at least 8 pt as displayed and
6 pt printed, no two tick labels of an axis collide, and it has a title (what to look for).

No other fixture runs the solutions' demo cells (grading and Validate leave them out), so the
``executed`` fixture runs each solution notebook once in a kernel, three at a time (leaving
out the demo cells that draw nothing saves about a tenth: not worth it). A figure's pixels and
dpi are read from the PNG its output shows (the header and the pHYs chunk), its displayed size
and alt text from the output; its fonts, tick labels and title from the figure itself, measured
as attnlib.plotting.figure_bundle draws it (wrapped by a cell run first). The same runs give
every notebook's solution handout, which axe checks offline and `make handouts` prints to a
tagged PDF.
"""

import base64
import html
import io
import json
import re
import struct
import subprocess

import nbformat
import pytest
from accessibility import violations
from fixtures.validate import UNIX_SOCKET_KERNELS, in_processes
from nbformat.v4 import new_code_cell
from test_handouts import PDF_FIGURE, PLOTTING, _pdf_text

from attnlib.plotting import MIN_ALT_WORDS
from grader.commands.handouts import CHROMIUM, CHROMIUM_ARGS, _html, _print_pdfs
from grader.course import assignments, source_path
from grader.settings import GraderSettings

MIN_DPI = 100
MIN_POINTS = 8.0
MIN_PRINTED_POINTS = 6.0
SHARPNESS = 2  # PNG pixels per displayed pixel: sharp at 200% zoom
# A PNG wider than the notebook's column is shrunk to fit it: its text with it.
COLUMN_PX = 1000
# The handout's printed column (tests/test_handouts.py measures it): A4 less the margins and
# the output prompt, in CSS pixels, 96 to the inch and 72 points to the inch.
PRINT_COLUMN_PX = 573
CSS_DPI = 96  # a browser shows a PNG pixel as a CSS pixel, 96 to the inch
# Said of a figure that says nothing (nbconvert's own placeholder among them).
PLACEHOLDERS = re.compile(r"no description|lorem ipsum|alt text|\b(todo|tbd|fixme|xxx)\b", re.I)
# Run before the notebook: every figure attnlib.plotting.figure_bundle shows (show and the
# live training plot both use it) carries what this measures in its output's metadata.
MEASURE = """
import attnlib.plotting as _plotting
from matplotlib.text import Text as _Text


def _collisions(fig):
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
            boxes = [t.get_window_extent(renderer) for t in labels]
            found += [
                f"{a.get_text()!r} and {b.get_text()!r}"
                for (a, box_a), (b, box_b) in zip(
                    zip(labels, boxes), list(zip(labels, boxes))[1:]
                )
                if box_a.overlaps(box_b)
            ]
    return found


def _measure(fig):
    fig.canvas.draw()
    texts = [
        t for t in fig.findobj(_Text) if t.get_visible() and t.get_text().strip()
    ]
    titles = [fig._suptitle.get_text() if fig._suptitle else ""]
    titles += [ax.get_title() for ax in fig.axes]
    return {
        "fig_dpi": fig.dpi,
        "points": min((t.get_fontsize() for t in texts), default=None),
        "smallest": min(texts, key=lambda t: t.get_fontsize()).get_text()[:30] if texts else "",
        "collisions": _collisions(fig),
        "title": next((t for t in titles if t.strip()), ""),
    }


def _measured_bundle(fig, alt, _bundle=_plotting.figure_bundle):
    data, metadata = _bundle(fig, alt)
    return data, {**metadata, "measured": _measure(fig)}


_plotting.figure_bundle = _measured_bundle
"""
ALT = re.compile(r'<img\b[^>]*\balt="([^"]*)"')
SRC = re.compile(r'<img\b[^>]*\bsrc="data:image/png;base64,([^"]*)"')


def _png(data: str) -> tuple[int, int, float | None]:
    """(width, height, dpi) of a PNG: the IHDR header, and the pHYs chunk if there is one."""
    raw = base64.b64decode(data)
    width, height = struct.unpack(">II", raw[16:24])
    at = raw.find(b"pHYs")
    if at < 0:
        return width, height, None
    per_metre, _, unit = struct.unpack(">IIB", raw[at + 4 : at + 13])
    return width, height, per_metre * 0.0254 if unit == 1 else None


def figure_record(output: dict) -> dict:
    """What a learner gets of one figure output: its PNG's pixels and dpi, the size it is
    displayed at, its alt text (the ``<img>``'s, and ``text/plain``'s), the characters the
    output sends, and what the measuring code found (empty if it never saw the figure)."""
    data, metadata = output["data"], output.get("metadata", {})
    sharp = SRC.search(data.get("text/html", ""))  # the <img> a reader sees, else the PNG
    width, height, dpi = _png(sharp.group(1) if sharp else data["image/png"])
    shown = metadata.get("image/png", {})
    alt = ALT.search(data.get("text/html", ""))
    return {
        "width": width, "height": height, "dpi": dpi,
        "shown_width": shown.get("width", width), "shown_height": shown.get("height", height),
        "alt": html.unescape(alt.group(1)) if alt else None, "text": data.get("text/plain", ""),
        "chars": len(json.dumps(data)), "png_chars": len(sharp.group(1)) if sharp else 0,
        **metadata.get("measured", {"points": None, "title": "", "collisions": []}),
    }  # fmt: skip


def execute(assignment: str) -> tuple[list[dict], str]:
    """One record per figure of ``assignment``'s solution (:func:`figure_record`), with its
    notebook and cell, and the solution's HTML handout of this run (a module function:
    ``in_processes`` sends it on)."""
    from nbclient import NotebookClient

    path = source_path(assignment)
    nb = nbformat.read(path, as_version=4)
    run = nbformat.v4.new_notebook(cells=[new_code_cell(MEASURE), *nb.cells], metadata=nb.metadata)
    client = NotebookClient(
        run, timeout=600, kernel_name="python3", config=UNIX_SOCKET_KERNELS,
        resources={"metadata": {"path": str(path.parent)}},
    )  # fmt: skip
    client.execute()
    records = [
        {
            "notebook": assignment,
            "cell": i,
            "demo": cell.metadata.get("attn", {}).get("demo"),
            **figure_record(out),
        }  # fmt: skip
        for i, cell in enumerate(run.cells[1:])
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type in ("display_data", "execute_result") and "image/png" in out.data
    ]
    run.cells = run.cells[1:]  # the handout shows the notebook's own cells
    return records, _html(run, f"{assignment} · solution")


@pytest.fixture(scope="module")
def executed() -> dict[str, tuple[list[dict], str]]:
    """Each solution run once: its figures' records and its HTML handout."""
    chosen = assignments()
    return dict(zip(chosen, in_processes(execute, chosen), strict=True))


@pytest.fixture(scope="module")
def figures(executed) -> list[dict]:
    """Every figure of the executed solutions."""
    return [r for records, _ in executed.values() for r in records]


def _name(r: dict) -> str:
    return f"{r['notebook']} [{r['cell']}] {r['title'][:40]!r}"


def _shown_dpi(r: dict) -> float:
    """Dots per inch as displayed: the PNG's own, over its pixels per displayed pixel."""
    return (r["dpi"] or 72) * r["shown_width"] / r["width"]


def _points(r: dict, column_px: int) -> float:
    """The smallest text's size in points on a column ``column_px`` CSS pixels wide."""
    shrink = min(1.0, column_px / r["shown_width"])
    return r["points"] * _shown_dpi(r) / CSS_DPI * shrink


def test_every_notebook_that_plots_has_its_figures_measured(figures):
    plots = {
        a
        for a in assignments()
        if any(PLOTTING.search(c.source) for c in nbformat.read(source_path(a), 4).cells)
    }
    assert {r["notebook"] for r in figures} == plots


def test_every_figure_says_what_it_shows(figures):
    """An ``<img>`` with an alt text (JupyterLab and the handouts show ``text/html``), the same
    as ``text/plain``: a description of some words, not a placeholder or the title again."""
    bad = []
    for r in figures:
        alt = r["alt"] or ""
        if r["alt"] is None:
            bad.append(f"{_name(r)}: no alt text (show it with attnlib.plotting.show)")
        elif len(alt.split()) < MIN_ALT_WORDS or PLACEHOLDERS.search(alt):
            bad.append(f"{_name(r)}: a placeholder, not a description: {alt!r}")
        elif alt.strip().lower() == r["title"].strip().lower():
            bad.append(f"{_name(r)}: the alt text only repeats the title")
        elif alt != r["text"]:
            bad.append(f"{_name(r)}: text/plain is not the alt text: {r['text'][:60]!r}")
    assert not bad, "figures that do not say what they show:\n" + "\n".join(bad)


def test_figures_are_at_least_100_dpi(figures):
    low = [f"{_name(r)}: {_shown_dpi(r):.0f}" for r in figures if _shown_dpi(r) < MIN_DPI - 0.5]
    assert not low, "figures under 100 dpi as displayed:\n" + "\n".join(low)


def test_figures_are_sharp_at_200_percent(figures):
    """Twice the pixels they are displayed with: a 200% zoom shows every pixel of the PNG."""
    blurred = [
        f"{_name(r)}: {r['width']} px shown at {r['shown_width']}"
        for r in figures
        if r["width"] < SHARPNESS * r["shown_width"] - 1
    ]
    assert not blurred, "figures that blur at 200%:\n" + "\n".join(blurred)


def test_figures_fit_the_grader_s_output_cap(figures):
    """A figure's sharp PNG under a cell's output cap; the whole output (that PNG in its <img>,
    the PNG at the figure's dpi, the alt text) well under it where grading runs the cell
    (demo cells are left out)."""
    cap = GraderSettings.max_output_chars.default_value
    big = [f"{_name(r)}: a PNG of {r['png_chars']}" for r in figures if r["png_chars"] > cap]
    big += [
        f"{_name(r)}: {r['chars']} in all, in a graded cell"
        for r in figures
        if not r["demo"] and r["chars"] > 0.8 * cap
    ]
    assert not big, f"figures too big for the output cap of {cap}:\n" + "\n".join(big)


def test_figure_text_is_at_least_8_points_as_displayed(figures):
    small = [
        f"{_name(r)}: {r['smallest']!r} {_points(r, COLUMN_PX):.1f} pt ({r['shown_width']} px)"
        for r in figures
        if r["points"] is not None and _points(r, COLUMN_PX) < MIN_POINTS - 0.05
    ]
    assert not small, "text under 8 pt:\n" + "\n".join(small)


def test_figure_text_is_at_least_6_points_printed(figures):
    """In the PDF handouts: a figure wider than the printed column is shrunk to fit it."""
    small = [
        f"{_name(r)}: {r['smallest']!r} {_points(r, PRINT_COLUMN_PX):.1f} pt "
        f"({r['shown_width']} px)"
        for r in figures
        if r["points"] is not None and _points(r, PRINT_COLUMN_PX) < MIN_PRINTED_POINTS - 0.05
    ]
    assert not small, "text printed under 6 pt:\n" + "\n".join(small)


def test_tick_labels_do_not_collide(figures):
    collide = [f"{_name(r)}: {c}" for r in figures for c in r["collisions"][:2]]
    assert not collide, "tick labels that collide:\n" + "\n".join(collide)


def test_every_figure_has_a_title(figures):
    untitled = [_name(r) for r in figures if len(r["title"].split()) < 3]
    assert not untitled, "figures without a title that says what to look for:\n" + "\n".join(
        untitled
    )


def test_every_solution_handout_has_no_wcag_violation_offline(executed, tmp_path):
    """axe over the HTML handout of every notebook (07, 08 and 10's explorers drawn), offline:
    the solution handouts `make handouts` writes, rendered from these runs (its student pages,
    the release's cells in the same template, are checked in tests/test_handouts.py and, 07's,
    in tests/test_browser.py)."""
    from playwright.sync_api import sync_playwright

    found, failed, explorers = {}, [], {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.route(re.compile(r"^(?!file:|data:)"), lambda route: route.abort())
        page.on("requestfailed", lambda request: failed.append(request.url))
        for assignment, (_, text) in executed.items():
            assert "No description has been provided" not in text, assignment
            path = tmp_path / f"{assignment}.html"
            path.write_text(text, encoding="utf-8")
            page.goto(path.as_uri(), wait_until="load")
            explorers[assignment] = page.locator(".attn-explorer").count()
            if explorers[assignment]:
                page.locator(".attn-explorer[data-drawn]").nth(explorers[assignment] - 1).wait_for()
            found[assignment] = violations(page)
        browser.close()
    assert all(explorers[a] for a in ("07_positions", "08_attention_maps", "10_real_text"))
    assert not failed, f"requests a handout made offline: {sorted(set(failed))}"
    assert not any(found.values()), "\n".join(f"{a}: {v}" for a, vs in found.items() for v in vs)


def test_every_solution_handout_prints_as_a_tagged_pdf_with_its_figures_alt_text(
    executed, tmp_path
):
    """`make handouts`' printing (grader.commands.handouts._print_pdfs) of every notebook's
    page: `pdfinfo` says Tagged: yes, and every figure of the PDF has its alt text."""
    pages = []
    for assignment, (_, text) in executed.items():
        pages.append(tmp_path / f"{assignment}.html")
        pages[-1].write_text(text, encoding="utf-8")
    _print_pdfs(pages)
    untagged, lost = [], []
    for page in pages:
        pdf = page.with_suffix(".pdf")
        info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True)
        if not re.search(r"^Tagged:\s+yes$", info.stdout, re.M):
            untagged.append(pdf.name)
        alts = {alt for alt in ALT.findall(page.read_text())}
        tagged = {_pdf_text(*m) for m in PDF_FIGURE.findall(pdf.read_bytes())}
        lost += [f"{pdf.name}: {alt[:50]!r}" for alt in alts if html.unescape(alt) not in tagged]
    assert not untagged, f"untagged PDFs: {untagged}"
    assert not lost, "figures printed without their alt text:\n" + "\n".join(lost)


def test_the_measuring_code_and_the_png_reader_see_what_a_learner_sees():
    """Cheap, no kernel: a crowded axis collides, small text is found, the PNG has twice the
    pixels it is shown with, the alt text is read from the <img>; a figure the inline backend
    shows (no attnlib.plotting.show) has none, and show refuses an alt text of a few words."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import attnlib.plotting

    shown = attnlib.plotting.figure_bundle
    try:
        exec(MEASURE, {})  # wraps attnlib.plotting.figure_bundle, as in the notebooks' kernels
        with plt.style.context("attnlib.course"):
            fig, ax = plt.subplots(figsize=(2, 2), dpi=80)
            ax.set_xticks(range(20), [f"label {i}" for i in range(20)])
            ax.set_title("crowded labels here", fontsize=6)
            alt = "A crowded axis: <twenty> labels & a title, under & over each other."
            data, metadata = attnlib.plotting.figure_bundle(fig, alt)
            with pytest.raises(ValueError, match="say in at least"):
                attnlib.plotting.figure_bundle(fig, "a plot")
    finally:
        attnlib.plotting.figure_bundle = shown
    found = figure_record({"data": data, "metadata": metadata})
    assert found["alt"] == found["text"] == alt
    assert found["points"] == 6 and found["title"] == "crowded labels here"
    assert "'label 0' and 'label 1'" in found["collisions"]
    assert found["width"] >= 2 * found["shown_width"] - 1 and found["shown_width"] > 100
    assert _shown_dpi(found) == pytest.approx(80, 0.01), "shown at the figure's own dpi"
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi)
    inline = {"data": {"image/png": base64.b64encode(buf.getvalue()).decode()}, "metadata": {}}
    bare = figure_record(inline)
    assert (bare["width"], bare["height"], bare["dpi"]) == (160, 160, pytest.approx(80, 0.01))
    assert bare["alt"] is None and bare["points"] is None
    plt.close(fig)
