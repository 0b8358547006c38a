"""The course's figures: colour-blind-safe style, masked cells drawn apart from zeros, and the
attention grid small enough for the grader's per-cell output cap."""

import base64
import io

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from attnlib import tasks  # noqa: E402
from attnlib.patterns import attention_grid  # noqa: E402
from attnlib.plotting import heatmap, training_curves  # noqa: E402
from attnlib.shipped import load_shipped  # noqa: E402
from grader.settings import GraderSettings  # noqa: E402

OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442"]


@pytest.fixture(autouse=True)
def course_style():
    with plt.style.context("attnlib.course"):
        yield
    plt.close("all")


def _inline_png_chars(fig) -> int:
    """What the notebook's inline backend sends for ``fig``: a base64 PNG, tight bbox."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=fig.dpi)
    return len(base64.b64encode(buf.getvalue()))


def test_the_course_style_uses_a_colour_blind_safe_palette():
    colours = [c.upper() for c in plt.rcParams["axes.prop_cycle"].by_key()["color"]]
    assert colours[: len(OKABE_ITO)] == OKABE_ITO


def test_the_attention_grid_of_notebook_08_fits_the_output_cap():
    tokens = tasks.repeat_twice(torch.Generator().manual_seed(7), 1, 10)[0]
    _, weights = load_shipped().attention(tokens)
    fig = attention_grid([w.numpy() for w in weights], suptitle="every layer and head")
    chars = _inline_png_chars(fig)
    cap = GraderSettings.max_output_chars.default_value
    assert chars < cap / 2, f"{chars} characters of PNG against a cap of {cap}"
    labels = [t.get_fontsize() for ax in fig.axes[:-1] for t in ax.get_xticklabels()]
    assert min(labels) >= 8, "tick labels too small to read"


def test_masked_cells_are_drawn_apart_from_zero_weights():
    A = np.array([[1.0, -np.inf], [0.0, 1.0]])
    ax = heatmap(A, cmap="Blues")
    (patch,) = ax.patches
    assert patch.get_hatch() and patch.get_zorder() < ax.images[0].get_zorder()
    assert np.ma.is_masked(ax.images[0].get_array()[0, 1])
    assert not np.ma.is_masked(ax.images[0].get_array()[1, 0])  # a real 0 is drawn as a 0
    assert not heatmap(np.eye(2)).patches  # nothing masked, nothing drawn behind


def test_training_curves_give_every_series_its_own_colour_on_either_axis():
    log = {"step": [0, 50], "loss on the second copy": [4, 1], "score a": [0, 1], "score b": [0, 0]}
    fig = training_curves(log, train_steps=[0, 1], train_loss=[4.2, 4.1])
    loss_ax, score_ax = fig.axes
    colours = [line.get_color() for ax in fig.axes for line in ax.lines[int(ax is loss_ax) :]]
    assert len(colours) == 3 and len(set(colours)) == 3
    assert colours == OKABE_ITO[:3]
    assert score_ax.get_ylim() == (0, 1)
    assert len(fig.legends[0].get_texts()) == 4


def test_the_live_training_plot_says_what_it_shows(monkeypatch):
    """The live plot (`train(..., live_plot=True)`) is shown and redrawn with its alt text."""
    import IPython.display

    from attnlib.train import _LivePlot

    shown = []

    class Handle:
        def update(self, data, metadata=None, raw=False):
            shown.append(data)

    def display(data, raw=False, display_id=False):
        shown.append(data)
        return Handle()

    monkeypatch.setattr(IPython.display, "display", display)
    plot = _LivePlot()
    history = {"step": [1, 2, 3], "loss": [4.0, 3.5, 3.0], "eval_step": [3], "score": [0.5]}
    plot.draw(history)
    assert "no step yet" in shown[0]["text/plain"]
    alt = shown[-1]["text/plain"]
    assert "3 steps" in alt and f'alt="{alt}"' in shown[-1]["text/html"]
    assert shown[-1]["image/png"]
