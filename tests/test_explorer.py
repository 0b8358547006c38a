"""The attention-map explorer (attnlib.explorer): its page carries the model's weights
exactly and the scores of attnlib.patterns, fits the grader's output cap, needs no network,
and its static figure labels the tokens without collisions. The page itself is driven in
Chromium by tests/test_browser.py."""

import base64
import io
import json
import re
from html.parser import HTMLParser

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from attnlib import explorer, realtext, tasks  # noqa: E402
from attnlib.patterns import repeat_templates, template_score  # noqa: E402
from attnlib.shipped import load_shipped  # noqa: E402
from grader.settings import GraderSettings  # noqa: E402

CAP = GraderSettings.max_output_chars.default_value
DATA = re.compile(r'<script type="application/json" class="attn-data">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def models():
    return {"RoPE": load_shipped("induction"), "no positions": load_shipped("no_positions")}


@pytest.fixture(scope="module")
def real():
    return realtext.load_real_text()


def _repeat_sequence():
    """Notebook 07's sequence: [BOS] + r + r, len(r) = 10, no token twice in r."""
    tokens = tasks.repeat_twice(torch.Generator().manual_seed(7), 1, 10)[0]
    assert len(set(tokens[1:11].tolist())) == 10
    return tokens


def _page_data(page: str) -> dict:
    return json.loads(DATA.search(page).group(1))


def unpack(text: dict, n_layers: int, n_heads: int) -> np.ndarray:
    """A text's weights as the page decodes them: ``[n_layers, n_heads, T, T]`` float32."""
    T = len(text["labels"])
    packed = np.frombuffer(base64.b64decode(text["weights"]), dtype="<f4")
    W = np.zeros((n_layers, n_heads, T, T), dtype=np.float32)
    W[..., *np.tril_indices(T)] = packed.reshape(n_layers, n_heads, -1)
    return W


def _display_chars(obj) -> int:
    """What the grader counts of a displayed object (grader/run/execute.py)."""
    return len(json.dumps({"text/html": obj._repr_html_(), "text/plain": repr(obj)}))


def test_the_page_carries_every_model_s_weights_exactly(models):
    tokens = _repeat_sequence()
    data = _page_data(explorer.explore(models, tokens)._repr_html_())
    assert [t["name"] for t in data["texts"]] == list(models)
    for text, model in zip(data["texts"], models.values(), strict=True):
        _, weights = model.attention(tokens)
        expected = np.stack([w.numpy() for w in weights])  # [n_layers, n_heads, T, T]
        assert text["labels"] == tasks.token_labels(tokens) and not text["chars"]
        shown = unpack(text, data["n_layers"], data["n_heads"])
        assert shown.dtype == expected.dtype and np.array_equal(shown, expected)


def test_the_scores_are_the_template_scores_of_attnlib_patterns(models):
    """On [BOS] + r + r the templates are repeat_templates', so the page shows the scores
    notebooks 07, 08 and the model card compute."""
    tokens = _repeat_sequence()
    templates = repeat_templates(10)
    found = explorer.text_templates(tokens)
    assert all(np.array_equal(found[k], templates[k]) for k in explorer.KINDS)
    data = _page_data(explorer.explore(models["RoPE"], tokens)._repr_html_())
    _, weights = models["RoPE"].attention(tokens)
    for layer, W in enumerate(weights):
        for head, A in enumerate(W.numpy()):
            shown = data["texts"][0]["scores"][layer][head]
            assert shown == {k: template_score(A, P) for k, P in templates.items()}
    best = data["start"]
    assert data["texts"][0]["scores"][best["layer"]][best["head"]]["induction"] > 0.8
    assert best["query"] == len(tokens) - 1


def test_induction_marks_the_token_after_each_earlier_copy():
    P = explorer.text_templates([0, 5, 7, 5, 7, 5])["induction"]
    expected = np.zeros((6, 6))
    expected[3, 2] = expected[4, 3] = 1  # 5 at 3: after the 5 at 1; 7 at 4: after the 7 at 2
    expected[5, [2, 4]] = 1  # 5 at 5: after the 5s at 1 and 3
    assert np.array_equal(P, expected)
    A = np.tril(np.ones((6, 6))) / np.arange(1, 7)[:, None]
    assert explorer.head_scores(A, {"induction": P})["induction"] == template_score(A, P)
    assert explorer.head_scores(A, {"none": np.zeros((6, 6))}) == {"none": None}


def test_real_text_pages_fit_the_output_cap_and_need_no_network(models, real):
    pages = {
        "07": explorer.explore(models, _repeat_sequence()),
        "held-out stretches": explorer.explore_text(real),
        "longest own text": explorer.explore_text(real, "x" * explorer.OWN_TEXT_CHARS),
    }
    for name, page in pages.items():
        assert _display_chars(page) < CAP, f"{name}: {_display_chars(page)} characters"
        text = page._repr_html_()
        assert not re.search(r"https?:|src=|import\(", text), f"{name} loads something"
    stretches = _page_data(pages["held-out stretches"]._repr_html_())["texts"]
    sample = realtext.held_out_sample()
    for text in stretches:
        assert text["chars"] and text["labels"][0] == "BOS"
        assert "".join(text["labels"][1:]) in sample or text["name"].endswith("(r + r)")
    assert len(stretches) == 3
    _, weights = real.attention(torch.cat([torch.tensor([0]), realtext.encode("x" * 56)]))
    own = _page_data(pages["longest own text"]._repr_html_())["texts"][0]
    assert np.array_equal(unpack(own, 2, 4), np.stack([w.numpy() for w in weights]))


def test_a_text_the_model_cannot_read_is_one_clear_error(real):
    with pytest.raises(ValueError, match=r"type 1 to \d+ characters, not 57"):
        explorer.explore_text(real, "x" * (explorer.OWN_TEXT_CHARS + 1))
    with pytest.raises(ValueError, match="outside printable ASCII"):
        explorer.explore_text(real, "naïve")


def test_weights_above_the_diagonal_are_refused():
    W = np.full((1, 1, 3, 3), 1 / 3, dtype=np.float32)
    text = explorer.Text("bidirectional", ["BOS", "a", "b"], W, [[{}]])
    with pytest.raises(ValueError, match="causal"):
        text.payload()


class _Scripts(HTMLParser):
    """[(class, text)] of a page's scripts; a script ends at its first ``</script``."""

    def __init__(self, page: str):
        super().__init__()
        self.found: list[tuple[str | None, str]] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.found.append((dict(attrs).get("class"), ""))

    def handle_data(self, data):
        if self.lasttag == "script" and self.found:
            self.found[-1] = (self.found[-1][0], self.found[-1][1] + data)


@pytest.mark.parametrize("label", ["plain", "</script><!--<script>", "a & b \u2028>"])
def test_a_label_round_trips_whatever_it_holds(label):
    """Issue 46: a label holding ``<!--<script>`` made the data's script swallow the
    explorer's own, which never drew. In a browser's parse (the HTML standard's script data
    states) only ``</script`` ends a script and only ``<!--`` starts the states where it does
    not: the data holds no ``<`` at all, so it ends at its own end tag, the explorer's script
    follows whole, and the data is the labels as given."""
    W = np.tril(np.ones((2, 2), dtype=np.float32))[None, None]
    text = explorer.Text("t", ["BOS", label], W, [[{"induction": None}]])
    scripts = _Scripts(explorer.Explorer([text], "title")._repr_html_()).found
    assert [kind for kind, _ in scripts] == ["attn-data", None]
    assert "<" not in scripts[0][1] and "class Explorer" in scripts[1][1]
    assert json.loads(scripts[0][1])["texts"][0]["labels"] == ["BOS", label]


def _overlaps(boxes) -> bool:
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def _png_chars(fig) -> int:
    """What the notebook's inline backend sends for ``fig``: a base64 PNG, tight bbox."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=fig.dpi)
    return len(base64.b64encode(buf.getvalue()))


@pytest.mark.parametrize("which", ["07", "real text, T = 65"])
def test_the_static_figure_labels_tokens_without_collisions(models, real, which):
    if which == "07":
        page = explorer.explore(models["RoPE"], _repeat_sequence())
        fig, labels = page.figure(title="look for the stripes"), page.texts[0].labels
    else:
        one = realtext.repeat_text(1, 32)[0]
        text = explorer.read_maps(real, one, explorer.char_labels(one))
        fig, labels = explorer.map_grid(text, "look for the stripes"), text.labels
    shown = [{"\n": "\u21b5", " ": "\u2423"}.get(s, s) for s in labels]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    bottom_left, top_left = fig.axes[4], fig.axes[0]  # 2 layers x 4 heads, then the colour bar
    for axis, ticks in ((0, bottom_left.get_xticklabels()), (1, top_left.get_yticklabels())):
        ticks = [t for t in ticks if t.get_visible() and t.get_text()]
        # 8 pt labels (tests/test_figures.py) fit every second token of a short text
        assert len(ticks) >= min(len(labels), 24) // 2, "too few labels to read the text by"
        for t in ticks:  # each label is the token at its position
            assert t.get_text() == shown[round(t.get_position()[axis])]
        assert not _overlaps([t.get_window_extent(renderer) for t in ticks])
    assert fig.get_suptitle() == "look for the stripes"
    assert _png_chars(fig) < 0.85 * CAP  # room for the cell's other outputs
    plt.close(fig)
