"""One fuzzing process: bytes -> program -> mutations -> oracle, and what it records.

``Session.test_one_input`` is the libFuzzer entry point Atheris calls. Before a
program runs compiled, it is written to ``inflight/<sha1 of the bytes>.json``,
so that a compiled program that kills the process (the fuzzer saves the bytes
as ``crash-<sha1>``) still leaves its program behind. A finding is written to
``raw/`` once per signature; ``stats.json`` is rewritten after every program.
Every file is written atomically.
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Optional

from ..core.files import write_json
from ..core.runtime import Tolerance
from .choices import ByteChoices
from .compilers import Compiler
from .generator import Coverage, GenOptions, generate
from .mutations import FAMILIES, mutate
from .oracle import Verdict, all_finite, judge, profile

# stats.json after every program: a program costs seconds, a small atomic write a millisecond,
# and the process is stopped by a signal at the deadline (no last write then)
STATS_EVERY_S = 0.0


@dataclasses.dataclass(frozen=True)
class SessionOptions:
    generation: GenOptions = GenOptions()
    families: tuple = FAMILIES
    max_mutations: int = 3
    tolerance: Tolerance = Tolerance()


def sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def build_program(data: bytes, options: SessionOptions, coverage: Optional[Coverage]):
    """(program, inputs) from the fuzzer's bytes, mutated when its reference profile is
    finite; (None, None) when the bytes make no program."""
    choices = ByteChoices(data)
    program = generate(choices, options.generation, coverage)
    if program is None:
        return None, None
    inputs = program.make_inputs()
    if program.valid and options.families and options.max_mutations:
        try:
            values = profile(program, inputs)
        except Exception:        # the reference itself fails: the oracle discards it
            return program, inputs
        if all_finite(values.values()):
            program = mutate(program, choices, values, options.families, options.max_mutations)
    return program, inputs


class Session:
    def __init__(self, compiler: Compiler, out_dir: Path, options: SessionOptions):
        self.compiler, self.options = compiler, options
        self.out_dir = Path(out_dir)
        self.inflight = self.out_dir / "inflight"
        self.raw = self.out_dir / "raw"
        for d in (self.inflight, self.raw):
            d.mkdir(parents=True, exist_ok=True)
        self.coverage = Coverage()
        self.outcomes: collections.Counter = collections.Counter()
        self.findings = 0              # programs with a finding, duplicates included
        # signatures an earlier process of the same run already recorded
        self.seen = {tuple(json.loads(path.read_text())["signature"]) for path in self.raw.glob("*.json")}
        self.started = time.time()
        self.last_stats = 0.0

    def test_one_input(self, data: bytes) -> None:
        program, inputs = build_program(data, self.options, self.coverage)
        if program is None:
            self.outcomes["EMPTY"] += 1
            return
        key = sha1(data)
        pending = self.inflight / f"{key}.json"
        write_json(pending, {"program": program.to_json(), "data": data.hex()})
        verdict = judge(self.compiler, program, inputs, self.options.tolerance)
        pending.unlink(missing_ok=True)
        self.outcomes[verdict.outcome.name] += 1
        if verdict.is_finding:
            self.record(program, verdict, data)
        if time.time() - self.last_stats >= STATS_EVERY_S:
            self.write_stats()

    def record(self, program, verdict: Verdict, data: bytes) -> None:
        signature = verdict.signature(self.compiler.name)
        self.findings += 1
        if signature in self.seen:
            return
        self.seen.add(signature)
        write_json(self.raw / f"{sha1(data)}.json", {
            "program": program.to_json(), "verdict": verdict.to_json(), "signature": list(signature),
            "data": data.hex(), "seconds": round(time.time() - self.started, 1)})

    def write_stats(self) -> None:
        self.last_stats = time.time()
        stats = {"programs": sum(self.outcomes.values()), "outcomes": dict(self.outcomes),
                 "findings": self.findings, "coverage": self.coverage.summary(),
                 "seconds": round(self.last_stats - self.started, 1), "distinct_findings": len(self.seen)}
        write_json(self.out_dir / "stats" / f"{os.getpid()}.json", stats)
