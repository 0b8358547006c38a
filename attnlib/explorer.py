"""Attention maps a learner can explore: point at a token, see where it looks.

``explore(model, tokens)`` (or ``explore_text(model)`` for the real-text model) returns an
:class:`Explorer`. Displayed in a notebook it is one self-contained HTML output, its script
and data inline (``explorer.js``, ``explorer.css``): a layer x head grid of the model's maps
and the text itself, each token shaded by the weight the query token puts on it, for one
head or all heads of a layer, with the heads' scores beside it. Pointing at a token makes it
the query. The keyboard does all the mouse does (arrow keys, Home/End, Enter, Escape), and a
screen reader reads each map's name and scores, each token's weight and, as the view
changes, the query's most weighted keys (a live region). It needs no kernel and no network,
so it works in JupyterLab and in the HTML handouts alike; a PDF prints its first view.
``Explorer.figure()`` draws the static figure.

The weights travel exactly: float32, each head's lower triangle (the causal mask zeroes the
rest), base64. The scores are :func:`attnlib.patterns.template_score` on
:func:`text_templates`. A text other than the shipped ones needs a kernel: pass it to
:func:`explore_text` and run the cell again.
"""

import base64
import html
import json
import math
from dataclasses import dataclass
from importlib.resources import files
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from attnlib.model import TinyTransformer
from attnlib.patterns import Template, column_template, offset_template, template_score
from attnlib.train import torch_threads

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from matplotlib.figure import Figure
    from torch import Tensor

Scores = dict[str, float | None]  # a head's score for each kind

KINDS = ("self", "previous", "sink", "induction")
OWN_TEXT_CHARS = 56  # a typed text's longest: its maps must fit the grader's output cap
STRETCH_CHARS = 32  # each held-out stretch; three of them fit the cap too
FALLBACK = "(Run this cell to explore the maps: the explorer draws itself when the cell runs.)"


def text_templates(tokens: "npt.ArrayLike | Tensor") -> dict[str, Template]:
    """The four templates of one sequence (``tokens [T]``, BOS first), as 0/1 ``[T, T]``.

    Self, previous token and sink (BOS) cover every query after BOS, as
    :func:`attnlib.patterns.repeat_templates` does. Induction marks, in each query's row, the
    token after every earlier copy of the query's token; on ``[BOS] + r + r`` with no token
    repeated inside ``r`` it is ``repeat_templates``' induction template.
    """
    ids = np.asarray(tokens)
    T = len(ids)
    induction = np.zeros((T, T))
    for t in range(1, T):
        induction[t, np.flatnonzero(ids[:t] == ids[t]) + 1] = 1.0
    after_bos = range(1, T)
    return {
        "self": offset_template(T, 0, after_bos),
        "previous": offset_template(T, 1, after_bos),
        "sink": column_template(T, 0, after_bos),
        "induction": induction,
    }


def head_scores(A: npt.ArrayLike, templates: dict[str, Template]) -> Scores:
    """``{kind: template_score(A, P)}``; None where the template covers no query."""
    return {k: template_score(A, P) if P.any() else None for k, P in templates.items()}


@dataclass(frozen=True)
class Text:
    """One text's maps: ``weights [n_layers, n_heads, T, T]`` (float32, as the model gave
    them), a label per token, ``scores[layer][head][kind]``; ``chars``: the tokens are
    characters, shown as running text (else as separate tokens)."""

    name: str
    labels: list[str]
    weights: npt.NDArray[Any]
    scores: list[list[Scores]]
    chars: bool = False

    def payload(self) -> dict[str, Any]:
        T = len(self.labels)
        lower = np.tril_indices(T)
        if np.any(np.triu(self.weights, 1)):
            raise ValueError("the explorer reads causal attention: weights above the diagonal")
        packed = np.ascontiguousarray(self.weights[..., lower[0], lower[1]], dtype="<f4")
        return {
            "name": self.name,
            "labels": self.labels,
            "chars": self.chars,
            "weights": base64.b64encode(packed.tobytes()).decode(),
            "scores": self.scores,
        }


def read_maps(
    model: TinyTransformer,
    tokens: "Tensor",
    labels: "Sequence[str]",
    name: str = "",
    chars: bool = False,
) -> Text:
    """Run ``model`` on one sequence ``tokens [T]`` and keep its maps, and each head's scores
    on :func:`text_templates`, as a :class:`Text`."""
    with torch_threads(1):  # one tiny forward pass: a second thread only waits
        _, weights = model.attention(tokens)  # per layer: [n_heads, T, T]
    W = np.stack([w.numpy() for w in weights])  # [n_layers, n_heads, T, T]
    templates = text_templates(tokens)
    scores = [[head_scores(A, templates) for A in layer] for layer in W]
    return Text(name, list(labels), W, scores, chars)


class Explorer:
    """The explorer of one or more :class:`Text` (the page picks one); see the module doc.
    It opens on the first text's last token, in the head with the highest induction score."""

    def __init__(self, texts: "Iterable[Text]", title: str) -> None:
        self.texts, self.title = list(texts), title
        self.n_layers, self.n_heads = self.texts[0].weights.shape[:2]
        self.start = _best_induction_head(self.texts[0])

    def payload(self) -> dict[str, Any]:
        layer, head = self.start
        query = len(self.texts[0].labels) - 1
        return {
            "title": self.title,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "start": {"text": 0, "layer": layer, "head": head, "query": query},
            "texts": [t.payload() for t in self.texts],
        }

    def _repr_html_(self) -> str:
        # No label can end the data's script or open a comment in it (`</script>`, `<!--`):
        # <, > and & are JSON's \u escapes (non-ASCII already is, U+2028/2029 included).
        escaped = {ord(c): f"\\u{ord(c):04x}" for c in "<>&"}
        data = json.dumps(self.payload(), separators=(",", ":")).translate(escaped)
        asset = files("attnlib")
        return (
            f'<div class="attn-explorer"><style>{asset.joinpath("explorer.css").read_text()}'
            f'</style><div class="attn-view">{html.escape(FALLBACK)}</div>'
            f'<script type="application/json" class="attn-data">{data}</script>'
            f"<script>{asset.joinpath('explorer.js').read_text()}</script></div>"
        )

    def __repr__(self) -> str:
        names = ", ".join(t.name for t in self.texts if t.name)
        return f"<attention-map explorer: {self.title}{f' ({names})' if names else ''}>"

    def figure(
        self, text: int = 0, title: str | None = None, size: float = 2.4, dpi: float = 72
    ) -> "Figure":
        """The static figure: every layer's and head's map of one text, labelled with its
        tokens (thinned so that no two labels collide), titled ``title`` (say what to look
        for). Returns the matplotlib figure."""
        return map_grid(self.texts[text], title or self.title, size, dpi)


def _best_induction_head(text: Text) -> tuple[int, int]:
    induction = [[s["induction"] or 0.0 for s in layer] for layer in text.scores]
    layer, head = np.unravel_index(np.argmax(induction), np.shape(induction))
    return int(layer), int(head)


def explore(
    model: TinyTransformer | dict[str, TinyTransformer],
    tokens: "Tensor",
    labels: "Sequence[str] | None" = None,
    title: str = "Where each token looks",
) -> Explorer:
    """An :class:`Explorer` of ``model`` on one sequence ``tokens [T]`` (BOS first); several
    models as ``{name: model}`` (the page picks one). ``labels``: one string per token
    (default :func:`attnlib.tasks.token_labels`)."""
    from attnlib.tasks import token_labels

    labels = token_labels(tokens) if labels is None else labels
    models = model if isinstance(model, dict) else {"": model}
    return Explorer([read_maps(m, tokens, labels, name) for name, m in models.items()], title)


def char_labels(tokens: "Tensor") -> list[str]:
    """Labels of real-text tokens: BOS, then one character each."""
    from attnlib.realtext import BOS, decode

    return ["BOS" if int(t) == BOS else decode([int(t)]) for t in tokens]


def held_out_stretches(
    n: int = 2, chars: int = STRETCH_CHARS, sample: str | None = None
) -> dict[str, str]:
    """``{name: text}``: ``n`` held-out stretches of ``chars`` characters, from places spread
    over ``sample`` (default: the docstring model's shipped held-out text), each starting a
    paragraph; then one half-stretch written twice (``r + r``), where an induction head has
    something to copy."""
    from attnlib.realtext import held_out_sample

    sample = held_out_sample() if sample is None else sample
    paragraphs = [sample.index("\n\n", i * len(sample) // (n + 1)) + 2 for i in range(n + 1)]
    # each from its paragraph's first visible character (source indents with runs of spaces)
    starts = [p + len(sample[p:]) - len(sample[p:].lstrip()) for p in paragraphs]
    found = {f"held-out text {i + 1}": sample[s : s + chars] for i, s in enumerate(starts[:n])}
    r = sample[starts[n] : starts[n] + chars // 2]
    found["held-out text written twice (r + r)"] = r + r
    return found


def explore_text(
    model: TinyTransformer,
    text: str | None = None,
    title: str | None = None,
    sample: str | None = None,
) -> Explorer:
    """An :class:`Explorer` of a real-text model: on held-out stretches of ``sample`` (the
    page picks one; default: the docstring model's held-out text), or on ``text``, your own
    (at most ``OWN_TEXT_CHARS`` printable ASCII characters)."""
    import torch

    from attnlib.realtext import BOS, encode

    if text is not None and not 0 < len(text) <= OWN_TEXT_CHARS:
        raise ValueError(f"type 1 to {OWN_TEXT_CHARS} characters, not {len(text)}")
    texts = {"your text": text} if text is not None else held_out_stretches(sample=sample)
    maps = []
    for name, chars in texts.items():
        tokens = torch.cat([torch.tensor([BOS]), encode(chars)])  # refuses other characters
        maps.append(read_maps(model, tokens, char_labels(tokens), name, chars=True))
    return Explorer(maps, title or "Where each character looks")


def _tick_step(T: int, inches: float, fontsize: float) -> int:
    """Label every ``step``-th token so that neighbouring labels never overlap."""
    return max(1, math.ceil(T * fontsize / (inches * 72)))


def map_grid(text: Text, title: str, size: float = 2.4, dpi: float = 72) -> "Figure":
    """Every layer's (rows) and head's (columns) map of one :class:`Text`: rows queries,
    columns keys, both labelled with the tokens on the outer maps; masked cells grey."""
    import matplotlib.pyplot as plt

    n_layers, n_heads, T, _ = text.weights.shape
    fig, axes = plt.subplots(
        n_layers, n_heads, figsize=(size * n_heads + 1.2, size * n_layers + 0.9),
        squeeze=False, sharex=True, sharey=True, dpi=dpi, layout="constrained",
    )  # fmt: skip
    causal = np.triu(np.ones((T, T), dtype=bool), 1)
    for (layer, head), ax in np.ndenumerate(axes):
        ax.set_facecolor("0.85")
        A = np.ma.masked_array(text.weights[layer, head].astype(float), causal)
        image = ax.imshow(A, cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_title(f"head {layer}.{head}", fontsize=9)
    shown = [{"\n": "\u21b5", " ": "\u2423"}.get(s, s) for s in text.labels]  # ↵ newline, ␣ space
    fontsize = 8  # the smallest a learner reads at 100 dpi (tests/test_figures.py)
    ticks = range(0, T, _tick_step(T, size * 0.8, fontsize))
    axes[0, 0].set_xticks(ticks, [shown[i] for i in ticks])
    axes[0, 0].set_yticks(ticks, [shown[i] for i in ticks])
    for ax in axes.flat:  # x labels upright: neighbours never overlap, however long
        ax.tick_params(labelsize=fontsize)
        ax.tick_params(axis="x", labelrotation=90)
    for ax in axes[:, 0]:
        ax.set_ylabel("query", fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("key", fontsize=8)
    fig.colorbar(image, ax=axes, fraction=0.02, pad=0.01, label="attention weight")
    fig.suptitle(title, fontsize=10)
    return fig
