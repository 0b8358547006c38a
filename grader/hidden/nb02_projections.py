"""Hidden checks for notebook 02 (projections)."""

import numpy as np

from grader.hidden import exercise


def _project_cases(rng):
    # Mostly d_out != d_model (so X @ W crashes), plus square W where only values tell.
    for T, d_model, d_out in [(5, 4, 3), (7, 6, 8), (3, 5, 5), (1, 3, 2), (6, 4, 4)]:
        yield rng.normal(size=(T, d_model)), rng.normal(size=(d_out, d_model))


@exercise(
    "project",
    cases=_project_cases,
    mistakes=[
        (
            lambda X, W: X @ W,
            "`project` computed X @ W; with q = W x per row, all rows at once are X @ W.T.",
        ),
        (
            lambda X, W: W @ X.T,
            "`project` returned W @ X.T, shape [d_out, T]; rows must be positions: X @ W.T.",
        ),
        (
            lambda X, W: (W @ X.T).reshape(X.shape[0], W.shape[0]),
            "`project` reshaped W @ X.T instead of transposing it: use X @ W.T.",
        ),
        (lambda X, W: X @ W.T + 1.0, "`project` adds a bias; these projections have none."),
    ],
)
def project(X, W):
    return X @ W.T


def _qkv_cases(rng):
    for T, d_model, d_k, d_v in [(4, 6, 3, 5), (5, 4, 4, 4), (2, 3, 2, 2), (6, 8, 2, 3)]:
        yield (
            rng.normal(size=(T, d_model)),
            rng.normal(size=(d_k, d_model)),
            rng.normal(size=(d_k, d_model)),
            rng.normal(size=(d_v, d_model)),
        )


def _qkv_ref(X, W_Q, W_K, W_V):
    return X @ W_Q.T, X @ W_K.T, X @ W_V.T


@exercise(
    "qkv",
    cases=_qkv_cases,
    mistakes=[
        (
            lambda X, Wq, Wk, Wv: (X @ Wq.T, X @ Wv.T, X @ Wk.T),
            "`qkv` returns K and V swapped: return (Q, K, V).",
        ),
        (
            lambda X, Wq, Wk, Wv: (X @ Wk.T, X @ Wq.T, X @ Wv.T),
            "`qkv` returns Q and K swapped: return (Q, K, V).",
        ),
        (
            lambda X, Wq, Wk, Wv: (X @ Wq.T, X @ Wq.T, X @ Wv.T),
            "`qkv` uses W_Q for the keys too: K = X @ W_K.T.",
        ),
        (
            lambda X, Wq, Wk, Wv: (X @ Wq, X @ Wk, X @ Wv),
            "`qkv` computes X @ W without the transpose: Q = X @ W_Q.T.",
        ),
        (
            lambda X, Wq, Wk, Wv: np.concatenate([X @ Wq.T, X @ Wk.T, X @ Wv.T], axis=1),
            "`qkv` returns one concatenated array; return the tuple (Q, K, V).",
        ),
    ],
)
def qkv(X, W_Q, W_K, W_V):
    return _qkv_ref(X, W_Q, W_K, W_V)
