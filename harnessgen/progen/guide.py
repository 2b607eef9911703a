"""Programs made for the transformations that matched least so far (HIRGEN's coverage criteria
turned on transformations: transformation x scope kind).

A stream of programs is generated one seed after the other. After each program, every
transformation of the guiding set is matched on it: how often each matched, on what kind of
scope (the node types of its match), and which block kinds the programs it matched held. The
next program is asked to hold first the block kind with the largest expected gain:

    gain(kind) = sum over transformations T of  rarity(T) * P(T matches | the program holds kind)

with rarity(T) = 1 / (1 + matches of T so far) and P estimated with a small prior (``PRIOR``:
a kind never tried counts as an even chance for every T, so every kind gets tried; a T that
no kind has reached yet soon weighs little). The emphasis is
part of the program's name (``17+reduce``): a stream is a list of names, each regenerable alone.
"""
from __future__ import annotations

import collections
import dataclasses
import random
from typing import Callable, Counter, Dict, List, Sequence

from .generate import BLOCK_KINDS, generate
from .generated_program import GenProgram

# the smoothing of P(T matches | kind): a kind never tried is an even chance for every T, and
# the chance a kind gives a T it never matched falls fast as the kind is tried (a T no kind
# reaches, as simplify's own rewrites on simplified programs, must not drown the rare ones)
PRIOR = 0.1
# matches of every transformation in one program: name -> the scope kinds of its matches
Matcher = Callable[[GenProgram], Dict[str, List[str]]]


@dataclasses.dataclass
class Coverage:
    transformations: List[str]
    matches: Counter = dataclasses.field(default_factory=collections.Counter)        # T -> matches
    scopes: Counter = dataclasses.field(default_factory=collections.Counter)         # (T, scope kind) -> matches
    programs_with: Counter = dataclasses.field(default_factory=collections.Counter)  # block kind -> programs
    matched_with: Dict[str, Counter] = dataclasses.field(default_factory=dict)      # T -> block kind -> programs
    tags: Counter = dataclasses.field(default_factory=collections.Counter)           # shape tag -> programs
    programs: int = 0
    # programs left out of the stream: DaCe could not parse them (a frontend bug or a generator
    # bug; ``harnessgen fuzz --program generated:NAME`` shows the error)
    rejected: Dict[str, str] = dataclasses.field(default_factory=dict)

    def record(self, program: GenProgram, found: Dict[str, List[str]]) -> None:
        kinds = sorted({b.kind for b in program.blocks})
        self.programs += 1
        self.programs_with.update(kinds)
        self.tags.update(program.tags)
        for name, scopes in found.items():
            if not scopes:
                continue
            self.matches[name] += len(scopes)
            self.scopes.update((name, s) for s in scopes)
            self.matched_with.setdefault(name, collections.Counter()).update(kinds)

    def gain(self, kind: str) -> float:
        tried = self.programs_with[kind]
        return sum((self.matched_with.get(t, {}).get(kind, 0) + PRIOR) / (tried + 2 * PRIOR) / (1 + self.matches[t])
                   for t in self.transformations)

    def emphasis(self, rng: random.Random) -> tuple:
        """The kind of largest gain, and sometimes a second one drawn by gain."""
        kinds = sorted(BLOCK_KINDS)
        gains = [self.gain(k) for k in kinds]
        best = kinds[max(range(len(kinds)), key=lambda i: (gains[i], -i))]
        if rng.random() < 0.5:
            return (best,)
        second = rng.choices(kinds, weights=gains)[0]
        return (best,) if second == best else (best, second)

    def never_matched(self) -> List[str]:
        return [t for t in self.transformations if not self.matches[t]]

    def to_json(self) -> Dict:
        return {"programs": self.programs,
                "matches": dict(sorted(self.matches.items())),
                "never_matched": self.never_matched(),
                "scope_kinds": {f"{t} x {s}": n for (t, s), n in sorted(self.scopes.items())},
                "block_kinds": dict(sorted(self.programs_with.items())),
                "shape_tags": dict(sorted(self.tags.items())),
                "rejected": dict(sorted(self.rejected.items()))}


def stream(first_seed: int, count: int, transformations: Sequence[str], matcher: Matcher,
           guided: bool = True) -> tuple:
    """``count`` seeds from ``first_seed`` on, guided unless told not to: (the programs DaCe
    parsed, coverage)."""
    coverage = Coverage(list(transformations))
    rng = random.Random(f"guide-{first_seed}-{count}")
    programs = []
    for seed in range(first_seed, first_seed + count):
        emphasis = coverage.emphasis(rng) if guided and coverage.programs else ()
        program = generate(seed, emphasis)
        try:
            found = matcher(program)
        except Exception as exc:  # noqa: BLE001 -- DaCe failed on the program: left out, said why
            coverage.rejected[program.name] = f"{type(exc).__name__}: {exc}"[:500]
            continue
        coverage.record(program, found)
        programs.append(program)
    return programs, coverage
