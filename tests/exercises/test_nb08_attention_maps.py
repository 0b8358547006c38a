"""Notebook 08's exercises: the catalogue's mistakes are named, its alternatives pass, and a
message that names no mistake shows the pattern it was computed on."""

import re

import numpy as np
import pytest
import torch
from catalogue import catalogue_tests

from attnlib.checks import CheckFailed
from attnlib.checks import nb08_attention_maps as checks

NB = "08_attention_maps"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


@pytest.mark.parametrize("exercise", ["self_score", "previous_token_score", "sink_score"])
def test_an_unnamed_wrong_score_shows_the_pattern_it_was_computed_on(exercise):
    """Issue 24: the fallback cited "the hand-worked 4×4 pattern A4", which no cell shows."""
    with pytest.raises(CheckFailed) as failed:
        getattr(checks, f"check_{exercise}")(lambda A: 0.123)
    shown = re.search(r"A = (np\.array\(.*?\]\]\))", str(failed.value))
    assert shown, str(failed.value)
    np.testing.assert_array_equal(eval(shown[1], {"np": np}), checks.A4)


# ---------------------------------------------------------------- prose against output
def _notebook_cells():
    import nbformat

    from grader.course import source_path

    return nbformat.read(source_path(NB), as_version=4).cells


def _prose(cells):
    return " ".join(" ".join(c.source.split()) for c in cells if c.cell_type == "markdown")


def _code(cells, cell_id):
    return next(c.source for c in cells if c.get("id") == cell_id)


def _losses_on_the_two_copies(model, tokens, period):
    from attnlib.train import per_token_loss

    with torch.no_grad():
        loss = per_token_loss(model(tokens), tokens)
    return loss[:, :period].mean().item(), loss[:, period + 1 :].mean().item()


def test_the_sink_intervention_shows_what_the_prose_says():
    """Issue 24: "the sink is a no-op", contradicted by zeroing what BOS writes in layer 1."""
    from attnlib.shipped import eval_tokens, load_shipped

    model, tokens, period = load_shipped(), eval_tokens(), 32
    attn = model.blocks[1].attn
    with torch.no_grad():
        values = attn.W_V(model.blocks[1].ln1(model.blocks[0](model.embed(tokens))))
        ratios = []
        for head in range(attn.n_heads):
            cols = slice(head * attn.d_head, (head + 1) * attn.d_head)
            write = (values[..., cols] @ attn.W_O.weight[:, cols].T).norm(dim=-1)  # [B, T]
            ratios.append((write[:, 0].mean() / write[:, 1:].mean()).item())
    intact = _losses_on_the_two_copies(model, tokens, period)
    bos_value_zeroed = attn.W_V.register_forward_hook(
        lambda module, inputs, value: value.index_fill(-2, torch.tensor(0), 0.0)  # position 0
    )
    try:
        zeroed = _losses_on_the_two_copies(model, tokens, period)
    finally:
        bos_value_zeroed.remove()
    assert sum(r > 3 for r in ratios) == 3 and sum(r < 1.5 for r in ratios) == 1
    assert zeroed[0] > intact[0] + 0.2 and zeroed[1] < intact[1]
    prose = _prose(_notebook_cells())
    assert "as a parking place for attention that should do nothing" not in prose
    assert "In three of the four layer-1 heads `BOS` writes several times" in prose
    assert "raises the loss on the first copy" in prose and "lowers it on the second copy" in prose
    assert "the sink is not a no-op here" in prose


def test_the_icl_score_compares_like_with_like():
    """Issue 24: positions 1–8 can never be copied, so late minus early mixed two kinds."""
    from attnlib import tasks
    from attnlib.shipped import load_shipped
    from attnlib.train import per_token_loss

    tokens, can_copy = tasks.repeated_blocks(torch.Generator().manual_seed(123), 256, T=65)
    copy_target, late = can_copy[:, 1:], torch.arange(64) >= 32
    with torch.no_grad():
        loss = per_token_loss(load_shipped()(tokens), tokens)

    def late_minus_early(which):
        return (loss[which & late].mean() - loss[which & ~late].mean()).item()

    assert not copy_target[:, :8].any()  # the confound: the first 8 targets never copyable
    assert copy_target[:, late].float().mean() > 2 * copy_target[:, ~late].float().mean()
    assert late_minus_early(torch.ones_like(copy_target)) < -0.5
    assert late_minus_early(copy_target) > 0 and late_minus_early(~copy_target) > 0
    cells = _notebook_cells()
    code, prose = _code(cells, "code-07b"), _prose(cells)
    assert '"unpredictable": ~copy_target' in code and '"copyable": copy_target' in code
    assert "the RoPE model's loss does not fall later in the context; it rises a little" in prose
    assert "mechanism at scale" not in prose


def test_no_comparison_with_streaming_llm_numbers_and_no_outside_references():
    cells = _notebook_cells()
    prose, code = _prose(cells), "\n".join(c.source for c in cells if c.cell_type == "code")
    assert "Falcon" not in code and "Llama" not in code and "ratio" not in _code(cells, "code-12")
    assert "lesson" not in prose.lower()
    first_gu = prose.index("Gu et al.")
    assert prose[first_gu:].startswith(
        'Gu et al. 2025, "When Attention Sink Emerges in Language Models: An Empirical View"'
    )


def test_perplexity_is_defined_where_it_is_first_used():
    cells = _notebook_cells()
    first = next(c for c in cells if "perplexity" in c.source.lower() or "ppl" in c.source)
    assert first.cell_type == "markdown" and "*perplexity*, exp(loss)" in first.source


def test_the_kv_cache_is_taught_before_a_window_evicts_from_it():
    """Issue 24: 08 evicted from a cache before 09 built one."""
    from attnlib.shipped import eval_tokens, load_shipped

    cells = _notebook_cells()
    ids = [c.get("id") for c in cells]
    taught = ids.index("md-15a")
    assert "the **KV cache**" in cells[taught].source and ids[taught + 1] == "code-10b"
    assert taught < ids.index("sliding-window-mask")
    model, tokens = load_shipped(), eval_tokens()
    with torch.no_grad():  # the premise the cell checks: appending changes nothing before
        gap = (model(tokens)[:, :40] - model(tokens[:, :40])).abs().max().item()
    assert gap < 1e-5


def test_the_training_curves_have_a_title_and_the_reference_lines_the_prose_names():
    import matplotlib

    matplotlib.use("Agg")
    from attnlib.patterns import repeat_templates, template_score
    from attnlib.plotting import training_curves
    from attnlib.shipped import load_card

    code = _code(_notebook_cells(), "code-08")
    assert "title=" in code and '(np.log(64), "ln 64: a uniform guess")' in code
    assert '"uniform: previous-token"' in code and '"uniform: induction"' in code
    log, T = load_card()["log"], 65
    uniform = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    base = {k: template_score(uniform, P) for k, P in repeat_templates(32).items()}
    names = [k for k in log if k != "step"]  # loss, previous-token, induction
    levels = [np.log(64), base["previous"], base["induction"]]
    references = {name: (level, "a baseline") for name, level in zip(names, levels, strict=True)}
    fig = training_curves(log, title="a title", references=references)
    loss_ax, score_ax = fig.axes
    assert loss_ax.get_title() == "a title"
    drawn = [line.get_ydata()[0] for ax in fig.axes for line in ax.lines if line.get_ls() == "--"]
    assert np.allclose(sorted(drawn), sorted(levels))
    # the prose: before the jump the curves stay near these lines
    steps = np.array(log["step"])
    before = steps < steps[np.argmax(np.array(log[names[2]]) > 0.4)] - 50
    assert np.abs(np.array(log[names[0]])[before] - np.log(64)).max() < 0.5
    for name, key in zip(names[1:], ("previous", "induction"), strict=True):
        assert np.abs(np.array(log[name])[before] - base[key]).max() < 0.05
