"""Notebook 10's exercises: the catalogue's mistakes are named, its alternatives pass; and
the prose's claims about the real-text model hold for the shipped weights (a retrained model
that broke one fails here, not silently in the notebook's text)."""

import contextlib
import io

import matplotlib
import numpy as np
import pytest
import torch
from catalogue import catalogue_tests, notebook_cells, notebook_prose

from attnlib import realsource, realtext
from attnlib.patterns import column_template, repeat_templates, template_score
from attnlib.shipped import eval_tokens, load_shipped
from attnlib.train import per_token_loss

NB = "10_real_text"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


@pytest.fixture(scope="module")
def real():
    return realtext.load_real_text()


def _best(model, tokens, template):
    _, weights = model.attention(tokens)
    return max(template_score(A, template) for W in weights for A in W.mean(0).numpy())


def test_no_induction_head_and_no_sink_in_the_real_model_as_the_prose_says(real):
    assert "Induction heads: no, not in this model" in notebook_prose(NB)
    assert "The attention sink: no" in notebook_prose(NB)
    tokens = realtext.repeat_text(64, 32)
    assert _best(real, tokens, repeat_templates(32)["induction"]) < 0.4
    assert _best(real, tokens, repeat_templates(32)["previous"]) >= 0.4  # "Previous-token: yes"
    held = realtext.eval_tokens()
    assert _best(real, held, column_template(128, 0, range(1, 128))) < 0.3


def test_forbidding_bos_costs_the_real_model_a_small_fraction_of_the_toys(real):
    costs = {}
    for name, model, tokens in [
        ("real", real, realtext.eval_tokens()),
        ("toy", load_shipped(), eval_tokens()),
    ]:
        T = tokens.shape[1]
        no_bos = torch.zeros(T, T)
        no_bos[1:, 0] = float("-inf")
        with torch.no_grad():
            intact = per_token_loss(model(tokens), tokens).mean().item()
            forbidden = per_token_loss(model(tokens, mask=no_bos), tokens).mean().item()
        costs[name] = forbidden - intact
    assert 0 <= costs["real"] < 0.2 * costs["toy"]


def test_a_window_of_32_costs_little_and_a_window_of_1_more_than_the_frequencies(real, solution):
    """The window prose: "barely moves down to 32", "a window of 1 ... worse than the
    characters' frequencies alone"."""
    window = solution(NB)["sliding_window_attention"]
    seqs = realtext.eval_tokens()[:4]

    def loss(w):
        runs = [
            realtext.run_with_attention(real, s, lambda Q, K, V: window(Q, K, V, w)) for s in seqs
        ]
        return np.mean(
            [per_token_loss(r, s).mean().item() for r, s in zip(runs, seqs, strict=True)]
        )

    full = loss(128)
    assert loss(32) - full < 0.05
    assert loss(1) > realtext.baselines(realtext.held_out_sample())["unigram"]


# ---------------------------------------------------------------- the plain-window twin
# The cells the twin's table reads from, in order (imports, models, the distance sweep, the
# natural-repeats ablation), then the table itself.
TWIN_CELLS = ("imports", "code-01", "code-03", "code-source-01", "62eed438", "code-source-03")


def _run_cells(ids):
    """Run the solution's code cells ``ids`` in one namespace; return what they print."""
    matplotlib.use("Agg")  # the cells draw figures: no display here
    code = notebook_cells(NB, "code")
    namespace, printed = {}, io.StringIO()
    with contextlib.redirect_stdout(printed):
        for cell_id in ids:
            exec(compile(code[cell_id], cell_id, "exec"), namespace)
    return printed.getvalue()


def test_notebook_10_prints_the_twins_numbers_from_the_card_beside_the_shipped_models():
    """The twin's table prints, for both seeds, the card's held-out loss and induction score
    of the twin next to the shipped model's; the prose says what the table shows."""
    printed = _run_cells((*TWIN_CELLS, "code-source-twin"))
    table = printed[printed.index("seed 0's twin") :]
    for seed in realsource.SEEDS:
        card = realsource.load_card(seed)
        twin = card["plain_twin"]
        assert f"`{twin['script']}`" in table
        assert f"{twin['held_out_loss']:6.3f}" in table
        assert f"{twin['periods']['32']['induction']:6.3f}" in table
        cost = card["held_out_loss"] - twin["held_out_loss"]
        assert f"seed {seed} {cost:+.3f}" in table  # the card's loss is the notebook's
    prose = notebook_prose(NB)
    assert "trained on plain windows ships" not in prose
    assert "the twin forms no induction head" in prose and "predicts *better*" in prose
