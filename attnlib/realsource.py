"""A tiny transformer on real text in which induction heads form: Python source code.

The corpus is the Python source of the standard library this interpreter runs on (PSF
licence, offline on every machine with Python), collected deterministically: the ``.py``
files of :func:`attnlib.factory.realtext.source_files` in sorted order, tabs as four spaces, files
with characters outside printable ASCII left out, joined by newlines; every 20th file is
held out. A sample of the held-out text ships in ``data/``, so evaluations read the same
text on any Python. Characters are tokens, as in :mod:`attnlib.realtext`.

Source code repeats itself (names, calls, quoted code), but rarely so that a 2-layer model
of 128 characters is paid to copy long stretches: the recipe of notebook 10's docstring
model, and three more on source, gave no induction head (docs/real_text_recipes.md). So
training windows are *augmented*: their text comes in blocks, each stretch of the source
(``min_len`` … ``max_len`` characters) twice before the next, as notebook 08's toy repeats its
random blocks (:func:`windows_with_repeats`). The first copy of every stretch is real source,
in order; the second can be predicted by copying. ``data.repeat_share`` of the windows are
augmented.

``load(seed)`` returns a trained model; ``python -m attnlib.factory --retrain`` (``make
data``, :mod:`attnlib.factory.realsource`) retrains both seeds, one per core, and writes their
weights and cards. Each card also holds the numbers of the model's plain-window twin
(:mod:`attnlib.factory.plain_twin`).
"""

import copy
import json
import re
from typing import Any, cast

import torch
from torch import Tensor

from attnlib import realtext
from attnlib.model import Block, TinyTransformer
from attnlib.paths import data_file
from attnlib.patterns import offset_template, repeat_templates, template_score
from attnlib.realtext import BOS, N_TOKENS, encode
from attnlib.train import per_token_loss

T = 128
RECIPE: dict[str, Any] = dict(
    seed=0,
    model=dict(
        vocab=N_TOKENS, d_model=64, n_layers=2, n_heads=4, causal=True, rope=True, mlp=False
    ),
    data=dict(batch=16, T=T, repeat_share=1.0, min_len=8, max_len=32),
    optim=dict(steps=4000, lr=1e-2, weight_decay=0.1, warmup=100, decay_to=0.1),
    eval=dict(period=32, batch=64, every=200),
)
NAME = "real_text_induction"
SEEDS = (0, 1)
SAMPLE, SAMPLE_CHARS = "real_source_heldout.txt", 64_000
NATURAL = 32  # held-out windows of T characters for the natural-text evaluation


def run_name(seed: int = 0) -> str:
    """The files' stem of seed ``seed``: ``real_text_induction`` (seed 0), ``…_seed_1``."""
    if seed not in SEEDS:
        raise ValueError(f"No real-source model of seed {seed}; there are seeds {SEEDS}.")
    return NAME if seed == 0 else f"{NAME}_seed_{seed}"


NAMES = {run_name(seed): seed for seed in SEEDS}


def recipe(seed: int = 0) -> dict[str, Any]:
    run_name(seed)  # refuses an unknown seed
    return {**RECIPE, "seed": seed}


def held_out_sample() -> str:
    """The held-out source shipped in ``data/`` (identical on every Python)."""
    return data_file(SAMPLE).read_text()


def windows_with_repeats(
    ids: Tensor,
    gen: torch.Generator,
    batch: int,
    T: int,
    repeat_share: float,
    min_len: int,
    max_len: int,
) -> Tensor:
    """``[batch, T]``: BOS + T − 1 characters from a random offset of ``ids``. In a share
    ``repeat_share`` of the rows the text comes in blocks, each stretch twice: ``s₁ s₁ s₂ s₂
    …``, the stretches consecutive in ``ids``, L ~ U{min_len…max_len} characters each, the row
    cut to T − 1 characters (notebook 08's toy data, with text instead of random tokens)."""
    if not 0 < min_len <= max_len:
        raise ValueError(f"stretch lengths must be positive and ordered: {min_len}…{max_len}")
    n = T - 1
    starts = torch.randint(0, len(ids) - n + 1, (batch,), generator=gen).tolist()
    rows = []
    for s in starts:
        if torch.rand((), generator=gen).item() >= repeat_share:
            rows.append(ids[s : s + n])
            continue
        blocks, at = [], s
        while 2 * (at - s) < n:
            L = int(torch.randint(min_len, max_len + 1, (), generator=gen))
            blocks += [ids[at : at + L]] * 2
            at += L
        rows.append(torch.cat(blocks)[:n])
    return torch.cat([torch.full((batch, 1), BOS), torch.stack(rows)], 1)


def repeat_tokens(
    batch: int = RECIPE["eval"]["batch"], period: int = RECIPE["eval"]["period"]
) -> Tensor:
    """``[BOS] + r + r``, ``r`` ``period`` consecutive held-out characters:
    ``[batch, 2·period + 1]`` (consecutive, non-overlapping stretches of the sample)."""
    r = encode(held_out_sample()[: batch * period]).reshape(batch, period)
    return torch.cat([torch.full((batch, 1), BOS), r, r], 1)


def repeat_with_gap(batch: int, length: int, gap: int) -> Tensor:
    """``[BOS] + r + g + r``: ``r`` ``length`` consecutive held-out characters, ``g`` the
    ``gap`` characters that follow them in the text, so each character of the second copy
    is ``length + gap`` positions after its first: ``[batch, 2·length + gap + 1]``."""
    n = length + gap
    text = encode(held_out_sample()[: batch * n]).reshape(batch, n)
    return torch.cat([torch.full((batch, 1), BOS), text, text[:, :length]], 1)


@torch.no_grad()
def copy_at_distance(
    model: TinyTransformer, length: int, gap: int, batch: int = RECIPE["eval"]["batch"]
) -> tuple[float, float]:
    """How ``model`` copies over ``length + gap`` positions, on :func:`repeat_with_gap`:
    ``(score, gain)``, the best layer-1 head's induction score on the second copy, and the
    loss on the first copy minus the loss on the second (nats per character, scored as
    :func:`evaluate` scores them: ``gap = 0`` is ``[BOS] + r + r``)."""
    tokens = repeat_with_gap(batch, length, gap)
    distance, T_all = length + gap, tokens.shape[1]
    logits, weights = model.attention(tokens)
    loss = per_token_loss(logits, tokens)  # index t scores token t + 1
    induction = offset_template(T_all, distance - 1, range(distance + 1, T_all))
    score = max(template_score(A, induction) for A in weights[1].mean(0).numpy())
    return score, (loss[:, :length].mean() - loss[:, distance + 1 :].mean()).item()


def natural_tokens(batch: int = NATURAL, T: int = T) -> Tensor:
    """``[batch, T]``: BOS + consecutive stretches of the held-out sample's second half
    (no augmentation: the text as it is)."""
    text = held_out_sample()[SAMPLE_CHARS // 2 :]
    return realtext._stretches(encode(text), batch, T)


@torch.no_grad()
def evaluate(
    model: TinyTransformer, tokens: Tensor | None = None, period: int = RECIPE["eval"]["period"]
) -> dict[str, Any]:
    """Losses on the two copies of ``[BOS] + r + r`` and every head's template scores
    (batch-mean pattern), as :func:`attnlib.shipped.evaluate` scores the toy."""
    tokens = repeat_tokens(period=period) if tokens is None else tokens
    logits, weights = model.attention(tokens)
    loss = per_token_loss(logits, tokens)
    templates = repeat_templates(period)
    heads = [
        dict(layer=layer, head=head, **{k: template_score(A, P) for k, P in templates.items()})
        for layer, W in enumerate(weights)
        for head, A in enumerate(W.mean(0).numpy())
    ]
    first, second = loss[:, :period].mean().item(), loss[:, period + 1 :].mean().item()
    return dict(loss_first_copy=first, loss_second_copy=second, gain=first - second, heads=heads)


def progress_callback(
    step: int, model: TinyTransformer, natural: Tensor | None = None
) -> dict[str, float]:
    """The training log: the best layer-1 induction score, both copies' losses, and the
    loss on held-out text as it is."""
    result = evaluate(model)
    natural = natural_tokens() if natural is None else natural
    return {
        "induction score (best layer-1 head)": max(
            h["induction"] for h in result["heads"] if h["layer"] == 1
        ),
        "loss on the first copy": result["loss_first_copy"],
        "loss on the second copy": result["loss_second_copy"],
        "held-out loss": per_token_loss(model(natural), natural).mean().item(),
    }


def build_model(seed: int = 0) -> TinyTransformer:
    torch.manual_seed(seed)
    return TinyTransformer(**RECIPE["model"], max_len=T)


def load(seed: int = 0) -> TinyTransformer:
    """Seed ``seed``'s trained model from ``data/`` (eval mode)."""
    model = build_model(seed)
    path = data_file(f"{run_name(seed)}.pt")
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


def load_card(seed: int = 0) -> dict[str, Any]:
    card: dict[str, Any] = json.loads(data_file(f"model_card_{run_name(seed)}.json").read_text())
    return card


def identifier_repeats(tokens: Tensor) -> tuple[Tensor, Tensor]:
    """``[B, T − 1]`` bool over :func:`attnlib.train.per_token_loss`'s targets: True on the
    characters (after the first) of an identifier of 4 or more characters whose earlier
    occurrence lies in the same row; ``first`` the same for first occurrences that recur."""
    second = torch.zeros(tokens.shape[0], tokens.shape[1] - 1, dtype=torch.bool)
    first = second.clone()
    for b, row in enumerate(tokens):
        text = realtext.decode(row[1:])  # position p of text is token p + 1
        seen: dict[str, slice] = {}
        for match in re.finditer(r"\b[A-Za-z_]\w{3,}\b", text):
            start, end = match.span()
            targets = slice(start + 1, end)  # target index p scores token p + 1 = text[p]
            if match.group() in seen:
                second[b, targets] = True
                first[b, seen[match.group()]] = True
            else:
                seen[match.group()] = targets
    return first, second


@torch.no_grad()
def without_head(model: TinyTransformer, layer: int, head: int) -> TinyTransformer:
    """A copy of ``model`` whose head ``(layer, head)`` writes nothing (its block of W_O
    columns zeroed): the head ablated."""
    ablated = copy.deepcopy(model)
    attn = cast(Block, ablated.blocks[layer]).attn
    assert attn.W_O is not None, "a head is ablated through its block of W_O"
    attn.W_O.weight[:, head * attn.d_head : (head + 1) * attn.d_head] = 0.0
    return ablated
