"""A tiny transformer on real text in which induction heads form: Python source code.

The corpus is the Python source of the standard library this interpreter runs on (PSF
licence, offline on every machine with Python), collected deterministically: the ``.py``
files of :func:`attnlib.realtext.source_files` in sorted order, tabs as four spaces, files
with characters outside printable ASCII left out, joined by newlines; every 20th file is
held out. A sample of the held-out text ships in ``data/``, so evaluations read the same
text on any Python. Characters are tokens, as in :mod:`attnlib.realtext`.

Source code repeats itself (names, calls, quoted code), but rarely so that a 2-layer model
of 128 characters is paid to copy long stretches: the recipe of notebook 10's docstring
model, and three more on source, gave no induction head (docs/real_text_recipes.md). So
training windows are *augmented*: their text comes in blocks, each stretch of the source
(``min_len`` … ``max_len`` characters) twice before the next, as notebook 08's toy repeats its
random blocks (:func:`windows_with_repeats`). The first copy of every stretch is real source,
in order; the second can be predicted by copying. ``data.repeat_share`` of the windows are
augmented.

``load(seed)`` returns a trained model; ``python -m attnlib.shipped --retrain`` (``make
data``) retrains both seeds, one per core, and writes their weights and cards. Each card also
holds the numbers of the model's plain-window twin (:mod:`attnlib.plain_twin`).
"""

import argparse
import copy
import json
import os
import platform
import re
import time

import torch

from attnlib import realtext
from attnlib.model import TinyTransformer
from attnlib.paths import data_dir, data_file
from attnlib.patterns import heads_table, offset_template, repeat_templates, template_score
from attnlib.realtext import BOS, CHARS, N_TOKENS, encode, sha256
from attnlib.train import per_token_loss, run_facts, save_weights, train_recipe

T = 128
RECIPE = dict(
    seed=0,
    model=dict(
        vocab=N_TOKENS, d_model=64, n_layers=2, n_heads=4, causal=True, rope=True, mlp=False
    ),
    data=dict(batch=16, T=T, repeat_share=1.0, min_len=8, max_len=32),
    optim=dict(steps=4000, lr=1e-2, weight_decay=0.1, warmup=100, decay_to=0.1),
    eval=dict(period=32, batch=64, every=200),
)
NAME = "real_text_induction"
SEEDS = (0, 1)
SAMPLE, SAMPLE_CHARS = "real_source_heldout.txt", 64_000
NATURAL = 32  # held-out windows of T characters for the natural-text evaluation


def run_name(seed=0):
    """The files' stem of seed ``seed``: ``real_text_induction`` (seed 0), ``…_seed_1``."""
    if seed not in SEEDS:
        raise ValueError(f"No real-source model of seed {seed}; there are seeds {SEEDS}.")
    return NAME if seed == 0 else f"{NAME}_seed_{seed}"


NAMES = {run_name(seed): seed for seed in SEEDS}


def recipe(seed=0):
    run_name(seed)  # refuses an unknown seed
    return {**RECIPE, "seed": seed}


def collect_corpus():
    """``(train_text, held_out_text, n_files)``: this Python's standard library source."""
    _, files = realtext.source_files()
    allowed, parts = set(CHARS), ([], [])
    for i, path in enumerate(files):
        try:
            text = path.read_text(encoding="utf-8").replace("\t", "    ")
        except (UnicodeDecodeError, OSError):
            continue
        if set(text) <= allowed:
            parts[i % realtext.HELD_OUT_EVERY == realtext.HELD_OUT_EVERY - 1].append(text)
    return "\n".join(parts[0]), "\n".join(parts[1]), len(parts[0]) + len(parts[1])


def held_out_sample():
    """The held-out source shipped in ``data/`` (identical on every Python)."""
    return data_file(SAMPLE).read_text()


def _write_sample(sample):
    """The held-out sample into ``data/``, whole (two seeds train at once and read it)."""
    path = data_dir() / SAMPLE
    if path.exists() and path.read_text() == sample:
        return
    partial = path.with_name(f"{SAMPLE}.{os.getpid()}.partial")
    partial.write_text(sample)
    partial.replace(path)


def windows_with_repeats(ids, gen, batch, T, repeat_share, min_len, max_len):
    """``[batch, T]``: BOS + T − 1 characters from a random offset of ``ids``. In a share
    ``repeat_share`` of the rows the text comes in blocks, each stretch twice: ``s₁ s₁ s₂ s₂
    …``, the stretches consecutive in ``ids``, L ~ U{min_len…max_len} characters each, the row
    cut to T − 1 characters (notebook 08's toy data, with text instead of random tokens)."""
    if not 0 < min_len <= max_len:
        raise ValueError(f"stretch lengths must be positive and ordered: {min_len}…{max_len}")
    n = T - 1
    starts = torch.randint(0, len(ids) - n + 1, (batch,), generator=gen).tolist()
    rows = []
    for s in starts:
        if torch.rand((), generator=gen).item() >= repeat_share:
            rows.append(ids[s : s + n])
            continue
        blocks, at = [], s
        while 2 * (at - s) < n:
            L = int(torch.randint(min_len, max_len + 1, (), generator=gen))
            blocks += [ids[at : at + L]] * 2
            at += L
        rows.append(torch.cat(blocks)[:n])
    return torch.cat([torch.full((batch, 1), BOS), torch.stack(rows)], 1)


def repeat_tokens(batch=RECIPE["eval"]["batch"], period=RECIPE["eval"]["period"]):
    """``[BOS] + r + r``, ``r`` ``period`` consecutive held-out characters:
    ``[batch, 2·period + 1]`` (consecutive, non-overlapping stretches of the sample)."""
    r = encode(held_out_sample()[: batch * period]).reshape(batch, period)
    return torch.cat([torch.full((batch, 1), BOS), r, r], 1)


def repeat_with_gap(batch, length, gap):
    """``[BOS] + r + g + r``: ``r`` ``length`` consecutive held-out characters, ``g`` the
    ``gap`` characters that follow them in the text, so each character of the second copy
    is ``length + gap`` positions after its first: ``[batch, 2·length + gap + 1]``."""
    n = length + gap
    text = encode(held_out_sample()[: batch * n]).reshape(batch, n)
    return torch.cat([torch.full((batch, 1), BOS), text, text[:, :length]], 1)


@torch.no_grad()
def copy_at_distance(model, length, gap, batch=RECIPE["eval"]["batch"]):
    """How ``model`` copies over ``length + gap`` positions, on :func:`repeat_with_gap`:
    ``(score, gain)``, the best layer-1 head's induction score on the second copy, and the
    loss on the first copy minus the loss on the second (nats per character, scored as
    :func:`evaluate` scores them: ``gap = 0`` is ``[BOS] + r + r``)."""
    tokens = repeat_with_gap(batch, length, gap)
    distance, T_all = length + gap, tokens.shape[1]
    logits, weights = model.attention(tokens)
    loss = per_token_loss(logits, tokens)  # index t scores token t + 1
    induction = offset_template(T_all, distance - 1, range(distance + 1, T_all))
    score = max(template_score(A, induction) for A in weights[1].mean(0).numpy())
    return score, (loss[:, :length].mean() - loss[:, distance + 1 :].mean()).item()


def natural_tokens(batch=NATURAL, T=T):
    """``[batch, T]``: BOS + consecutive stretches of the held-out sample's second half
    (no augmentation: the text as it is)."""
    text = held_out_sample()[SAMPLE_CHARS // 2 :]
    return realtext._stretches(encode(text), batch, T)


@torch.no_grad()
def evaluate(model, tokens=None, period=RECIPE["eval"]["period"]):
    """Losses on the two copies of ``[BOS] + r + r`` and every head's template scores
    (batch-mean pattern), as :func:`attnlib.shipped.evaluate` scores the toy."""
    tokens = repeat_tokens(period=period) if tokens is None else tokens
    logits, weights = model.attention(tokens)
    loss = per_token_loss(logits, tokens)
    templates = repeat_templates(period)
    heads = [
        dict(layer=layer, head=head, **{k: template_score(A, P) for k, P in templates.items()})
        for layer, W in enumerate(weights)
        for head, A in enumerate(W.mean(0).numpy())
    ]
    first, second = loss[:, :period].mean().item(), loss[:, period + 1 :].mean().item()
    return dict(loss_first_copy=first, loss_second_copy=second, gain=first - second, heads=heads)


def progress_callback(step, model, natural=None):
    """The training log: the best layer-1 induction score, both copies' losses, and the
    loss on held-out text as it is."""
    result = evaluate(model)
    natural = natural_tokens() if natural is None else natural
    return {
        "induction score (best layer-1 head)": max(
            h["induction"] for h in result["heads"] if h["layer"] == 1
        ),
        "loss on the first copy": result["loss_first_copy"],
        "loss on the second copy": result["loss_second_copy"],
        "held-out loss": per_token_loss(model(natural), natural).mean().item(),
    }


def build_model(seed=0):
    torch.manual_seed(seed)
    return TinyTransformer(**RECIPE["model"], max_len=T)


def train_source(seed=0, steps=None, progress=True, how=None):
    """Train seed ``seed``'s model from scratch: ``(model, history, corpus)``. ``how``
    replaces :func:`recipe` (its data and optimiser; the model is the shipped one):
    :mod:`attnlib.plain_twin` trains on plain windows so."""
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


def load(seed=0):
    """Seed ``seed``'s trained model from ``data/`` (eval mode)."""
    model = build_model(seed)
    path = data_file(f"{run_name(seed)}.pt")
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


def load_card(seed=0):
    return json.loads(data_file(f"model_card_{run_name(seed)}.json").read_text())


def identifier_repeats(tokens):
    """``[B, T − 1]`` bool over :func:`attnlib.train.per_token_loss`'s targets: True on the
    characters (after the first) of an identifier of 4 or more characters whose earlier
    occurrence lies in the same row; ``first`` the same for first occurrences that recur."""
    second = torch.zeros(tokens.shape[0], tokens.shape[1] - 1, dtype=torch.bool)
    first = second.clone()
    for b, row in enumerate(tokens):
        text = realtext.decode(row[1:])  # position p of text is token p + 1
        seen = {}
        for match in re.finditer(r"\b[A-Za-z_]\w{3,}\b", text):
            start, end = match.span()
            targets = slice(start + 1, end)  # target index p scores token p + 1 = text[p]
            if match.group() in seen:
                second[b, targets] = True
                first[b, seen[match.group()]] = True
            else:
                seen[match.group()] = targets
    return first, second


@torch.no_grad()
def without_head(model, layer, head):
    """A copy of ``model`` whose head ``(layer, head)`` writes nothing (its block of W_O
    columns zeroed): the head ablated."""
    ablated = copy.deepcopy(model)
    attn = ablated.blocks[layer].attn
    attn.W_O.weight[:, head * attn.d_head : (head + 1) * attn.d_head] = 0.0
    return ablated


def retrain(seed=0):
    """Retrain seed ``seed``, write its weights and card, and the held-out sample. The
    card's ``.md`` says how long `make data` took once :mod:`attnlib.shipped` rewrites every
    card (the last step of `make data`; ``python -m attnlib.shipped --cards``)."""
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


def _kept_twin(stem):
    """The card's plain-window twin, carried over: `make data` does not retrain it (it is
    :mod:`attnlib.plain_twin`'s; tests/test_real_source.py fails when the recipe moves on
    and the twin's no longer matches)."""
    path = data_dir() / f"model_card_{stem}.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    return {k: old[k] for k in ("plain_twin",) if k in old}


def _make_data_lines(card, whole):
    """The card's section on how long ``make data`` took: ``whole`` is
    :func:`attnlib.shipped.make_data_summary` (every model's card)."""
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


def _twin_lines(card):
    """The card's section on its plain-window twin (:mod:`attnlib.plain_twin`)."""
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


def markdown(card, whole=None):
    """The card in words (``model_card_<name>.md``), from its JSON; with ``whole``
    (:func:`attnlib.shipped.make_data_summary`), how long ``make data`` took."""
    r, c = card["recipe"], card["corpus"]
    m, d, o, e = r["model"], r["data"], r["optim"], r["eval"]
    best = max((h for h in card["heads"] if h["layer"] == 1), key=lambda h: h["induction"])
    gain = card["loss_first_copy"] - card["loss_second_copy"]
    lines = [
        "# Model card: tiny transformer on real text (Python source), induction heads",
        "",
        "Generated by `python -m attnlib.shipped --retrain` (`make data`); do not edit.",
        "",
        "## Corpus",
        f"- {c['source']}, Python {c['python']}: the `.py` files of the standard library in "
        f"sorted order, without {', '.join(sorted(realtext.SKIP_DIRS))}; tabs as 4 spaces; "
        f"files with characters outside printable ASCII left out ({c['files']} kept); joined "
        "by newlines.",
        f"- Licence: {c['licence']}.",
        f"- Training text {c['train_chars']} characters (sha256 `{c['train_sha256']}`); held "
        f"out: every {realtext.HELD_OUT_EVERY}th file, {c['held_out_chars']} characters, of "
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
