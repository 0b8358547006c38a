# attnlib is untyped (pyproject checks only grader/ and hub/): its calls are Any here.
# mypy: disable-error-code="no-untyped-call"
"""The issue's items 1–3, measured by one function for every recipe: :func:`items`.

1. Induction: on ``[BOS] + r + r`` (r consecutive held-out tokens, batch 64) at periods
   32 and 96, each layer-1 head's induction score (batch-mean pattern, as the model cards
   score it) and the second copy's gain (loss on the first copy minus loss on the second,
   per character). "The head" is the layer-1 head whose *smaller* score of the two periods
   is largest: the issue asks for one head that copies from near and far.
2. Pays its way: that head ablated (its W_O columns zeroed), the loss per character over
   all of the held-out source as it is, minus the model's own.
3. Held-out loss per character on the same text; the plain-window twin's is compared in
   the doc.

Held-out text is the shipped sample of held-out source (``data/real_source_heldout.txt``):
its first half makes the repeats, its second half the windows of text as it is. With
characters as tokens a period is in characters; with BPE tokens (:mod:`.bpe`) in tokens,
and losses are converted to nats per character.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from attnlib import realsource
from attnlib.realtext import BOS, encode
from attnlib.train import per_token_loss

PERIODS = (32, 96)
REPEAT_BATCH = 64
INDUCTION_LAYER = 1
HALF = realsource.SAMPLE_CHARS // 2


@dataclass(frozen=True)
class HeldOut:
    """The held-out tokens of one tokenization, built once per run."""

    natural: torch.Tensor  # [n, T]: BOS + consecutive stretches of text as it is
    natural_tokens_per_char: float  # of the targets: 1 for characters
    repeats: dict[int, torch.Tensor]  # period -> [REPEAT_BATCH, 2·period + 1]
    repeat_tokens_per_char: dict[int, float]  # of r, per period


def windows(ids: torch.Tensor, n: int, T: int) -> torch.Tensor:
    """``[n, T]``: BOS + ``n`` consecutive, non-overlapping stretches of ``ids``."""
    chunks = ids[: n * (T - 1)].reshape(n, T - 1)
    return torch.cat([torch.full((n, 1), BOS), chunks], 1)


def held_out(
    T: int, encode: Callable[[str], torch.Tensor], lengths: torch.Tensor | None = None
) -> HeldOut:
    """The held-out sample encoded by ``encode``; ``lengths`` gives each id's characters
    (None: every token is one character)."""
    sample = realsource.held_out_sample()
    text, copies = encode(sample[HALF:]), encode(sample[:HALF])

    def per_char(ids: torch.Tensor) -> float:
        return 1.0 if lengths is None else len(ids) / lengths[ids].sum().item()

    natural = windows(text, len(text) // (T - 1), T)
    repeats = {p: windows(copies, REPEAT_BATCH, p + 1)[:, 1:] for p in PERIODS}
    bos = torch.full((REPEAT_BATCH, 1), BOS)
    return HeldOut(
        natural=natural,
        natural_tokens_per_char=per_char(natural[:, 1:].flatten()),
        repeats={p: torch.cat([bos, r, r], 1) for p, r in repeats.items()},
        repeat_tokens_per_char={p: per_char(r.flatten()) for p, r in repeats.items()},
    )


def char_held_out(T: int) -> HeldOut:
    """The held-out sample with characters as tokens (the shipped models' tokenization)."""
    return held_out(T, encode)


@torch.no_grad()
def mean_loss(model: nn.Module, tokens: torch.Tensor) -> float:
    """Mean next-token loss (nats) over every target of ``tokens``."""
    loss: torch.Tensor = per_token_loss(model(tokens), tokens)
    return loss.mean().item()


def repeat_scores(model: nn.Module, tokens: torch.Tensor, period: int) -> tuple[list[float], float]:
    """``(induction score of each layer-1 head, gain per token)`` on ``[BOS] + r + r``."""
    result: dict[str, Any] = realsource.evaluate(model, tokens, period=period)
    scores = [h["induction"] for h in result["heads"] if h["layer"] == INDUCTION_LAYER]
    return scores, float(result["gain"])


def items(model: nn.Module, held: HeldOut) -> dict[str, float]:
    """Items 1–3 of ``model`` on the held-out text ``held`` (of the model's tokenization)."""
    was_training = model.training
    model.eval()
    per_period = {p: repeat_scores(model, held.repeats[p], p) for p in PERIODS}
    heads = range(len(per_period[PERIODS[0]][0]))
    head = max(heads, key=lambda h: min(per_period[p][0][h] for p in PERIODS))
    base = mean_loss(model, held.natural)
    ablated = mean_loss(realsource.without_head(model, INDUCTION_LAYER, head), held.natural)
    model.train(was_training)
    out: dict[str, float] = {"head": float(head)}
    for p, (scores, gain) in per_period.items():
        out[f"induction_{p}"] = scores[head]
        out[f"gain_{p}"] = gain * held.repeat_tokens_per_char[p]
    out["ablation"] = (ablated - base) * held.natural_tokens_per_char
    out["held_out"] = base * held.natural_tokens_per_char
    return out


def meets(result: dict[str, float], twin_held_out: float) -> dict[str, bool]:
    """Items 1–3 as pass/fail against the issue's thresholds."""
    return {
        "1 induction": all(
            result[f"induction_{p}"] >= 0.4 and result[f"gain_{p}"] >= 1.0 for p in PERIODS
        ),
        "2 ablation": result["ablation"] >= 0.02,
        "3 held-out": result["held_out"] <= twin_held_out + 0.03,
    }
