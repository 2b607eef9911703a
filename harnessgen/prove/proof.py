"""The proof record of a cutout pair: its verdict, what it holds for, its counterexamples."""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

PROVEN, DISPROVEN, UNKNOWN = "PROVEN", "DISPROVEN", "UNKNOWN"
IEEE = "IEEE: the same operations on the same elements in the same order, bit for bit"
REAL = "real: equal over the reals (z3); rounding may differ"
# isl's work limit per proof, in its own operation counts: beyond it the proof is UNKNOWN
ISL_MAX_OPERATIONS = 2_000_000
Z3_TIMEOUT_MS = 5000
# how many candidate counterexamples a failing proof hands to the replay
MAX_COUNTEREXAMPLES = 3


# what an UNKNOWN is about, for counting: the first phrase its reason holds
REASON_KINDS = (
    ("write-conflict resolution", "reduction (write-conflict resolution)"),
    ("(a recurrence)", "value carried across loop iterations (recurrence)"),
    ("NestedSDFG", "nested SDFG"),
    ("is written in", "tasklet not in Python (C++)"),
    ("names more than one element", "tasklet memlet of a range (vector code)"),
    ("conflict on", "map iterations conflict"),
    ("unordered accesses", "unordered accesses in a state"),
    ("branch", "branch between states"),
    ("a condition on the edge", "branch between states"),
    ("only maps, tasklets and access nodes", "library or other node"),
    ("View", "view container"),
    ("native replay", "counterexample that does not fail natively"),
    ("rounding", "equal over the reals only; the native run differs"),
    ("prover defect", "prover defect"),
    ("not affine", "non-affine index or bound"),
    ("symbol post invented", "symbol argument post invented"),
    ("the symbol", "symbol the model does not know"),
    ("loop", "loop the model does not cover"),
    ("isl gave up", "isl operation limit"),
)


@dataclasses.dataclass
class Counterexample:
    obligation: str                  # bounds | coverage | values
    sizes: Dict[str, int]
    container: str
    element: List[int]
    detail: str                      # what pre and post compute there

    def describe(self) -> str:
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        return f"{self.obligation}: {self.container}{list(self.element)} at {sizes or 'no sizes'}: {self.detail}"


@dataclasses.dataclass
class Proof:
    verdict: str
    reason: str = ""
    arithmetic: str = ""
    ranges: str = ""
    seconds: float = 0.0
    obligations: Dict[str, str] = dataclasses.field(default_factory=dict)
    counterexamples: List[Counterexample] = dataclasses.field(default_factory=list)
    confirmed_by: str = ""           # the finding a replayed counterexample gave
    replayed: bool = False           # whether the counterexamples ran natively (``confirm``)

    @property
    def candidate(self) -> bool:
        """Counterexamples wait for their replay."""
        return bool(self.counterexamples) and not self.replayed

    @property
    def settles(self) -> bool:
        """Whether the verdict makes fuzzing needless: DISPROVEN (replayed), or PROVEN bit for
        bit. Equality over the reals does not settle it: rounding can still exceed the tolerance
        (cancellation) or differ under --exact, so such a pair is fuzzed all the same."""
        return self.verdict == DISPROVEN or (self.verdict == PROVEN and self.arithmetic == IEEE)

    def confirm(self, finding_summary: Optional[str]) -> None:
        """The native replay of the counterexamples: DISPROVEN when one failed, else UNKNOWN."""
        self.replayed = True
        if finding_summary:
            self.verdict, self.confirmed_by = DISPROVEN, finding_summary
            self.reason = self.counterexamples[0].describe()
        else:
            self.verdict = UNKNOWN
            self.reason = (f"{self.counterexamples[0].describe()}; yet the native replay of "
                           f"{len(self.counterexamples)} counterexample(s) shows no difference")

    @property
    def reason_kind(self) -> str:
        """The reason in a few words, for counting reasons over many instances."""
        return next((kind for phrase, kind in REASON_KINDS if phrase in self.reason), "other")

    def contradicted(self, evidence: str) -> None:
        """A native run fails where the proof says the pair is equal: over the reals that is
        rounding; bit for bit it is the prover's own defect. Either way it is no longer PROVEN."""
        if self.verdict != PROVEN:
            return
        self.reason = (f"equal over the reals, yet {evidence}: rounding" if self.arithmetic == REAL
                       else f"prover defect: PROVEN bit for bit, yet {evidence}")
        self.verdict = UNKNOWN

    def summary(self) -> str:
        if self.candidate:
            return f"COUNTEREXAMPLE, not yet replayed: {self.reason}"
        if self.verdict == PROVEN:
            return f"PROVEN ({self.arithmetic.split(':')[0]} arithmetic, {self.ranges})"
        return f"{self.verdict}: {self.reason}"

    def to_json(self) -> Dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, entry: Dict) -> "Proof":
        entry = dict(entry)
        entry["counterexamples"] = [Counterexample(**c) for c in entry.get("counterexamples", [])]
        return cls(**entry)
