"""The tiny transformer's own KV cache: generate one token at a time, optionally evicting.

``CachedDecoder(model)`` runs a :class:`attnlib.model.TinyTransformer` one step at a time.
Each layer keeps the keys and values of the positions seen so far; a step computes only the
new positions' queries, keys and values and attends from the new queries to the cache. It
uses only the model's public pieces (embeddings, LayerNorms, ``W_Q``/``W_K``/``W_V``/``W_O``,
:func:`attnlib.model.rope`), so it computes what the full forward pass computes.

With ``window`` the cache keeps the first ``n_sink`` positions plus the last ``window``
(self included) and evicts the rest, as StreamingLLM does. RoPE positions are then either
re-indexed inside the cache (``reindex=True``, StreamingLLM: a key's position is its slot,
so the sinks sit just before the window) or kept at their true distance in the text.

    decoder = CachedDecoder(model, window=48, n_sink=1, record=True)
    logits = decoder.run(tokens)  # [B, T, vocab], one step per position
    decoder.mask()                # the [T, T] mask of what each step could see

``time_cached_step``, ``time_uncached_step`` and ``time_generation`` measure what a step
costs with and without the cache. A step is many small torch calls: run them on one thread
(``torch.set_num_threads(1)``); on a shared machine a second thread makes them slower.
"""

import math
import time

import torch

from attnlib.model import rope


class LayerCache:
    """One layer's keys and values, ``[B, n_heads, capacity, d_head]``, preallocated.

    ``positions[i]`` is the text position of slot i. With ``reindex`` the keys are stored
    before RoPE (they are rotated to their slot on every read); otherwise they are stored
    rotated at their text position, once, as an ordinary KV cache does.
    """

    def __init__(self, B, n_heads, d_head, capacity, n_sink, dtype):
        shape = (B, n_heads, capacity, d_head)
        self.K, self.V = torch.empty(shape, dtype=dtype), torch.empty(shape, dtype=dtype)
        self.positions = torch.empty(capacity, dtype=torch.long)
        self.n, self.n_sink = 0, n_sink

    def append(self, k, v, positions):
        """Add ``k, v [B, n_heads, C, d_head]``; when full, drop the oldest non-sink slot."""
        C = k.shape[2]
        if self.n + C > self.K.shape[2]:
            if C > 1:
                raise ValueError("a cache that evicts takes one position per step")
            s = self.n_sink
            for buf in (self.K, self.V):
                buf[:, :, s:-1] = buf[:, :, s + 1 :].clone()
            self.positions[s:-1] = self.positions[s + 1 :].clone()
            self.n -= 1
        self.K[:, :, self.n : self.n + C] = k
        self.V[:, :, self.n : self.n + C] = v
        self.positions[self.n : self.n + C] = positions
        self.n += C

    def keys(self):
        return self.K[:, :, : self.n]

    def values(self):
        return self.V[:, :, : self.n]

    def nbytes(self):
        """Bytes of the keys and values held now."""
        return 2 * self.keys().numel() * self.K.element_size()


class CachedDecoder:
    """Step a model through a sequence with a KV cache per layer (see the module docstring).

    ``window=None`` keeps everything (capacity ``max_len``). Call :meth:`step` with the
    next tokens ``[B, C]`` (C > 1 only while nothing is evicted: a prefill), or :meth:`run`
    for a whole sequence one position at a time.
    """

    def __init__(
        self, model, window=None, n_sink=0, reindex=True, batch=1, max_len=4096, record=False
    ):
        if model.pos_embed is not None and reindex and window is not None:
            raise ValueError(
                "learned positions are added to the embeddings: they cannot be re-indexed "
                "inside the cache (use reindex=False)"
            )
        self.model = model
        self.reindex = reindex and window is not None  # without eviction slot = position
        self.window, self.n_sink = window, n_sink
        capacity = max_len if window is None else n_sink + window
        attn = model.blocks[0].attn
        dtype = model.unembed.weight.dtype
        self.layers = [
            LayerCache(batch, attn.n_heads, attn.d_head, capacity, n_sink, dtype)
            for _ in model.blocks
        ]
        self.t = 0  # text position of the next token
        self.kept = [] if record else None  # per step: the text positions the query saw

    @torch.no_grad()
    def step(self, tokens):
        """Feed ``tokens [B, C]`` (the next C positions); return their logits ``[B, C, vocab]``."""
        tokens = torch.as_tensor(tokens)
        C = tokens.shape[1]
        pos = torch.arange(self.t, self.t + C)
        x = self.model.embed(tokens)  # [B, C, d_model]
        if self.model.pos_embed is not None:
            x = x + self.model.pos_embed(pos)
        for block, cache in zip(self.model.blocks, self.layers, strict=True):
            x = x + self._attend(block.attn, block.ln1(x), cache, pos)
            if block.mlp is not None:
                x = x + block.mlp(x)
        self.t += C
        return self.model.unembed(self.model.ln_f(x))

    def _attend(self, attn, x, cache, pos):
        B, C, _ = x.shape

        def heads(W):  # [B, C, n_heads*d_head] -> [B, n_heads, C, d_head]
            return W(x).view(B, C, attn.n_heads, attn.d_head).transpose(1, 2)

        q, k, v = heads(attn.W_Q), heads(attn.W_K), heads(attn.W_V)
        rotate = attn.rope and not self.reindex
        if rotate:  # text positions: rotate once, store rotated keys
            q, k = rope(q, pos), rope(k, pos)
        cache.append(k, v, pos)
        if self.kept is not None and cache is self.layers[0]:
            self.kept += [cache.positions[: cache.n].clone()] * C
        K, V = cache.keys(), cache.values()  # [B, h, n, d_head]
        n = cache.n
        if attn.rope and not rotate:  # re-indexed: a key's position is its slot
            slots = torch.arange(n)
            q, K = rope(q, slots[n - C :]), rope(K, slots)
        S = q @ K.transpose(-1, -2) / math.sqrt(attn.d_head)  # [B, h, C, n]
        if C > 1:  # a prefill: new position c must not see the new positions after it
            S = S + _prefill_mask(C, n)
        A = torch.softmax(S, dim=-1)
        out = (A @ V).transpose(1, 2).reshape(B, C, attn.n_heads * attn.d_head)
        return attn.W_O(out) if attn.W_O is not None else out

    @torch.no_grad()
    def run(self, tokens):
        """Logits ``[B, T, vocab]`` of ``tokens [B, T]``, computed one position per step."""
        tokens = torch.as_tensor(tokens)
        return torch.cat([self.step(tokens[:, t : t + 1]) for t in range(tokens.shape[1])], 1)

    def mask(self):
        """Additive ``[T, T]`` mask of the steps so far: 0 where query t's cache held key j.
        Needs ``record=True``."""
        if self.kept is None:
            raise ValueError("build the decoder with record=True to get its mask")
        M = torch.full((len(self.kept), len(self.kept)), float("-inf"))
        for t, held in enumerate(self.kept):
            M[t, held] = 0.0
        return M

    def nbytes(self):
        """Bytes of every layer's cached keys and values."""
        return sum(cache.nbytes() for cache in self.layers)


def _prefill_mask(C, n):
    """[C, n]: the last C columns are the new positions, causal among themselves."""
    M = torch.zeros(C, n)
    M[:, n - C :] = torch.full((C, C), float("-inf")).triu(1)
    return M


def cache_bytes(n_layers, n_heads, d_head, T, bytes_per_number):
    """Bytes of a full KV cache: keys and values, every layer and head, T positions."""
    return 2 * n_layers * n_heads * d_head * T * bytes_per_number


# ---------------------------------------------------------------- what a step costs
# CPU time of this thread: on a shared machine it leaves out the time spent waiting for a
# core, which wall time would count (run torch on one thread, so the work is all here).
CLOCK = time.thread_time


def _tokens(model, T, seed=0):
    vocab = model.unembed.weight.shape[0]
    return torch.randint(1, vocab, (1, T), generator=torch.Generator().manual_seed(seed))


def _filled(model, t, extra):
    """A decoder whose cache already holds ``t`` positions of random keys and values (what
    they hold does not change what a step costs), with room for ``extra`` more."""
    decoder = CachedDecoder(model, max_len=t + extra)
    gen = torch.Generator().manual_seed(t)
    for cache in decoder.layers:
        for buf in (cache.K, cache.V):
            buf[:, :, :t] = torch.randn(buf[:, :, :t].shape, generator=gen)
        cache.positions[:t] = torch.arange(t)
        cache.n = t
    decoder.t = t
    return decoder


@torch.no_grad()
def time_cached_step(model, t, steps=30):
    """Best CPU time (s) of one cached step with ``t`` positions already cached (batch 1).

    Two untimed steps warm up, then ``steps`` consecutive steps are timed; the fastest is
    the cost of the step itself.
    """
    decoder = _filled(model, t, steps + 2)
    tokens = _tokens(model, steps + 2)
    decoder.step(tokens[:, :1])
    decoder.step(tokens[:, 1:2])
    times = []
    for i in range(2, steps + 2):
        start = CLOCK()
        decoder.step(tokens[:, i : i + 1])
        times.append(CLOCK() - start)
    return min(times)


@torch.no_grad()
def time_uncached_step(model, t, reps=3):
    """Best CPU time (s) of the forward pass over ``t + 1`` tokens: a step without a cache."""
    tokens = _tokens(model, t + 1)
    model(tokens)  # warm-up
    times = []
    for _ in range(reps):
        start = CLOCK()
        model(tokens)
        times.append(CLOCK() - start)
    return min(times)


@torch.no_grad()
def time_generation(model, T, cached):
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
