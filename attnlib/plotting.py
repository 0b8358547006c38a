"""Plots shared by the notebooks. Import matplotlib only when a plot is drawn."""

import numpy as np


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
):
    """Draw a score or attention matrix: rows are queries (y), columns keys (x).

    ``tokens`` labels both axes (self-attention); ``keys`` labels the columns when
    they differ. Masked (−∞ or NaN) entries are left blank.
    """
    import matplotlib.pyplot as plt

    A = np.asarray(A, dtype=float)
    shown = np.ma.masked_invalid(np.where(np.isneginf(A), np.nan, A))
    if ax is None:
        size = min(8.0, 2.0 + 0.35 * A.shape[1])
        _, ax = plt.subplots(figsize=(size, size * A.shape[0] / A.shape[1]))
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
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax
