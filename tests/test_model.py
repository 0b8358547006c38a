"""The tiny transformer: shapes, the attention maths, causality, RoPE, data, determinism."""

import math

import pytest
import torch
import torch.nn.functional as F

from attnlib import tasks
from attnlib.model import CausalSelfAttention, TinyTransformer
from attnlib.model import rope as model_rope
from attnlib.train import AdamW, per_token_loss, save_weights, train


def test_attention_shapes_and_weights():
    torch.manual_seed(0)
    attn = CausalSelfAttention(16, n_heads=4)
    x = torch.randn(3, 7, 16)
    assert attn(x).shape == (3, 7, 16)
    assert attn.weights.shape == (3, 4, 7, 7)
    assert torch.allclose(attn.weights.sum(-1), torch.ones(3, 4, 7))
    assert torch.all(attn.weights.triu(1) == 0)  # causal: nothing above the diagonal
    assert not attn.weights.requires_grad
    assert attn(x[0]).shape == (7, 16)  # unbatched
    assert attn.weights.shape == (4, 7, 7)
    assert attn.W_Q.weight.shape == (16, 16) and attn.W_O.weight.shape == (16, 16)


def test_attention_options():
    wide = CausalSelfAttention(12, n_heads=2, d_head=8)
    assert wide.W_K.weight.shape == (16, 12) and wide.W_O.weight.shape == (12, 16)
    assert wide(torch.randn(5, 12)).shape == (5, 12)
    bare = CausalSelfAttention(8, n_heads=2, out_proj=False)
    assert bare.W_O is None and bare(torch.randn(2, 5, 8)).shape == (2, 5, 8)
    with pytest.raises(ValueError, match="n_heads"):
        CausalSelfAttention(8, n_heads=2, d_head=8, out_proj=False)
    full = CausalSelfAttention(8, n_heads=2, causal=False)
    full(torch.randn(5, 8))
    assert full.weights.triu(1).abs().sum() > 0  # without the mask the future gets weight


def test_attention_is_scaled_dot_product_attention():
    torch.manual_seed(1)
    attn = CausalSelfAttention(16, n_heads=2)
    x = torch.randn(2, 6, 16)
    out = attn(x)
    q, k, v = (W(x).view(2, 6, 2, 8).transpose(1, 2) for W in (attn.W_Q, attn.W_K, attn.W_V))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(out, attn.W_O(ref.transpose(1, 2).reshape(2, 6, 16)), atol=1e-5)


def test_additive_mask_hides_keys():
    torch.manual_seed(2)
    attn = CausalSelfAttention(8, n_heads=1)
    mask = torch.zeros(5, 5)
    mask[:, 0] = float("-inf")
    mask[0, 0] = 0.0  # query 0 keeps its only key
    attn(torch.randn(5, 8), mask=mask)
    assert torch.all(attn.weights[0, 1:, 0] == 0)
    assert torch.allclose(attn.weights.sum(-1), torch.ones(1, 5))


def test_rope_scores_depend_on_relative_position_only():
    torch.manual_seed(3)
    attn = CausalSelfAttention(8, n_heads=2, rope=True)
    x = torch.randn(6, 8)
    attn(x)
    before = attn.weights
    attn(x, positions=torch.arange(6) + 40)
    assert torch.allclose(before, attn.weights, atol=1e-5)
    attn(x, positions=torch.arange(6) * 2)  # stretched distances: a different pattern
    assert not torch.allclose(before, attn.weights, atol=1e-3)


def test_rope_rotates_each_pair_exactly_as_the_formula():
    torch.manual_seed(4)
    x, positions = torch.randn(2, 3, 9, 8), torch.arange(9) + 5
    angle = positions[:, None].float() * 10000.0 ** (-torch.arange(0, 8, 2).float() / 8)
    cos, sin = angle.cos(), angle.sin()  # [T, d/2]
    x1, x2 = x[..., 0::2], x[..., 1::2]
    want = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)
    assert torch.equal(model_rope(x, positions), want)


@pytest.mark.parametrize("rope", [True, False])
def test_model_shapes_and_weights(rope):
    torch.manual_seed(0)
    model = TinyTransformer(tasks.N_TOKENS, d_model=32, n_layers=3, n_heads=2, rope=rope, mlp=True)
    tokens = torch.randint(0, tasks.N_TOKENS, (4, 11))
    assert model(tokens).shape == (4, 11, tasks.N_TOKENS)
    weights = model.attention_weights()
    assert len(weights) == 3 and all(w.shape == (4, 2, 11, 11) for w in weights)
    logits, weights = model.attention(tokens[0])
    assert logits.shape == (11, tasks.N_TOKENS) and weights[0].shape == (2, 11, 11)


@pytest.mark.parametrize("rope", [True, False])
def test_future_tokens_never_change_earlier_logits(rope):
    torch.manual_seed(0)
    model = TinyTransformer(tasks.N_TOKENS, rope=rope).eval()
    tokens = torch.randint(1, tasks.N_TOKENS, (2, 20))
    changed = tokens.clone()
    changed[:, 12:] = torch.randint(1, tasks.N_TOKENS, (2, 8))
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    assert torch.allclose(a[:, :12], b[:, :12], atol=1e-6)
    assert not torch.allclose(a[:, 12:], b[:, 12:], atol=1e-3)
    # the same test catches a model that can see the future
    leaky = TinyTransformer(tasks.N_TOKENS, rope=rope, causal=False).eval()
    with torch.no_grad():
        assert not torch.allclose(leaky(tokens)[:, :12], leaky(changed)[:, :12], atol=1e-3)


def test_per_token_loss_matches_cross_entropy():
    logits = torch.randn(3, 6, 10)
    tokens = torch.randint(0, 10, (3, 6))
    loss = per_token_loss(logits, tokens)
    assert loss.shape == (3, 5)
    assert torch.isclose(loss[1, 2], F.cross_entropy(logits[1, 2], tokens[1, 3]))
    uniform = per_token_loss(torch.zeros(6, 10), tokens[0])
    assert torch.allclose(uniform, torch.full((5,), math.log(10)))


def test_repeated_blocks_copyable_tokens_repeat():
    gen = torch.Generator().manual_seed(0)
    tokens, copyable = tasks.repeated_blocks(gen, 4, T=45, min_len=7, max_len=7)
    assert tokens.shape == copyable.shape == (4, 45)
    assert torch.all(tokens[:, 0] == tasks.BOS) and torch.all(tokens[:, 1:] > 0)
    t = torch.nonzero(copyable[0]).flatten()
    assert len(t) == 3 * 6  # 3 blocks of 7 fit: 6 copyable tokens each
    assert torch.all(tokens[0, t] == tokens[0, t - 7])
    assert torch.all(tokens[0, t - 1] == tokens[0, t - 8])  # predictable from the previous copy
    rep = tasks.repeat_twice(gen, 2, 5)
    assert rep.shape == (2, 11) and torch.all(rep[:, 1:6] == rep[:, 6:])


def _short_run(seed):
    torch.manual_seed(seed)
    model = TinyTransformer(tasks.N_TOKENS, d_model=32, n_heads=2)
    history = train(
        model, tasks.induction_batches(batch=8, T=33), steps=15, seed=seed, progress=False
    )
    return model, history


def test_training_is_deterministic_from_a_seed():
    model_a, hist_a = _short_run(0)
    model_b, hist_b = _short_run(0)
    assert hist_a["loss"] == hist_b["loss"]
    for (name, p), q in zip(
        model_a.state_dict().items(), model_b.state_dict().values(), strict=True
    ):
        assert torch.equal(p, q), name
    _, hist_c = _short_run(1)
    assert hist_c["loss"] != hist_a["loss"]


def test_the_written_out_adamw_is_torch_optims_to_the_last_bit():
    torch.manual_seed(0)
    start = [torch.randn(4, 3), torch.randn(5), torch.randn(2)]  # the last never gets a gradient
    mine = [p.clone().requires_grad_() for p in start]
    ref = [p.clone().requires_grad_() for p in start]
    adamw = AdamW(mine, weight_decay=0.1)
    optimiser = torch.optim.AdamW(ref, lr=3e-3, weight_decay=0.1, betas=(0.9, 0.98))
    for step in range(1, 8):
        lr = 3e-3 * min(1.0, step / 3)  # a warm-up changes the rate between steps
        for params in (mine, ref):
            ((params[0] ** 3).sum() + (params[1].sin() * step).sum()).backward()
        adamw.step(lr)
        optimiser.param_groups[0]["lr"] = lr
        optimiser.step()
        optimiser.zero_grad()
    assert all(torch.equal(a, b) for a, b in zip(mine, ref, strict=True))
    assert torch.equal(mine[2], start[2])


def test_training_lowers_the_loss_and_logs_the_callback():
    torch.manual_seed(0)
    model = TinyTransformer(tasks.N_TOKENS, d_model=32, n_heads=2)
    seen = []

    def callback(step, m):
        seen.append((step, m.training, torch.is_grad_enabled()))
        return {"score": step / 100}

    history = train(
        model,
        tasks.induction_batches(batch=8, T=33),
        steps=60,
        lr=1e-2,
        progress=False,
        callback=callback,
        every=20,
    )
    assert history["eval_step"] == [0, 20, 40, 60] and history["score"] == [0, 0.2, 0.4, 0.6]
    assert all(not training and not grad for _, training, grad in seen)
    assert sum(history["loss"][-10:]) < sum(history["loss"][:10])
    assert history["seconds"] > 0 and not model.training


def test_a_model_without_positions_has_neither_rope_nor_learned_positions():
    model = TinyTransformer(tasks.N_TOKENS, rope=False, learned_positions=False)
    assert model.pos_embed is None and not any(b.attn.rope for b in model.blocks)
    assert TinyTransformer(tasks.N_TOKENS, rope=False).pos_embed is not None  # as before
    with pytest.raises(ValueError, match="one kind of positions"):
        TinyTransformer(tasks.N_TOKENS, rope=True, learned_positions=True)


@pytest.mark.parametrize(("rope", "blind"), [(False, True), (True, False)])
def test_without_positions_the_first_layer_sees_only_the_set_of_earlier_tokens(rope, blind):
    """Shuffling the tokens before t leaves layer 0's output at t unchanged, unless RoPE."""
    torch.manual_seed(0)
    model = TinyTransformer(tasks.N_TOKENS, rope=rope, learned_positions=False).eval()
    tokens = torch.randint(1, tasks.N_TOKENS, (12,))
    shuffled = torch.cat([tokens[:8][torch.randperm(8)], tokens[8:]])
    with torch.no_grad():
        a, b = (model.blocks[0](model.embed(t)) for t in (tokens, shuffled))
    assert torch.allclose(a[8:], b[8:], atol=1e-6) == blind
    assert not torch.allclose(a[:8], b[:8], atol=1e-3)


def test_training_runs_on_the_chosen_threads_and_restores_them():
    from attnlib.train import TRAIN_THREADS

    before = torch.get_num_threads()
    seen = []
    model = TinyTransformer(tasks.N_TOKENS, d_model=16, n_heads=2, n_layers=1)

    def callback(step, m):
        seen.append(torch.get_num_threads())

    history = train(
        model, tasks.induction_batches(batch=2, T=17), steps=2, progress=False, callback=callback
    )
    assert seen and set(seen) == {TRAIN_THREADS} == {history["threads"]}
    assert torch.get_num_threads() == before


def test_an_interrupted_save_keeps_the_weights_that_were_there(tmp_path, monkeypatch):
    """`make data` stopped while writing a model (Ctrl-C): the old weights stay whole."""
    path = tmp_path / "model.pt"
    old = torch.nn.Linear(2, 2)
    save_weights(old, path)

    def stopped(state, file):
        open(file, "wb").write(b"half a model")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", stopped)
    with pytest.raises(KeyboardInterrupt):
        save_weights(torch.nn.Linear(2, 2), path)
    assert torch.equal(torch.load(path)["weight"], old.weight.detach())
