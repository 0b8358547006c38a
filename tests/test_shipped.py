"""The shipped weights in data/: small, loadable, and reproducing their model cards."""

import json
import math

import numpy as np
import pytest
import torch

from attnlib import shipped
from attnlib.factory import make_data
from attnlib.paths import data_dir, data_file
from attnlib.patterns import repeat_templates, template_score
from grader.hidden import nb08_attention_maps as reference


@pytest.fixture(scope="module")
def card():
    return shipped.load_card()


@pytest.fixture(scope="module")
def model():
    return shipped.load_shipped()


@pytest.mark.parametrize("name", list(shipped.MODELS))
def test_weights_are_small_and_match_the_recipe(name):
    spec, card, model = shipped.MODELS[name], shipped.load_card(name), shipped.load_shipped(name)
    assert data_file(spec.weights).stat().st_size < 2_000_000
    assert card["recipe"] == spec.recipe  # the card describes the recipe in the code
    assert card["n_params"] == sum(p.numel() for p in model.parameters())
    assert not model.training
    for key in ("torch", "train_seconds", "load_average", "final_train_loss", "log", "threads"):
        assert key in card, key


@pytest.mark.parametrize("name", make_data.ALL_NAMES)
def test_every_markdown_card_is_rendered_from_its_json_and_states_its_training_time(name):
    """Every model `make data` trains, toys and real text: `--cards` would write this .md."""
    stem = make_data.card_stem(name)
    seconds = json.loads(data_file(f"{stem}.json").read_text())["train_seconds"]
    md = data_file(f"{stem}.md").read_text()
    assert md == make_data.card_markdown(name), "run `python -m attnlib.factory --cards`"
    assert f"trained in {seconds:.1f} s" in md


def test_make_data_trains_every_model_that_has_a_card():
    """The cards' sum of training times (make_data_summary) leaves out no shipped card."""
    shipped_cards = {path.stem for path in data_dir().glob("model_card*.json")}
    assert shipped_cards == {make_data.card_stem(name) for name in make_data.ALL_NAMES}


@pytest.mark.parametrize("name", list(shipped.MODELS))
def test_shipped_weights_reproduce_the_card(name):
    card = shipped.load_card(name)
    result = shipped.evaluate(shipped.load_shipped(name))
    assert result["loss_first_copy"] == pytest.approx(card["loss_first_copy"], abs=1e-3)
    assert result["loss_second_copy"] == pytest.approx(card["loss_second_copy"], abs=1e-3)
    for got, want in zip(result["heads"], card["heads"], strict=True):
        for key in ("self", "previous", "sink", "induction"):
            assert got[key] == pytest.approx(want[key], abs=1e-3), (got["layer"], got["head"], key)


def test_the_two_models_differ_only_in_positions():
    with_rope, without = shipped.load_shipped("induction"), shipped.load_shipped("no_positions")
    assert with_rope.config == {**without.config, "rope": True, "learned_positions": False}
    assert without.pos_embed is None and not any(b.attn.rope for b in without.blocks)
    assert with_rope.state_dict().keys() == without.state_dict().keys()


def test_without_positions_no_previous_token_or_induction_head_forms():
    """Notebook 07's claim: scores stay near uniform attention's, the repeat is not copied."""
    card, rope_card = shipped.load_card("no_positions"), shipped.load_card("induction")
    period = card["recipe"]["eval"]["period"]
    T = 2 * period + 1
    uniform = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    base = {k: template_score(uniform, P) for k, P in repeat_templates(period).items()}
    for head in card["heads"]:
        assert head["previous"] < base["previous"] + 0.03, head
        assert head["induction"] < base["induction"] + 0.03, head
    assert card["phase_change_step"] is None
    assert card["loss_second_copy"] > 3.0 > 1.0 > rope_card["loss_second_copy"]


def test_unknown_model_name_is_a_clear_error():
    with pytest.raises(ValueError, match="no_positions"):
        shipped.load_shipped("nope")


def test_card_scores_agree_with_the_exercise_definitions(card, model):
    """Independent implementations (the hidden-check references) give the card's numbers."""
    period = card["recipe"]["eval"]["period"]
    _, weights = model.attention(shipped.eval_tokens())
    for head in card["heads"]:
        A = weights[head["layer"]][:, head["head"]].mean(0).double().numpy()
        assert reference.self_score(A) == pytest.approx(head["self"], abs=1e-3)
        assert reference.previous_token_score(A) == pytest.approx(head["previous"], abs=1e-3)
        assert reference.sink_score(A) == pytest.approx(head["sink"], abs=1e-3)
        assert reference.induction_score(A, period) == pytest.approx(head["induction"], abs=1e-3)


def test_the_patterns_are_there(card):
    layer0 = [h for h in card["heads"] if h["layer"] == 0]
    layer1 = [h for h in card["heads"] if h["layer"] == 1]
    assert max(h["previous"] for h in layer0) > 0.9  # a clean previous-token head
    assert min(h["induction"] for h in layer1) > 0.8  # every layer-1 head does induction
    assert max(h["induction"] for h in layer0) < 0.1  # induction needs two layers
    assert card["loss_second_copy"] < 0.5  # the repeat is copied
    assert card["loss_first_copy"] > math.log(64) - 0.1  # the first copy cannot be predicted
    assert 300 <= card["phase_change_step"] <= 800


def test_sink_appears_when_there_is_nothing_to_match(model):
    """Layer-1 heads park weight on BOS in the first copy, not in the second."""
    tokens = shipped.eval_tokens()
    period = shipped.RECIPE["eval"]["period"]
    _, weights = model.attention(tokens)
    on_bos = weights[1][:, :, :, 0]  # [B, heads, T]
    first = on_bos[:, :, 1 : period + 1].mean()
    second = on_bos[:, :, period + 1 :].mean()
    assert first > 0.3 and second < 0.05, (first, second)


def test_shipped_model_is_causal(model):
    tokens = shipped.eval_tokens(batch=2)
    changed = tokens.clone()
    changed[:, 40:] = 1
    with torch.no_grad():
        assert torch.allclose(model(tokens)[:, :40], model(changed)[:, :40], atol=1e-6)
