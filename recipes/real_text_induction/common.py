# attnlib is untyped (pyproject checks only grader/ and hub/): its calls are Any here.
# mypy: disable-error-code="no-untyped-call"
"""What every recipe here shares: the data phases, the training run and its log.

A recipe is a list of :class:`Phase` (its data, in order), an optimiser and a tokenization
(characters, or ``bpe_merges`` merges of :mod:`.bpe`); the model is the shipped source
model's (2 layers, 4 heads, d_model 64, attention only, RoPE) with a longer context.
One cosine learning-rate schedule spans all phases, so a curriculum differs from
its plain-window twin only in the data of its early steps.
"""

import argparse
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from attnlib import realsource, realtext
from attnlib.factory import realsource as source_factory
from attnlib.model import TinyTransformer
from attnlib.train import train
from recipes.real_text_induction.bpe import Tokenizer, learn_merges
from recipes.real_text_induction.evaluate import HeldOut, char_held_out, held_out, items

RUNS = Path(__file__).with_name("runs")  # each run's log (JSON, a few KB)


@dataclass(frozen=True)
class Phase:
    """``steps`` steps of windows of which a share ``repeat_share`` come in blocks
    ``s₁ s₁ s₂ s₂ …`` (stretches of ``min_len … max_len`` characters); 0 = text as it is."""

    steps: int
    repeat_share: float = 0.0
    min_len: int = 8
    max_len: int = 32


def short_then_long(long_steps: int = 1000, plain_steps: int = 4000) -> tuple[Phase, ...]:
    """The curriculum of every ``curriculum_*`` recipe: 1000 steps of blocks of 8–32 tokens,
    ``long_steps`` of 8–128, then ``plain_steps`` of text as it is."""
    return (
        Phase(1000, repeat_share=1.0, min_len=8, max_len=32),
        Phase(long_steps, repeat_share=1.0, min_len=8, max_len=128),
        Phase(plain_steps),
    )


@dataclass(frozen=True)
class Recipe:
    name: str
    phases: tuple[Phase, ...]
    T: int = 256
    batch: int = 16
    lr: float = 1e-2
    decay_to: float = 0.1
    warmup: int = 100
    weight_decay: float = 0.1
    every: int = 250  # steps between two evaluations of items 1–3
    bpe_merges: int = 0  # 0: characters are tokens
    rope_layers: tuple[int, ...] = (0, 1)  # layers whose queries and keys RoPE rotates
    model: dict[str, int] = field(default_factory=lambda: dict(d_model=64, n_layers=2, n_heads=4))

    @property
    def steps(self) -> int:
        return sum(p.steps for p in self.phases)


Batches = Callable[[torch.Generator], torch.Tensor]


def phased_batches(ids: torch.Tensor, recipe: Recipe) -> Batches:
    """``batches(gen)`` for :func:`attnlib.train.train`, which draws one batch per step: the
    calls are counted to know the step, and so the phase."""
    bounds = torch.tensor([p.steps for p in recipe.phases]).cumsum(0).tolist()
    calls = 0

    def batches(gen: torch.Generator) -> torch.Tensor:
        nonlocal calls
        phase = recipe.phases[min(sum(calls >= b for b in bounds), len(bounds) - 1)]
        calls += 1
        if phase.repeat_share == 0:
            tokens: torch.Tensor = realtext.windows(ids, recipe.batch, recipe.T, gen)
            return tokens
        out: torch.Tensor = realsource.windows_with_repeats(
            ids, gen, recipe.batch, recipe.T, phase.repeat_share, phase.min_len, phase.max_len
        )
        return out

    return batches


def build(recipe: Recipe, vocab: int, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    tiny = TinyTransformer(vocab, **recipe.model, rope=True, mlp=False, max_len=recipe.T)
    for layer, block in enumerate(tiny.blocks):
        attn: Any = block.attn  # attnlib's CausalSelfAttention, untyped
        attn.rope = layer in recipe.rope_layers  # a flag read at every call: no weights
    model: torch.nn.Module = tiny
    return model


def tokenize(recipe: Recipe, train_text: str) -> tuple[torch.Tensor, int, HeldOut]:
    """``(training ids, vocabulary size, held-out tokens)`` of the recipe's tokenization."""
    if not recipe.bpe_merges:
        return realtext.encode(train_text), realtext.N_TOKENS, char_held_out(recipe.T)
    tokenizer = Tokenizer(learn_merges(train_text, recipe.bpe_merges))
    held = held_out(recipe.T, tokenizer.encode, tokenizer.lengths())
    return tokenizer.encode(train_text), tokenizer.vocab, held


def run(recipe: Recipe, seed: int, out: Path) -> dict[str, object]:
    """Train ``recipe`` from ``seed`` on one thread, printing items 1–3 at every evaluation;
    write its log to ``runs/`` and its weights to ``out``. Returns the log."""
    train_text, _, _ = source_factory.collect_corpus()
    ids, vocab, held = tokenize(recipe, train_text)
    model = build(recipe, vocab, seed)
    load_before = os.getloadavg()[0]

    def log(step: int, m: torch.nn.Module) -> dict[str, float]:
        result = items(m, held)
        print(f"step {step:6d} " + " ".join(f"{k} {v:.3f}" for k, v in result.items()), flush=True)
        return result

    history = train(
        model,
        phased_batches(ids, recipe),
        recipe.steps,
        lr=recipe.lr,
        weight_decay=recipe.weight_decay,
        warmup=recipe.warmup,
        decay_to=recipe.decay_to,
        seed=seed,
        progress=False,
        callback=log,
        every=recipe.every,
        threads=1,
    )
    keys = ("head", "induction_32", "gain_32", "induction_96", "gain_96", "ablation", "held_out")
    record: dict[str, object] = dict(
        recipe=asdict(recipe),
        seed=seed,
        seconds=round(history["seconds"], 1),
        load_average=round(max(load_before, os.getloadavg()[0]), 2),
        log=dict(step=history["eval_step"], **{k: [round(x, 4) for x in history[k]] for k in keys}),
    )
    RUNS.mkdir(exist_ok=True)
    (RUNS / f"{recipe.name}_seed_{seed}.json").write_text(json.dumps(record, indent=1) + "\n")
    out.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), out / f"{recipe.name}_seed_{seed}.pt")
    return record


def main(recipe: Recipe) -> None:
    parser = argparse.ArgumentParser(description=f"Train recipe {recipe.name} (issue 48).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/real_text_induction"))
    args = parser.parse_args()
    start = time.perf_counter()
    record = run(recipe, args.seed, args.out)
    print(
        f"{recipe.name} seed {args.seed}: {record['seconds']} s training, "
        f"{time.perf_counter() - start:.0f} s in all",
        flush=True,
    )
