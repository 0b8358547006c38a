"""The tiny model's KV cache: it computes what the forward pass computes (shared KV heads and
trained windows too), evicts what it says, re-indexes positions only where asked, and the
eviction claims of notebook 09 hold."""

import math

import pytest
import torch

from attnlib import kvcache, tasks
from attnlib.kvcache import CachedDecoder, cache_bytes
from attnlib.model import TinyTransformer
from attnlib.shipped import load_shipped
from attnlib.train import per_token_loss


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Steps are hundreds of tiny ops: on a shared machine two threads only wait for each other."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def model():
    return load_shipped()


@pytest.fixture(scope="module")
def long_tokens():
    """Notebook 09's experiment: BOS + 12 blocks (r, r) of 20 tokens, 8 sequences."""
    return tasks.repeated_blocks(torch.Generator().manual_seed(777), 8, 481, 20, 20)


def _band(T, window, n_sink):
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    allowed = (j <= i) & ((i - j < window) | (j < n_sink))
    return torch.where(allowed, 0.0, float("-inf"))


def test_cached_steps_equal_the_forward_pass(model):
    tokens = tasks.repeat_twice(torch.Generator().manual_seed(0), 3, 20)  # [3, 41]
    with torch.no_grad():
        full = model(tokens)
    stepped = CachedDecoder(model, batch=3, max_len=41).run(tokens)
    torch.testing.assert_close(stepped, full, atol=1e-4, rtol=1e-5)
    decoder = CachedDecoder(model, batch=3, max_len=41)  # a prefill, then single steps
    parts = [decoder.step(tokens[:, :17]), decoder.run(tokens[:, 17:])]
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-4, rtol=1e-5)


def test_a_learned_position_model_steps_too():
    torch.manual_seed(0)
    learned = TinyTransformer(vocab=11, d_model=16, n_layers=2, n_heads=2, rope=False, mlp=True)
    tokens = torch.randint(0, 11, (2, 12))
    with torch.no_grad():
        full = learned(tokens)
    stepped = CachedDecoder(learned, batch=2, max_len=12).run(tokens)
    torch.testing.assert_close(stepped, full, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="cannot be re-indexed"):
        CachedDecoder(learned, window=4, reindex=True)


def test_the_cache_keeps_the_sinks_and_the_last_window(model):
    tokens = torch.randint(1, 65, (1, 30))
    decoder = CachedDecoder(model, window=5, n_sink=2, reindex=False, record=True)
    decoder.run(tokens)
    assert decoder.layers[0].n == 7
    assert decoder.kept[-1].tolist() == [0, 1, 25, 26, 27, 28, 29]
    assert torch.equal(decoder.mask(), _band(30, 5, 2))
    assert decoder.nbytes() == cache_bytes(2, 4, 16, 7, 4)
    with pytest.raises(ValueError, match="one position per step"):
        decoder.step(tokens[:, :2])


def test_rolling_cache_at_true_distances_is_the_banded_mask(model, long_tokens):
    tokens = long_tokens[0][:2, :160]
    with torch.no_grad():
        masked = model(tokens, mask=_band(160, 24, 1))
    rolling = CachedDecoder(model, window=24, n_sink=1, reindex=False, batch=2).run(tokens)
    torch.testing.assert_close(rolling, masked, atol=1e-4, rtol=1e-5)
    no_sink = CachedDecoder(model, window=24, n_sink=0, reindex=True, batch=2).run(tokens)
    with torch.no_grad():
        band = model(tokens, mask=_band(160, 24, 0))
    torch.testing.assert_close(no_sink, band, atol=1e-4, rtol=1e-5)
    reindexed = CachedDecoder(model, window=24, n_sink=1, reindex=True, batch=2).run(tokens)
    assert (reindexed - masked).abs().max() > 0.1  # other positions: no mask reproduces it


def test_a_cache_that_never_fills_is_the_dense_pass(model):
    tokens = torch.randint(1, 65, (2, 40))
    with torch.no_grad():
        full = model(tokens)
    for reindex in (True, False):
        wide = CachedDecoder(model, window=64, n_sink=1, reindex=reindex, batch=2).run(tokens)
        torch.testing.assert_close(wide, full, atol=1e-4, rtol=1e-5)


def test_cache_bytes_counts_keys_and_values():
    assert cache_bytes(32, 32, 128, 1, 2) == 2**19  # Llama-2-7B, fp16: 0.5 MiB per position
    assert cache_bytes(2, 4, 16, 4096, 4) == 4 * 2**20


def test_cache_bytes_counts_kv_heads_not_query_heads():
    """Issue 24: the formula was 8× too large for Llama-2-70B (64 query heads, 8 KV heads)."""
    grouped = cache_bytes(80, 8, 128, 1, 2)  # Llama-2-70B, fp16, one position
    assert grouped == 2 * 80 * 8 * 128 * 2 == 320 * 2**10
    assert cache_bytes(80, 64, 128, 1, 2) == 8 * grouped  # as if every head had its keys
    assert cache_bytes(80, 1, 128, 4096, 2) * 64 == cache_bytes(80, 64, 128, 4096, 2)


def test_the_decoder_holds_what_the_formula_counts(model):
    """The tiny model is multi-head: its cache has one KV head per query head."""
    decoder = CachedDecoder(model, max_len=64)
    decoder.step(torch.randint(1, 65, (1, 40)))
    attn = model.blocks[0].attn
    assert decoder.nbytes() == cache_bytes(len(model.blocks), attn.n_heads, attn.d_head, 40, 4)


@pytest.mark.parametrize("n_kv_heads", [2, 1])
def test_shared_kv_heads_are_cached_once_and_step_as_the_forward_pass(n_kv_heads):
    """Grouped-query (2 KV heads for 4 query heads) and multi-query (1): the cache holds
    only the KV heads, and a prefill then single steps give the forward pass's logits."""
    torch.manual_seed(n_kv_heads)
    shared = TinyTransformer(vocab=11, d_model=32, n_heads=4, n_kv_heads=n_kv_heads, mlp=True)
    tokens = torch.randint(0, 11, (2, 20))
    with torch.no_grad():
        full = shared(tokens)
    decoder = CachedDecoder(shared, batch=2, max_len=20)
    stepped = torch.cat([decoder.step(tokens[:, :7]), decoder.run(tokens[:, 7:])], 1)
    torch.testing.assert_close(stepped, full, atol=1e-4, rtol=1e-5)
    assert [cache.KV.shape[2] for cache in decoder.layers] == [n_kv_heads] * 2
    assert decoder.nbytes() == 2 * cache_bytes(2, n_kv_heads, 8, 20, 4)  # batch 2


def test_a_model_trained_with_a_window_gets_a_rolling_cache_of_that_window():
    torch.manual_seed(0)
    windowed = TinyTransformer(vocab=11, d_model=32, n_heads=4, window=6)
    tokens = torch.randint(0, 11, (2, 20))
    with torch.no_grad():
        full = windowed(tokens)
    decoder = CachedDecoder(windowed, batch=2, max_len=20)
    torch.testing.assert_close(decoder.run(tokens), full, atol=1e-4, rtol=1e-5)
    assert decoder.layers[0].n == 6
    CachedDecoder(windowed, window=6)  # the same window, said explicitly
    for other in (dict(window=12), dict(window=6, n_sink=1)):
        with pytest.raises(ValueError, match="trained with a window of 6"):
            CachedDecoder(windowed, **other)


def test_timing_helpers_return_seconds(model):
    for seconds in (
        kvcache.time_cached_step(model, 32, steps=2),
        kvcache.time_uncached_step(model, 32, reps=1),
        kvcache.time_generation(model, 8, cached=True),
        kvcache.time_generation(model, 8, cached=False),
    ):
        assert 0 < seconds < 60


def test_the_eviction_claims_of_notebook_09_hold_for_the_shipped_weights(model, long_tokens):
    """What the notebook's prose says about its table (signs and sizes, not the digits)."""
    tokens, copyable = long_tokens
    late = torch.zeros(480, dtype=torch.bool)
    late[52:] = True
    parts = {"all": late.expand(8, -1), "guess": ~copyable[:, 1:] & late}
    parts["copy"] = copyable[:, 1:] & late

    def losses(window=None, n_sink=0, reindex=True):
        logits = CachedDecoder(model, window, n_sink, reindex, batch=8, max_len=481).run(tokens)
        loss = per_token_loss(logits, tokens)
        return {k: loss[m].mean().item() for k, m in parts.items()}

    dense, evicted, kept = losses(), losses(48, 0), losses(48, 1)
    four, far = losses(48, 4), losses(48, 1, reindex=False)
    assert evicted["all"] > kept["all"] and evicted["guess"] > kept["guess"] + 0.3
    assert evicted["copy"] < kept["copy"]  # evicting BOS lowers the copyable loss
    assert 1.5 < math.exp(evicted["guess"] - kept["guess"]) < 2.5  # "almost doubles"
    assert min(p["guess"] for p in (dense, evicted, kept, four, far)) > math.log(64)
    assert kept["all"] < far["all"] < evicted["all"]  # true distance keeps part of it
    assert abs(four["all"] - kept["all"]) < 0.01
    assert dense["copy"] > max(p["copy"] for p in (evicted, kept, four, far))
