"""P6: notebooks 09 (the KV cache) and 12 (online softmax): their run times, and their ratios
at larger sizes than the notebooks can afford.

- each solution notebook, top to bottom in a fresh kernel (target: well under a minute);
- generating T = 512 positions of the tiny model one at a time (batch 1, one torch thread):
  with its KV cache against recomputing the whole prefix at every step;
- peak memory (tracemalloc) of full attention against blocks of 64 (the hidden checks'
  reference online softmax) at T = 4096, float64, and their CPU time on one BLAS thread.
The machine's load average is recorded: other processes change every timing here.
"""

import os
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
import numpy as np
import torch

from attnlib import cost
from attnlib.kvcache import time_generation
from attnlib.shipped import load_shipped
from bench.p1_series import run_cells
from grader.course import source_path
from grader.hidden.nb12_online_softmax import online_softmax_attention

NOTEBOOKS = ("09_kv_cache", "12_online_softmax")
T_GENERATE = 512
T_ATTENTION = 4096


def _notebook_seconds(notebook: str) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-p6-") as scratch:
        work = Path(scratch) / notebook
        shutil.copytree(source_path(notebook).parent, work)
        nb = nbformat.read(work / f"{notebook}.ipynb", as_version=4)
        return run_cells(nb, work)["total"]


def _generation_ratio() -> tuple[float, float]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = load_shipped()
        cached = time_generation(model, T_GENERATE, cached=True)
        recomputed = time_generation(model, T_GENERATE, cached=False)
    finally:
        torch.set_num_threads(before)
    return cached, recomputed


def _full_attention(Q, K, V):
    S = Q @ K.T / np.sqrt(Q.shape[1])  # [T_q, T_k]
    P = np.exp(S - S.max(axis=1, keepdims=True))
    return P @ V / P.sum(axis=1, keepdims=True)


def _attention_ratios():
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((T_ATTENTION, 32)) for _ in range(3)]
    with cost.blas_threads(1):
        peaks = [cost.peak_bytes(f, *args) for f in (_full_attention, online_softmax_attention)]
        times = [
            cost.time_call(f, *args, reps=2, min_total=0, clock=time.thread_time)
            for f in (_full_attention, online_softmax_attention)
        ]
    return peaks, times


def run() -> list[tuple[str, str, str]]:
    load_before = os.getloadavg()[0]
    seconds = {notebook: _notebook_seconds(notebook) for notebook in NOTEBOOKS}
    cached, recomputed = _generation_ratio()
    (peak_full, peak_blocked), (time_full, time_blocked) = _attention_ratios()
    load = max(load_before, os.getloadavg()[0])
    MiB = 2**20
    return [
        *[
            (f"P6 {nb}: run time, fresh kernel (solution)", f"{s:.1f} s", "< 60 s")
            for nb, s in seconds.items()
        ],
        (
            f"P6 generate {T_GENERATE} positions: recomputed / cached (1 thread)",
            f"{recomputed / cached:.1f}× ({recomputed:.2f} s / {cached:.2f} s)",
            "> 1",
        ),
        (
            f"P6 attention T = {T_ATTENTION}: peak memory full / blocks of 64",
            f"{peak_full / peak_blocked:.0f}× "
            f"({peak_full / MiB:.0f} MiB / {peak_blocked / MiB:.1f} MiB)",
            "",
        ),
        (
            f"P6 attention T = {T_ATTENTION}: time blocks of 64 / full (1 BLAS thread)",
            f"{time_blocked / time_full:.2f} ({time_blocked:.2f} s / {time_full:.2f} s)",
            "",
        ),
        ("P6 machine load average around these runs", f"{load:.1f}", "< 2 for a fair timing"),
    ]


if __name__ == "__main__":
    for row in run():
        print(" | ".join(row))
