"""The fuzzer's bytes as a sequence of choices (in the manner of libFuzzer's
FuzzedDataProvider and Hypothesis' choice sequence).

Every decision the program generator and the mutator make is one call here, so
the same bytes give the same program in every process. Bytes run out into
zeros: zero bytes pick the first (simplest) option everywhere, so shorter
inputs mean simpler programs and a truncated input still decodes.
"""
from __future__ import annotations

from typing import Sequence, TypeVar

T = TypeVar("T")


class ByteChoices:
    def __init__(self, data: bytes):
        self.data = bytes(data)
        self.pos = 0

    @property
    def exhausted(self) -> bool:
        return self.pos >= len(self.data)

    def _byte(self) -> int:
        if self.pos >= len(self.data):
            self.pos += 1
            return 0
        b = self.data[self.pos]
        self.pos += 1
        return b

    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi], from as few bytes as the range needs."""
        if hi <= lo:
            return lo
        span = hi - lo + 1
        value, width = 0, 1
        while width < span:
            value = (value << 8) | self._byte()
            width <<= 8
        return lo + value % span

    def boolean(self, p_true: float = 0.5) -> bool:
        return self._byte() < round(256 * p_true)

    def choice(self, options: Sequence[T]) -> T:
        if not options:
            raise ValueError("choice from an empty sequence")
        return options[self.integer(0, len(options) - 1)]

    def weighted(self, options: Sequence[T], weights: Sequence[float]) -> T:
        """One option, with probability proportional to its weight (one 16-bit draw)."""
        total = float(sum(weights))
        if total <= 0:
            return self.choice(options)
        point = self.integer(0, 65535) / 65536.0 * total
        acc = 0.0
        for option, weight in zip(options, weights):
            acc += weight
            if point < acc:
                return option
        return options[-1]

    def seed(self) -> int:
        """32 bits for a seeded generator (input values)."""
        return self.integer(0, 2**32 - 1)
