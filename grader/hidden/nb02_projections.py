"""Hidden checks and the mistake catalogue for notebook 02 (projections)."""

from collections.abc import Iterator

import numpy as np

from grader.hidden import Alternative, Array, Mistake, exercise
from grader.hidden.nb01_soft_lookup import soft_lookup


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


def _design_cases(rng: np.random.Generator) -> Iterator[tuple[Array, Array, Array]]:
    for n, d, d_v in [(3, 4, 2), (5, 3, 6), (6, 8, 3), (2, 2, 2)]:
        query = rng.normal(size=d)
        items = rng.normal(size=(n, d_v))
        weights = rng.dirichlet(np.ones(n)) * 0.98 + 0.02 / n  # no weight too close to 0
        yield query, items, weights


def _retrieved(result: object, args: tuple[Array, Array, Array]) -> tuple[Array, Array]:
    """What the learner's design does: the soft lookup of the query, and what slots hold."""
    query, items, _ = args
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise TypeError("something other than a pair (keys, values)")
    keys, values = (np.asarray(r, dtype=np.float64) for r in result)
    if keys.shape != (len(items), len(query)) or values.shape != items.shape:
        return np.full(1, np.nan), values  # wrong shapes never match
    return soft_lookup(query, keys, values), values


@exercise(
    "design_keys_values",
    cases=_design_cases,
    outcome=_retrieved,
    mistakes=[
        Mistake(
            "weights-not-log",
            """
            def design_keys_values(query, items, weights):
                return np.outer(weights, query) / (query @ query), items
            """,
            says=("softmax exponentiates",),
            message="`design_keys_values` makes the scores equal to the weights, but softmax "
            "exponentiates: the scores must be log(weights).",
        ),
        Mistake(
            "not-divided",
            """
            def design_keys_values(query, items, weights):
                return np.outer(np.log(weights), query), items
            """,
            says=("query · query",),
            message="`design_keys_values` makes the scores log(weights) × (query · query): "
            "divide by query · query.",
        ),
        Mistake(
            "blend-in-values",
            """
            def design_keys_values(query, items, weights):
                keys = np.zeros((len(weights), len(query)))
                return keys, np.tile(weights @ items, (len(weights), 1))
            """,
            says=("hand over its", "item"),
            message="`design_keys_values` puts the blend in every value; each value must hand "
            "over its own item, and the keys must produce the weights.",
        ),
        Mistake(
            "wrong-sign",
            """
            def design_keys_values(query, items, weights):
                return np.outer(-np.log(weights), query) / (query @ query), items
            """,
            says=("wrong sign",),
            message="`design_keys_values` gives the scores the wrong sign: the heaviest item "
            "needs the largest score.",
        ),
        Mistake(
            "keys-transposed",
            """
            def design_keys_values(query, items, weights):
                return np.outer(query, np.log(weights)) / (query @ query), items
            """,
            says=("keys of shape",),
            message="`design_keys_values` returned keys of shape [d, n]: one key per item, "
            "as a row: [n, d].",
        ),
        Mistake(
            "values-transposed",
            """
            def design_keys_values(query, items, weights):
                return np.outer(np.log(weights), query) / (query @ query), items.T
            """,
            says=("values of shape",),
            message="`design_keys_values` returned values of shape [d_v, n]: one value per "
            "item, as a row: [n, d_v].",
        ),
    ],
    alternatives=[
        Alternative(
            "shifted-orthogonal",
            """
            def design_keys_values(query, items, weights):
                # A constant shift, plus a part orthogonal to the query (query · ortho = 0).
                ones = np.ones_like(query)
                ortho = ones - (ones @ query) / (query @ query) * query
                keys = np.outer(np.log(weights) + 3.0, query) / (query @ query)
                keys = keys + np.outer(np.arange(len(weights)), ortho)
                return [keys, items.copy()]
            """,
        ),
        Alternative(
            "loop",
            """
            def design_keys_values(query, items, weights):
                keys = np.stack([np.log(w) * query / (query @ query) for w in weights])
                return keys, items
            """,
        ),
    ],
)
def design_keys_values(query: Array, items: Array, weights: Array) -> tuple[Array, Array]:
    return np.outer(np.log(weights), query) / (query @ query), items
