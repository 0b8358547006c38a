"""The Python-source model (attnlib.realsource): its augmented windows, its shipped weights and
cards (an induction head on held-out source), and the measurements notebook 10 makes with it.
No training here: `make data` retrains it."""

import json

import pytest
import torch

from attnlib import realsource, realtext, shipped
from attnlib.factory import make_data, plain_twin
from attnlib.kvcache import CachedDecoder
from attnlib.paths import REPO_ROOT
from attnlib.train import learning_rate, per_token_loss, torch_threads


@pytest.mark.parametrize("seed", realsource.SEEDS)
def test_shipped_weights_reproduce_their_card_and_have_an_induction_head(seed):
    model, card = realsource.load(seed), realsource.load_card(seed)
    assert card["recipe"] == json.loads(json.dumps(realsource.recipe(seed)))
    assert sum(p.numel() for p in model.parameters()) == card["n_params"]
    assert realtext.data_file(f"{realsource.run_name(seed)}.pt").stat().st_size < 2 * 2**20
    result = realsource.evaluate(model)
    assert result["loss_first_copy"] == pytest.approx(card["loss_first_copy"], abs=1e-3)
    assert result["loss_second_copy"] == pytest.approx(card["loss_second_copy"], abs=1e-3)
    best = max(h["induction"] for h in result["heads"] if h["layer"] == 1)
    assert best >= 0.4 and result["gain"] >= 1.0  # issue 34's bar, on held-out source


def test_the_card_and_the_recipes_state_how_long_make_data_took():
    """The sum of every card's training time and half of it (two models at a time), read
    here from the JSON cards, in the real-source cards and in docs/real_text_recipes.md."""
    seconds = {
        name: json.loads(realtext.data_file(f"{make_data.card_stem(name)}.json").read_text())[
            "train_seconds"
        ]
        for name in make_data.ALL_NAMES
    }
    total = sum(seconds.values())
    whole = [f"{total / 60:.1f} min", f"{total / make_data.JOBS / 60:.1f} min"]
    recipes = (REPO_ROOT / "docs" / "real_text_recipes.md").read_text()
    assert all(number in recipes for number in [*whole, f"{total:.1f} s"])
    assert all(f"{s:.1f}" in recipes for s in seconds.values())  # its table of every model
    seeds = " and ".join(f"{seconds[name] / 60:.1f}" for name in realsource.NAMES)
    for name in realsource.NAMES:
        markdown = realtext.data_file(f"{make_data.card_stem(name)}.md").read_text()
        assert f"trained this model in {seconds[name] / 60:.1f} min" in markdown
        assert f"the two seeds: {seeds} min" in markdown and "real_text_recipes.md" in markdown
        assert all(number in markdown for number in whole), name


def test_the_sample_is_the_one_the_card_names():
    sample = realsource.held_out_sample()
    assert len(sample) == realsource.SAMPLE_CHARS
    assert realtext.sha256(sample) == realsource.load_card()["corpus"]["held_out_sample_sha256"]


def consecutive(ids):
    """True when ``ids`` follow each other as in the text below (1 … 96, then 1 again)."""
    return all(b - a in (1, -95) for a, b in zip(ids, ids[1:], strict=False))


def test_augmented_windows_come_in_blocks_of_consecutive_text_each_twice():
    ids = torch.arange(1, 200) % 96 + 1  # every character distinct from its neighbours
    rows = realsource.windows_with_repeats(ids, torch.Generator().manual_seed(0), 4, 60, 1.0, 3, 6)
    assert rows.shape == (4, 60) and (rows[:, 0] == realtext.BOS).all()
    for row in rows[:, 1:].tolist():
        at, text = 0, []  # walk the blocks: a stretch, then the same stretch again
        while at + 2 * 6 <= len(row):  # every whole block (the last one may be cut)
            L = next(n for n in range(3, 7) if row[at : at + n] == row[at + n : at + 2 * n][:n])
            text += row[at : at + L]
            at += 2 * L
        assert consecutive(text)
    plain = realsource.windows_with_repeats(ids, torch.Generator().manual_seed(0), 2, 60, 0.0, 3, 6)
    assert all(consecutive(row) for row in plain[:, 1:].tolist())
    with pytest.raises(ValueError, match="positive and ordered"):
        realsource.windows_with_repeats(ids, torch.Generator(), 2, 60, 1.0, 6, 3)


def test_identifier_repeats_mark_the_second_occurrence_after_its_first_character():
    text = "x = self.value + self.value"
    tokens = torch.cat([torch.tensor([realtext.BOS]), realtext.encode(text)])[None]
    first, second = realsource.identifier_repeats(tokens)

    def marked(mask):
        return "".join(c if m else "." for c, m in zip(text, mask[0].tolist(), strict=True))

    assert marked(second) == "." * 18 + "elf" + ".." + "alue"
    assert marked(first) == "." * 5 + "elf" + ".." + "alue" + "." * 13


def test_an_ablated_head_writes_nothing_and_the_model_is_untouched():
    model = realsource.load()
    ablated = realsource.without_head(model, 1, 2)
    assert (ablated.blocks[1].attn.W_O.weight[:, 32:48] == 0).all()
    assert (model.blocks[1].attn.W_O.weight[:, 32:48] != 0).any()


def test_cosine_schedule_warms_up_then_falls_to_its_floor():
    lrs = [learning_rate(s, 1000, 1e-2, 100, 0.1) for s in range(1000)]
    assert lrs[0] == pytest.approx(1e-4) and lrs[99] == pytest.approx(1e-2)
    assert lrs[100] == pytest.approx(1e-2) and lrs[-1] == pytest.approx(1e-3, rel=1e-2)
    assert all(a >= b for a, b in zip(lrs[100:], lrs[101:], strict=False))
    assert learning_rate(500, 1000, 1e-2, 100) == 1e-2  # no decay_to: constant, as before


def test_make_data_retrains_every_model_and_refuses_unknown_seeds():
    assert {*realsource.NAMES, *realtext.RUNS, *shipped.MODELS} == set(make_data.ALL_NAMES)
    with pytest.raises(ValueError, match="No real-source model of seed 5"):
        realsource.load(5)


@pytest.fixture(scope="module")
def natural_losses():
    """Per-character losses on held-out source, intact and with the induction heads ablated."""
    model = realsource.load()
    result = realsource.evaluate(model)
    ablated = model
    for h in result["heads"]:
        if h["layer"] == 1 and h["induction"] >= 0.4:
            ablated = realsource.without_head(ablated, 1, h["head"])
    tokens = realsource.natural_tokens()
    with torch.no_grad():
        losses = [per_token_loss(m(tokens), tokens) for m in (model, ablated)]
    return tokens, losses


def test_the_head_copies_natural_repeats_as_notebook_10_says(natural_losses):
    """ "about a nat each" on identifiers seen before; first occurrences "barely change"; the
    rest "lowers the loss a little"."""
    tokens, (intact, ablated) = natural_losses
    first, second = realsource.identifier_repeats(tokens)
    cost = {name: (ablated[m].mean() - intact[m].mean()).item() for name, m in
            {"second": second, "first": first, "rest": ~(first | second)}.items()}  # fmt: skip
    assert 0.7 < cost["second"] < 1.3
    assert abs(cost["first"]) < 0.1 and -0.2 < cost["rest"] < 0


def _zero_bos_value(module, inputs, value):
    value = value.clone()
    value[..., 0, :] = 0.0
    return value


def _evicting_loss(model, tokens, window, n_sink):
    decoder = CachedDecoder(model, window=window, n_sink=n_sink, batch=4, max_len=tokens.shape[1])
    with torch_threads(1):
        return per_token_loss(decoder.run(tokens), tokens)[:, window + 1 :].mean().item()


def test_the_sink_is_a_key_bias_forbidding_it_costs_and_evicting_it_hurts(natural_losses):
    """Notebook 10: one head puts over half its weight on BOS; forbidding BOS costs about
    0.4 nats, zeroing BOS's value about a tenth of that; evicting BOS from the cache hurts."""
    model, (tokens, (intact, _)) = realsource.load(), natural_losses
    T = tokens.shape[1]
    _, weights = model.attention(tokens)
    assert max(A[1:, 0].mean().item() for W in weights for A in W.mean(0)) > 0.5
    no_bos = torch.zeros(T, T)
    no_bos[1:, 0] = float("-inf")
    hooks = [b.attn.W_V.register_forward_hook(_zero_bos_value) for b in model.blocks]
    with torch.no_grad():
        zeroed = per_token_loss(model(tokens), tokens).mean().item()
        for hook in hooks:
            hook.remove()
        forbidden = per_token_loss(model(tokens, mask=no_bos), tokens).mean().item()
    cost_forbidden, cost_zeroed = forbidden - intact.mean().item(), zeroed - intact.mean().item()
    assert cost_forbidden > 0.3 and 0 < cost_zeroed < cost_forbidden / 5
    long = realsource.natural_tokens(batch=4, T=3 * realsource.T + 1)
    window = 3 * realsource.T // 4
    assert _evicting_loss(model, long, window, 0) - _evicting_loss(model, long, window, 1) > 0.1


@pytest.mark.parametrize("seed", realsource.SEEDS)
def test_the_card_holds_its_plain_window_twin_and_the_script_that_trained_it(seed):
    """Issue 47: what the repeated blocks cost, on the card notebook 10 reads. The twin is
    the shipped recipe and seed with plain windows only, measured at the sweep's lengths;
    as notebook 10 says, it forms no head and predicts held-out source better."""
    card = realsource.load_card(seed)
    twin = card["plain_twin"]
    plain = {**card["recipe"], "data": {**card["recipe"]["data"], "repeat_share": 0.0}}
    assert twin["recipe"] == plain == json.loads(json.dumps(plain_twin.recipe(seed)))
    assert twin["script"] == f"python -m attnlib.factory.plain_twin --seed {seed}"
    assert twin["n_params"] == card["n_params"] and twin["threads"] == 1
    assert list(twin["periods"]) == [str(p) for p in plain_twin.PERIODS]
    assert max(p["induction"] for p in twin["periods"].values()) < 0.1
    assert twin["held_out_loss"] < card["held_out_loss"]
    assert twin["log"]["step"][-1] == card["recipe"]["optim"]["steps"]
    markdown = realtext.data_file(
        f"{make_data.card_stem(realsource.run_name(seed))}.md"
    ).read_text()
    assert f"trained by `{twin['script']}`" in markdown
    assert f"{twin['held_out_loss']:.3f} nats per character" in markdown


def test_the_twins_windows_are_plain_text():
    """The twin's batches are the shipped recipe's with no blocks: consecutive characters."""
    ids = torch.arange(1, 400) % 96 + 1
    d = plain_twin.recipe(0)["data"]
    rows = realsource.windows_with_repeats(ids, torch.Generator().manual_seed(0), **{**d, "T": 60})
    assert all(consecutive(row) for row in rows[:, 1:].tolist())


def test_the_twin_is_measured_as_the_shipped_model_is():
    """plain_twin.measure on the shipped model gives its card's numbers: the twin's and the
    shipped model's are the same measurements."""
    card = realsource.load_card(0)
    measured = plain_twin.measure(realsource.load(0))
    best = max(h["induction"] for h in card["heads"] if h["layer"] == 1)
    assert measured["held_out_loss"] == pytest.approx(card["held_out_loss"], abs=1e-4)
    assert measured["loss_second_copy"] == pytest.approx(card["loss_second_copy"], abs=1e-3)
    assert measured["periods"]["32"]["induction"] == pytest.approx(best, abs=1e-3)
