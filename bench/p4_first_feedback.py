"""P4: time to first feedback in notebook 01, and no torch where none is needed.

A learner opens notebook 01 and runs it down to the first check: kernel start, the imports
cell, then every code cell up to and including the first visible check (with the finished
answers, so the check passes). Median of a few fresh kernels. For scale, the cost of
`import torch` alone, which the torch-free notebooks never pay.
"""

import statistics
import subprocess
import sys
import tempfile
import time

import nbformat

from bench.p1_series import run_cells
from grader.course import assignments, source_path

RUNS = 3
NOTEBOOK = "01_soft_lookup"


def _first_check(nb) -> int:
    """How many code cells, counted from the top, end with the first visible check."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code):
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and "BEGIN HIDDEN TESTS" not in cell.source:
            return i + 1
    raise ValueError("no visible check")


def _imports(module: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", f"import time; t = time.perf_counter(); import {module}; "
         "print(time.perf_counter() - t)"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    return float(out.stdout)


def run() -> list[tuple[str, str, str]]:
    nb = nbformat.read(source_path(NOTEBOOK), as_version=4)
    upto = _first_check(nb)
    probe = nbformat.from_dict(nb)
    probe.cells = [c for c in nb.cells if c.cell_type == "code"][:upto] + [
        nbformat.v4.new_code_cell("import sys\nprint('torch' in sys.modules)")
    ]
    timings = []
    with tempfile.TemporaryDirectory(prefix="bench-p4-") as scratch:
        for _ in range(RUNS):
            t = time.perf_counter()
            run_cells(probe, scratch)
            timings.append(time.perf_counter() - t)
        loaded = probe.cells[-1].outputs[0]["text"].strip() if probe.cells[-1].outputs else "?"
        parts = run_cells(nb, scratch, upto=1)  # kernel start + imports cell alone
    torch_free = [
        a for a in assignments()
        if "torch" not in "".join(c.source for c in nbformat.read(source_path(a), 4).cells)
    ]  # fmt: skip
    return [
        (f"P4 {NOTEBOOK}: first feedback (kernel + imports + {upto} cells to the first check)",
         f"{statistics.median(timings):.2f} s (median of {RUNS})", ""),
        ("P4   of which kernel start", f"{parts['start']:.2f} s", ""),
        ("P4   of which imports cell", f"{parts['cells']:.2f} s", ""),
        (f"P4 torch loaded at {NOTEBOOK}'s first check", loaded.replace("False", "no")
         .replace("True", "yes"), "no"),
        ("P4 `import torch` alone (saved by torch-free notebooks)", f"{_imports('torch'):.2f} s",
         ""),
        ("P4 notebooks that never import torch", ", ".join(a[:2] for a in torch_free) or "none",
         ""),
    ]  # fmt: skip
