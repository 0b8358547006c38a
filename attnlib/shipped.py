"""The course's trained tiny transformers: their recipes, their weights in ``data/``, their cards.

Two models share one recipe and differ only in positions:

- ``"induction"`` (the default): rotary positions (RoPE). Notebook 08 reads its maps.
- ``"no_positions"``: no positional information at all, neither RoPE nor learned
  positions. Notebook 07 compares the two.

``load_shipped(name)`` returns a trained model (no training, a fraction of a second).
``train_shipped(name=...)`` retrains one from scratch with the same recipe, on one core
(``attnlib.train.TRAIN_THREADS``; `make bench` times it). ``python -m attnlib.shipped --retrain``
(= ``make data``) retrains both, and notebook 10's real-text models (:mod:`attnlib.realsource`'s
two seeds on Python source first, then :mod:`attnlib.realtext`'s on docstrings), and rewrites
their weights and model cards in ``data/``: one process per model, two at a time (``--jobs``),
each on one thread. Last, it rewrites every card's ``.md`` from its JSON, as ``--cards`` alone
does without training: the real-source cards state how long `make data` took, from every card.
"""

import argparse
import json
import math
import multiprocessing
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import torch

from attnlib import realsource, realtext, tasks
from attnlib.model import TinyTransformer
from attnlib.paths import data_dir, data_file
from attnlib.patterns import heads_table, repeat_templates, template_score
from attnlib.train import per_token_loss, run_facts, save_weights, train_recipe

RECIPE = dict(
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

    recipe: dict
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


def _shipped(name):
    if name not in MODELS:
        raise ValueError(f"No shipped model {name!r}; the course ships {', '.join(MODELS)}.")
    return MODELS[name]


def build_model(name=DEFAULT, seed=None):
    """A fresh, untrained model of the recipe's shape, initialised from ``seed`` (default:
    the recipe's)."""
    recipe = _shipped(name).recipe
    torch.manual_seed(recipe["seed"] if seed is None else seed)
    return TinyTransformer(**recipe["model"])


def eval_tokens(
    seed=RECIPE["eval"]["seed"], batch=RECIPE["eval"]["batch"], period=RECIPE["eval"]["period"]
):
    """The evaluation batch: ``[BOS] + r + r``, ``[batch, 2·period + 1]``."""
    return tasks.repeat_twice(torch.Generator().manual_seed(seed), batch, period)


@torch.no_grad()
def evaluate(model, tokens=None, period=RECIPE["eval"]["period"]):
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


def progress_callback(step, model):
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
    progress=True,
    live_plot=False,
    callback=progress_callback,
    steps=None,
    every=None,
    name=DEFAULT,
):
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


def load_shipped(name=DEFAULT):
    """The trained model ``name`` from ``data/`` (eval mode)."""
    model = build_model(name)
    path = data_file(_shipped(name).weights)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


def load_card(name=DEFAULT):
    """Model ``name``'s card as a dict (recipe, timings, losses, per-head scores, log)."""
    return json.loads(data_file(_shipped(name).card + ".json").read_text())


def _markdown(card, name=DEFAULT):
    shipped = _shipped(name)
    r = card["recipe"]
    m, d, o = r["model"], r["data"], r["optim"]
    lines = [
        f"# Model card: {shipped.title}",
        "",
        "Generated by `python -m attnlib.shipped --retrain` (`make data`); do not edit by hand.",
        "",
        "## Recipe",
        f"- Model: {m['n_layers']} layers, attention only, d_model {m['d_model']}, "
        f"{m['n_heads']} heads, {shipped.positions}, pre-LayerNorm; "
        f"{card['n_params']} parameters.",
        f"- Data: [BOS] + blocks (r, r), r uniform over {d['vocab']} tokens, "
        f"L ~ U{{{d['min_len']}…{d['max_len']}}}, cut to T = {d['T']}; batch {d['batch']}.",
        f"- Optimiser: AdamW lr {o['lr']}, weight decay {o['weight_decay']}, "
        f"betas (0.9, 0.98), {o['warmup']}-step linear warm-up, {o['steps']} steps.",
        f"- Seed {r['seed']}; torch {card['torch']}; trained in {card['train_seconds']:.1f} s "
        f"({card['threads']} torch thread{'s' if card['threads'] > 1 else ''}, "
        f"{card['machine']}, load average {card['load_average']:.1f} during training).",
        "",
        "## Evaluation ([BOS] + r + r, len(r) = "
        f"{r['eval']['period']}, batch {r['eval']['batch']}, seed {r['eval']['seed']})",
        f"- Loss on the first copy {card['loss_first_copy']:.3f} nats (ln {r['data']['vocab']} = "
        f"{card['ln_vocab']:.3f}); on the second copy {card['loss_second_copy']:.3f}.",
        "- Phase change (first logged step with induction score > 0.4): "
        f"{'step ' + str(card['phase_change_step']) if card['phase_change_step'] else 'none'}.",
        "",
        "Per-head scores (share of attention on the pattern, batch-mean pattern):",
        "",
        *heads_table(card["heads"]),
        "",
    ]
    return "\n".join(lines)


def retrain(name=DEFAULT):
    """Retrain model ``name``, save its weights and write its card (JSON and Markdown)."""
    shipped = _shipped(name)
    load_before = os.getloadavg()[0]
    model, history = train_shipped(progress=True, name=name)
    load = max(load_before, os.getloadavg()[0])  # other processes slow training down
    out = data_dir()
    save_weights(model, out / shipped.weights)
    result = evaluate(load_shipped(name))  # score what was saved, exactly as users load it
    ind_key = "induction score (best layer-1 head)"
    phase = next(
        (s for s, v in zip(history["eval_step"], history[ind_key], strict=True) if v > 0.4), None
    )
    log = {key: [round(v, 4) for v in history[key]] for key in progress_callback(0, model)}
    card = dict(
        recipe=shipped.recipe,
        **run_facts(model, history, load),
        python=platform.python_version(),
        phase_change_step=phase,
        log=dict(step=history["eval_step"], **log),
        **result,
    )
    (out / f"{shipped.card}.json").write_text(json.dumps(card, indent=1) + "\n")
    (out / f"{shipped.card}.md").write_text(_markdown(card, name))
    return card


def _retrain_one(name):
    if name in realtext.RUNS:  # its own corpus, recipe and card: attnlib.realtext
        realtext.main(["--retrain", "--only", name])
        return
    if name in realsource.NAMES:  # Python source: attnlib.realsource
        realsource.main(["--retrain", "--seed", str(realsource.NAMES[name])])
        return
    start = time.perf_counter()
    card = retrain(name)
    print(
        f"{name}: wrote {data_dir()} ({time.perf_counter() - start:.1f} s): loss second "
        f"copy {card['loss_second_copy']:.3f}, best induction "
        f"{max(h['induction'] for h in card['heads']):.3f}",
        flush=True,
    )


ALL_NAMES = [*realsource.NAMES, *realtext.RUNS, *MODELS]  # the longest runs first
JOBS = 2  # models `make data` trains at once, one core each (--jobs)


def card_stem(name):
    """The stem of model ``name``'s card in ``data/`` (``<stem>.json``, ``<stem>.md``), for
    every model `make data` trains."""
    if name not in ALL_NAMES:
        raise ValueError(f"No model {name!r}; `make data` trains {', '.join(ALL_NAMES)}.")
    return MODELS[name].card if name in MODELS else f"model_card_{name}"


def _read_card(name):
    return json.loads(data_file(card_stem(name) + ".json").read_text())


def make_data_summary():
    """What the cards say of `make data` as a whole: every model's training seconds (from
    its card: the last retrain of that model), their sum, and the machines and load averages
    they trained on."""
    cards = {name: _read_card(name) for name in ALL_NAMES}
    loads = [card["load_average"] for card in cards.values()]
    return dict(
        seconds={name: card["train_seconds"] for name, card in cards.items()},
        total_seconds=sum(card["train_seconds"] for card in cards.values()),
        machines=sorted({card["machine"] for card in cards.values()}),
        load_average=(min(loads), max(loads)),
        jobs=JOBS,
    )


def card_markdown(name, whole=None):
    """Model ``name``'s card in words (its ``.md``), from its JSON in ``data/``, as `make data`
    writes it; ``whole`` is :func:`make_data_summary` (read from the cards when ``None``)."""
    card = _read_card(name)
    if name in realtext.RUNS:
        return realtext.markdown(card)
    if name in realsource.NAMES:
        return realsource.markdown(card, whole or make_data_summary())
    return _markdown(card, name)


def write_cards():
    """Rewrite every model card's ``.md`` from its JSON (no training): the last step of
    `make data`, once every model's training time is on its card."""
    whole = make_data_summary()
    for name in ALL_NAMES:
        (data_dir() / f"{card_stem(name)}.md").write_text(card_markdown(name, whole))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--retrain", action="store_true", help="retrain and rewrite data/")
    parser.add_argument(
        "--cards",
        action="store_true",
        help="only rewrite every model card's .md from its JSON (no training)",
    )
    parser.add_argument(
        "--only",
        choices=ALL_NAMES,
        nargs="+",
        help="retrain only these (default: all; real_text_induction* are attnlib.realsource's, "
        "the other real_text* attnlib.realtext's)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=JOBS,
        help=f"models trained at once, one core each (default {JOBS})",
    )
    args = parser.parse_args(argv)
    if args.retrain == args.cards:
        parser.error("pass --retrain to regenerate data/, or --cards to rewrite its cards' .md")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, not {args.jobs}")
    if args.retrain:
        names = args.only or ALL_NAMES  # the longest runs first
        # spawn: a fresh interpreter per model, no torch state forked from this one
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
            list(pool.map(_retrain_one, names))  # re-raises a model's failure
    try:
        write_cards()  # the real-source cards state every model's training time
    except FileNotFoundError as missing:  # a card never written: data_file says which
        parser.exit(1, f"{missing}\n")


if __name__ == "__main__":
    main()
