"""Notebook 10's source models made: corpus, training, weights, cards, held-out sample.

`make data`'s part for notebook 10's source models (:mod:`attnlib.realsource`): the corpus
(the standard library's source, the files of :func:`attnlib.factory.realtext.source_files`),
the training, the weights, the cards and the held-out sample written in ``data/``.
``python -m attnlib.factory.realsource --retrain``; `make data` runs it for each seed.
"""

import argparse
import json
import os
import platform
import time
from typing import Any

from attnlib.factory import realtext as text_factory
from attnlib.model import TinyTransformer
from attnlib.paths import data_dir
from attnlib.patterns import heads_table
from attnlib.realsource import (
    NATURAL,
    RECIPE,
    SAMPLE,
    SAMPLE_CHARS,
    SEEDS,
    T,
    build_model,
    evaluate,
    held_out_sample,
    load,
    natural_tokens,
    progress_callback,
    recipe,
    run_name,
    windows_with_repeats,
)
from attnlib.realtext import CHARS, N_TOKENS, encode, sha256
from attnlib.train import run_facts, save_weights, train_recipe


def collect_corpus() -> tuple[str, str, int]:
    """``(train_text, held_out_text, n_files)``: this Python's standard library source."""
    _, files = text_factory.source_files()
    allowed, parts = set(CHARS), (list[str](), list[str]())
    for i, path in enumerate(files):
        try:
            text = path.read_text(encoding="utf-8").replace("\t", "    ")
        except (UnicodeDecodeError, OSError):
            continue
        if set(text) <= allowed:
            parts[i % text_factory.HELD_OUT_EVERY == text_factory.HELD_OUT_EVERY - 1].append(text)
    return "\n".join(parts[0]), "\n".join(parts[1]), len(parts[0]) + len(parts[1])


def _write_sample(sample: str) -> None:
    """The held-out sample into ``data/``, whole (two seeds train at once and read it)."""
    path = data_dir() / SAMPLE
    if path.exists() and path.read_text() == sample:
        return
    partial = path.with_name(f"{SAMPLE}.{os.getpid()}.partial")
    partial.write_text(sample)
    partial.replace(path)


def train_source(
    seed: int = 0,
    steps: int | None = None,
    progress: bool = True,
    how: dict[str, Any] | None = None,
) -> tuple[TinyTransformer, dict[str, Any], tuple[str, str, int]]:
    """Train seed ``seed``'s model from scratch: ``(model, history, corpus)``. ``how``
    replaces :func:`recipe` (its data and optimiser; the model is the shipped one):
    :mod:`attnlib.factory.plain_twin` trains on plain windows so."""
    how = recipe(seed) if how is None else how
    train_text, held_out, n_files = collect_corpus()
    _write_sample(held_out[:SAMPLE_CHARS])  # the evaluations below read it
    ids, d = encode(train_text), how["data"]
    model = build_model(seed)
    natural = natural_tokens()
    history = train_recipe(
        model,
        lambda gen: windows_with_repeats(ids, gen, **d),
        how,
        steps,
        progress=progress,
        callback=lambda step, m: progress_callback(step, m, natural),
        every=RECIPE["eval"]["every"],
    )
    return model, history, (train_text, held_out, n_files)


def retrain(seed: int = 0) -> dict[str, Any]:
    """Retrain seed ``seed``, write its weights and card, and the held-out sample. The
    card's ``.md`` says how long `make data` took once :mod:`attnlib.factory.make_data` rewrites
    every card (the last step of `make data`; ``python -m attnlib.factory --cards``)."""
    load_before = os.getloadavg()[0]
    model, history, (train_text, held_out, n_files) = train_source(seed)
    busy = max(load_before, os.getloadavg()[0])
    out, stem = data_dir(), run_name(seed)
    save_weights(model, out / f"{stem}.pt")
    result = evaluate(load(seed))  # what was saved, as users load it
    skip = ("step", "loss", "eval_step", "seconds", "threads")
    card = dict(
        recipe=recipe(seed),
        corpus=dict(
            source="Python source of the standard library (.py files)",
            licence="PSF License Agreement (Python Software Foundation License)",
            python=platform.python_version(),
            files=n_files,
            train_chars=len(train_text),
            held_out_chars=len(held_out),
            train_sha256=sha256(train_text),
            held_out_sample=SAMPLE,
            held_out_sample_sha256=sha256(held_out_sample()),
        ),
        tokenizer=f"characters: BOS + newline + printable ASCII ({N_TOKENS} ids)",
        **run_facts(model, history, busy),
        held_out_loss=round(progress_callback(0, model)["held-out loss"], 6),
        loss_first_copy=round(result["loss_first_copy"], 6),
        loss_second_copy=round(result["loss_second_copy"], 6),
        heads=[{k: round(v, 4) for k, v in h.items()} for h in result["heads"]],
        log=dict(
            step=history["eval_step"],
            **{k: [round(x, 4) for x in v] for k, v in history.items() if k not in skip},
        ),
    )
    card.update(_kept_twin(stem))
    (out / f"model_card_{stem}.json").write_text(json.dumps(card, indent=1) + "\n")
    (out / f"model_card_{stem}.md").write_text(markdown(card))
    return card


def _kept_twin(stem: str) -> dict[str, Any]:
    """The card's plain-window twin, carried over: `make data` does not retrain it (it is
    :mod:`attnlib.factory.plain_twin`'s; tests/test_real_source.py fails when the recipe moves on
    and the twin's no longer matches)."""
    path = data_dir() / f"model_card_{stem}.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    return {k: old[k] for k in ("plain_twin",) if k in old}


def _make_data_lines(card: dict[str, Any], whole: dict[str, Any]) -> list[str]:
    """The card's section on how long ``make data`` took: ``whole`` is
    :func:`attnlib.factory.make_data.make_data_summary` (every model's card)."""
    seeds = " and ".join(f"{whole['seconds'][run_name(s)] / 60:.1f}" for s in SEEDS)
    total, jobs, (low, high) = whole["total_seconds"], whole["jobs"], whole["load_average"]
    return [
        "## How long `make data` took",
        f"- `make data` trained this model in {card['train_seconds'] / 60:.1f} min (the two "
        f"seeds: {seeds} min, at the same time, one per core).",
        f"- The whole of `make data` took about {total / jobs / 60:.0f} min on {jobs} cores, "
        f"from its parts: its {len(whole['seconds'])} models trained for {total / 60:.1f} min "
        f"in all, one torch thread each, and it trains {jobs} at a time, one per core "
        f"({total / 60:.1f} / {jobs} = {total / jobs / 60:.1f} min). The sum adds every model's "
        "`train_seconds` from its card, each the last retrain of that model "
        f"({', '.join(whole['machines'])}, load average {low:.1f}–{high:.1f} from other jobs "
        "while it trained); `make data` was not timed as one run. Not counted: each model's "
        "start, corpus reading and final evaluation (`docs/real_text_recipes.md`).",
        "",
    ]


def _twin_lines(card: dict[str, Any]) -> list[str]:
    """The card's section on its plain-window twin (:mod:`attnlib.factory.plain_twin`)."""
    twin, e = card["plain_twin"], card["recipe"]["eval"]
    periods = twin["periods"]
    best = max(h["induction"] for h in card["heads"] if h["layer"] == 1)
    return [
        "## Against plain windows (the twin)",
        f"- The same recipe and seed with no repeated blocks (`repeat_share` "
        f"{twin['recipe']['data']['repeat_share']:g}), trained by `{twin['script']}` in "
        f"{twin['train_seconds'] / 60:.1f} min ({twin['threads']} torch thread, load average "
        f"{twin['load_average']:.1f}); not shipped, only its numbers.",
        f"- Held-out source as it is: {twin['held_out_loss']:.3f} nats per character, against "
        f"this model's {card['held_out_loss']:.3f}.",
        f"- Best layer-1 induction score at len(r) = {e['period']}: "
        f"{periods[str(e['period'])]['induction']:.3f}, against this model's {best:.3f}; "
        f"the second copy's gain {twin['loss_first_copy'] - twin['loss_second_copy']:+.3f} nats "
        f"per character, against {card['loss_first_copy'] - card['loss_second_copy']:+.3f}.",
        "- Its score / gain (nats per character) at each len(r): "
        + ", ".join(f"{p}: {v['induction']:.3f} / {v['gain']:+.2f}" for p, v in periods.items())
        + ".",
        "",
    ]


def markdown(card: dict[str, Any], whole: dict[str, Any] | None = None) -> str:
    """The card in words (``model_card_<name>.md``), from its JSON; with ``whole``
    (:func:`attnlib.factory.make_data.make_data_summary`), how long ``make data`` took."""
    r, c = card["recipe"], card["corpus"]
    m, d, o, e = r["model"], r["data"], r["optim"], r["eval"]
    best = max((h for h in card["heads"] if h["layer"] == 1), key=lambda h: h["induction"])
    gain = card["loss_first_copy"] - card["loss_second_copy"]
    lines = [
        "# Model card: tiny transformer on real text (Python source), induction heads",
        "",
        "Generated by `python -m attnlib.factory --retrain` (`make data`); do not edit.",
        "",
        "## Corpus",
        f"- {c['source']}, Python {c['python']}: the `.py` files of the standard library in "
        f"sorted order, without {', '.join(sorted(text_factory.SKIP_DIRS))}; tabs as 4 spaces; "
        f"files with characters outside printable ASCII left out ({c['files']} kept); joined "
        "by newlines.",
        f"- Licence: {c['licence']}.",
        f"- Training text {c['train_chars']} characters (sha256 `{c['train_sha256']}`); held "
        f"out: every {text_factory.HELD_OUT_EVERY}th file, {c['held_out_chars']} characters, of "
        f"which the first {SAMPLE_CHARS} ship as `data/{c['held_out_sample']}` (sha256 "
        f"`{c['held_out_sample_sha256']}`).",
        f"- Tokenizer: {card['tokenizer']}.",
        "",
        "## Recipe",
        f"- Model: {m['n_layers']} layers, attention only, d_model {m['d_model']}, "
        f"{m['n_heads']} heads, RoPE, pre-LayerNorm; {card['n_params']} parameters.",
        f"- Data: [BOS] + {d['T'] - 1} consecutive characters from a random offset of the "
        f"training text; batch {d['batch']}. Augmented: in {d['repeat_share']:.0%} of the "
        f"windows the text comes in blocks, each stretch of L ~ U{{{d['min_len']}…"
        f"{d['max_len']}}} consecutive characters twice before the next (s1 s1 s2 s2 …), as "
        "notebook 08's toy repeats random blocks.",
        f"- Optimiser: AdamW lr {o['lr']}, weight decay {o['weight_decay']}, betas "
        f"(0.9, 0.98), {o['warmup']}-step linear warm-up, then cosine decay to "
        f"{o['decay_to']} × lr; {o['steps']} steps.",
        f"- Seed {r['seed']}; torch {card['torch']}; trained in {card['train_seconds']:.1f} s "
        f"({card['train_seconds'] / 60:.1f} min; {card['threads']} torch thread, "
        f"{card['machine']}, load average {card['load_average']:.1f} during training).",
        "- Every recipe tried before this one, with its numbers: `docs/real_text_recipes.md`.",
        "",
        f"## Evaluation (held-out [BOS] + r + r, len(r) = {e['period']}, batch {e['batch']})",
        f"- Best layer-1 induction score {best['induction']:.3f} (head 1.{best['head']}).",
        f"- Loss on the first copy {card['loss_first_copy']:.3f} nats per character, on the "
        f"second {card['loss_second_copy']:.3f}: the second copy {gain:.3f} nats better.",
        f"- Held-out source as it is ({NATURAL} windows of {T} characters): "
        f"{card['held_out_loss']:.3f} nats per character.",
        "",
        *heads_table(card["heads"]),
        "",
        *(_twin_lines(card) if "plain_twin" in card else []),
        *(_make_data_lines(card, whole) if whole else []),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m attnlib.factory.realsource", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--retrain", action="store_true", help="retrain and rewrite data/")
    parser.add_argument("--seed", type=int, choices=SEEDS, nargs="+", help="default: all")
    args = parser.parse_args(argv)
    if not args.retrain:
        parser.error("nothing to do: pass --retrain to regenerate data/")
    for seed in args.seed or SEEDS:
        start = time.perf_counter()
        card = retrain(seed)
        print(
            f"{run_name(seed)}: wrote {data_dir()} ({time.perf_counter() - start:.1f} s): "
            f"second copy {card['loss_first_copy'] - card['loss_second_copy']:.3f} nats better"
        )


if __name__ == "__main__":
    main()
