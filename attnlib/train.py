"""A small, deterministic training loop for next-token models.

``train(model, batches, steps)`` runs AdamW with a short linear warm-up on the mean
per-token cross-entropy, shows a progress bar, and can draw the loss live in a notebook.
Seed the model with ``torch.manual_seed(seed)`` before building it; ``train`` seeds the
data generator it passes to ``batches`` from ``seed``, so the same call gives the same run.
"""

import time

import torch
import torch.nn.functional as F


def per_token_loss(logits, tokens):
    """Cross-entropy of predicting ``tokens[..., t+1]`` from ``logits[..., t, :]``.

    ``logits [B, T, vocab]``, ``tokens [B, T]`` → ``[B, T−1]`` (index t = loss on the
    token at position t + 1). Works unbatched too (``[T, vocab]``, ``[T]`` → ``[T−1]``).
    """
    tokens = torch.as_tensor(tokens)
    pred, target = logits[..., :-1, :], tokens[..., 1:]
    loss = F.cross_entropy(pred.reshape(-1, pred.shape[-1]), target.reshape(-1), reduction="none")
    return loss.view(target.shape)


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
    progress=True,
    live_plot=False,
    callback=None,
    every=50,
):
    """Train ``model`` in place for ``steps`` steps and return its history.

    ``batches`` is a function ``batches(gen) -> tokens [B, T]`` (``gen`` a seeded
    ``torch.Generator``) or an iterator of token tensors. Every ``every`` steps (and at the
    end) ``callback(step, model)`` may return a dict of numbers to log (it runs under
    ``torch.no_grad()`` in eval mode). ``live_plot=True`` redraws the training loss and the
    logged numbers in a notebook while it trains.

    Returns ``{"step": [...], "loss": [...], "eval_step": [...], <callback keys>: [...],
    "seconds": wall time}``.
    """
    gen = torch.Generator().manual_seed(seed)
    if not callable(batches):
        batches = iter(batches)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(warmup, 1)))
    history = {"step": [], "loss": [], "eval_step": []}
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

    start = time.perf_counter()
    model.train()
    for step in range(steps):
        if step % every == 0:
            evaluate(step)
            if plot is not None:
                plot.draw(history)
        tokens = _next_batch(batches, gen)
        loss = per_token_loss(model(tokens), tokens).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        history["step"].append(step)
        history["loss"].append(loss.item())
        if bar is not None:
            bar.update(1)
            if step % 10 == 0:
                bar.set_postfix_str(f"loss {loss.item():.3f}", refresh=False)
    evaluate(steps)
    history["seconds"] = time.perf_counter() - start
    model.eval()
    if bar is not None:
        bar.close()
    if plot is not None:
        plot.draw(history, final=True)
    return history


class _LivePlot:
    """One figure, redrawn in place in a notebook: loss (left axis) and the logged
    numbers (right axis, 0–1 scores usually) against the training step."""

    def __init__(self):
        import matplotlib.pyplot as plt
        from IPython.display import display

        self.fig, self.ax = plt.subplots(figsize=(7, 3.5))
        self.ax2 = self.ax.twinx()
        plt.close(self.fig)  # shown through the display handle only
        self.handle = display(self.fig, display_id=True)

    def draw(self, history, final=False):
        ax, ax2 = self.ax, self.ax2
        ax.clear()
        ax2.clear()
        if history["loss"]:
            ax.plot(history["step"], history["loss"], color="0.6", lw=1, label="training loss")
        ax.set_xlabel("training step")
        ax.set_ylabel("loss (nats)")
        for key, values in history.items():
            if key in ("step", "loss", "eval_step", "seconds") or not values:
                continue
            target = ax if "loss" in key else ax2
            target.plot(history["eval_step"][: len(values)], values, marker=".", label=key)
        ax2.set_ylabel("score")
        ax2.set_ylim(0, 1)
        lines = ax.get_legend_handles_labels()
        lines2 = ax2.get_legend_handles_labels()
        ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="center right", fontsize=8)
        self.fig.tight_layout()
        self.handle.update(self.fig)
