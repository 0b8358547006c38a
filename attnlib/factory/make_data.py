"""`make data`: every model the course ships retrained, its weights and cards rewritten.

``python -m attnlib.factory --retrain`` (``make data``) retrains every model the course ships
and rewrites its weights and model card in ``data/``.

The course's two toy models (:mod:`attnlib.shipped`, trained by :mod:`attnlib.factory.shipped`),
notebook 10's real-text models (:mod:`attnlib.factory.realsource`'s two seeds on Python source
first, then :mod:`attnlib.factory.realtext`'s on docstrings): one process per model, two at a
time (``--jobs``), each on one thread. Last, it rewrites every card's ``.md`` from its JSON, as
``--cards`` alone does without training: the real-source cards state how long `make data` took,
from every card.
"""

import argparse
import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from attnlib import realsource, realtext
from attnlib.factory import realsource as source_factory
from attnlib.factory import realtext as text_factory
from attnlib.factory import shipped as shipped_factory
from attnlib.paths import data_dir, data_file
from attnlib.shipped import MODELS


def _retrain_one(name: str) -> None:
    if name in realtext.RUNS:  # its own corpus, recipe and card: attnlib.factory.realtext
        text_factory.main(["--retrain", "--only", name])
        return
    if name in realsource.NAMES:  # Python source: attnlib.factory.realsource
        source_factory.main(["--retrain", "--seed", str(realsource.NAMES[name])])
        return
    start = time.perf_counter()
    card = shipped_factory.retrain(name)
    print(
        f"{name}: wrote {data_dir()} ({time.perf_counter() - start:.1f} s): loss second "
        f"copy {card['loss_second_copy']:.3f}, best induction "
        f"{max(h['induction'] for h in card['heads']):.3f}",
        flush=True,
    )


ALL_NAMES = [*realsource.NAMES, *realtext.RUNS, *MODELS]  # the longest runs first
JOBS = 2  # models `make data` trains at once, one core each (--jobs)


def card_stem(name: str) -> str:
    """The stem of model ``name``'s card in ``data/`` (``<stem>.json``, ``<stem>.md``), for
    every model `make data` trains."""
    if name not in ALL_NAMES:
        raise ValueError(f"No model {name!r}; `make data` trains {', '.join(ALL_NAMES)}.")
    return MODELS[name].card if name in MODELS else f"model_card_{name}"


def _read_card(name: str) -> dict[str, Any]:
    card: dict[str, Any] = json.loads(data_file(card_stem(name) + ".json").read_text())
    return card


def make_data_summary() -> dict[str, Any]:
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


def card_markdown(name: str, whole: dict[str, Any] | None = None) -> str:
    """Model ``name``'s card in words (its ``.md``), from its JSON in ``data/``, as `make data`
    writes it; ``whole`` is :func:`make_data_summary` (read from the cards when ``None``)."""
    card = _read_card(name)
    if name in realtext.RUNS:
        return text_factory.markdown(card)
    if name in realsource.NAMES:
        return source_factory.markdown(card, whole or make_data_summary())
    return shipped_factory.markdown(card, name)


def write_cards() -> None:
    """Rewrite every model card's ``.md`` from its JSON (no training): the last step of
    `make data`, once every model's training time is on its card."""
    whole = make_data_summary()
    for name in ALL_NAMES:
        (data_dir() / f"{card_stem(name)}.md").write_text(card_markdown(name, whole))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m attnlib.factory", description=__doc__.splitlines()[0]
    )
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
