"""Notebook 11's exercise: the catalogue's mistakes are named, its alternatives pass; and
the prose's claims about the real-text models hold for the shipped weights (a retrained model
that broke one fails here, not silently in the notebook's text)."""

import pytest
import torch
from catalogue import catalogue_tests, notebook_prose

from attnlib import realtext
from attnlib.kvcache import CachedDecoder, cache_bytes
from attnlib.model import window_mask
from attnlib.train import per_token_loss, torch_threads

NB = "11_attention_at_scale"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


@pytest.fixture(scope="module")
def real():
    return realtext.load_real_text()


def test_pooling_without_uptraining_is_worse_than_the_frequencies_as_the_prose_says(real, solution):
    prose = notebook_prose(NB)
    assert "without uptraining" in prose and "worse than the characters' frequencies" in prose
    pooled = realtext.with_shared_kv(real, solution(NB)["mean_pool_kv_heads"], 2)
    unigram = realtext.baselines(realtext.held_out_sample())["unigram"]
    assert realtext.held_out_loss(pooled) > unigram > realtext.held_out_loss(real)


def test_the_window_is_said_to_be_applied_at_inference_then_trained():
    prose = notebook_prose(NB)
    assert "trained with full attention**, at inference only" in prose
    assert "trained with the same recipe, seed and batches but a window of 32" in prose
    assert "PLACEHOLDER" not in prose


def _split_losses(model, tokens, window, mask=None):
    """Held-out loss: everywhere, on queries below ``window`` (nothing cut), on the rest."""
    with torch.no_grad():
        loss = per_token_loss(model(tokens, mask=mask), tokens)
    return loss.mean().item(), loss[:, :window].mean().item(), loss[:, window:].mean().item()


def test_trained_with_a_window_of_32_nothing_is_lost_as_the_prose_says(real):
    """ "almost nothing" at inference; trained, "even lower" than full attention, and ahead
    "by at least as much" where the window cuts nothing (so the gain is the run's)."""
    prose = notebook_prose(NB)
    for claim in ("even lower than the full-attention model's", "by at least as much"):
        assert claim in prose
    windowed = realtext.load_real_text("real_text_window_32")
    held = realtext.eval_tokens()
    full = _split_losses(real, held, 32)
    at_inference = _split_losses(real, held, 32, mask=window_mask(128, 32))
    trained = _split_losses(windowed, held, 32)
    assert at_inference[0] - full[0] < 0.01
    assert trained[0] < full[0]
    assert full[1] - trained[1] >= full[2] - trained[2] > 0


def test_the_windowed_model_steps_through_a_cache_of_32_as_the_prose_says():
    """ "it holds only the last 32 positions of 128 and gives its forward pass's logits"."""
    assert "holds only the last 32 positions of 128" in notebook_prose(NB)
    windowed = realtext.load_real_text("real_text_window_32")
    held = realtext.eval_tokens()[:8]
    rolling = CachedDecoder(windowed, batch=8, max_len=held.shape[1])
    with torch_threads(1), torch.no_grad():
        gap = (rolling.run(held) - windowed(held)).abs().max().item()
    assert held.shape[1] == 128 and rolling.layers[0].n == 32
    assert gap < 1e-4


def test_trained_with_shared_kv_heads_the_loss_holds_and_pooled_it_does_not(real, solution):
    """ "within 0.01 nats of the 4-head model's", "fewer parameters"; pooled,
    "more than the characters' frequencies alone"."""
    prose = notebook_prose(NB)
    assert "within 0.01 nats of the 4-head model's" in prose
    assert "cache and fewer parameters" in prose
    assert "cost more than the characters' frequencies alone" in prose
    unigram = realtext.baselines(realtext.held_out_sample())["unigram"]
    full, params = realtext.held_out_loss(real), sum(p.numel() for p in real.parameters())
    for n_kv in (2, 1):  # each halving of the KV heads: fewer parameters
        trained = realtext.load_real_text(f"real_text_kv_heads_{n_kv}")
        assert abs(realtext.held_out_loss(trained) - full) < 0.01
        assert sum(p.numel() for p in trained.parameters()) < params
        params = sum(p.numel() for p in trained.parameters())
        pooled = realtext.with_shared_kv(real, solution(NB)["mean_pool_kv_heads"], n_kv)
        assert realtext.held_out_loss(pooled) > unigram


def test_the_decoder_caches_of_the_shared_kv_models_are_2_and_4_times_smaller(real):
    """ "The caches the decoder holds measure 2× and 4× smaller, the bytes `cache_bytes`
    counts", "the forward pass's to within 1e-4": 8 held-out sequences, one step each."""
    assert "The caches the decoder holds measure 2× and 4× smaller" in notebook_prose(NB)
    assert "the forward pass's to within 1e-4" in notebook_prose(NB)
    tokens = realtext.eval_tokens()[:8]
    shape = realtext.RECIPE["model"]
    d_head = shape["d_model"] // shape["n_heads"]
    held = {}
    for n_kv in (4, 2, 1):
        model = real if n_kv == 4 else realtext.load_real_text(f"real_text_kv_heads_{n_kv}")
        decoder = CachedDecoder(model, batch=8, max_len=128)
        with torch_threads(1), torch.no_grad():  # 128 steps of tiny ops: a 2nd thread only waits
            assert (decoder.run(tokens) - model(tokens)).abs().max() < 1e-4
        held[n_kv] = sum(cache.nbytes() for cache in decoder.layers) // 8
        assert held[n_kv] == cache_bytes(shape["n_layers"], n_kv, d_head, 128, 4)
    assert held[4] == 2 * held[2] == 4 * held[1]
