"""The course's trained tiny transformers: their recipes, their weights in ``data/``, their cards.

Two models share one recipe and differ only in positions:

- ``"induction"`` (the default): rotary positions (RoPE). Notebook 08 reads its maps.
- ``"no_positions"``: no positional information at all, neither RoPE nor learned
  positions. Notebook 07 compares the two.

``load_shipped(name)`` returns a trained model (no training, a fraction of a second).
``train_shipped(name=...)`` retrains one from scratch with the same recipe, on one core
(``attnlib.train.TRAIN_THREADS``; `make bench` times it). ``python -m attnlib.factory --retrain``
(= ``make data``, :mod:`attnlib.factory.make_data`) retrains both, and notebook 10's real-text
models, and rewrites their weights and model cards in ``data/``; ``--cards`` rewrites only the
cards' ``.md`` from their JSON.
"""

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnlib import tasks
from attnlib.model import TinyTransformer
from attnlib.paths import data_file
from attnlib.patterns import repeat_templates, template_score
from attnlib.train import per_token_loss, train_recipe

RECIPE: dict[str, Any] = dict(
    seed=0,
    model=dict(
        vocab=tasks.N_TOKENS, d_model=64, n_layers=2, n_heads=4, causal=True, rope=True, mlp=False
    ),
    data=dict(batch=32, T=65, vocab=tasks.VOCAB, min_len=8, max_len=32),
    optim=dict(steps=1000, lr=3e-3, weight_decay=0.1, warmup=100),
    eval=dict(seed=999, batch=64, period=32, every=50),
)
NO_POSITIONS_RECIPE = {
    **RECIPE,
    "model": {**RECIPE["model"], "rope": False, "learned_positions": False},
}


@dataclass(frozen=True)
class Shipped:
    """One shipped model: its recipe, and its files in ``data/``."""

    recipe: dict[str, Any]
    weights: str  # the state dict
    card: str  # the model card's file stem: <card>.json and <card>.md
    title: str
    positions: str  # how the model tells positions apart, for the card


MODELS = {
    "induction": Shipped(
        RECIPE, "tiny_induction.pt", "model_card", "tiny induction transformer", "RoPE"
    ),
    "no_positions": Shipped(
        NO_POSITIONS_RECIPE,
        "tiny_no_positions.pt",
        "model_card_no_positions",
        "tiny transformer without positions",
        "no positions (neither RoPE nor learned positions)",
    ),
}
DEFAULT = "induction"


def _shipped(name: str) -> Shipped:
    if name not in MODELS:
        raise ValueError(f"No shipped model {name!r}; the course ships {', '.join(MODELS)}.")
    return MODELS[name]


def build_model(name: str = DEFAULT, seed: int | None = None) -> TinyTransformer:
    """A fresh, untrained model of the recipe's shape, initialised from ``seed`` (default:
    the recipe's)."""
    recipe = _shipped(name).recipe
    torch.manual_seed(recipe["seed"] if seed is None else seed)
    return TinyTransformer(**recipe["model"])


def eval_tokens(
    seed: int = RECIPE["eval"]["seed"],
    batch: int = RECIPE["eval"]["batch"],
    period: int = RECIPE["eval"]["period"],
) -> Tensor:
    """The evaluation batch: ``[BOS] + r + r``, ``[batch, 2·period + 1]``."""
    return tasks.repeat_twice(torch.Generator().manual_seed(seed), batch, period)


@torch.no_grad()
def evaluate(
    model: TinyTransformer, tokens: Tensor | None = None, period: int = RECIPE["eval"]["period"]
) -> dict[str, Any]:
    """Losses on the two copies and template scores of every head (batch-mean pattern)."""
    tokens = eval_tokens(period=period) if tokens is None else tokens
    logits, weights = model.attention(tokens)
    loss = per_token_loss(logits, tokens)  # [B, T-1]; index t scores the token at t+1
    templates = repeat_templates(period)
    heads = []
    for layer, W in enumerate(weights):
        mean_pattern = W.mean(0).numpy()  # [n_heads, T, T]
        for head, A in enumerate(mean_pattern):
            scores = {name: round(template_score(A, P), 4) for name, P in templates.items()}
            heads.append(dict(layer=layer, head=head, **scores))
    return dict(
        loss_first_copy=round(loss[:, :period].mean().item(), 4),  # unpredictable: ln V at best
        loss_second_copy=round(loss[:, period + 1 :].mean().item(), 4),  # copyable
        ln_vocab=round(math.log(tasks.VOCAB), 4),
        heads=heads,
    )


def progress_callback(step: int, model: TinyTransformer) -> dict[str, float]:
    """Numbers to log while training: copyable loss, best previous-token and induction."""
    result = evaluate(model, eval_tokens(batch=32))
    return {
        "loss on the second copy": result["loss_second_copy"],
        "previous-token score (best layer-0 head)": max(
            h["previous"] for h in result["heads"] if h["layer"] == 0
        ),
        "induction score (best layer-1 head)": max(
            h["induction"] for h in result["heads"] if h["layer"] == 1
        ),
    }


def train_shipped(
    progress: bool = True,
    live_plot: bool = False,
    callback: Callable[[int, TinyTransformer], dict[str, float]] | None = progress_callback,
    steps: int | None = None,
    every: int | None = None,
    name: str = DEFAULT,
) -> tuple[TinyTransformer, dict[str, Any]]:
    """Train model ``name``'s recipe from scratch; returns ``(model, history)``.
    Deterministic. ``callback(step, model)`` runs every ``every`` steps (default: the
    recipe's 50)."""
    recipe = _shipped(name).recipe
    model = build_model(name)
    history = train_recipe(
        model,
        tasks.induction_batches(**recipe["data"]),
        recipe,
        steps,
        progress=progress,
        live_plot=live_plot,
        callback=callback,
        every=every or recipe["eval"]["every"],
    )
    return model, history


def load_shipped(name: str = DEFAULT) -> TinyTransformer:
    """The trained model ``name`` from ``data/`` (eval mode)."""
    model = build_model(name)
    path = data_file(_shipped(name).weights)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


def load_card(name: str = DEFAULT) -> dict[str, Any]:
    """Model ``name``'s card as a dict (recipe, timings, losses, per-head scores, log)."""
    card: dict[str, Any] = json.loads(data_file(_shipped(name).card + ".json").read_text())
    return card
