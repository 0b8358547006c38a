"""The real-text model (attnlib.realtext): its shipped weights, sample and card, and the
helpers notebook 10 runs it through. No training here: `make data` retrains it."""

import json

import numpy as np
import pytest
import torch

from attnlib import realtext
from attnlib.train import per_token_loss


@pytest.fixture(scope="module")
def model():
    return realtext.load_real_text()


@pytest.fixture(scope="module")
def card():
    return realtext.load_card()


def test_loads_with_the_recipes_shape(model, card):
    tokens = realtext.eval_tokens(batch=2, T=20)
    assert tokens.shape == (2, 20) and (tokens[:, 0] == realtext.BOS).all()
    with torch.no_grad():
        assert model(tokens).shape == (2, 20, realtext.N_TOKENS)
    assert sum(p.numel() for p in model.parameters()) == card["n_params"]


def test_held_out_loss_beats_both_baselines_printed_in_the_card(model, card):
    loss = realtext.held_out_loss(model)
    assert loss == pytest.approx(card["held_out_loss"], abs=1e-3)
    base = realtext.baselines(realtext.held_out_sample())
    assert base == pytest.approx(card["baselines"], abs=1e-4)
    assert loss < base["unigram"] - 1.0 < base["uniform"] - 1.0
    for number in (f"{loss:.3f}", f"{base['uniform']:.3f}", f"{base['unigram']:.3f}"):
        assert number in (realtext.data_file(realtext.CARD + ".md")).read_text()


def test_the_shipped_sample_is_the_one_the_card_names(card):
    sample = realtext.held_out_sample()
    assert realtext.sha256(sample) == card["corpus"]["held_out_sample_sha256"]
    assert len(sample) == realtext.SAMPLE_CHARS
    assert realtext.data_file(realtext.WEIGHTS).stat().st_size < 2 * 2**20


def test_encode_decode_round_trip_and_refuse_other_characters():
    text = "Return the value.\n  >>> f(x) ~ 1"
    assert realtext.decode(realtext.encode(text)) == text
    with pytest.raises(ValueError, match="printable ASCII"):
        realtext.encode("naïve")


def test_repeat_text_repeats_held_out_characters():
    tokens = realtext.repeat_text(3, 10)
    assert tokens.shape == (3, 21)
    assert torch.equal(tokens[:, 1:11], tokens[:, 11:])
    assert realtext.decode(tokens[0, 1:11]) == realtext.held_out_sample()[:10]


def _causal(Q, K, V):
    S = Q @ K.T / np.sqrt(Q.shape[1]) + np.triu(np.full((len(Q), len(Q)), -np.inf), 1)
    E = np.exp(S - S.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True) @ V


def test_run_with_attention_reproduces_the_model_and_the_attention_matters(model):
    seq = realtext.eval_tokens(batch=1, T=40)[0]
    with torch.no_grad():
        own = model(seq)
    assert (realtext.run_with_attention(model, seq, _causal) - own).abs().max() < 1e-4
    only_self = realtext.run_with_attention(model, seq, lambda Q, K, V: V)
    assert (only_self - own).abs().max() > 0.1


def test_shared_kv_with_every_head_its_own_is_the_model_and_pooling_changes_it(model):
    tokens = realtext.eval_tokens(batch=2, T=30)

    def pool(W, n_heads, n_kv_heads):
        return (
            W.reshape(n_kv_heads, n_heads // n_kv_heads, -1, W.shape[1])
            .mean(1)
            .reshape(-1, W.shape[1])
        )

    with torch.no_grad():
        own = model(tokens)
        same = realtext.with_shared_kv(model, pool, 4)(tokens)
        one = realtext.with_shared_kv(model, pool, 1)
    assert (same - own).abs().max() < 1e-5
    W_K = one.blocks[0].attn.W_K.weight
    assert torch.equal(W_K[:16], W_K[48:])  # one KV head, repeated for every query head
    assert not torch.equal(model.blocks[0].attn.W_K.weight, W_K)  # the original is untouched


def test_generation_keeps_the_prompt_and_is_repeatable(model):
    greedy = realtext.generate(model, "Return ", 12)
    assert greedy.startswith("Return ") and len(greedy) == 19
    assert realtext.generate(model, "Return ", 12) == greedy
    sampled = [realtext.generate(model, "Return ", 12, temperature=1.0, seed=s) for s in (0, 0, 1)]
    assert sampled[0] == sampled[1] != sampled[2]


def test_windows_start_with_bos_and_copy_the_text():
    ids = realtext.encode("abcdefghij" * 5)
    batch = realtext.windows(ids, 4, 6, torch.Generator().manual_seed(0))
    assert batch.shape == (4, 6) and (batch[:, 0] == realtext.BOS).all()
    loss = per_token_loss(torch.zeros(4, 6, realtext.N_TOKENS), batch)
    assert loss.shape == (4, 5)


TRAINED_VARIANTS = [n for n in realtext.RUNS if n != realtext.FULL]  # second seeds included


@pytest.mark.parametrize("name", TRAINED_VARIANTS)
def test_each_architecture_loads_and_its_card_states_its_training_and_loss(name):
    architecture, seed = realtext.RUNS[name]
    model, card = (
        realtext.load_real_text(*realtext.RUNS[name]),
        realtext.load_card(architecture, seed),
    )
    assert card["recipe"] == json.loads(json.dumps(realtext.recipe(architecture, seed)))
    assert sum(p.numel() for p in model.parameters()) == card["n_params"]
    loss = realtext.held_out_loss(model)
    assert loss == pytest.approx(card["held_out_loss"], abs=1e-3)
    assert loss < card["baselines"]["unigram"] - 1.0  # clearly below the character frequencies
    assert realtext.data_file(f"{name}.pt").stat().st_size < 2 * 2**20
    markdown = realtext.data_file(f"model_card_{name}.md").read_text()
    for number in (
        f"{loss:.3f}",
        f"{card['final_train_loss']:.3f}",
        f"{card['train_seconds']:.1f} s",
        f"{card['recipe']['optim']['steps']} steps",
        card["machine"],
    ):
        assert number in markdown


def test_the_windowed_model_ignores_keys_further_back_than_its_window():
    windowed, full = realtext.load_real_text("real_text_window_32"), realtext.load_real_text()
    tokens = realtext.eval_tokens(batch=1, T=100)
    changed = tokens.clone()
    changed[0, 20] = tokens[0, 20] % (realtext.N_TOKENS - 1) + 1  # another character
    with torch.no_grad():
        # 2 layers of window 32: position 20 reaches positions up to 20 + 2·31 = 82, not 99
        assert torch.equal(windowed(tokens)[0, 99], windowed(changed)[0, 99])
        assert not torch.equal(windowed(tokens)[0, 40], windowed(changed)[0, 40])
        assert not torch.equal(full(tokens)[0, 99], full(changed)[0, 99])


@pytest.mark.parametrize("n_kv_heads", [2, 1])
def test_shared_kv_heads_serve_neighbouring_query_heads_as_grouped_query_attention_does(
    n_kv_heads,
):
    """A model trained with n_kv_heads computes what a 4-head model computes with each KV
    head copied to its group of query heads (g serves g·group … (g+1)·group − 1)."""
    shared = realtext.load_real_text(f"real_text_kv_heads_{n_kv_heads}")
    expanded = realtext.build_model()
    state = shared.state_dict()
    group = 4 // n_kv_heads
    for key, W in state.items():
        if key.endswith(("W_K.weight", "W_V.weight")):
            assert W.shape == (n_kv_heads * 16, 64)
            state[key] = W.view(n_kv_heads, 16, 64).repeat_interleave(group, 0).reshape(64, 64)
    expanded.load_state_dict(state)
    tokens = realtext.eval_tokens(batch=2, T=30)
    with torch.no_grad():
        assert (expanded(tokens) - shared(tokens)).abs().max() < 1e-5


def test_unknown_architectures_are_refused_in_one_line():
    with pytest.raises(ValueError, match="No real-text model 'gqa'"):
        realtext.load_card("gqa")
    with pytest.raises(ValueError, match="No real-text model of seed 2"):
        realtext.load_card(realtext.FULL, 2)


def test_the_second_seed_is_another_run_of_the_same_recipe():
    first, second = realtext.load_card(), realtext.load_card(realtext.FULL, 1)
    assert {**first["recipe"], "seed": 1} == second["recipe"]
    weights = [realtext.load_real_text(seed=s).state_dict() for s in realtext.SEEDS]
    assert not torch.equal(weights[0]["embed.weight"], weights[1]["embed.weight"])


def test_kv_heads_that_do_not_divide_the_heads_are_refused_in_one_line():
    with pytest.raises(ValueError, match=r"n_heads \(4\) must be a multiple of n_kv_heads \(3\)"):
        realtext.TinyTransformer(realtext.N_TOKENS, n_kv_heads=3)


def test_seed_spread_ranks_the_window_and_not_the_kv_heads_as_notebook_10_says():
    """Notebook 10: trained with the window, the loss is lower than full attention's in both
    seeds by more than two seeds of one architecture differ; the KV-head counts differ by
    less than their seeds do."""
    held = realtext.eval_tokens()

    def losses(name):
        return [realtext.held_out_loss(realtext.load_real_text(name, s), held) for s in (0, 1)]

    full, window = losses(realtext.FULL), losses("real_text_window_32")
    kv = {4: full, 2: losses("real_text_kv_heads_2"), 1: losses("real_text_kv_heads_1")}
    spread = max(max(v) - min(v) for v in (full, window))
    assert all(f - w > spread for f, w in zip(full, window, strict=True))
    kv_spread = max(max(v) - min(v) for v in kv.values())
    assert max(v[0] for v in kv.values()) - min(v[0] for v in kv.values()) < kv_spread
