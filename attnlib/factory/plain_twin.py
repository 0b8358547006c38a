"""The plain-window twin of notebook 10's source model: what the repeated blocks cost.

The shipped source model (:mod:`attnlib.realsource`) trains on windows made of repeated
stretches. Its twin is the same recipe with ``repeat_share`` 0 (windows of source as it is):
same model, seed, steps, batches, learning rate and held-out sample. It is trained here,
not by ``make data`` (which is long already), and not shipped: only its numbers are kept,
under ``"plain_twin"`` in the shipped model's card of the same seed, which
``make data`` carries over when it retrains the shipped model. Notebook 10 and the rendered
card read them from there.

``python -m attnlib.factory.plain_twin --seed 0`` trains seed 0's twin on one torch thread (3 min on
an idle core, 7 min on a busy one) and writes its numbers into
``data/model_card_real_text_induction.json`` and the ``.md`` rendered from it; ``--seed 1``
the same for ``…_seed_1``.
"""

import argparse
import json
import os
import time
from typing import Any

import torch

from attnlib import realsource
from attnlib.factory import realsource as source_factory
from attnlib.factory.make_data import card_markdown
from attnlib.model import TinyTransformer
from attnlib.paths import data_dir
from attnlib.train import per_token_loss, run_facts

SCRIPT = "python -m attnlib.factory.plain_twin"
# The periods of notebook 10's sweep of [BOS] + r + r (its "how far back" cell).
PERIODS = (8, 16, 24, 32, 40, 48, 64, 96)
KEY = "plain_twin"
UNLOGGED = ("step", "loss", "eval_step", "seconds", "threads")  # as the shipped card's log


def recipe(seed: int = 0) -> dict[str, Any]:
    """The shipped recipe of seed ``seed`` with no repeated blocks."""
    r = realsource.recipe(seed)
    return {**r, "data": {**r["data"], "repeat_share": 0.0}}


@torch.no_grad()
def measure(model: TinyTransformer) -> dict[str, Any]:
    """What notebook 10 reads of the shipped model, measured on ``model``: the held-out loss
    on source as it is, and on ``[BOS] + r + r`` the best layer-1 induction score and gain
    at each period of notebook 10's sweep (``"32"`` etc.: JSON keys are strings)."""
    natural = realsource.natural_tokens()
    result = realsource.evaluate(model)
    sweep = {str(p): realsource.copy_at_distance(model, p, 0) for p in PERIODS}
    return dict(
        held_out_loss=round(per_token_loss(model(natural), natural).mean().item(), 6),
        loss_first_copy=round(result["loss_first_copy"], 6),
        loss_second_copy=round(result["loss_second_copy"], 6),
        periods={p: dict(induction=round(s, 4), gain=round(g, 4)) for p, (s, g) in sweep.items()},
    )


def train_twin(
    seed: int = 0, steps: int | None = None, progress: bool = True
) -> tuple[dict[str, Any], TinyTransformer]:
    """Train seed ``seed``'s twin: ``(entry for the card, model)``."""
    load_before = os.getloadavg()[0]
    model, history, _ = source_factory.train_source(seed, steps, progress, recipe(seed))
    busy = max(load_before, os.getloadavg()[0])
    entry = dict(
        script=f"{SCRIPT} --seed {seed}",
        recipe=recipe(seed),
        **run_facts(model, history, busy),
        **measure(model),
        log=dict(
            step=history["eval_step"],
            **{k: [round(x, 4) for x in v] for k, v in history.items() if k not in UNLOGGED},
        ),
    )
    return entry, model


def write(seed: int, entry: dict[str, Any]) -> None:
    """``entry`` into the shipped card of ``seed`` (JSON, and the ``.md`` from it)."""
    card = realsource.load_card(seed)
    card[KEY] = entry
    stem = data_dir() / f"model_card_{realsource.run_name(seed)}"
    stem.with_suffix(".json").write_text(json.dumps(card, indent=1) + "\n")
    stem.with_suffix(".md").write_text(card_markdown(realsource.run_name(seed)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m attnlib.factory.plain_twin", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--seed", type=int, choices=realsource.SEEDS, required=True)
    parser.add_argument("--steps", type=int, help="a short trial run: print, write nothing")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # the evaluations too: a fair share of a shared machine
    start = time.perf_counter()
    entry, _ = train_twin(args.seed, args.steps)
    took = time.perf_counter() - start
    summary = {k: entry[k] for k in ("train_seconds", "load_average", "held_out_loss")}
    print(f"plain twin, seed {args.seed} ({took:.0f} s in all): {summary}")
    print("periods:", entry["periods"])
    if args.steps is None:
        write(args.seed, entry)
        print(f"wrote it into model_card_{realsource.run_name(args.seed)}.json")


if __name__ == "__main__":
    main()
