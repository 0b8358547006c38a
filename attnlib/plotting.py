"""Plots shared by the notebooks. Import matplotlib only when a plot is drawn.

Notebooks draw with the course's style, ``plt.style.use("attnlib.course")``
(``attnlib/course.mplstyle``): a colour-blind-safe palette (Okabe & Ito) for lines and bars,
and PNGs at twice the pixels they are displayed with (sharp at 200% zoom). Every figure is
shown by :func:`show`, with its alt text: what it shows and what to look for.
"""

import base64
import html
import io

import numpy as np

MIN_ALT_WORDS = 8  # fewer is a caption, not a description of what the figure shows

MASKED = dict(facecolor="0.8", edgecolor="0.55", hatch="///", linewidth=0)  # −∞ / NaN cells


def _drawn(fig, dpi):
    """``fig`` drawn at ``dpi`` as a Pillow image, cropped as the inline backend crops."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return Image.open(buf).convert("RGB")


def _png(image, dpi):
    """``image`` as base64 PNG of 256 of its own colours: a third of the characters, and it
    looks the same."""
    from PIL import Image

    buf = io.BytesIO()
    image.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        buf, format="png", optimize=True, dpi=(dpi, dpi)
    )
    return base64.b64encode(buf.getvalue()).decode("ascii")


def figure_bundle(fig, alt):
    """``(data, metadata)``: the display bundle of ``fig`` with its alt text ``alt``.

    JupyterLab and nbconvert's HTML (the handouts, and their tagged PDFs) both prefer
    ``text/html`` to ``image/png`` and neither reads an alt text from an output's metadata,
    so the figure is an ``<img alt=...>``, its PNG drawn at the style's ``savefig.dpi`` (twice
    the figure's dpi: sharp at 200% zoom) and displayed at the figure's own dpi. What keeps
    only PNG and text (the grader's pages) gets the PNG at the figure's dpi, and the alt text
    as ``text/plain``.
    """
    import matplotlib.pyplot as plt

    alt = " ".join(str(alt or "").split())
    if len(alt.split()) < MIN_ALT_WORDS:
        raise ValueError(
            f"alt text of {len(alt.split())} words: say in at least {MIN_ALT_WORDS} what the "
            "figure shows and what to look for"
        )
    dpi = plt.rcParams["savefig.dpi"]
    dpi = fig.dpi if dpi == "figure" else float(dpi)
    sharp, plain = (_drawn(fig, d) for d in (dpi, fig.dpi))
    width, height = (round(n * fig.dpi / dpi) for n in sharp.size)
    img = (
        f'<img alt="{html.escape(alt)}" width="{width}" height="{height}" '
        f'src="data:image/png;base64,{_png(sharp, dpi)}">'
    )
    data = {"image/png": _png(plain, fig.dpi), "text/html": img, "text/plain": alt}
    return data, {"image/png": {"width": width, "height": height}}


def show(fig, alt):
    """Show ``fig`` with its alt text ``alt`` (what it shows and what to look for; at least
    ``MIN_ALT_WORDS`` words), then close it: the notebook's ``plt.show()``."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    data, metadata = figure_bundle(fig, alt)
    plt.close(fig)
    display(data, metadata=metadata, raw=True)


def heatmap(
    A,
    tokens=None,
    keys=None,
    ax=None,
    title=None,
    cmap="viridis",
    vmin=0.0,
    vmax=None,
    annotate=False,
    hatch=True,
    label=None,
):
    """Draw a score or attention matrix: rows are queries (y), columns keys (x).

    ``tokens`` labels both axes (self-attention); ``keys`` labels the columns when
    they differ. Masked (−∞ or NaN) entries are drawn hatched grey (plain grey with
    ``hatch=False``, which keeps a big figure's PNG small), so they never look like a weight
    of 0. ``label`` names the colour bar (what the colours are: "score", "weight").
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    A = np.asarray(A, dtype=float)
    shown = np.ma.masked_invalid(np.where(np.isneginf(A), np.nan, A))
    if ax is None:
        size = min(8.0, 2.0 + 0.35 * A.shape[1])
        _, ax = plt.subplots(figsize=(size, size * A.shape[0] / A.shape[1]))
    if np.ma.is_masked(shown):  # masked cells are transparent: the patch shows through
        style = MASKED if hatch else {**MASKED, "hatch": None}
        ax.add_patch(Rectangle((-0.5, -0.5), A.shape[1], A.shape[0], zorder=-1, **style))
    image = ax.imshow(shown, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xlabel("key (position looked at)")
    ax.set_ylabel("query (position looking)")
    col_labels = keys if keys is not None else tokens
    if col_labels is not None:
        ax.set_xticks(range(len(col_labels)), col_labels, rotation=90)
    if tokens is not None:
        ax.set_yticks(range(len(tokens)), tokens)
    if annotate:
        for (i, j), value in np.ndenumerate(A):
            if np.isfinite(value):
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8, color="w")
    if title:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label=label)
    return ax


def training_curves(
    logged, train_steps=None, train_loss=None, fig=None, title=None, references=None
):
    """The loss (left axis) and the 0–1 scores (right axis) logged while training.

    ``logged``: ``{"step": [...], name: [...], ...}``, one value per logged step; names with
    "loss" in them go on the left axis. ``train_steps``/``train_loss``, the loss of every
    training batch, are drawn thin and grey behind. Each series keeps one colour of the
    course palette whichever axis it is on, so the live plot during training and a plot of
    the model card's log look the same. ``references``: ``{series name: (value, label)}``, a
    dashed level line in that series' colour and on its axis (the value a baseline would
    score). Returns the figure.
    """
    import matplotlib.pyplot as plt

    if fig is None:
        fig = plt.figure(figsize=(7, 3.4))  # its PNG stays well under the output cap
    fig.clear()
    ax = fig.add_subplot()
    ax2 = ax.twinx()
    if train_loss:
        ax.plot(train_steps, train_loss, color="0.75", lw=0.8, label="training loss (batch)")
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    names = [k for k in logged if k != "step" and len(logged[k])]
    for colour, name in zip(colours, names, strict=False):
        side, where = (ax, "left") if "loss" in name else (ax2, "right")
        steps = list(logged["step"])[: len(logged[name])]
        side.plot(steps, logged[name], color=colour, marker=".", label=f"{name} ({where})")
        if name in (references or {}):
            value, label = references[name]
            side.axhline(value, color=colour, ls="--", lw=1, label=f"{label} ({where})")
    ax.set(xlabel="training step", ylabel="loss (nats)")
    ax2.set(ylabel="score", ylim=(0, 1))
    if title:
        ax.set_title(title)
    handles = [h for a in (ax, ax2) for h in a.get_legend_handles_labels()[0]]
    fig.legend(handles=handles, loc="upper center", ncols=2, bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout()
    return fig


def decimal_log_ticks(ax, xticks):
    """Log axes labelled in plain numbers: ``xticks`` on x, 0.1, 0.2, 0.5, 1 … on y (a
    learner reads 0.5 ms more easily than 5 × 10⁻¹)."""
    from matplotlib import ticker

    ax.set_xticks(xticks, [f"{x:g}" for x in xticks])
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())
