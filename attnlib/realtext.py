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

``load_real_text(name)`` returns a trained model; ``python -m attnlib.factory.realtext --retrain``
(part of ``make data``) retrains them and rewrites their weights, cards and the sample.
"""

import copy
import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor

from attnlib.model import Block, TinyTransformer, rope_angles, rotate
from attnlib.paths import data_file
from attnlib.train import (
    TRAIN_THREADS,
    per_token_loss,
    torch_threads,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

BOS = 0
CHARS = "\n" + "".join(chr(c) for c in range(32, 127))  # 95 characters
N_TOKENS = len(CHARS) + 1  # with BOS
SAMPLE_CHARS = 32_000  # the held-out sample shipped in data/

RECIPE: dict[str, Any] = dict(
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


def run_name(name: str = FULL, seed: int = 0) -> str:
    """The files' stem of architecture ``name`` trained from ``seed``: ``name`` for seed 0,
    ``<name>_seed_<seed>`` otherwise."""
    if seed not in SEEDS:
        raise ValueError(f"No real-text model of seed {seed}; there are seeds {SEEDS}.")
    return name if seed == 0 else f"{name}_seed_{seed}"


RUNS = {run_name(name, seed): (name, seed) for seed in SEEDS for name in ARCHITECTURES}


def encode(text: str) -> Tensor:
    """Characters → token ids ``[len(text)]`` (long); refuses characters outside CHARS."""
    index = {c: i + 1 for i, c in enumerate(CHARS)}
    unknown = set(text) - index.keys()
    if unknown:
        raise ValueError(f"characters outside printable ASCII: {sorted(unknown)[:5]}")
    return torch.tensor([index[c] for c in text], dtype=torch.long)


def decode(tokens: Tensor | Iterable[int]) -> str:
    """Token ids → text; BOS shows as nothing."""
    return "".join(CHARS[int(t) - 1] for t in tokens if int(t) != BOS)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def windows(ids: Tensor, batch: int, T: int, gen: torch.Generator) -> Tensor:
    """``[batch, T]``: BOS, then T − 1 characters from random offsets of ``ids``."""
    starts = torch.randint(0, len(ids) - T + 1, (batch,), generator=gen)
    chunks = torch.stack([ids[s : s + T - 1] for s in starts.tolist()])
    return torch.cat([torch.full((batch, 1), BOS), chunks], 1)


def held_out_sample() -> str:
    """The held-out text shipped in ``data/`` (identical on every Python)."""
    return data_file(SAMPLE).read_text()


def _stretches(ids: Tensor, batch: int, T: int) -> Tensor:
    """``[batch, T]``: BOS + consecutive, non-overlapping stretches of ``ids``."""
    if batch * (T - 1) > len(ids):
        raise ValueError(f"the text holds {len(ids)} characters, fewer than {batch}x{T - 1}")
    chunks = ids[: batch * (T - 1)].reshape(batch, T - 1)
    return torch.cat([torch.full((batch, 1), BOS), chunks], 1)


def eval_tokens(batch: int = RECIPE["eval"]["batch"], T: int = RECIPE["eval"]["T"]) -> Tensor:
    """``[batch, T]``: BOS + consecutive, non-overlapping stretches of the held-out sample."""
    return _stretches(encode(held_out_sample()), batch, T)


def repeat_text(batch: int, period: int) -> Tensor:
    """``[BOS] + r + r`` with ``r`` ``period`` consecutive held-out characters:
    ``[batch, 2·period + 1]``, as :func:`attnlib.shipped.eval_tokens` lays out random tokens."""
    r = _stretches(encode(held_out_sample()), batch, period + 1)[:, 1:]
    return torch.cat([torch.full((batch, 1), BOS), r, r], 1)


def char_label(token: int | Tensor) -> str:
    """A readable axis label for one token: BOS, ␣ for a space, ⏎ for a newline."""
    if int(token) == BOS:
        return "BOS"
    return {" ": "␣", "\n": "⏎"}.get(CHARS[int(token) - 1], CHARS[int(token) - 1])


def label_repeat_maps(
    fig: "Figure", tokens: Tensor | Sequence[int], period: int, every: int = 4
) -> "Figure":
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


def baselines(text: str) -> dict[str, float]:
    """Losses (nats per character) of two models without context, on ``text``: a uniform
    guess over the characters, and each character's frequency in ``text`` itself."""
    counts = np.array(list(Counter(text).values()), dtype=float)
    p = counts / counts.sum()
    return dict(uniform=math.log(len(CHARS)), unigram=float(-(p * np.log(p)).sum()))


@torch.no_grad()
def held_out_loss(model: TinyTransformer, tokens: Tensor | None = None) -> float:
    """Mean next-character loss (nats) on the held-out evaluation batch."""
    tokens = eval_tokens() if tokens is None else tokens
    return per_token_loss(model(tokens), tokens).mean().item()


def recipe(name: str = FULL, seed: int = RECIPE["seed"]) -> dict[str, Any]:
    """RECIPE with architecture ``name``'s attention options, trained from ``seed``."""
    if name not in ARCHITECTURES:
        raise ValueError(f"No real-text model {name!r}; there are {', '.join(ARCHITECTURES)}.")
    run_name(name, seed)  # refuses an unknown seed
    return {**RECIPE, "seed": seed, "model": {**RECIPE["model"], **ARCHITECTURES[name]}}


def build_model(seed: int = RECIPE["seed"], name: str = FULL) -> TinyTransformer:
    torch.manual_seed(seed)
    return TinyTransformer(**recipe(name)["model"])


def load_real_text(name: str = FULL, seed: int = 0) -> TinyTransformer:
    """The trained real-text model ``name`` (of ``seed``) from ``data/`` (eval mode)."""
    model = build_model(seed, name=name)
    path = data_file(f"{run_name(name, seed)}.pt")
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()


def load_card(name: str = FULL, seed: int = 0) -> dict[str, Any]:
    """Real-text model ``name``'s card (of ``seed``) as a dict."""
    recipe(name, seed)  # refuses an unknown name or seed
    card: dict[str, Any] = json.loads(
        data_file(f"model_card_{run_name(name, seed)}.json").read_text()
    )
    return card


@torch.no_grad()
def generate(
    model: TinyTransformer, prompt: str, n: int, temperature: float = 0.0, seed: int = 0
) -> str:
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
def run_with_attention(
    model: TinyTransformer, tokens: Tensor | Sequence[int], attend: Callable[..., npt.ArrayLike]
) -> Tensor:
    """Logits ``[T, vocab]`` of one sequence ``tokens [T]``, every head's attention computed
    by ``attend(Q, K, V) -> [T, d_head]`` on float64 NumPy arrays ``[T, d_head]`` (queries
    and keys already rotated by RoPE). The rest is the model's own pieces, in float32."""
    ids = torch.as_tensor(tokens)
    T = len(ids)
    x: Tensor = model.embed(ids)  # [T, d_model]
    for block in cast(list[Block], model.blocks):
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
    logits: Tensor = model.unembed(model.ln_f(x))
    return logits


@torch.no_grad()
def with_shared_kv(
    model: TinyTransformer, pool: Callable[..., npt.ArrayLike], n_kv_heads: int
) -> TinyTransformer:
    """A copy of ``model`` whose key and value heads are shared in groups, as grouped-query
    attention shares them: ``pool(W, n_heads, n_kv_heads)`` turns each layer's ``W_K`` and
    ``W_V`` ``[n_heads·d_head, d_model]`` into ``[n_kv_heads·d_head, d_model]``, and KV head
    g serves query heads g·group … (g+1)·group − 1 (stored repeated, so the model runs as is)."""
    shared = copy.deepcopy(model)
    for block in cast(list[Block], shared.blocks):
        attn = block.attn
        group = attn.n_heads // n_kv_heads
        for linear in (attn.W_K, attn.W_V):
            W = linear.weight.double().numpy()
            pooled = np.asarray(pool(W, attn.n_heads, n_kv_heads))
            blocks = pooled.reshape(n_kv_heads, attn.d_head, -1)
            linear.weight.copy_(torch.from_numpy(np.repeat(blocks, group, 0).reshape(W.shape)))
    return shared
