"""What an instance's verdict rests on: a PASS after a proof, after afl-fuzz's mutations, or
after the seed inputs alone are three different claims and are never printed alike.

``PROVEN``: the prover settled the pair (bit for bit in IEEE arithmetic, or over the reals;
over the reals it is fuzzed as well). ``FUZZED``: afl-fuzz (or Atheris) executed mutated
inputs, so many in so many seconds. ``SEEDS_ONLY``: only the seed inputs ran, with the reason
afl-fuzz did not; where it was meant to run (``meant_to_fuzz``), that is a warning, and such
an instance is never counted as fuzzed.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Optional

PROVEN, FUZZED, SEEDS_ONLY = "PROVEN", "FUZZED", "SEEDS_ONLY"
KINDS = (PROVEN, FUZZED, SEEDS_ONLY)
# how a reason not to fuzz begins when the engine was meant to run (a bound too small for it)
MEANT_PREFIX = "no time left"


@dataclasses.dataclass
class Evidence:
    kind: str                        # PROVEN, FUZZED or SEEDS_ONLY
    seed_inputs: int = 0             # inputs screened before any fuzzing (seeds, counterexamples, the user's)
    seeds_planned: int = 0           # ... of these many (the rest did not fit in the instance's time)
    engine_execs: int = 0            # executions the engine ran itself
    engine_seconds: float = 0.0
    arithmetic: str = ""             # a proof's: "IEEE" (bit for bit) or "reals"
    why_not_fuzzed: str = ""         # SEEDS_ONLY: why the engine did not run
    meant_to_fuzz: bool = False      # SEEDS_ONLY: the engine should have run and did not (a warning)

    def to_json(self) -> Dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, entry: Optional[Dict]) -> Optional["Evidence"]:
        if not entry:
            return None
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in entry.items() if k in fields})

    @property
    def inputs_text(self) -> str:
        if self.seeds_planned > self.seed_inputs:
            return f"{self.seed_inputs} of {self.seeds_planned} seed inputs"
        return f"{self.seed_inputs} seed inputs"

    def describe(self) -> str:
        """One line for the terminal and the report."""
        fuzzed = (f"afl-fuzz {self.engine_execs:,} execs in {self.engine_seconds:.1f} s"
                  if self.engine_execs else "")
        if self.kind == PROVEN:
            how = "bit for bit" if self.arithmetic == "IEEE" else "over the reals"
            return f"PROVEN ({how})" + (f" + {fuzzed}" if fuzzed else "")
        if self.kind == FUZZED:
            return f"FUZZED ({fuzzed}, after {self.inputs_text})"
        return f"SEEDS ONLY ({self.inputs_text}; afl-fuzz did not run: {self.why_not_fuzzed})"


def judge(seed_inputs: int, engine_execs: int, engine_seconds: float, proof=None,
          why_not_fuzzed: str = "", meant_to_fuzz: bool = False, seeds_planned: int = 0) -> Evidence:
    """The evidence of one judged harness. ``proof``: the pair's ``prove.Proof`` (or None)."""
    common = dict(seed_inputs=seed_inputs, engine_execs=engine_execs, engine_seconds=round(engine_seconds, 3),
                  seeds_planned=max(seeds_planned, seed_inputs))
    if proof is not None and proof.verdict == "PROVEN":
        return Evidence(PROVEN, arithmetic="IEEE" if proof.settles else "reals", **common)
    if engine_execs > 0:
        return Evidence(FUZZED, **common)
    return Evidence(SEEDS_ONLY, why_not_fuzzed=why_not_fuzzed or "no fuzzing was asked for",
                    meant_to_fuzz=meant_to_fuzz, **common)
