# attnlib is untyped (pyproject checks only grader/ and hub/): its calls are Any here.
# mypy: disable-error-code="no-untyped-call"
"""Every layer-1 head of a trained recipe's saved weights, on the held-out text of
:mod:`.evaluate`: induction score at each period, the held-out loss it costs when ablated
(whether one head copies or several share the work), and where its second-copy queries
look: the induction position, BOS, the first copy in all (batch mean). Then the same scores
on repeats of random tokens instead of held-out text (the usual test of an induction head,
where the token to match on rarely recurs in r): is the head soft, or is the text ambiguous?

``python -m recipes.real_text_induction.heads <recipe module name> [--seed 0]``
"""

import argparse
import importlib
from pathlib import Path

import torch

from attnlib import realsource
from attnlib.factory import realsource as source_factory
from attnlib.realtext import BOS
from recipes.real_text_induction.common import Recipe, build, tokenize
from recipes.real_text_induction.evaluate import (
    INDUCTION_LAYER,
    PERIODS,
    REPEAT_BATCH,
    mean_loss,
    repeat_scores,
)


def split(model: torch.nn.Module, tokens: torch.Tensor, period: int, head: int) -> str:
    """Where head ``(1, head)``'s second-copy queries put their weight on ``[BOS] + r + r``."""
    _, weights = model.attention(tokens)  # type: ignore[operator]
    A = weights[INDUCTION_LAYER][:, head]  # [B, T, T]
    rows = torch.arange(period + 1, 2 * period + 1)
    shares = {
        "induction": A[:, rows, rows - period + 1],
        "BOS": A[:, rows, 0],
        "first copy": A[:, rows, 1 : period + 1].sum(-1),
    }
    return " ".join(f"{k} {v.mean().item():.3f}" for k, v in shares.items())


def random_repeats(vocab: int, period: int) -> torch.Tensor:
    """``[BOS] + r + r``, r ``period`` uniformly random non-BOS tokens, batch 64 (seed 0)."""
    r = torch.randint(1, vocab, (REPEAT_BATCH, period), generator=torch.Generator().manual_seed(0))
    return torch.cat([torch.full((REPEAT_BATCH, 1), BOS), r, r], 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("recipe", help="a module of this folder, e.g. curriculum_short_then_long")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/real_text_induction"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    module = importlib.import_module(f"recipes.real_text_induction.{args.recipe}")
    recipe: Recipe = module.RECIPE
    train_text, _, _ = source_factory.collect_corpus()
    _, vocab, held = tokenize(recipe, train_text)
    model = build(recipe, vocab, args.seed)
    weights = torch.load(args.out / f"{recipe.name}_seed_{args.seed}.pt", weights_only=True)
    model.load_state_dict(weights)
    model.eval()
    scores = {p: repeat_scores(model, held.repeats[p], p)[0] for p in PERIODS}
    base = mean_loss(model, held.natural)
    for head in range(len(scores[PERIODS[0]])):
        ablated = realsource.without_head(model, INDUCTION_LAYER, head)
        cost = (mean_loss(ablated, held.natural) - base) * held.natural_tokens_per_char
        induction = " ".join(f"induction_{p} {scores[p][head]:.3f}" for p in PERIODS)
        print(f"head {INDUCTION_LAYER}.{head}: {induction} ablation {cost:+.4f}")
        for p in PERIODS:
            print(f"    period {p}: {split(model, held.repeats[p], p, head)}")
    for p in PERIODS:
        per_head, gain = repeat_scores(model, random_repeats(vocab, p), p)
        listed = " ".join(f"{x:.3f}" for x in per_head)
        print(f"random tokens, period {p}: induction of each head {listed}; gain {gain:.3f}/token")


if __name__ == "__main__":
    main()
