"""The tiny transformer's own KV cache: generate one token at a time, optionally evicting.

``CachedDecoder(model)`` runs a :class:`attnlib.model.TinyTransformer` one step at a time.
Each layer keeps the keys and values of the positions seen so far; a step computes only the
new positions' queries, keys and values and attends from the new queries to the cache. It
uses only the model's public pieces (embeddings, LayerNorms, ``W_Q``/``W_K``/``W_V``/``W_O``,
RoPE's :func:`attnlib.model.rope_angles` and :func:`attnlib.model.rotate`), so it computes
what the full forward pass computes. Steps run under ``torch.inference_mode``: no autograd
bookkeeping in a loop of small calls.

With ``window`` the cache keeps the first ``n_sink`` positions plus the last ``window``
(self included) and evicts the rest, as StreamingLLM does. RoPE positions are then either
re-indexed inside the cache (``reindex=True``, StreamingLLM: a key's position is its slot,
so the sinks sit just before the window) or kept at their true distance in the text.

A model with shared keys and values (``n_kv_heads`` < ``n_heads``) caches only its
n_kv_heads heads per layer; each is read by its group of query heads, as in the forward
pass. A model trained with a sliding ``window`` gets a rolling cache of that window (true
distances, no sinks), which is what its forward pass sees.

    decoder = CachedDecoder(model, window=48, n_sink=1, record=True)
    logits = decoder.run(tokens)  # [B, T, vocab], one step per position
    decoder.mask()                # the [T, T] mask of what each step could see

``time_cached_step``, ``time_uncached_step`` and ``time_generation`` measure what a step
costs with and without the cache. A step is many small torch calls: run them on one thread
(``torch.set_num_threads(1)``); on a shared machine a second thread makes them slower.
"""

import math
import time
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib.model import Block, CausalSelfAttention, TinyTransformer, rope_angles, rotate

Angles = tuple[Tensor, Tensor]


def _blocks(model: TinyTransformer) -> list[Block]:
    return cast(list[Block], list(model.blocks))


class LayerCache:
    """One layer's keys and values, ``KV [2, B, n_kv_heads, capacity, d_head]``, preallocated.

    ``positions[i]`` is the text position of slot i. With ``reindex`` the keys are stored
    before RoPE (they are rotated to their slot on every read); otherwise they are stored
    rotated at their text position, once, as an ordinary KV cache does.
    """

    def __init__(
        self, B: int, n_kv_heads: int, d_head: int, capacity: int, n_sink: int, dtype: torch.dtype
    ) -> None:
        self.KV = torch.empty((2, B, n_kv_heads, capacity, d_head), dtype=dtype)
        self.positions = torch.empty(capacity, dtype=torch.long)
        self.n, self.n_sink, self.capacity = 0, n_sink, capacity

    def append(self, kv: Tensor, positions: Tensor) -> None:
        """Add ``kv [2, B, n_kv_heads, C, d_head]`` (keys, values); when full, drop the oldest
        non-sink slot."""
        C = kv.shape[3]
        if self.n + C > self.capacity:
            if C > 1:
                raise ValueError("a cache that evicts takes one position per step")
            s = self.n_sink
            self.KV[:, :, :, s:-1] = self.KV[:, :, :, s + 1 :].clone()
            self.positions[s:-1] = self.positions[s + 1 :].clone()
            self.n -= 1
        self.KV[:, :, :, self.n : self.n + C] = kv
        self.positions[self.n : self.n + C] = positions
        self.n += C

    def keys(self) -> Tensor:
        return self.KV[0, :, :, : self.n]

    def values(self) -> Tensor:
        return self.KV[1, :, :, : self.n]

    def nbytes(self) -> int:
        """Bytes of the keys and values held now."""
        return 2 * self.keys().numel() * self.KV.element_size()


class CachedDecoder:
    """Step a model through a sequence with a KV cache per layer (see the module docstring).

    ``window=None`` keeps everything (capacity ``max_len``), or, for a model trained with a
    window, that window. Call :meth:`step` with the next tokens ``[B, C]`` (C > 1 only while
    nothing is evicted: a prefill), or :meth:`run` for a whole sequence one position at a
    time. The model's weights are read when the
    decoder is built.
    """

    def __init__(
        self,
        model: TinyTransformer,
        window: int | None = None,
        n_sink: int = 0,
        reindex: bool = True,
        batch: int = 1,
        max_len: int = 4096,
        record: bool = False,
    ) -> None:
        window, n_sink, reindex = _model_window(model, window, n_sink, reindex)
        if model.pos_embed is not None and reindex and window is not None:
            raise ValueError(
                "learned positions are added to the embeddings: they cannot be re-indexed "
                "inside the cache (use reindex=False)"
            )
        self.model = model
        self.reindex = reindex and window is not None  # without eviction slot = position
        self.window, self.n_sink = window, n_sink
        capacity = max_len if window is None else n_sink + window
        attn = _blocks(model)[0].attn
        dtype = model.unembed.weight.dtype
        self.layers = [
            LayerCache(batch, attn.n_kv_heads, attn.d_head, capacity, n_sink, dtype)
            for _ in _blocks(model)
        ]
        # W_Q, W_K, W_V stacked: one product per layer and step
        self.W_QKV = [
            torch.cat([b.attn.W_Q.weight, b.attn.W_K.weight, b.attn.W_V.weight]).detach()
            for b in _blocks(model)
        ]
        self.rope, self.d_head = attn.rope, attn.d_head
        if self.rope and self.reindex:  # the slots' angles never change: compute them once
            self.slot_angles = rope_angles(torch.arange(capacity), self.d_head)
        self.t = 0  # text position of the next token
        self.kept: list[torch.Tensor] | None = (
            [] if record else None
        )  # per step: the text positions the query saw

    @torch.inference_mode()
    def step(self, tokens: Tensor) -> Tensor:
        """Feed ``tokens [B, C]`` (the next C positions); return their logits ``[B, C, vocab]``."""
        tokens = torch.as_tensor(tokens)
        C = tokens.shape[1]
        pos = torch.arange(self.t, self.t + C)
        x = self.model.embed(tokens)  # [B, C, d_model]
        if self.model.pos_embed is not None:
            x = x + self.model.pos_embed(pos)
        angles = self._angles(pos)
        for block, cache, W_QKV in zip(_blocks(self.model), self.layers, self.W_QKV, strict=True):
            x = x + self._attend(block.attn, W_QKV, block.ln1(x), cache, pos, angles)
            if block.mlp is not None:
                x = x + block.mlp(x)
        self.t += C
        logits: Tensor = self.model.unembed(self.model.ln_f(x))
        return logits

    def _angles(self, pos: Tensor) -> Angles | None:
        """RoPE's cos and sin for this step, shared by every layer and head: the new text
        positions', or (re-indexed) those of every slot the cache will hold. None without RoPE."""
        if not self.rope:
            return None
        if not self.reindex:
            return rope_angles(pos, self.d_head)
        n = min(self.layers[0].n + len(pos), self.layers[0].capacity)
        cos, sin = self.slot_angles
        return cos[:n], sin[:n]

    def _attend(
        self,
        attn: CausalSelfAttention,
        W_QKV: Tensor,
        x: Tensor,
        cache: LayerCache,
        pos: Tensor,
        angles: Angles | None,
    ) -> Tensor:
        B, C, _ = x.shape
        h, g, d = attn.n_heads, attn.n_kv_heads, attn.d_head
        qkv = F.linear(x, W_QKV).view(B, C, h + 2 * g, d).transpose(1, 2)  # heads: q, k, v
        if self.rope and not self.reindex:  # text positions: store rotated keys
            assert angles is not None
            qkv = torch.cat([rotate(qkv[:, : h + g], *angles), qkv[:, h + g :]], 1)
        cache.append(torch.unflatten(qkv[:, h:], 1, (2, g)).transpose(0, 1), pos)  # [2, B, g, C, d]
        if self.kept is not None and cache is self.layers[0]:
            self.kept += [cache.positions[: cache.n].clone()] * C
        q, K, V = qkv[:, :h], cache.keys(), cache.values()  # K, V: [B, g, n, d]
        n = cache.n
        if self.rope and self.reindex:  # a key's position is its slot
            assert angles is not None
            cos, sin = angles
            q, K = rotate(q, cos[n - C :], sin[n - C :]), rotate(K, cos, sin)
        # KV head j serves query heads j·group … (j+1)·group − 1: their queries become rows
        q = q.reshape(B, g, -1, d)  # [B, g, group·C, d]
        S = q @ K.transpose(-1, -2) / math.sqrt(d)  # [B, g, group·C, n]
        if C > 1:  # a prefill: new position c must not see the new positions after it
            S = (torch.unflatten(S, 2, (-1, C)) + _prefill_mask(C, n)).flatten(2, 3)
        A = torch.softmax(S, dim=-1)
        out = (A @ V).view(B, h, C, d).transpose(1, 2).reshape(B, C, h * d)
        return attn.W_O(out) if attn.W_O is not None else out

    @torch.inference_mode()
    def run(self, tokens: Tensor) -> Tensor:
        """Logits ``[B, T, vocab]`` of ``tokens [B, T]``, computed one position per step."""
        tokens = torch.as_tensor(tokens)
        return torch.cat([self.step(tokens[:, t : t + 1]) for t in range(tokens.shape[1])], 1)

    def mask(self) -> Tensor:
        """Additive ``[T, T]`` mask of the steps so far: 0 where query t's cache held key j.
        Needs ``record=True``."""
        if self.kept is None:
            raise ValueError("build the decoder with record=True to get its mask")
        M = torch.full((len(self.kept), len(self.kept)), float("-inf"))
        for t, held in enumerate(self.kept):
            M[t, held] = 0.0
        return M

    def nbytes(self) -> int:
        """Bytes of every layer's cached keys and values."""
        return sum(cache.nbytes() for cache in self.layers)


def _model_window(
    model: TinyTransformer, window: int | None, n_sink: int, reindex: bool
) -> tuple[int | None, int, bool]:
    """``(window, n_sink, reindex)`` for a model trained with a sliding window: a rolling
    cache of exactly that window, or a ValueError for any other eviction."""
    trained = _blocks(model)[0].attn.window
    if trained is None:
        return window, n_sink, reindex
    if window not in (None, trained) or n_sink:
        raise ValueError(
            f"the model was trained with a window of {trained}: its cache keeps exactly that "
            f"window, without sinks (got window={window}, n_sink={n_sink})"
        )
    return trained, 0, False  # true distances: what the model's window mask sees


def _prefill_mask(C: int, n: int) -> Tensor:
    """[C, n]: the last C columns are the new positions, causal among themselves."""
    M = torch.zeros(C, n)
    M[:, n - C :] = torch.full((C, C), float("-inf")).triu(1)
    return M


def cache_bytes(n_layers: int, n_kv_heads: int, d_head: int, T: int, bytes_per_number: int) -> int:
    """Bytes of a full KV cache: keys and values, every layer and KV head, T positions.

    ``n_kv_heads`` counts the heads that have their own keys and values: n_heads for
    multi-head attention, fewer for grouped-query attention (query heads share them in
    groups), 1 for multi-query attention.
    """
    return 2 * n_layers * n_kv_heads * d_head * T * bytes_per_number


# ---------------------------------------------------------------- what a step costs
# CPU time of this thread: on a shared machine it leaves out the time spent waiting for a
# core, which wall time would count (run torch on one thread, so the work is all here).
CLOCK = time.thread_time


def _tokens(model: TinyTransformer, T: int, seed: int = 0) -> Tensor:
    vocab = model.unembed.weight.shape[0]
    return torch.randint(1, vocab, (1, T), generator=torch.Generator().manual_seed(seed))


def _filled(model: TinyTransformer, t: int, extra: int) -> CachedDecoder:
    """A decoder whose cache already holds ``t`` positions of random keys and values (what
    they hold does not change what a step costs), with room for ``extra`` more."""
    decoder = CachedDecoder(model, max_len=t + extra)
    gen = torch.Generator().manual_seed(t)
    for cache in decoder.layers:
        cache.KV.normal_(generator=gen)  # the slots past t too: steps overwrite them
        cache.positions[:t] = torch.arange(t)
        cache.n = t
    decoder.t = t
    return decoder


@torch.inference_mode()
def time_cached_step(model: TinyTransformer, t: int, steps: int = 10) -> float:
    """Best CPU time (s) of one cached step with ``t`` positions already cached (batch 1).

    Two untimed steps warm up, then ``steps`` consecutive steps are timed; the fastest is
    the cost of the step itself.
    """
    decoder = _filled(model, t, steps + 2)
    tokens = _tokens(model, steps + 2)
    decoder.step(tokens[:, :1])
    decoder.step(tokens[:, 1:2])
    times: list[float] = []
    for i in range(2, steps + 2):
        start = CLOCK()
        decoder.step(tokens[:, i : i + 1])
        times.append(CLOCK() - start)
    return min(times)


@torch.inference_mode()
def time_uncached_step(model: TinyTransformer, t: int, reps: int = 3) -> float:
    """Best CPU time (s) of the forward pass over ``t + 1`` tokens: a step without a cache."""
    tokens = _tokens(model, t + 1)
    model(tokens)  # warm-up
    times: list[float] = []
    for _ in range(reps):
        start = CLOCK()
        model(tokens)
        times.append(CLOCK() - start)
    return min(times)


@torch.inference_mode()
def time_generation(model: TinyTransformer, T: int, cached: bool) -> float:
    """CPU time (s) to compute the logits of ``T`` positions one after the other (batch 1):
    one cached step each, or (``cached=False``) the whole prefix again at every step."""
    tokens = _tokens(model, T)
    CachedDecoder(model, max_len=8).run(tokens[:, :8])  # warm-up: first calls cost extra
    model(tokens[:, :8])
    start = CLOCK()
    if cached:
        CachedDecoder(model, max_len=T).run(tokens)
    else:
        for t in range(1, T + 1):
            model(tokens[:, :t])
    return CLOCK() - start
