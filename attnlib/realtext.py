"""A tiny transformer trained on real text: the docstrings of Python's standard library.

Every machine with Python has the corpus offline, under the PSF licence. It is collected
deterministically: the standard library's ``.py`` files in sorted order (tests, IDLE's,
lib2to3's and turtledemo's left out), each file's module, class and function docstrings
(``ast.get_docstring``, cleaned), ASCII only, joined by blank lines. One Python version
gives one corpus; the card states the version and the corpus's sha256, and ``data/`` ships
a held-out sample, so the evaluation and notebook 10 read the same text on any Python.

Tokens are characters: 0 is BOS, 1…95 the printable ASCII characters and newline.

Besides the model with full attention, three architectures train on the same recipe, seed
and batches, differing only in attention (``ARCHITECTURES``): a sliding window of 32, and
keys and values shared by 2 query heads (grouped-query) or by all 4 (multi-query). Each
architecture trains from two seeds (``SEEDS``; seed 1's files end in ``_seed_1``): the two
runs' difference is the noise any comparison between architectures must beat.

``load_real_text(name)`` returns a trained model; ``python -m attnlib.realtext --retrain``
(part of ``make data``) retrains them and rewrites their weights, cards and the sample.
"""

import argparse
import ast
import copy
import hashlib
import json
import math
import os
import platform
import sysconfig
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import torch

from attnlib.model import TinyTransformer, rope_angles, rotate
from attnlib.paths import data_dir, data_file
from attnlib.train import (
    TRAIN_THREADS,
    per_token_loss,
    run_facts,
    save_weights,
    torch_threads,
    train_recipe,
)

BOS = 0
CHARS = "\n" + "".join(chr(c) for c in range(32, 127))  # 95 characters
N_TOKENS = len(CHARS) + 1  # with BOS
SKIP_DIRS = {"test", "tests", "idlelib", "lib2to3", "turtledemo", "site-packages", "__pycache__"}
HELD_OUT_EVERY = 20  # every 20th file (in sorted order) is held out of training
SAMPLE_CHARS = 32_000  # the held-out sample shipped in data/

RECIPE = dict(
    seed=0,
    model=dict(vocab=N_TOKENS, d_model=64, n_layers=2, n_heads=4, causal=True, rope=True, mlp=True),
    data=dict(batch=32, T=128),
    optim=dict(steps=1000, lr=3e-3, weight_decay=0.1, warmup=100),
    eval=dict(batch=64, T=128),
)
FULL = "real_text"
# name -> the attention options that differ from RECIPE; weights <name>.pt, card model_card_<name>
ARCHITECTURES = {
    FULL: {},
    "real_text_window_32": dict(window=32),
    "real_text_kv_heads_2": dict(n_kv_heads=2),
    "real_text_kv_heads_1": dict(n_kv_heads=1),
}
WEIGHTS, SAMPLE, CARD = f"{FULL}.pt", "real_text_heldout.txt", f"model_card_{FULL}"
SEEDS = (0, 1)  # each architecture trains twice: the spread over seeds is a comparison's noise


def run_name(name=FULL, seed=0):
    """The files' stem of architecture ``name`` trained from ``seed``: ``name`` for seed 0,
    ``<name>_seed_<seed>`` otherwise."""
    if seed not in SEEDS:
        raise ValueError(f"No real-text model of seed {seed}; there are seeds {SEEDS}.")
    return name if seed == 0 else f"{name}_seed_{seed}"


RUNS = {run_name(name, seed): (name, seed) for seed in SEEDS for name in ARCHITECTURES}


def encode(text):
    """Characters → token ids ``[len(text)]`` (long); refuses characters outside CHARS."""
    index = {c: i + 1 for i, c in enumerate(CHARS)}
    unknown = set(text) - index.keys()
    if unknown:
        raise ValueError(f"characters outside printable ASCII: {sorted(unknown)[:5]}")
    return torch.tensor([index[c] for c in text], dtype=torch.long)


def decode(tokens):
    """Token ids → text; BOS shows as nothing."""
    return "".join(CHARS[int(t) - 1] for t in tokens if int(t) != BOS)


def source_files():
    """``(root, files)``: the standard library's ``.py`` files, in sorted order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in root.rglob("*.py") if not SKIP_DIRS & set(p.relative_to(root).parts[:-1])]
    return root, sorted(files, key=lambda p: p.relative_to(root).as_posix())


def _docstrings(path):
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


def collect_corpus():
    """``(train_text, held_out_text)``: the docstrings of this Python's standard library."""
    root, files = source_files()
    parts = ([], [])
    for i, path in enumerate(files):
        parts[i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1].extend(_docstrings(path))
    return "\n\n".join(parts[0]), "\n\n".join(parts[1])


def sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


def windows(ids, batch, T, gen):
    """``[batch, T]``: BOS, then T − 1 characters from random offsets of ``ids``."""
    starts = torch.randint(0, len(ids) - T + 1, (batch,), generator=gen)
    chunks = torch.stack([ids[s : s + T - 1] for s in starts.tolist()])
    return torch.cat([torch.full((batch, 1), BOS), chunks], 1)


def held_out_sample():
    """The held-out text shipped in ``data/`` (identical on every Python)."""
    return data_file(SAMPLE).read_text()


def _stretches(ids, batch, T):
    """``[batch, T]``: BOS + consecutive, non-overlapping stretches of ``ids``."""
    if batch * (T - 1) > len(ids):
        raise ValueError(f"the text holds {len(ids)} characters, fewer than {batch}x{T - 1}")
    chunks = ids[: batch * (T - 1)].reshape(batch, T - 1)
    return torch.cat([torch.full((batch, 1), BOS), chunks], 1)


def eval_tokens(batch=RECIPE["eval"]["batch"], T=RECIPE["eval"]["T"]):
    """``[batch, T]``: BOS + consecutive, non-overlapping stretches of the held-out sample."""
    return _stretches(encode(held_out_sample()), batch, T)


def repeat_text(batch, period):
    """``[BOS] + r + r`` with ``r`` ``period`` consecutive held-out characters:
    ``[batch, 2·period + 1]``, as :func:`attnlib.shipped.eval_tokens` lays out random tokens."""
    r = _stretches(encode(held_out_sample()), batch, period + 1)[:, 1:]
    return torch.cat([torch.full((batch, 1), BOS), r, r], 1)


def char_label(token):
    """A readable axis label for one token: BOS, ␣ for a space, ⏎ for a newline."""
    if int(token) == BOS:
        return "BOS"
    return {" ": "␣", "\n": "⏎"}.get(CHARS[int(token) - 1], CHARS[int(token) - 1])


def label_repeat_maps(fig, tokens, period, every=4):
    """Label the maps of :func:`attnlib.patterns.attention_grid` for ``tokens [T]`` =
    ``[BOS] + r + r``: every ``every``-th position by its character (shared axes), and a
    line on each map where the second copy starts (between ``period`` and ``period + 1``)."""
    maps = [ax for ax in fig.axes if ax.images]  # not the colour bar
    ticks = list(range(0, len(tokens), every))
    labels = [char_label(tokens[t]) for t in ticks]
    maps[0].set_xticks(ticks, labels, fontsize=8)
    maps[0].set_yticks(ticks, labels, fontsize=8)
    for ax in maps:
        ax.axvline(period + 0.5, color="white", lw=0.8, ls="--")
        ax.axhline(period + 0.5, color="white", lw=0.8, ls="--")
    return fig


def baselines(text):
    """Losses (nats per character) of two models without context, on ``text``: a uniform
    guess over the characters, and each character's frequency in ``text`` itself."""
    counts = np.array(list(Counter(text).values()), dtype=float)
    p = counts / counts.sum()
    return dict(uniform=math.log(len(CHARS)), unigram=float(-(p * np.log(p)).sum()))


@torch.no_grad()
def held_out_loss(model, tokens=None):
    """Mean next-character loss (nats) on the held-out evaluation batch."""
    tokens = eval_tokens() if tokens is None else tokens
    return per_token_loss(model(tokens), tokens).mean().item()


def recipe(name=FULL, seed=RECIPE["seed"]):
    """RECIPE with architecture ``name``'s attention options, trained from ``seed``."""
    if name not in ARCHITECTURES:
        raise ValueError(f"No real-text model {name!r}; there are {', '.join(ARCHITECTURES)}.")
    run_name(name, seed)  # refuses an unknown seed
    return {**RECIPE, "seed": seed, "model": {**RECIPE["model"], **ARCHITECTURES[name]}}


def build_model(seed=RECIPE["seed"], name=FULL):
    torch.manual_seed(seed)
    return TinyTransformer(**recipe(name)["model"])


def load_real_text(name=FULL, seed=0):
    """The trained real-text model ``name`` (of ``seed``) from ``data/`` (eval mode)."""
    model = build_model(seed, name=name)
    path = data_file(f"{run_name(name, seed)}.pt")
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


def load_card(name=FULL, seed=0):
    """Real-text model ``name``'s card (of ``seed``) as a dict."""
    recipe(name, seed)  # refuses an unknown name or seed
    return json.loads(data_file(f"model_card_{run_name(name, seed)}.json").read_text())


@torch.no_grad()
def generate(model, prompt, n, temperature=0.0, seed=0):
    """``prompt`` continued by ``n`` characters: greedy (``temperature=0``) or sampled from
    softmax(logits / temperature). The model sees at most its training length."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.cat([torch.tensor([BOS]), encode(prompt)])
    T = RECIPE["data"]["T"]
    with torch_threads(TRAIN_THREADS):  # many tiny steps: a second thread only waits
        for _ in range(n):
            logits = model(ids[-T:][None])[0, -1]
            logits[BOS] = -math.inf  # BOS only ever starts a sequence
            if temperature == 0:
                nxt = logits.argmax()
            else:
                probs = torch.softmax(logits / temperature, -1)
                nxt = torch.multinomial(probs, 1, generator=gen)[0]
            ids = torch.cat([ids, nxt.view(1)])
    return decode(ids[1:])


@torch.no_grad()
def run_with_attention(model, tokens, attend):
    """Logits ``[T, vocab]`` of one sequence ``tokens [T]``, every head's attention computed
    by ``attend(Q, K, V) -> [T, d_head]`` on float64 NumPy arrays ``[T, d_head]`` (queries
    and keys already rotated by RoPE). The rest is the model's own pieces, in float32."""
    tokens = torch.as_tensor(tokens)
    T = len(tokens)
    x = model.embed(tokens)  # [T, d_model]
    for block in model.blocks:
        attn = block.attn
        h = block.ln1(x)
        Q, K, V = (
            W(h).view(T, attn.n_heads, attn.d_head).transpose(0, 1)
            for W in (attn.W_Q, attn.W_K, attn.W_V)
        )  # [n_heads, T, d_head]
        if attn.rope:
            cos, sin = rope_angles(torch.arange(T), attn.d_head)
            Q, K = rotate(Q, cos, sin), rotate(K, cos, sin)
        heads = [
            torch.as_tensor(attend(*(a[i].double().numpy() for a in (Q, K, V))))
            for i in range(attn.n_heads)
        ]
        out = torch.cat(heads, -1).float()  # [T, n_heads * d_head]
        x = x + (attn.W_O(out) if attn.W_O is not None else out)
        if block.mlp is not None:
            x = x + block.mlp(x)
    return model.unembed(model.ln_f(x))


@torch.no_grad()
def with_shared_kv(model, pool, n_kv_heads):
    """A copy of ``model`` whose key and value heads are shared in groups, as grouped-query
    attention shares them: ``pool(W, n_heads, n_kv_heads)`` turns each layer's ``W_K`` and
    ``W_V`` ``[n_heads·d_head, d_model]`` into ``[n_kv_heads·d_head, d_model]``, and KV head
    g serves query heads g·group … (g+1)·group − 1 (stored repeated, so the model runs as is)."""
    shared = copy.deepcopy(model)
    for block in shared.blocks:
        attn = block.attn
        group = attn.n_heads // n_kv_heads
        for linear in (attn.W_K, attn.W_V):
            W = linear.weight.double().numpy()
            pooled = np.asarray(pool(W, attn.n_heads, n_kv_heads))
            blocks = pooled.reshape(n_kv_heads, attn.d_head, -1)
            linear.weight.copy_(torch.from_numpy(np.repeat(blocks, group, 0).reshape(W.shape)))
    return shared


def train_real_text(progress=True, steps=None, name=FULL, seed=RECIPE["seed"]):
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


def retrain(name=FULL, seed=RECIPE["seed"]):
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


def _attention(model):
    """The card's words for a model's attention options."""
    if model.get("window"):
        return f"sliding-window attention (each query sees the last {model['window']} keys)"
    if model.get("n_kv_heads"):
        kind = "multi-query" if model["n_kv_heads"] == 1 else "grouped-query"
        return f"{kind} attention ({model['n_kv_heads']} key/value heads shared by the queries)"
    return "full causal attention"


def markdown(card):
    """The card in words (``model_card_<name>.md``), from its JSON."""
    r, c = card["recipe"], card["corpus"]
    m, d, o = r["model"], r["data"], r["optim"]
    return "\n".join(
        [
            f"# Model card: tiny transformer on real text (Python docstrings), {_attention(m)}",
            "",
            "Generated by `python -m attnlib.realtext --retrain` (`make data`); do not edit.",
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
