"""Synthetic sequences made of repeated random blocks.

Token 0 is BOS; ordinary tokens are 1…``vocab``. A block is L random tokens ``r``
followed by ``r`` again, so the second copy (after its first token) can be predicted
by copying, and the first copy cannot be predicted at all (loss ln ``vocab``).
"""

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

BOS = 0
VOCAB = 64  # ordinary tokens 1…64
N_TOKENS = VOCAB + 1  # ids including BOS: the model's vocabulary size


def repeated_blocks(
    gen: torch.Generator,
    batch: int,
    T: int = 65,
    vocab: int = VOCAB,
    min_len: int = 8,
    max_len: int = 32,
) -> tuple[Tensor, Tensor]:
    """[BOS] + (r, r) + (r', r') + … cut to ``T`` tokens; block length L ~ U{min_len…max_len}.

    Returns ``tokens [batch, T]`` (long) and ``copyable [batch, T]`` (bool): True where the
    token can be predicted by copying from the earlier copy (second copy, except its first
    token, which starts a repeat no one can foresee).
    """
    tokens = torch.empty(batch, T, dtype=torch.long)
    copyable = torch.zeros(batch, T, dtype=torch.bool)
    for b in range(batch):
        seq, can_copy = [BOS], [False]
        while len(seq) < T:
            L = int(torch.randint(min_len, max_len + 1, (1,), generator=gen))
            r = torch.randint(1, vocab + 1, (L,), generator=gen).tolist()
            seq += r + r
            can_copy += [False] * (L + 1) + [True] * (L - 1)
        tokens[b] = torch.tensor(seq[:T])
        copyable[b] = torch.tensor(can_copy[:T])
    return tokens, copyable


def repeat_twice(gen: torch.Generator, batch: int, period: int, vocab: int = VOCAB) -> Tensor:
    """``[BOS] + r + r`` with ``len(r) = period``: tokens ``[batch, 2·period + 1]``.
    The first copy sits at positions 1…period, the second at period+1…2·period."""
    r = torch.randint(1, vocab + 1, (batch, period), generator=gen)
    return torch.cat([torch.full((batch, 1), BOS), r, r], dim=1)


def induction_batches(
    batch: int = 32, T: int = 65, vocab: int = VOCAB, min_len: int = 8, max_len: int = 32
) -> Callable[[torch.Generator], Tensor]:
    """A batch maker for :func:`attnlib.train.train`: ``gen -> tokens [batch, T]``."""

    def make(gen: torch.Generator) -> Tensor:
        return repeated_blocks(gen, batch, T, vocab, min_len, max_len)[0]

    return make


def token_labels(tokens: Tensor | Sequence[int]) -> list[str]:
    """Axis labels for a heatmap: "BOS" for token 0, the id otherwise."""
    return ["BOS" if int(t) == BOS else str(int(t)) for t in tokens]
