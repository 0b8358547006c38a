"""A small, deterministic training loop for next-token models.

``train(model, batches, steps)`` runs AdamW with a short linear warm-up on the mean
per-token cross-entropy, shows a progress bar, and can draw the loss live in a notebook.
Seed the model with ``torch.manual_seed(seed)`` before building it; ``train`` seeds the
data generator it passes to ``batches`` from ``seed``, so the same call gives the same run.

Training runs on ``TRAIN_THREADS`` torch threads. The models are tiny: a second thread
gains little when the machine is idle, and when another process keeps one core busy, two
threads wait on each other at every operation (the course measured 1000 steps taking
over 500 s that way, against about 70 s on one thread on the same loaded machine; `make
bench` measures it with one core kept busy).
"""

import math
import platform
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

TRAIN_THREADS = 1


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block on ``n`` torch threads, then restore the previous count."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def per_token_loss(logits: Tensor, tokens: Tensor) -> Tensor:
    """Cross-entropy of predicting ``tokens[..., t+1]`` from ``logits[..., t, :]``.

    ``logits [B, T, vocab]``, ``tokens [B, T]`` → ``[B, T−1]`` (index t = loss on the
    token at position t + 1). Works unbatched too (``[T, vocab]``, ``[T]`` → ``[T−1]``).
    """
    tokens = torch.as_tensor(tokens)
    pred, target = logits[..., :-1, :], tokens[..., 1:]
    loss = F.cross_entropy(pred.reshape(-1, pred.shape[-1]), target.reshape(-1), reduction="none")
    return loss.view(target.shape)


class AdamW:
    """``torch.optim.AdamW(params, betas=(0.9, 0.98), weight_decay=...)``, written out with
    the same operations in the same order, so it gives the same weights to the last bit.
    torch.optim's first use imports torch._dynamo, about 1.5 s of a short notebook run."""

    def __init__(self, params, weight_decay, betas=(0.9, 0.98), eps=1e-8):
        self.weight_decay, self.betas, self.eps = weight_decay, betas, eps
        # per parameter: its steps so far (a parameter without a gradient is skipped), m, v
        self.state = [[p, 0, torch.zeros_like(p), torch.zeros_like(p)] for p in params]

    @torch.no_grad()
    def step(self, lr):
        """One update from the parameters' gradients at learning rate ``lr``; clears them."""
        beta1, beta2 = self.betas
        for state in self.state:
            p, t, m, v = state
            if p.grad is None:
                continue
            state[1] = t = t + 1
            p.mul_(1 - lr * self.weight_decay)  # decoupled weight decay
            m.lerp_(p.grad, 1 - beta1)
            v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
            denom = (v.sqrt() / (1 - beta2**t) ** 0.5).add_(self.eps)
            p.addcdiv_(m, denom, value=-lr / (1 - beta1**t))
            p.grad = None


def _next_batch(batches, gen):
    return batches(gen) if callable(batches) else next(batches)


def train(
    model,
    batches,
    steps,
    lr=3e-3,
    weight_decay=0.1,
    warmup=100,
    seed=0,
    decay_to=None,
    progress=True,
    live_plot=False,
    callback=None,
    every=50,
    threads=TRAIN_THREADS,
):
    """Train ``model`` in place for ``steps`` steps and return its history.

    ``batches`` is a function ``batches(gen) -> tokens [B, T]`` (``gen`` a seeded
    ``torch.Generator``) or an iterator of token tensors. Every ``every`` steps (and at the
    end) ``callback(step, model)`` may return a dict of numbers to log (it runs under
    ``torch.no_grad()`` in eval mode). ``live_plot=True`` redraws the training loss and the
    logged numbers in a notebook while it trains. It runs on ``threads`` torch threads.
    The learning rate rises linearly over ``warmup`` steps, then stays at ``lr``, or, with
    ``decay_to`` (a share of ``lr``), falls along a half cosine to ``decay_to · lr``.

    Returns ``{"step": [...], "loss": [...], "eval_step": [...], <callback keys>: [...],
    "seconds": wall time, "threads": torch threads used}``.
    """
    gen = torch.Generator().manual_seed(seed)
    if not callable(batches):
        batches = iter(batches)
    adamw = AdamW(list(model.parameters()), weight_decay=weight_decay)
    history: dict[str, Any] = {"step": [], "loss": [], "eval_step": []}
    plot = _LivePlot() if live_plot else None
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc="training", unit="step")

    def evaluate(step):
        if callback is None:
            return
        was_training = model.training
        model.eval()
        with torch.no_grad():
            logged = callback(step, model) or {}
        model.train(was_training)
        history["eval_step"].append(step)
        for key, value in logged.items():
            history.setdefault(key, []).append(float(value))

    with torch_threads(threads):
        start = time.perf_counter()
        model.train()
        for step in range(steps):
            if step % every == 0:
                evaluate(step)
                if plot is not None:
                    plot.draw(history)
            tokens = _next_batch(batches, gen)
            loss = per_token_loss(model(tokens), tokens).mean()
            loss.backward()
            adamw.step(learning_rate(step, steps, lr, warmup, decay_to))
            history["step"].append(step)
            history["loss"].append(loss.item())
            if bar is not None:
                bar.update(1)
                if step % 10 == 0:
                    bar.set_postfix_str(f"loss {loss.item():.3f}", refresh=False)
        evaluate(steps)
        history["seconds"] = time.perf_counter() - start
    history["threads"] = threads
    model.eval()
    if bar is not None:
        bar.close()
    if plot is not None:
        plot.draw(history)
    return history


def learning_rate(step, steps, lr, warmup, decay_to=None):
    """The learning rate of ``step``: linear warm-up, then constant or cosine decay."""
    if step < warmup or decay_to is None:
        return lr * min(1.0, (step + 1) / max(warmup, 1))
    progress = (step - warmup) / max(steps - warmup, 1)  # 0 … 1 after the warm-up
    return lr * (decay_to + (1 - decay_to) * 0.5 * (1 + math.cos(math.pi * progress)))


def save_weights(model: torch.nn.Module, path: Path | str) -> None:
    """``model``'s weights to ``path``, whole or not at all: an interrupted save (Ctrl-C in
    `make data`) leaves the weights that were there."""
    partial = Path(f"{path}.partial")
    torch.save(model.state_dict(), partial)
    partial.replace(path)


def train_recipe(
    model: torch.nn.Module,
    batches: Callable[[torch.Generator], Tensor],
    recipe: dict[str, Any],
    steps: int | None = None,
    **options: Any,
) -> dict[str, Any]:
    """:func:`train` with a model recipe's optimiser and seed (``recipe["optim"]``: steps,
    lr, weight_decay, warmup, optionally decay_to; ``recipe["seed"]``); ``steps`` overrides
    the recipe's."""
    o = recipe["optim"]
    return train(
        model,
        batches,
        steps or o["steps"],
        lr=o["lr"],
        weight_decay=o["weight_decay"],
        warmup=o["warmup"],
        decay_to=o.get("decay_to"),
        seed=recipe["seed"],
        **options,
    )


class _LivePlot:
    """One figure, redrawn in place in a notebook by :func:`attnlib.plotting.training_curves`
    (the same drawing as a plot of a finished run's log)."""

    def __init__(self):
        import matplotlib.pyplot as plt
        from IPython.display import display

        self.fig = plt.figure(figsize=(7.5, 3.6))
        plt.close(self.fig)  # shown through the display handle only
        self.handle = display({"text/plain": _live_alt(None)}, raw=True, display_id=True)

    def draw(self, history):
        from attnlib.plotting import figure_bundle, training_curves

        skip = ("step", "loss", "eval_step", "seconds", "threads")
        logged = {"step": history["eval_step"]}
        logged.update({k: v for k, v in history.items() if k not in skip})
        training_curves(logged, history["step"], history["loss"], fig=self.fig)
        data, metadata = figure_bundle(self.fig, _live_alt(history))
        self.handle.update(data, metadata=metadata, raw=True)


def _live_alt(history):
    """The live plot's alt text: what it shows, and how far training has got."""
    done = f"{history['step'][-1]} steps" if history and history["step"] else "no step yet"
    return (
        f"Training curves, redrawn as the model trains ({done} so far): the loss on the left "
        "axis should fall, the scores on the right axis rise."
    )


def run_facts(model: torch.nn.Module, history: dict[str, Any], load: float) -> dict[str, Any]:
    """What a model card says of its training run: versions, machine, size, time and the
    machine's load average (``load``) while it trained."""
    return dict(
        torch=torch.__version__,
        machine=platform.machine(),
        threads=history["threads"],
        n_params=sum(p.numel() for p in model.parameters()),
        train_seconds=round(history["seconds"], 2),
        load_average=round(load, 2),
        final_train_loss=round(float(np.mean(history["loss"][-50:])), 4),
    )
