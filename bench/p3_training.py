"""Benchmark: training the tiny transformer from scratch, and loading the shipped weights.

``run()`` trains the shipped recipe from scratch (deterministic, seed 0), scoring the best
layer-1 induction head every 25 steps, and reports the wall time until that score first
reaches 0.8, the time of the whole recipe, and the time to load ``data/``'s weights.
"""

import os
import time

import torch

from attnlib import shipped

TARGET_INDUCTION = 0.8


def _time_to_induction():
    marks = []  # (seconds since start, step, best induction score)
    start = time.perf_counter()

    def callback(step, model):
        scores = shipped.evaluate(model, shipped.eval_tokens(batch=32))["heads"]
        best = max(h["induction"] for h in scores if h["layer"] == 1)
        marks.append((time.perf_counter() - start, step, best))

    _, history = shipped.train_shipped(progress=False, callback=callback, every=25)
    hit = next((m for m in marks if m[2] >= TARGET_INDUCTION), None)
    return hit, history["seconds"], marks[-1][2]


def _load_seconds(repeats=5):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        shipped.load_shipped()
        times.append(time.perf_counter() - start)
    return sorted(times)[repeats // 2]


def run() -> list[tuple[str, str, str]]:
    torch.set_num_threads(2)
    load_before = os.getloadavg()[0]
    hit, total, final = _time_to_induction()
    load = max(load_before, os.getloadavg()[0])
    reached = f"{hit[0]:.1f} s (step {hit[1]})" if hit else "never"
    return [
        ("P3 train from scratch to induction score >= 0.8 (2 threads)", reached, "<= 30 s"),
        ("P3 full recipe, 1000 steps incl. scoring every 25", f"{total:.1f} s", "<= 30 s"),
        ("P3 best induction score after training", f"{final:.3f}", ">= 0.8"),
        ("P3 load shipped weights (median of 5)", f"{1000 * _load_seconds():.1f} ms", "< 1000 ms"),
        ("P3 machine load average around the training run", f"{load:.1f}", "< 2 for a fair timing"),
    ]


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row))
