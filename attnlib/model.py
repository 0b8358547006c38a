"""A tiny transformer whose attention weights stay visible.

Attention is written out as ``softmax(Q Kᵀ / √d_k + M) V`` (no fused kernel) so every
call keeps its weights in ``.weights``: rows are queries, columns keys. The default
model is the one the research notes measured: 2 layers, 4 heads, d_model = 64,
attention only, pre-LayerNorm, rotary positions (RoPE).
"""

import math
from typing import cast

import torch
from torch import Tensor, nn

Device = torch.device | str | None


def rope(x: Tensor, positions: Tensor, base: float = 10000.0) -> Tensor:
    """Rotate pairs (x[2i], x[2i+1]) of ``x [..., T, d]`` by ``positions [T]`` times a
    frequency per pair (rotary position embedding). Scores of rotated queries and keys
    then depend on positions only through their difference."""
    return rotate(x, *rope_angles(positions, x.shape[-1], base))


def rope_angles(positions: Tensor, d: int, base: float = 10000.0) -> tuple[Tensor, Tensor]:
    """``cos, sin [T, d]`` for :func:`rotate`: each pair's cos twice, its sin as (−sin, sin).
    Computed once, they rotate the queries and keys of every head and layer."""
    inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float32, device=positions.device) / d)
    angle = positions.to(torch.float32)[:, None] * inv_freq[None, :]  # [T, d/2]
    cos, sin = angle.cos(), angle.sin()
    return torch.stack([cos, cos], -1).flatten(-2), torch.stack([-sin, sin], -1).flatten(-2)


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate each pair (x[2i], x[2i+1]) of ``x [..., T, d]`` by the angles of
    :func:`rope_angles`: (x1 cos − x2 sin, x1 sin + x2 cos), as products with (x2, x1)."""
    swapped = torch.unflatten(x, -1, (-1, 2)).flip(-1).flatten(-2)  # pairs (x2, x1)
    return x * cos + swapped * sin


def causal_mask(T: int, device: Device = None) -> Tensor:
    """Additive [T, T] mask: 0 where key j ≤ query i, −∞ above the diagonal."""
    return torch.full((T, T), float("-inf"), device=device).triu(1)


def window_mask(T: int, window: int, device: Device = None) -> Tensor:
    """Additive [T, T] mask: −∞ where key j is ``window`` or more positions before query i
    (query i sees i − window + 1 … i, with the causal mask)."""
    return torch.full((T, T), float("-inf"), device=device).tril(-window)


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention, one layer, without the residual connection.

    ``W_Q``, ``W_K``, ``W_V`` map d_model → n_heads·d_head; ``W_O`` maps back (or is
    ``None`` when ``out_proj=False``, which needs n_heads·d_head == d_model). After each
    call, ``self.weights`` holds the attention pattern, detached:
    ``[B, n_heads, T, T]`` (or ``[n_heads, T, T]`` for an unbatched ``[T, d_model]`` input).

    ``n_kv_heads`` < n_heads shares keys and values (grouped-query attention; 1 is
    multi-query): ``W_K`` and ``W_V`` then map to n_kv_heads·d_head, and KV head g serves
    query heads g·group … (g+1)·group − 1. ``window`` lets query t see only the keys
    t − window + 1 … t (sliding-window attention), in training and inference alike.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int = 1,
        d_head: int | None = None,
        causal: bool = True,
        rope: bool = False,
        out_proj: bool = True,
        n_kv_heads: int | None = None,
        window: int | None = None,
    ) -> None:
        super().__init__()
        d_head = d_head or d_model // n_heads
        if rope and d_head % 2:
            raise ValueError(
                f"RoPE rotates pairs of coordinates: d_head must be even, not {d_head}"
            )
        if not out_proj and n_heads * d_head != d_model:
            raise ValueError("Without an output projection, n_heads * d_head must equal d_model.")
        n_kv_heads = n_kv_heads or n_heads
        if n_heads % n_kv_heads:
            raise ValueError(f"n_heads ({n_heads}) must be a multiple of n_kv_heads ({n_kv_heads})")
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_head
        self.n_kv_heads, self.window = n_kv_heads, window
        self.causal, self.rope = causal, rope
        self.W_Q = nn.Linear(d_model, n_heads * d_head, bias=False)
        self.W_K = nn.Linear(d_model, n_kv_heads * d_head, bias=False)
        self.W_V = nn.Linear(d_model, n_kv_heads * d_head, bias=False)
        self.W_O = nn.Linear(n_heads * d_head, d_model, bias=False) if out_proj else None
        self.weights: Tensor | None = None

    def forward(
        self, x: Tensor, mask: Tensor | None = None, positions: Tensor | None = None
    ) -> Tensor:
        """``x [B, T, d_model]`` or ``[T, d_model]``; ``mask`` an optional additive [T, T]
        (added to the causal mask when ``causal``); ``positions`` [T] overrides the
        RoPE positions 0…T−1. Returns the output, the same shape as ``x``."""
        unbatched = x.dim() == 2
        if unbatched:
            x = x[None]
        B, T, _ = x.shape

        def heads(W: nn.Module, n: int) -> Tensor:  # [B, T, n*d_head] -> [B, n, T, d_head]
            projected: Tensor = W(x)
            return projected.view(B, T, n, self.d_head).transpose(1, 2)

        Q = heads(self.W_Q, self.n_heads)
        K, V = heads(self.W_K, self.n_kv_heads), heads(self.W_V, self.n_kv_heads)
        if self.n_kv_heads < self.n_heads:  # each KV head serves its group of query heads
            group = self.n_heads // self.n_kv_heads
            K, V = K.repeat_interleave(group, 1), V.repeat_interleave(group, 1)
        if self.rope:
            pos = torch.arange(T, device=x.device) if positions is None else positions
            cos, sin = rope_angles(pos, self.d_head)
            Q, K = rotate(Q, cos, sin), rotate(K, cos, sin)

        # S / √d_k, then S + M, in place: the [B, h, T, T] scores are the largest tensor here
        S = (Q @ K.transpose(-1, -2)).div_(math.sqrt(self.d_head))  # [B, h, T, T]
        M = torch.zeros(T, T, device=x.device)
        if self.causal:
            M = M + causal_mask(T, x.device)
        if self.window is not None:
            M = M + window_mask(T, self.window, x.device)
        if mask is not None:
            M = M + torch.as_tensor(mask, dtype=S.dtype, device=x.device)
        A = torch.softmax(S.add_(M), dim=-1)  # [B, h, T, T], rows sum to 1
        self.weights = (A[0] if unbatched else A).detach()

        out = (A @ V).transpose(1, 2).reshape(B, T, self.n_heads * self.d_head)
        if self.W_O is not None:
            out = self.W_O(out)
        return out[0] if unbatched else out


class Block(nn.Module):
    """Pre-LayerNorm residual block: x + attn(LN(x)), then x + mlp(LN(x)) if any."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        causal: bool,
        rope: bool,
        mlp: bool,
        n_kv_heads: int | None = None,
        window: int | None = None,
    ) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(
            d_model, n_heads, causal=causal, rope=rope, n_kv_heads=n_kv_heads, window=window
        )
        self.mlp = None
        if mlp:
            self.mlp = nn.Sequential(
                nn.LayerNorm(d_model),
                nn.Linear(d_model, 4 * d_model),
                nn.GELU(),
                nn.Linear(4 * d_model, d_model),
            )

    def forward(
        self, x: Tensor, mask: Tensor | None = None, positions: Tensor | None = None
    ) -> Tensor:
        x = x + self.attn(self.ln1(x), mask=mask, positions=positions)
        if self.mlp is not None:
            x = x + self.mlp(x)
        return x


class TinyTransformer(nn.Module):
    """Token embedding → ``n_layers`` blocks → LayerNorm → unembedding.

    ``vocab`` is the number of token ids (including BOS). With ``rope=False`` positions
    come from a learned embedding of ``max_len`` rows instead, unless
    ``learned_positions=False`` too: then the model has no positional information at all
    (only the causal mask tells positions apart). ``causal=False`` drops the causal mask
    (each position then sees the whole sequence, the future included). ``n_kv_heads`` and
    ``window`` make every layer's attention grouped-query or sliding-window (see
    :class:`CausalSelfAttention`); by default each head has its own keys and values and
    sees the whole causal context.
    """

    def __init__(
        self,
        vocab: int,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        causal: bool = True,
        rope: bool = True,
        mlp: bool = False,
        max_len: int = 256,
        learned_positions: bool | None = None,
        n_kv_heads: int | None = None,
        window: int | None = None,
    ) -> None:
        super().__init__()
        if learned_positions is None:
            learned_positions = not rope  # a model has one kind of positions by default
        if rope and learned_positions:
            raise ValueError("Choose one kind of positions: rope=True or learned_positions=True.")
        self.config: dict[str, int | bool | None] = dict(
            vocab=vocab,
            d_model=d_model,
            n_layers=n_layers,
            n_heads=n_heads,
            causal=causal,
            rope=rope,
            mlp=mlp,
            max_len=max_len,
            learned_positions=learned_positions,
        )
        if n_kv_heads is not None or window is not None:  # the shipped models' configs as before
            self.config.update(n_kv_heads=n_kv_heads, window=window)
        self.embed = nn.Embedding(vocab, d_model)
        self.pos_embed = nn.Embedding(max_len, d_model) if learned_positions else None
        self.blocks = nn.ModuleList(
            Block(d_model, n_heads, causal, rope, mlp, n_kv_heads, window) for _ in range(n_layers)
        )
        self.ln_f = nn.LayerNorm(d_model)
        self.unembed = nn.Linear(d_model, vocab, bias=False)

    def forward(
        self, tokens: Tensor, mask: Tensor | None = None, positions: Tensor | None = None
    ) -> Tensor:
        """``tokens [B, T]`` (or ``[T]``) of ids → logits ``[B, T, vocab]`` (or ``[T, vocab]``).
        Logits at position t predict the token at t + 1. ``mask`` (additive [T, T]) and
        ``positions`` ([T]) are passed to every layer."""
        tokens = torch.as_tensor(tokens)
        x = self.embed(tokens)
        if self.pos_embed is not None:
            T = tokens.shape[-1]
            pos = torch.arange(T, device=tokens.device) if positions is None else positions
            x = x + self.pos_embed(pos)
        for block in self.blocks:
            x = block(x, mask=mask, positions=positions)
        logits: Tensor = self.unembed(self.ln_f(x))
        return logits

    def attention_weights(self) -> list[Tensor]:
        """The last call's attention of every layer: a list of ``[B, n_heads, T, T]``
        (``[n_heads, T, T]`` for unbatched tokens), index = layer."""
        weights = [cast(Block, block).attn.weights for block in self.blocks]
        return cast(list[Tensor], weights)  # None for a layer that has not run yet

    @torch.no_grad()
    def attention(
        self, tokens: Tensor, mask: Tensor | None = None, positions: Tensor | None = None
    ) -> tuple[Tensor, list[Tensor]]:
        """Run ``tokens`` and return ``(logits, weights)``: weights as in
        :meth:`attention_weights`. Switches to eval mode for the call."""
        was_training = self.training
        self.eval()
        logits = self(tokens, mask=mask, positions=positions)
        self.train(was_training)
        return logits, self.attention_weights()
