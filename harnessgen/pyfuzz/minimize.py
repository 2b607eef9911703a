"""Delta debugging over a generated program: fewer mutations, outputs and statements
while the finding keeps its signature.

A candidate is (program, inputs); the predicate judges it (in a child process)
and compares signatures. Passes, each repeated until nothing changes, in the
manner of Hypothesis' shrinker:

``mutations``  drop the rewrites one at a time (then halves, ddmin-style)
``outputs``    keep a single output (the differing one first), else drop one
               (a finding may need two: an invalid statement and the one it breaks)
``bypass``     replace a statement's uses by one of its operands or an earlier
               value of the same shape and dtype, so the statement dies
``dead code``  after every change: statements no output needs, inputs nothing
               reads, mutations of removed statements
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable, Dict, Optional, Tuple

import numpy as np

from .program_record import Program

Candidate = Tuple[Program, Dict[str, np.ndarray]]


@dataclasses.dataclass
class ShrinkStats:
    checks: int = 0
    accepted: int = 0
    seconds: float = 0.0
    stmts_before: int = 0
    stmts_after: int = 0
    mutations_before: int = 0
    mutations_after: int = 0


def size(program: Program) -> Tuple[int, int, int, int]:
    return (len(program.stmts), len(program.mutations), len(program.outputs), len(program.inputs))


def without_dead_code(program: Program, inputs: Dict[str, np.ndarray]) -> Candidate:
    keep = []
    needed = set(program.outputs)
    for index in reversed(range(len(program.stmts))):
        stmt = program.stmts[index]
        if stmt.target.name in needed:
            keep.append(index)
            needed.update(stmt.args)
            needed.update(m.params["probe"] for m in program.mutations if m.stmt == index and m.kind == "guard")
    keep = sorted(keep)
    renumber = {old: new for new, old in enumerate(keep)}
    out = program.copy()
    out.stmts = [out.stmts[i] for i in keep]
    out.mutations = [dataclasses.replace(m, stmt=renumber[m.stmt], params=_renumbered(m, renumber))
                     for m in out.mutations if m.stmt in renumber]
    out.inputs = [v for v in out.inputs if v.name in needed]
    return out, {k: v for k, v in inputs.items() if k in needed}


def _renumbered(mutation, renumber: Dict[int, int]) -> Dict:
    """A hoist follows the nearest statement kept at or before the one it followed."""
    params = dict(mutation.params)
    if mutation.kind == "hoist":
        kept = [old for old in renumber if old <= params["after"]]
        params["after"] = renumber[max(kept)] if kept else -1
    return params


def _bypassed(program: Program, index: int, replacement: str) -> Program:
    out = program.copy()
    victim = out.stmts[index].target.name
    for stmt in out.stmts[index + 1:]:
        stmt.args = [replacement if a == victim else a for a in stmt.args]
    out.outputs = list(dict.fromkeys(replacement if o == victim else o for o in out.outputs))
    for m in out.mutations:
        if m.kind == "guard" and m.params.get("probe") == victim:
            m.params["probe"] = replacement if _same_type(program, victim, replacement) else m.params["probe"]
    return out


def _same_type(program: Program, a: str, b: str) -> bool:
    values = program.values()
    return values[a].shape == values[b].shape and values[a].dtype == values[b].dtype


class Shrinker:
    def __init__(self, predicate: Callable[[Program, Dict[str, np.ndarray]], bool], budget_s: float = 300.0):
        self.predicate = predicate
        self.budget_s = budget_s
        self.stats = ShrinkStats()

    def _try(self, candidate: Candidate, best: Candidate) -> Optional[Candidate]:
        program, inputs = without_dead_code(*candidate)
        if not program.stmts or not program.outputs or size(program) >= size(best[0]):
            return None
        if time.time() > self.deadline:
            return None
        self.stats.checks += 1
        if self.predicate(program, inputs):
            self.stats.accepted += 1
            return program, inputs
        return None

    def shrink(self, program: Program, inputs: Dict[str, np.ndarray], first_output: Optional[int] = None) -> Candidate:
        started = time.time()
        self.deadline = started + self.budget_s
        self.stats.stmts_before, self.stats.mutations_before = len(program.stmts), len(program.mutations)
        best: Candidate = (program, inputs)
        changed = True
        while changed and time.time() < self.deadline:
            changed = False
            for step in (self._mutations, self._outputs, self._bypass):
                found = step(best, first_output)
                if found is not None:
                    best, changed = found, True
                    first_output = None
        self.stats.seconds = round(time.time() - started, 1)
        self.stats.stmts_after, self.stats.mutations_after = len(best[0].stmts), len(best[0].mutations)
        return best

    def _mutations(self, best: Candidate, _first) -> Optional[Candidate]:
        program, inputs = best
        n = len(program.mutations)
        if n == 0:
            return None
        for chunk in ([list(range(n))] if n > 1 else []) + [[i] for i in range(n)]:
            candidate = program.copy()
            candidate.mutations = [m for i, m in enumerate(program.mutations) if i not in chunk]
            found = self._try((candidate, inputs), best)
            if found is not None:
                return found
        return None

    def _outputs(self, best: Candidate, first_output: Optional[int]) -> Optional[Candidate]:
        program, inputs = best
        if len(program.outputs) <= 1:
            return None
        order = list(range(len(program.outputs)))
        if first_output is not None and first_output < len(order):
            order.remove(first_output)
            order.insert(0, first_output)
        keep_one = [[program.outputs[i]] for i in order]
        drop_one = [[o for o in program.outputs if o != program.outputs[i]] for i in reversed(order)]
        for outputs in keep_one + (drop_one if len(program.outputs) > 2 else []):
            candidate = program.copy()
            candidate.outputs = outputs
            found = self._try((candidate, inputs), best)
            if found is not None:
                return found
        return None

    def _bypass(self, best: Candidate, _first) -> Optional[Candidate]:
        program, inputs = best
        views = {s.target.name for s in program.stmts if s.operator.view}
        for index in reversed(range(len(program.stmts))):
            stmt = program.stmts[index]
            earlier = [v.name for v in program.inputs] + [s.target.name for s in program.stmts[:index]]
            replacements = [a for a in stmt.args if _same_type(program, a, stmt.target.name)]
            replacements += [e for e in earlier if e not in replacements and e not in views
                             and _same_type(program, e, stmt.target.name)]
            if stmt.target.name in program.outputs:     # a program returns computed values, not its inputs
                replacements = [r for r in replacements if r not in inputs]
            for replacement in replacements:
                found = self._try((_bypassed(program, index, replacement), inputs), best)
                if found is not None:
                    return found
        return None
