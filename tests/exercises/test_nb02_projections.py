"""Notebook 02's exercises: the solution passes, the stub says so, mistakes are named,
and correct answers written differently pass too."""

import re

import numpy as np
import pytest
import torch

from attnlib.checks import nb02_projections as checks

NB = "02_projections"
CHECKS = {"project": checks.check_project, "qkv": checks.check_qkv}


WRONG = {
    "project-no-transpose": ("project", lambda X, W: X @ W, r"X @ W\.T"),
    "project-W-times-X": ("project", lambda X, W: W @ X.T, r"W @ X\.T"),
    "project-reshape": ("project", lambda X, W: (W @ X.T).reshape(len(X), len(W)), r"reshape"),
    "project-bias": ("project", lambda X, W: X @ W.T + 1.0, r"bias|W @ X\[t\]"),
    "qkv-k-v-swapped": (
        "qkv",
        lambda X, Wq, Wk, Wv: (X @ Wq.T, X @ Wv.T, X @ Wk.T),
        r"order|swapped",
    ),
    "qkv-q-k-swapped": (
        "qkv",
        lambda X, Wq, Wk, Wv: (X @ Wk.T, X @ Wq.T, X @ Wv.T),
        r"order|swapped",
    ),
    "qkv-W_Q-for-keys": (
        "qkv",
        lambda X, Wq, Wk, Wv: (X @ Wq.T, X @ Wq.T, X @ Wv.T),
        r"own matrix|W_Q for the keys",
    ),
    "qkv-concatenated": (
        "qkv",
        lambda X, Wq, Wk, Wv: np.concatenate([X @ Wq.T, X @ Wk.T, X @ Wv.T], 1),
        r"three arrays|tuple",
    ),
    "qkv-no-transpose": (
        "qkv",
        lambda X, Wq, Wk, Wv: (X @ Wq, X @ Wk, X @ Wv),
        r"X @ W\.T|W_Q\.T",
    ),
}


@pytest.mark.parametrize("case", list(WRONG))
def test_wrong_answer_fails_naming_the_mistake(case, check_failures):
    name, fn, pattern = WRONG[case]
    messages = check_failures(CHECKS[name], name, fn)
    assert messages, f"{case}: no check failed"
    assert any(re.search(pattern, m) for m in messages), messages


def _project_torch(X, W):
    linear = torch.nn.Linear(W.shape[1], W.shape[0], bias=False, dtype=torch.float64)
    with torch.no_grad():
        linear.weight.copy_(torch.from_numpy(np.asarray(W, dtype=np.float64)))
        return linear(torch.from_numpy(np.asarray(X, dtype=np.float64))).numpy()


RIGHT = {
    "project-loop": ("project", lambda X, W: np.stack([W @ x for x in X])),
    "project-einsum": ("project", lambda X, W: np.einsum("td,od->to", X, W)),
    "project-torch-linear": ("project", _project_torch),
    "project-float32": ("project", lambda X, W: X.astype(np.float32) @ W.T.astype(np.float32)),
    "qkv-einsum": ("qkv", lambda X, *Ws: tuple(np.einsum("td,od->to", X, W) for W in Ws)),
    "qkv-list-of-loops": ("qkv", lambda X, *Ws: [np.array([W @ x for x in X]) for W in Ws]),
    "qkv-torch": ("qkv", lambda X, *Ws: tuple(_project_torch(X, W) for W in Ws)),
}


@pytest.mark.parametrize("case", list(RIGHT))
def test_correct_variant_passes(case, check_failures):
    name, fn = RIGHT[case]
    assert check_failures(CHECKS[name], name, fn) == []


def test_solution_accepts_float32_inputs(solution):
    fns = solution(NB)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 4)).astype(np.float32)
    Ws = [rng.normal(size=s).astype(np.float32) for s in [(3, 4), (3, 4), (2, 4)]]
    for got, W in zip(fns["qkv"](X, *Ws), Ws, strict=True):
        np.testing.assert_allclose(got, X.astype(float) @ W.T.astype(float), rtol=1e-5)
