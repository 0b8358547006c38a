"""Notebook 10's docstring models made: corpus, training, weights, cards, held-out sample.

`make data`'s part for notebook 10's docstring models (:mod:`attnlib.realtext`): the corpus
collected from this Python's standard library, the training, the weights, the cards and the
held-out sample written in ``data/``. ``python -m attnlib.factory.realtext --retrain``.
"""

import argparse
import ast
import json
import os
import platform
import sysconfig
import time
import warnings
from pathlib import Path
from typing import Any

from attnlib.model import TinyTransformer
from attnlib.paths import data_dir
from attnlib.realtext import (
    CHARS,
    FULL,
    N_TOKENS,
    RECIPE,
    RUNS,
    SAMPLE,
    SAMPLE_CHARS,
    _stretches,
    baselines,
    build_model,
    encode,
    held_out_loss,
    held_out_sample,
    load_real_text,
    recipe,
    run_name,
    sha256,
    windows,
)
from attnlib.train import run_facts, save_weights, train_recipe

SKIP_DIRS = {"test", "tests", "idlelib", "lib2to3", "turtledemo", "site-packages", "__pycache__"}


HELD_OUT_EVERY = 20  # every 20th file (in sorted order) is held out of training


def source_files() -> tuple[Path, list[Path]]:
    """``(root, files)``: the standard library's ``.py`` files, in sorted order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in root.rglob("*.py") if not SKIP_DIRS & set(p.relative_to(root).parts[:-1])]
    return root, sorted(files, key=lambda p: p.relative_to(root).as_posix())


def _docstrings(path: Path) -> list[str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # old escape sequences in some files
            tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError):
        return []
    nodes = [tree] + [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    found = (ast.get_docstring(n) for n in nodes)
    return [d for d in found if d and d.isascii() and set(d) <= set(CHARS)]


def collect_corpus() -> tuple[str, str]:
    """``(train_text, held_out_text)``: the docstrings of this Python's standard library."""
    root, files = source_files()
    parts = (list[str](), list[str]())
    for i, path in enumerate(files):
        parts[i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1].extend(_docstrings(path))
    return "\n\n".join(parts[0]), "\n\n".join(parts[1])


def train_real_text(
    progress: bool = True, steps: int | None = None, name: str = FULL, seed: int = RECIPE["seed"]
) -> tuple[TinyTransformer, dict[str, Any], tuple[str, str]]:
    """Train architecture ``name`` from ``seed`` on this Python's corpus:
    ``(model, history, corpus)``. Every architecture of one seed sees the same batches."""
    train_text, held_out = collect_corpus()
    ids = encode(train_text)
    d, e = RECIPE["data"], RECIPE["eval"]
    evaluation = _stretches(encode(held_out[:SAMPLE_CHARS]), e["batch"], e["T"])
    model = build_model(seed, name=name)
    history = train_recipe(
        model,
        lambda gen: windows(ids, d["batch"], d["T"], gen),
        recipe(name, seed),
        steps,
        progress=progress,
        callback=lambda step, m: {"held-out loss": held_out_loss(m, evaluation)},
        every=100,
    )
    return model, history, (train_text, held_out)


def retrain(name: str = FULL, seed: int = RECIPE["seed"]) -> dict[str, Any]:
    """Retrain ``name`` from ``seed``, then write its weights and card, and the held-out
    sample, in ``data/``."""
    load_before = os.getloadavg()[0]
    model, history, (train_text, held_out) = train_real_text(name=name, seed=seed)
    stem = run_name(name, seed)
    load = max(load_before, os.getloadavg()[0])
    out = data_dir()
    save_weights(model, out / f"{stem}.pt")
    (out / SAMPLE).write_text(held_out[:SAMPLE_CHARS])  # the same text for every architecture
    sample = held_out_sample()
    card = dict(
        recipe=recipe(name, seed),
        corpus=dict(
            source="docstrings of the Python standard library (module, class, function)",
            licence="PSF License Agreement (Python Software Foundation License)",
            python=platform.python_version(),
            train_chars=len(train_text),
            held_out_chars=len(held_out),
            train_sha256=sha256(train_text),
            held_out_sample=SAMPLE,
            held_out_sample_sha256=sha256(sample),
        ),
        tokenizer=f"characters: BOS + newline + printable ASCII ({N_TOKENS} ids)",
        **run_facts(model, history, load),
        # 6 digits: rounded once more to 3 in the .md, it stays the notebook's number
        held_out_loss=round(held_out_loss(load_real_text(name, seed)), 6),
        baselines={k: round(v, 4) for k, v in baselines(sample).items()},
        log=dict(step=history["eval_step"], held_out_loss=history["held-out loss"]),
    )
    (out / f"model_card_{stem}.json").write_text(json.dumps(card, indent=1) + "\n")
    (out / f"model_card_{stem}.md").write_text(markdown(card))
    return card


def _attention(model: dict[str, Any]) -> str:
    """The card's words for a model's attention options."""
    if model.get("window"):
        return f"sliding-window attention (each query sees the last {model['window']} keys)"
    if model.get("n_kv_heads"):
        kind = "multi-query" if model["n_kv_heads"] == 1 else "grouped-query"
        return f"{kind} attention ({model['n_kv_heads']} key/value heads shared by the queries)"
    return "full causal attention"


def markdown(card: dict[str, Any]) -> str:
    """The card in words (``model_card_<name>.md``), from its JSON."""
    r, c = card["recipe"], card["corpus"]
    m, d, o = r["model"], r["data"], r["optim"]
    return "\n".join(
        [
            f"# Model card: tiny transformer on real text (Python docstrings), {_attention(m)}",
            "",
            "Generated by `python -m attnlib.factory.realtext --retrain` (`make data`); "
            "do not edit.",
            "",
            "## Corpus",
            f"- {c['source']}, Python {c['python']}: `.py` files of the standard library in "
            f"sorted order, without {', '.join(sorted(SKIP_DIRS))}; `ast.get_docstring`, ASCII "
            "docstrings only, joined by blank lines.",
            f"- Licence: {c['licence']}.",
            f"- Training text {c['train_chars']} characters (sha256 `{c['train_sha256']}`); "
            f"held out: every {HELD_OUT_EVERY}th file, {c['held_out_chars']} characters, of "
            f"which the first {SAMPLE_CHARS} ship as `data/{c['held_out_sample']}` "
            f"(sha256 `{c['held_out_sample_sha256']}`). Another Python version gives another "
            "corpus; the evaluation reads the shipped sample.",
            f"- Tokenizer: {card['tokenizer']}.",
            "",
            "## Recipe",
            f"- Model: {m['n_layers']} layers, d_model {m['d_model']}, {m['n_heads']} heads, "
            f"RoPE, MLP (4 × d_model, GELU), pre-LayerNorm, {_attention(m)}; "
            f"{card['n_params']} parameters.",
            f"- Data: [BOS] + {d['T'] - 1} consecutive characters from a random offset of the "
            f"training text; batch {d['batch']}.",
            f"- Optimiser: AdamW lr {o['lr']}, weight decay {o['weight_decay']}, betas "
            f"(0.9, 0.98), {o['warmup']}-step linear warm-up, {o['steps']} steps.",
            f"- Seed {r['seed']}; torch {card['torch']}; trained in {card['train_seconds']:.1f} s "
            f"({card['threads']} torch thread, {card['machine']}, load average "
            f"{card['load_average']:.1f} during training).",
            "",
            "## Evaluation (held-out sample: "
            f"{r['eval']['batch']} stretches of BOS + {r['eval']['T'] - 1} characters)",
            f"- Held-out loss {card['held_out_loss']:.3f} nats per character; final training "
            f"loss {card['final_train_loss']:.3f} (mean of the last 50 steps).",
            f"- Baselines: uniform over {len(CHARS)} characters "
            f"{card['baselines']['uniform']:.3f}; "
            f"character frequencies (no context) {card['baselines']['unigram']:.3f}.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m attnlib.factory.realtext", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--retrain", action="store_true", help="retrain and rewrite data/")
    parser.add_argument("--only", choices=RUNS, nargs="+", help="retrain only these (default: all)")
    args = parser.parse_args(argv)
    if not args.retrain:
        parser.error("nothing to do: pass --retrain to regenerate data/")
    for run in args.only or RUNS:
        start = time.perf_counter()
        card = retrain(*RUNS[run])
        print(
            f"{run}: wrote {data_dir()} ({time.perf_counter() - start:.1f} s): held-out loss "
            f"{card['held_out_loss']:.3f} (uniform {card['baselines']['uniform']:.3f})"
        )


if __name__ == "__main__":
    main()
