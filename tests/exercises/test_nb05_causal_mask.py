"""Notebook 05's exercises: the catalogue's mistakes are named, its alternatives pass, and the
model section uses only what notebooks 01–05 teach."""

import math

import nbformat
import torch
from catalogue import catalogue_tests

from attnlib.model import TinyTransformer
from grader.course import source_path

NB = "05_causal_mask"

test_mistake_is_named, test_alternative_passes = catalogue_tests(NB)


# ---------------------------------------------------------------- prose against output
def _cells():
    return nbformat.read(source_path(NB), as_version=4).cells


def test_the_trained_model_has_one_head_and_learned_positions_as_described():
    """Issue 24: 05 trained a 2-head RoPE model before 06 (the formula) and 07 (heads, RoPE)."""
    code = "\n".join(c.source for c in _cells() if c.cell_type == "code")
    assert code.count("TinyTransformer(") == 1 and "n_heads=1, causal=causal, rope=False" in code
    model = TinyTransformer(17, d_model=32, n_layers=1, n_heads=1, rope=False)
    (block,) = model.blocks
    assert model.pos_embed is not None and not block.attn.rope and block.attn.n_heads == 1


def test_the_attention_layer_is_the_formula_the_prose_gives():
    """The prose says the layer computes softmax(QKᵀ/√d_k + M) V with this notebook's mask."""
    torch.manual_seed(0)
    attn = TinyTransformer(17, d_model=32, n_layers=1, n_heads=1, rope=False).blocks[0].attn
    X = torch.randn(7, 32)
    M = torch.full((7, 7), -math.inf).triu(1)
    Q, K, V = attn.W_Q(X), attn.W_K(X), attn.W_V(X)
    want = attn.W_O(torch.softmax(Q @ K.T / math.sqrt(32) + M, dim=-1) @ V)
    with torch.no_grad():
        torch.testing.assert_close(attn(X), want.detach())


def test_the_loss_is_defined_before_the_first_training_and_no_later_piece_is_named():
    cells = _cells()
    prose = " ".join(c.source for c in cells if c.cell_type == "markdown")
    defined = next(i for i, c in enumerate(cells) if "−ln p" in c.source)
    trained = next(i for i, c in enumerate(cells) if "train(" in c.source)
    first_loss = next(
        i for i, c in enumerate(cells) if c.cell_type == "markdown" and "loss" in c.source.lower()
    )
    assert first_loss == defined < trained
    for later in ("2 heads", "single-head", "RoPE", "rotary"):
        assert later not in prose
