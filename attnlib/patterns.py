"""Reading attention patterns: template scores for the model card, and a grid of heatmaps.

A *template* is a 0/1 [T, T] matrix marking where a kind of head should look (one entry
per query row it applies to). ``template_score(A, P)`` is the share of attention that lands
on the template, averaged over the rows the template covers (TransformerLens' "mul"
score). The notebook's detectors are written by the learner; this module only serves the
model card and the plots.
"""

import numpy as np


def offset_template(T, offset, rows):
    """Template with a 1 at (t, t − offset) for every query row t in ``rows``."""
    P = np.zeros((T, T))
    rows = np.asarray(list(rows))
    P[rows, rows - offset] = 1.0
    return P


def column_template(T, column, rows):
    """Template with a 1 at (t, column) for every query row t in ``rows``."""
    P = np.zeros((T, T))
    P[np.asarray(list(rows)), column] = 1.0
    return P


def template_score(A, P):
    """Mean over the rows P covers of Σ_j A[t, j]·P[t, j] (A's rows sum to 1)."""
    A, P = np.asarray(A, dtype=float), np.asarray(P, dtype=float)
    covered = P.sum(axis=-1) > 0
    return float((A * P).sum(axis=-1)[..., covered].mean())


def repeat_templates(period):
    """The four templates on ``[BOS] + r + r`` with ``len(r) = period``."""
    T = 2 * period + 1
    after_bos = range(1, T)
    second_copy = range(period + 1, 2 * period + 1)
    return {
        "self": offset_template(T, 0, after_bos),
        "previous": offset_template(T, 1, after_bos),
        "sink": column_template(T, 0, after_bos),
        "induction": offset_template(T, period - 1, second_copy),
    }


def attention_grid(weights, tokens=None, titles=None, size=2.6, suptitle=None):
    """Heatmaps of every layer (rows of the grid) and head (columns).

    ``weights``: a list over layers of ``[n_heads, T, T]`` arrays (one sequence).
    Rows of each map are queries, columns keys. Returns the figure.
    """
    import matplotlib.pyplot as plt

    from attnlib.plotting import heatmap

    n_layers, n_heads = len(weights), np.asarray(weights[0]).shape[0]
    fig, axes = plt.subplots(
        n_layers, n_heads, figsize=(size * n_heads + 1, size * n_layers + 0.4), squeeze=False
    )
    T = np.asarray(weights[0]).shape[-1]
    causal = np.triu(np.ones((T, T), dtype=bool), 1)
    for layer, layer_weights in enumerate(weights):
        for head in range(n_heads):
            ax = axes[layer, head]
            A = np.where(causal, np.nan, np.asarray(layer_weights[head], dtype=float))
            heatmap(A, tokens=tokens, ax=ax, vmax=1.0)
            ax.images[-1].colorbar.remove()
            title = titles[layer][head] if titles else f"layer {layer}, head {head}"
            ax.set_title(title, fontsize=9)
            ax.tick_params(labelsize=5)
            if head:
                ax.set_ylabel("")
            if layer < n_layers - 1:
                ax.set_xlabel("")
    fig.colorbar(axes[0, 0].images[-1], ax=axes, fraction=0.02, pad=0.01, label="attention weight")
    if suptitle:
        fig.suptitle(suptitle)
    return fig
