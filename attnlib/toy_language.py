"""A tiny synthetic language where the next token is genuinely uncertain, and greedy
generation, for the with/without causal mask experiment of notebook 05.

Each ordinary token (1…``vocab``) may be followed by only ``n_next`` others, drawn at
random once per grammar. A sentence is BOS (token 0) followed by a random walk: the first
word is uniform over all tokens, every later one uniform over the current word's allowed
successors. So no model can beat ln ``n_next`` nats on a later word, and a generated
sentence can be checked: every transition must be an allowed one.
"""

import math
from collections.abc import Callable

import torch
from torch import Tensor

BOS = 0


class ToyLanguage:
    """Random-walk sentences over ``vocab`` tokens, ``n_next`` allowed successors each."""

    def __init__(self, vocab: int = 16, n_next: int = 3, seed: int = 0) -> None:
        gen = torch.Generator().manual_seed(seed)
        self.vocab, self.n_next = vocab, n_next
        self.n_tokens = vocab + 1  # ids including BOS: the model's vocabulary size
        # row t - 1 lists the tokens allowed after token t
        self.successors = torch.stack(
            [torch.randperm(vocab, generator=gen)[:n_next] + 1 for _ in range(vocab)]
        )
        self.allowed = torch.zeros(self.n_tokens, self.n_tokens, dtype=torch.bool)
        self.allowed[BOS, 1:] = True
        self.allowed[torch.arange(1, vocab + 1)[:, None], self.successors] = True

    def sample(self, gen: torch.Generator, batch: int, T: int) -> Tensor:
        """``batch`` sentences of ``T`` tokens (BOS first): a long tensor ``[batch, T]``."""
        tokens = torch.empty(batch, T, dtype=torch.long)
        tokens[:, 0] = BOS
        tokens[:, 1] = torch.randint(1, self.vocab + 1, (batch,), generator=gen)
        # every later position's successor pick in one draw: the same numbers as a draw per position
        picks = torch.randint(0, self.n_next, (T - 2, batch), generator=gen)
        for t in range(2, T):
            tokens[:, t] = self.successors[tokens[:, t - 1] - 1, picks[t - 2]]
        return tokens

    def batches(self, batch: int = 32, T: int = 24) -> Callable[[torch.Generator], Tensor]:
        """A batch maker for :func:`attnlib.train.train`: ``gen -> tokens [batch, T]``."""
        return lambda gen: self.sample(gen, batch, T)

    def best_loss(self, T: int) -> float:
        """The lowest mean next-token loss any honest model can reach on ``T``-token
        sentences: ln vocab for the first word, ln n_next for each later one."""
        return (math.log(self.vocab) + (T - 2) * math.log(self.n_next)) / (T - 1)

    def legal_fraction(self, tokens: Tensor) -> float:
        """Share of the transitions in ``tokens [..., T]`` (after BOS) that the grammar allows."""
        tokens = torch.as_tensor(tokens)
        ok = self.allowed[tokens[..., :-1], tokens[..., 1:]]
        return ok.float().mean().item()


@torch.no_grad()
def greedy_generate(model: torch.nn.Module, prompt: Tensor, n_new: int) -> Tensor:
    """Extend ``prompt [B, T0]`` by ``n_new`` tokens, one at a time: run the model on the
    tokens so far and append the argmax of the last position's logits. Only the past
    exists at each step, exactly as when a language model writes text."""
    tokens = torch.as_tensor(prompt)
    for _ in range(n_new):
        logits = model(tokens)  # [B, T, n_tokens]
        tokens = torch.cat([tokens, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return tokens
