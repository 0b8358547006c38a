"""A small byte-pair-encoding (BPE) vocabulary trained on the training source.

With characters as tokens, a repeated identifier is many tokens long and an induction head
must match on one previous character, which recurs everywhere. BPE (Sennrich et al. 2016)
merges the most frequent pair of adjacent symbols, again and again; here merges stay inside
one *piece* (an identifier, a run of spaces, a run of digits, or one other character), so a
repeated identifier becomes a few tokens that are rarer than characters.

Ids: 0 is BOS, 1…95 the characters of :data:`attnlib.realtext.CHARS` (every text encodes),
then one id per merged symbol, in the order the merges made them.
"""

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

import torch

from attnlib.realtext import BOS, CHARS

PIECE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*| +|\d+|.", re.S)
Pair = tuple[str, str]


def merge(symbols: list[str], pair: Pair) -> list[str]:
    """``symbols`` with every adjacent occurrence of ``pair`` joined, left to right."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def learn_merges(text: str, n_merges: int) -> list[Pair]:
    """The first ``n_merges`` merges of BPE on ``text``'s pieces (ties: the larger pair)."""
    counts = Counter(PIECE.findall(text))
    words, freq = [list(w) for w in counts], list(counts.values())
    pairs: Counter[Pair] = Counter()
    where: defaultdict[Pair, set[int]] = defaultdict(set)  # pair -> words that had it
    for i, w in enumerate(words):
        for pair in zip(w, w[1:], strict=False):
            pairs[pair] += freq[i]
            where[pair].add(i)
    merges: list[Pair] = []
    while len(merges) < n_merges and pairs:
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        for i in where.pop(best):  # only these words can change
            old, new = words[i], merge(words[i], best)
            for pair in zip(old, old[1:], strict=False):
                pairs[pair] -= freq[i]
                if pairs[pair] == 0:  # no word has it any more
                    del pairs[pair]
            for pair in zip(new, new[1:], strict=False):
                pairs[pair] += freq[i]
                where[pair].add(i)
            words[i] = new
    return merges


@dataclass
class Tokenizer:
    merges: list[Pair]

    def __post_init__(self) -> None:
        self.ids = {c: i + 1 for i, c in enumerate(CHARS)}
        for a, b in self.merges:
            self.ids.setdefault(a + b, len(self.ids) + 1)
        self.strings = {i: s for s, i in self.ids.items()}
        self.rank = {pair: r for r, pair in enumerate(self.merges)}
        self._cache: dict[str, list[int]] = {}

    @property
    def vocab(self) -> int:
        return len(self.ids) + 1  # with BOS

    def _piece(self, piece: str) -> list[int]:
        """One piece's ids: its lowest-ranked pair merged first, as the merges were learned."""
        if piece not in self._cache:
            symbols = list(piece)
            while len(symbols) > 1:
                pairs = zip(symbols, symbols[1:], strict=False)
                ranked = [(self.rank.get(p, len(self.rank)), p) for p in pairs]
                r, pair = min(ranked)
                if r == len(self.rank):
                    break
                symbols = merge(symbols, pair)
            self._cache[piece] = [self.ids[s] for s in symbols]
        return self._cache[piece]

    def encode(self, text: str) -> torch.Tensor:
        return torch.tensor([i for p in PIECE.findall(text) for i in self._piece(p)])

    def lengths(self) -> torch.Tensor:
        """Characters per id (BOS: 0), to turn losses per token into losses per character."""
        return torch.tensor([len(self.strings.get(i, "")) for i in range(self.vocab)])

    def decode(self, ids: torch.Tensor) -> str:
        return "".join(self.strings[int(i)] for i in ids if int(i) != BOS)
