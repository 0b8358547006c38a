"""Measure how saturated a softmax over random attention scores is, with and without scaling.

The machinery for notebook 04's ablation: random queries and keys, the softmax weights,
and the size of the softmax's gradient (its Jacobian, via torch autograd). The statistics
the learner writes (entropy, near-one-hot share) are passed in, so this module holds no answer.
"""

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from torch import Tensor

Array = npt.NDArray[np.float64]
ScoreFn = Callable[[Array, Array], npt.ArrayLike]
LearnerFn = Callable[..., Any]  # the learner's entropy and one_hot_share


@contextmanager
def _one_torch_thread() -> Iterator[ModuleType]:
    """Small tensor ops run fastest on one thread, and a busy machine cannot stall them."""
    import torch

    from attnlib.train import torch_threads

    with torch_threads(1):
        yield torch


def sample_scores(
    score_fn: ScoreFn, d_k: int, T: int, n_rows: int, seed: int = 0, block: int = 50
) -> Array:
    """Scores [n_rows, T]: ``n_rows`` queries, each against T keys, components ~ N(0, 1).

    Queries come in blocks of ``block`` that share one fresh set of T keys, so a
    ``score_fn(Q, K)`` with Q [block, d_k] and K [T, d_k] returning [block, T] is enough.
    """
    rng = np.random.default_rng(seed)
    parts: list[Array] = []
    for start in range(0, n_rows, block):
        Q = rng.standard_normal((min(block, n_rows - start), d_k))  # [block, d_k]
        K = rng.standard_normal((T, d_k))  # [T, d_k]
        parts.append(np.asarray(score_fn(Q, K), dtype=np.float64))  # [block, T]
    return np.concatenate(parts)  # [n_rows, T]


def softmax_weights(S: npt.ArrayLike) -> Array:
    """Softmax over the last axis, in float64 (torch's, so it never overflows)."""
    with _one_torch_thread() as torch:
        weights: Array = torch.softmax(torch.as_tensor(S, dtype=torch.float64), dim=-1).numpy()
        return weights


def jacobian_norms(S: npt.ArrayLike) -> Array:
    """Frobenius norm of d softmax(s) / d s for every row s of S [N, T], via autograd -> [N].

    Row j of each Jacobian is the gradient of output weight j; the rows of S are
    independent, so one backward pass per key gives that row for all N rows at once.
    """
    with _one_torch_thread() as torch:
        s = torch.as_tensor(np.asarray(S), dtype=torch.float64).clone().requires_grad_(True)
        p = torch.softmax(s, dim=-1)  # [N, T]
        squared = torch.zeros(s.shape[:-1], dtype=torch.float64)  # [N]
        for j in range(s.shape[-1]):
            (grad,) = torch.autograd.grad(p[..., j].sum(), s, retain_graph=True)  # [N, T]
            squared += (grad**2).sum(-1)
        norms: Array = squared.sqrt().numpy()
        return norms


def uniform_jacobian_norm(T: int) -> float:
    """‖J‖_F of a uniform softmax over T keys: J = I/T − 11ᵀ/T², so ‖J‖_F = √(T−1)/T."""
    return float(np.sqrt(T - 1) / T)


def row_stats(
    S: Array,
    entropy: LearnerFn,
    one_hot_share: LearnerFn,
    threshold: float = 0.9,
    tiny: float = 0.01,
) -> dict[str, float]:
    """Saturation statistics of the softmax of S [N, T], using the learner's functions."""
    A = softmax_weights(S)  # [N, T]
    J = jacobian_norms(S)  # [N]
    return {
        "std_scores": float(np.std(S)),
        "mean_max_weight": float(A.max(axis=-1).mean()),
        "mean_entropy": float(np.mean(entropy(A))),
        "one_hot_share": float(one_hot_share(A, threshold)),
        "median_J": float(np.median(J)),
        "mean_J": float(np.mean(J)),
        "tiny_J_share": float(np.mean(J < tiny)),
    }


def sweep(
    score_fns: dict[str, ScoreFn],
    d_ks: Iterable[int],
    T: int,
    n_rows: int,
    entropy: LearnerFn,
    one_hot_share: LearnerFn,
    threshold: float = 0.9,
    tiny: float = 0.01,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """``row_stats`` for each label in ``score_fns`` (e.g. scaled, unscaled) and each d_k.

    The same random queries and keys are used for every label at a given d_k, so the
    labels differ only in the score function.
    """
    rows: list[dict[str, Any]] = []
    for d_k in d_ks:
        for label, fn in score_fns.items():
            S = sample_scores(fn, d_k, T, n_rows, seed=seed + d_k)
            stats = row_stats(S, entropy, one_hot_share, threshold, tiny)
            rows.append({"d_k": d_k, "scores": label, "T": T, "rows": n_rows, **stats})
    return rows


COLUMNS = [  # (key, header, format)
    ("d_k", "d_k", "{:>5d}"),
    ("scores", "scores", "{:>9s}"),
    ("std_scores", "std(S)", "{:>7.2f}"),
    ("mean_max_weight", "max w", "{:>6.2f}"),
    ("one_hot_share", "P(max>.9)", "{:>9.2f}"),
    ("mean_entropy", "entropy", "{:>7.2f}"),
    ("median_J", "median‖J‖", "{:>9.4f}"),
    ("mean_J", "mean‖J‖", "{:>8.3f}"),
    ("tiny_J_share", "P(‖J‖<.01)", "{:>10.2f}"),
]


def format_table(rows: list[dict[str, Any]]) -> str:
    """The sweep as a fixed-width text table, one line per (d_k, scores)."""
    header = " ".join(f"{h:>{len(fmt.format(rows[0][k]))}}" for k, h, fmt in COLUMNS)
    lines = [header]
    for row in rows:
        lines.append(" ".join(fmt.format(row[k]) for k, _, fmt in COLUMNS))
    return "\n".join(lines)


def _adam_step(
    params: list["Tensor"],
    moments: list[tuple["Tensor", "Tensor"]],
    t: int,
    lr: float,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> None:
    """Adam, written out: torch.optim's first step imports torch._dynamo (about 1 s)."""
    import torch

    with torch.no_grad():
        for p, (m, v) in zip(params, moments, strict=True):
            grad = p.grad
            assert grad is not None, "Adam steps after a backward pass"
            m.mul_(betas[0]).add_(grad, alpha=1 - betas[0])
            v.mul_(betas[1]).addcmul_(grad, grad, value=1 - betas[1])
            m_hat, v_hat = m / (1 - betas[0] ** t), v / (1 - betas[1] ** t)
            p -= lr * m_hat / (v_hat.sqrt() + eps)
            p.grad = None


def train_to_imitate(
    scaled: bool,
    d_k: int = 128,
    T: int = 16,
    batch: int = 16,
    steps: int = 200,
    lr: float = 3e-3,
    seed: int = 0,
    threshold: float = 0.9,
) -> dict[str, Any]:
    """A short training run: one attention head learns W_Q, W_K to copy a teacher head.

    The teacher is a fixed, scaled head; the student starts from components of variance 1
    (the footnote's assumption) and divides its scores by √d_k only if ``scaled``. Both can
    represent the teacher exactly. Trained with Adam. Returns the loss per step and the share
    of the student's rows with a weight above ``threshold`` at the start and at the end.
    """
    with _one_torch_thread() as torch:
        d_model = d_k
        data = torch.Generator().manual_seed(seed)
        W_Q_t, W_K_t, W_V = (
            torch.randn(d_k, d_model, generator=data) / d_model**0.5 for _ in "qkv"
        )
        W_Q = (torch.randn(d_k, d_model, generator=data) / d_model**0.5).requires_grad_()
        W_K = (torch.randn(d_k, d_model, generator=data) / d_model**0.5).requires_grad_()
        params = [W_Q, W_K]
        moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]

        def weights(X: "Tensor", W_Q: "Tensor", W_K: "Tensor", scale: bool) -> "Tensor":
            S = (X @ W_Q.T) @ (X @ W_K.T).transpose(-1, -2)  # [batch, T, T]
            A: Tensor = torch.softmax(S / d_k**0.5 if scale else S, dim=-1)
            return A

        losses, shares = list[float](), list[float]()
        for step in range(steps):
            X = torch.randn(batch, T, d_model, generator=data)  # [batch, T, d_model]
            with torch.no_grad():
                target = weights(X, W_Q_t, W_K_t, True) @ (X @ W_V.T)
            A = weights(X, W_Q, W_K, scaled)
            loss = ((A @ (X @ W_V.T) - target) ** 2).mean()
            loss.backward()
            _adam_step(params, moments, step + 1, lr)
            losses.append(loss.item())
            if step in (0, steps - 1):
                shares.append((A.max(dim=-1).values > threshold).float().mean().item())
    return {"loss": np.array(losses), "one_hot_start": shares[0], "one_hot_end": shares[1]}
