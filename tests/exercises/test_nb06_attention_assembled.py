"""Notebook 06: the checks pass the solution, fail the stub, and name the usual mistakes."""

import numpy as np
import pytest

from attnlib.checks import nb06_attention_assembled as checks
from attnlib.checks._core import CheckFailed
from grader.hidden import verify

NB = "06_attention_assembled"


def _softmax(S, axis=-1):
    E = np.exp(S - S.max(axis=axis, keepdims=True))
    return E / E.sum(axis=axis, keepdims=True)


def _make(scores=None, scale=None, axis=-1, mask="before", swap=False, wT=False):
    """attention with one slip, written the way a learner would."""

    def attention(Q, K, V, mask_=None):
        S = scores(Q, K) if scores else Q @ np.swapaxes(K, -1, -2)
        S = S / (scale(Q) if scale else np.sqrt(Q.shape[-1]))
        if mask_ is not None and mask == "before":
            S = S + mask_
        if mask_ is not None and mask == "multiply":
            S = S * mask_
        A = _softmax(S, axis=axis)
        if mask_ is not None and mask == "zero after":
            A = np.where(np.isneginf(mask_), 0.0, A)
        if mask_ is not None and mask == "add after":
            A = A + mask_
        out = (np.swapaxes(A, -1, -2) if wT else A) @ V
        return (A, out) if swap else (out, A)

    def wrapper(Q, K, V, mask=None):
        with np.errstate(all="ignore"):
            return attention(Q, K, V, mask)

    return wrapper


def _k_dot_t(Q, K, V, mask=None):  # K.T reverses every axis: fine for [T, d], wrong for batches
    S = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = S + mask
    A = _softmax(S)
    return A @ V, A


@pytest.mark.parametrize(
    "wrong, visible, hidden",
    [
        (_make(scores=lambda Q, K: K @ np.swapaxes(Q, -1, -2)), r"K Qᵀ instead of Q Kᵀ", "K Qᵀ"),
        (_make(scale=lambda Q: 1.0), "not scaled", "does not scale"),
        (_make(scale=lambda Q: Q.shape[-1]), "divided by d_k", "by d_k instead"),
        (_make(scale=lambda Q: np.sqrt(Q.shape[-2])), "divided by √T", "by √T"),
        (_make(axis=-2), "columns of the weights sum to 1", "over the queries"),
        (_make(mask="ignore"), "ignored the mask", "ignores the mask"),
        (
            _make(mask="zero after"),
            "zeroed the masked weights after the softmax",
            "after the softmax",
        ),
        (_make(mask="add after"), "infinite weights.*BEFORE the softmax", "wrong result"),
        (_make(mask="multiply"), "NaN weights.*never multiply", "wrong result"),
        (_make(swap=True), r"returned \(weights, output\)", r"returns \(weights, output\)"),
        (_make(wT=True), r"weights.T @ V", r"weights.T @ V"),
        (_k_dot_t, "np.swapaxes", "wrong result|raised"),
    ],
)
def test_mistakes_are_named(wrong, visible, hidden):
    with pytest.raises(CheckFailed, match=visible):
        checks.check_attention(wrong)
    with pytest.raises(CheckFailed, match=hidden):
        verify("attention", wrong)


def _loops(Q, K, V, mask=None):
    *batch, T_q, d_k = Q.shape
    T_k = K.shape[-2]
    M = np.zeros((T_q, T_k)) if mask is None else np.broadcast_to(mask, (T_q, T_k))
    out = np.zeros((*batch, T_q, V.shape[-1]))
    A = np.zeros((*batch, T_q, T_k))
    for b in np.ndindex(*batch):
        for i in range(T_q):
            s = np.array([Q[b][i] @ K[b][j] / np.sqrt(d_k) + M[i, j] for j in range(T_k)])
            e = np.exp(s - s.max())
            A[b][i] = e / e.sum()
            out[b][i] = sum(A[b][i, j] * V[b][j] for j in range(T_k))
    return out, A


def _einsum_large_negative(Q, K, V, mask=None):
    S = np.einsum("...id,...jd->...ij", Q, K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = S + np.maximum(mask, -1e9)  # −1e9 instead of −inf: same weights
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    A = E / E.sum(axis=-1, keepdims=True)
    return np.einsum("...ij,...jd->...id", A, V), A


def _torch_ops(Q, K, V, mask=None):
    import torch

    q, k, v = (torch.from_numpy(np.asarray(x, dtype=np.float64)) for x in (Q, K, V))
    S = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if mask is not None:
        S = S + torch.as_tensor(mask, dtype=S.dtype)
    A = torch.softmax(S, dim=-1)
    return (A @ v).numpy(), A.numpy()


@pytest.mark.parametrize("alternative", [_loops, _einsum_large_negative, _torch_ops])
def test_correct_alternatives_pass(alternative):
    checks.check_attention(alternative)
    verify("attention", alternative)
