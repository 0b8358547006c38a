"""Hidden checks and the mistake catalogue for notebook 02 (projections)."""

from collections.abc import Iterator

import numpy as np

from grader.hidden import Alternative, Array, Mistake, exercise


def _project_cases(rng: np.random.Generator) -> Iterator[tuple[Array, Array]]:
    # Mostly d_out != d_model (so X @ W crashes), plus square W where only values tell.
    for T, d_model, d_out in [(5, 4, 3), (7, 6, 8), (3, 5, 5), (1, 3, 2), (6, 4, 4)]:
        yield rng.normal(size=(T, d_model)), rng.normal(size=(d_out, d_model))


_TORCH_LINEAR = """
    def project(X, W):
        import torch

        linear = torch.nn.Linear(W.shape[1], W.shape[0], bias=False, dtype=torch.float64)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(W))
            return linear(torch.from_numpy(X)).numpy()
    """


@exercise(
    "project",
    cases=_project_cases,
    mistakes=[
        Mistake(
            "X-times-W",
            """
            def project(X, W):
                return X @ W
            """,
            says=("X @ W.T",),
            message="`project` computed X @ W; with q = W x per row, all rows at once are X @ W.T.",
        ),
        Mistake(
            "W-times-X",
            """
            def project(X, W):
                return W @ X
            """,
            says=("X @ W.T",),
        ),
        Mistake(
            "W-times-X-transposed",
            """
            def project(X, W):
                return W @ X.T
            """,
            says=("[d_out, T]", "X @ W.T"),
            message="`project` returned W @ X.T, shape [d_out, T]; rows must be positions: "
            "X @ W.T.",
        ),
        Mistake(
            "reshaped",
            """
            def project(X, W):
                return (W @ X.T).reshape(X.shape[0], W.shape[0])
            """,
            says=("X @ W.T",),
            message="`project` reshaped W @ X.T instead of transposing it: use X @ W.T.",
        ),
        Mistake(
            "bias",
            """
            def project(X, W):
                return X @ W.T + 1.0
            """,
            says=("no bias",),
            message="`project` adds a bias; these projections have no bias.",
        ),
        Mistake(
            "float32",
            """
            def project(X, W):
                return X.astype(np.float32) @ W.T.astype(np.float32)
            """,
            says=("float32", "keep float64"),
        ),
    ],
    alternatives=[
        Alternative(
            "loop",
            """
            def project(X, W):
                return np.stack([W @ x for x in X])
            """,
        ),
        Alternative(
            "einsum",
            """
            def project(X, W):
                return np.einsum("td,od->to", X, W)
            """,
        ),
        Alternative("torch-linear", _TORCH_LINEAR),
    ],
)
def project(X: Array, W: Array) -> Array:
    return X @ W.T


def _qkv_cases(rng: np.random.Generator) -> Iterator[tuple[Array, Array, Array, Array]]:
    for T, d_model, d_k, d_v in [(4, 6, 3, 5), (5, 4, 4, 4), (2, 3, 2, 2), (6, 8, 2, 3)]:
        yield (
            rng.normal(size=(T, d_model)),
            rng.normal(size=(d_k, d_model)),
            rng.normal(size=(d_k, d_model)),
            rng.normal(size=(d_v, d_model)),
        )


@exercise(
    "qkv",
    cases=_qkv_cases,
    parts=("Q", "K", "V"),
    mistakes=[
        Mistake(
            "K-V-swapped",
            """
            def qkv(X, W_Q, W_K, W_V):
                return project(X, W_Q), project(X, W_V), project(X, W_K)
            """,
            says=("order (Q, K, V)",),
            message="`qkv` returns K and V swapped: return them in the order (Q, K, V).",
        ),
        Mistake(
            "Q-K-swapped",
            """
            def qkv(X, W_Q, W_K, W_V):
                return project(X, W_K), project(X, W_Q), project(X, W_V)
            """,
            says=("order (Q, K, V)",),
            message="`qkv` returns Q and K swapped: return them in the order (Q, K, V).",
        ),
        Mistake(
            "W_Q-for-keys",
            """
            def qkv(X, W_Q, W_K, W_V):
                return project(X, W_Q), project(X, W_Q), project(X, W_V)
            """,
            says=("own matrix",),
            message="`qkv` uses W_Q for the keys too: each of Q, K, V comes from its own "
            "matrix, K = X @ W_K.T.",
        ),
        Mistake(
            "no-transpose",
            """
            def qkv(X, W_Q, W_K, W_V):
                return X @ W_Q, X @ W_K, X @ W_V
            """,
            says=("X @ W_Q.T",),
            message="`qkv` computes X @ W without the transpose: Q = X @ W_Q.T.",
        ),
        Mistake(
            "concatenated",
            """
            def qkv(X, W_Q, W_K, W_V):
                return np.concatenate([project(X, W_Q), project(X, W_K), project(X, W_V)], axis=1)
            """,
            says=("three arrays",),
            message="`qkv` returns one concatenated array; return the three arrays as a tuple "
            "(Q, K, V).",
        ),
        Mistake(
            "stacked",
            """
            def qkv(X, W_Q, W_K, W_V):
                return np.stack([project(X, W_Q), project(X, W_K), project(X, W_V)])
            """,
            says=("tuple",),
        ),
        Mistake(
            "V-transposed",
            """
            def qkv(X, W_Q, W_K, W_V):
                return project(X, W_Q), project(X, W_K), project(X, W_V).T
            """,
            says=("returned V of shape",),
        ),
    ],
    alternatives=[
        Alternative(
            "einsum",
            """
            def qkv(X, W_Q, W_K, W_V):
                return tuple(np.einsum("td,od->to", X, W) for W in (W_Q, W_K, W_V))
            """,
        ),
        Alternative(
            "list-of-loops",
            """
            def qkv(X, W_Q, W_K, W_V):
                return [np.array([W @ x for x in X]) for W in (W_Q, W_K, W_V)]
            """,
        ),
        Alternative(
            "torch",
            """
            def qkv(X, W_Q, W_K, W_V):
                import torch

                x = torch.from_numpy(X)
                return tuple((x @ torch.from_numpy(W).T).numpy() for W in (W_Q, W_K, W_V))
            """,
        ),
    ],
)
def qkv(X: Array, W_Q: Array, W_K: Array, W_V: Array) -> tuple[Array, Array, Array]:
    return project(X, W_Q), project(X, W_K), project(X, W_V)
