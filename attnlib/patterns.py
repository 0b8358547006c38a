"""Reading attention patterns: template scores for the model card, and a grid of heatmaps.

A *template* is a 0/1 [T, T] matrix marking where a kind of head should look (one entry
per query row it applies to). ``template_score(A, P)`` is the share of attention that lands
on the template, averaged over the rows the template covers (TransformerLens' "mul"
score). The notebook's detectors are written by the learner; this module only serves the
model card and the plots.
"""

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Template = npt.NDArray[np.float64]


def offset_template(T: int, offset: int, rows: Iterable[int]) -> Template:
    """Template with a 1 at (t, t − offset) for every query row t in ``rows``."""
    P = np.zeros((T, T))
    index = np.asarray(list(rows))
    P[index, index - offset] = 1.0
    return P


def column_template(T: int, column: int, rows: Iterable[int]) -> Template:
    """Template with a 1 at (t, column) for every query row t in ``rows``."""
    P = np.zeros((T, T))
    P[np.asarray(list(rows)), column] = 1.0
    return P


def template_score(A: npt.ArrayLike, P: npt.ArrayLike) -> float:
    """Mean over the rows P covers of Σ_j A[t, j]·P[t, j] (A's rows sum to 1)."""
    a, p = np.asarray(A, dtype=float), np.asarray(P, dtype=float)
    covered = p.sum(axis=-1) > 0
    return float((a * p).sum(axis=-1)[..., covered].mean())


def repeat_templates(period: int) -> dict[str, Template]:
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


def attention_grid(
    weights: Sequence[npt.ArrayLike],
    titles: Sequence[Sequence[str]] | None = None,
    size: float = 2.4,
    suptitle: str | None = None,
    dpi: float = 72,
    tick_every: int = 5,
) -> "Figure":
    """Heatmaps of every layer (rows of the grid) and head (columns).

    ``weights``: a list over layers of ``[n_heads, T, T]`` arrays (one sequence).
    Rows of each map are queries, columns keys, both labelled by position every
    ``tick_every`` steps on the outer maps; the masked triangle is plain grey. The figure
    is drawn at ``dpi`` so that its PNG stays well under the grader's per-cell output cap
    (tests/test_plotting.py measures it). Returns the figure.
    """
    import matplotlib.pyplot as plt

    n_layers, n_heads = len(weights), np.asarray(weights[0]).shape[0]
    fig, axes = plt.subplots(
        n_layers,
        n_heads,
        figsize=(size * n_heads + 1, size * n_layers + 0.6),
        squeeze=False,
        sharex=True,
        sharey=True,
        dpi=dpi,
    )
    T = np.asarray(weights[0]).shape[-1]
    causal = np.triu(np.ones((T, T), dtype=bool), 1)
    for layer, layer_weights in enumerate(weights):
        for head in range(n_heads):
            ax = axes[layer, head]
            ax.set_facecolor("0.85")
            A = np.ma.masked_array(np.asarray(layer_weights, dtype=float)[head], causal)
            image = ax.imshow(A, cmap="viridis", vmin=0.0, vmax=1.0)
            ax.set_title(titles[layer][head] if titles else f"layer {layer}, head {head}")
        axes[layer, 0].set_ylabel("query position")
    for ax in axes[-1]:
        ax.set_xlabel("key position")
    axes[0, 0].set_xticks(range(0, T, tick_every))
    axes[0, 0].set_yticks(range(0, T, tick_every))
    fig.colorbar(image, ax=axes, fraction=0.02, pad=0.01, label="attention weight")
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def heads_table(heads: list[dict[str, Any]]) -> list[str]:
    """A model card's per-head scores (``heads``: dicts of layer, head and the four scores)
    as the lines of a Markdown table."""
    lines = [
        "| layer | head | self | previous | sink (BOS) | induction |",
        "|---|---|---|---|---|---|",
    ]
    for h in heads:
        lines.append(
            f"| {h['layer']} | {h['head']} | {h['self']:.3f} | {h['previous']:.3f} | "
            f"{h['sink']:.3f} | {h['induction']:.3f} |"
        )
    return lines
