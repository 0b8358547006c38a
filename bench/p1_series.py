"""P1: the whole series, top to bottom, one fresh kernel per notebook, against its floor.

The floor is the same number of fresh kernels, each running only the import statements of
its notebook: what no notebook can avoid. Target: series ≤ 2× the floor. The solution
notebooks are run (a learner's finished work); each in a scratch copy of its folder.
"""

import ast
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from grader.course import assignments, source_path

TIMEOUT = 120  # s per cell


def imports_only(nb) -> str:
    """Every top-level import statement of a notebook's code cells, in order."""
    lines = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        lines += [ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    return "\n".join(dict.fromkeys(lines))


def run_cells(nb, cwd, upto=None) -> dict[str, float]:
    """Start a fresh kernel, run ``nb``'s code cells (the first ``upto``) in place; time it.

    Keys: ``start`` (kernel up and ready), ``cells`` (all cells run), ``total``.
    """
    code = [c for c in nb.cells if c.cell_type == "code"][:upto]
    client = NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}})  # fmt: skip
    t0 = time.perf_counter()
    with client.setup_kernel():
        t1 = time.perf_counter()
        for cell in code:
            client.execute_cell(cell, nb.cells.index(cell))
        t2 = time.perf_counter()
    return {"start": t1 - t0, "cells": t2 - t1, "total": t2 - t0}


def one_cell(source: str):
    return nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source)],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )


def run() -> list[tuple[str, str, str]]:
    series = floor = 0.0
    per_notebook = []
    with tempfile.TemporaryDirectory(prefix="bench-p1-") as scratch:
        run_cells(one_cell("import numpy, matplotlib.pyplot"), scratch)  # warm the disk cache
        for assignment in assignments():
            work = Path(scratch) / assignment
            shutil.copytree(source_path(assignment).parent, work)
            nb = nbformat.read(work / f"{assignment}.ipynb", as_version=4)
            base = run_cells(one_cell(imports_only(nb)), work)["total"]
            full = run_cells(nb, work)["total"]
            floor, series = floor + base, series + full
            per_notebook.append((assignment, full, base))
    rows = [
        (f"P1 {a}: run / floor", f"{full:.1f} s / {base:.1f} s", "")
        for a, full, base in per_notebook
    ]  # fmt: skip
    return rows + [
        (f"P1 series, {len(per_notebook)} notebooks, fresh kernel each", f"{series:.1f} s", ""),
        ("P1 floor: same kernels, imports only", f"{floor:.1f} s", ""),
        ("P1 series / floor", f"{series / floor:.2f}×", "≤ 2×"),
    ]
