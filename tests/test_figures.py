"""Figures a learner can read (issue 47): every figure of the executed solutions is at least
100 dpi, its smallest text is at least 8 pt at the size it is displayed, no two tick labels of
an axis collide, and it has a title (what to look for).

No other fixture runs the solutions' demo cells (grading and Validate leave them out), so the
``figures`` fixture runs each solution notebook once in a kernel, three at a time (leaving
out the demo cells that draw nothing saves about a tenth: not worth it). A figure's pixel size and
dpi are read from its PNG output (the header and the pHYs chunk matplotlib writes); its fonts,
tick labels and title from the figure itself, by a cell run after each drawing cell (the
inline backend is told to keep figures open until then).
"""

import base64
import io
import json
import struct
from contextlib import redirect_stdout

import nbformat
import pytest
from fixtures.validate import UNIX_SOCKET_KERNELS, in_processes
from nbformat.v4 import new_code_cell
from test_handouts import PLOTTING

from grader.course import assignments, source_path

MIN_DPI = 100
MIN_POINTS = 8.0
# A PNG wider than the notebook's column is shrunk to fit it: its text with it.
COLUMN_PX = 1000
CSS_DPI = 96  # a browser shows a PNG pixel as a CSS pixel, 96 to the inch
MEASURED = "FIGURES:"
MEASURE = f"""
import json as _json

import matplotlib.pyplot as _plt
from matplotlib.text import Text as _Text


def _collisions(fig):
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
            boxes = [t.get_window_extent(renderer) for t in labels]
            found += [
                f"{{a.get_text()!r}} and {{b.get_text()!r}}"
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
    return {{
        "points": min((t.get_fontsize() for t in texts), default=None),
        "smallest": min(texts, key=lambda t: t.get_fontsize()).get_text()[:30] if texts else "",
        "collisions": _collisions(fig),
        "title": next((t for t in titles if t.strip()), ""),
    }}


print({MEASURED!r} + _json.dumps([_measure(_plt.figure(n)) for n in _plt.get_fignums()]))
_plt.close("all")
"""


def _png(data: str) -> tuple[int, int, float | None]:
    """(width, height, dpi) of a PNG: the IHDR header, and the pHYs chunk if there is one."""
    raw = base64.b64decode(data)
    width, height = struct.unpack(">II", raw[16:24])
    at = raw.find(b"pHYs")
    if at < 0:
        return width, height, None
    per_metre, _, unit = struct.unpack(">IIB", raw[at + 4 : at + 13])
    return width, height, per_metre * 0.0254 if unit == 1 else None


def execute(assignment: str) -> list[dict]:
    """One record per figure of ``assignment``'s solution: its cell, PNG size and dpi, and
    what the measuring cell found (a module function: ``in_processes`` sends it on)."""
    from nbclient import NotebookClient

    path = source_path(assignment)
    nb = nbformat.read(path, as_version=4)
    cells = [new_code_cell("%config InlineBackend.close_figures = False")]
    where = []
    for i in (i for i, c in enumerate(nb.cells) if c.cell_type == "code"):
        cells += [nb.cells[i], new_code_cell(MEASURE)]  # a figure drawn by a helper too
        where += [i, i]
    run = nbformat.v4.new_notebook(cells=cells, metadata=nb.metadata)
    client = NotebookClient(
        run, timeout=600, kernel_name="python3", config=UNIX_SOCKET_KERNELS,
        resources={"metadata": {"path": str(path.parent)}},
    )  # fmt: skip
    client.execute()
    records, pngs = [], []
    for cell, i in zip(run.cells[1:], where, strict=True):
        pngs += [
            _png(out.data["image/png"])
            for out in cell.outputs
            if out.output_type == "display_data" and "image/png" in out.get("data", {})
        ]
        text = "".join(o.text for o in cell.outputs if o.get("name") == "stdout")
        if text.startswith(MEASURED):  # the measuring cell: the figures drawn since the last
            measured = json.loads(text.removeprefix(MEASURED))
            for (width, height, dpi), found in zip(pngs, measured, strict=False):
                records.append(
                    {"notebook": assignment, "cell": i, "width": width, "height": height,
                     "dpi": dpi, **found}
                )  # fmt: skip
            pngs = []
    return records


@pytest.fixture(scope="module")
def figures() -> list[dict]:
    """Every figure of the executed solutions (each notebook run once)."""
    chosen = assignments()
    return [r for records in in_processes(execute, chosen) for r in records]


def _name(r: dict) -> str:
    return f"{r['notebook']} [{r['cell']}] {r['title'][:40]!r}"


def _displayed_points(r: dict) -> float:
    shrink = min(1.0, COLUMN_PX / r["width"])
    return r["points"] * (r["dpi"] or 72) / CSS_DPI * shrink


def test_every_notebook_that_plots_has_its_figures_measured(figures):
    plots = {
        a
        for a in assignments()
        if any(PLOTTING.search(c.source) for c in nbformat.read(source_path(a), 4).cells)
    }
    assert {r["notebook"] for r in figures} == plots


def test_figures_are_at_least_100_dpi(figures):
    low = [f"{_name(r)}: {r['dpi']}" for r in figures if (r["dpi"] or 0) < MIN_DPI - 0.5]
    assert not low, "figures under 100 dpi:\n" + "\n".join(low)


def test_figure_text_is_at_least_8_points_as_displayed(figures):
    small = [
        f"{_name(r)}: {r['smallest']!r} {_displayed_points(r):.1f} pt ({r['width']} px wide)"
        for r in figures
        if r["points"] is not None and _displayed_points(r) < MIN_POINTS - 0.05
    ]
    assert not small, "text under 8 pt:\n" + "\n".join(small)


def test_tick_labels_do_not_collide(figures):
    collide = [f"{_name(r)}: {c}" for r in figures for c in r["collisions"][:2]]
    assert not collide, "tick labels that collide:\n" + "\n".join(collide)


def test_every_figure_has_a_title(figures):
    untitled = [_name(r) for r in figures if len(r["title"].split()) < 3]
    assert not untitled, "figures without a title that says what to look for:\n" + "\n".join(
        untitled
    )


def test_the_measuring_cell_and_the_png_reader_see_what_a_learner_sees():
    """Cheap, no kernel: a crowded axis collides, small text is found, dpi read from pHYs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")  # the measuring cell reads every open figure: other tests' too
    fig, ax = plt.subplots(figsize=(2, 2), dpi=80)
    ax.set_xticks(range(20), [f"label {i}" for i in range(20)])
    ax.set_title("crowded labels here", fontsize=6)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi)
    assert _png(base64.b64encode(buf.getvalue()).decode()) == (160, 160, pytest.approx(80, 0.01))
    out = io.StringIO()
    with redirect_stdout(out):
        exec(MEASURE, {})
    (found,) = json.loads(out.getvalue().removeprefix(MEASURED))
    assert found["points"] == 6 and found["title"] == "crowded labels here"
    assert "'label 0' and 'label 1'" in found["collisions"]
