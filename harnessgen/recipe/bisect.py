"""Bisect a recipe whose whole result differs from the program: the first step after which the
program's results differ.

The programs in between are the recording's: the program after the first k steps is the one
kept just before step k+1 began (or the recipe's result, for all of them), whatever the recipe
did between steps by other means. Each is judged against the program before the recipe as the
pipeline bisection judges a prefix of a pipeline (``checks.pipeline_bisect.Candidates``): on
the whole-recipe finding's inputs carried into the program, and the program's boundary seeds.

Then the steps up to the first guilty one are shrunk (ddmin) to the fewest that, replayed on
the program before the recipe (``replay``), still change its results: the first guilty step
alone where it suffices, else it with the fewest of the steps before it that it needs. A
subset whose replay raises or leaves an invalid program does not count: the shrinking keeps
the wrong results the recipe made, not another failure.
"""
from __future__ import annotations

import time
from pathlib import Path

from ..checks.pipeline_bisect import BisectOptions, BisectRecord, Candidates, first_failing_prefix, searched
from ..cutout.extract import whole_program_pair
from ..plan.passes import minimal_subset
from .record import Recording, Store
from .replay import replayable, replayed


def bisect_recipe(program_sdfg, recording: Recording, options: BisectOptions) -> BisectRecord:
    """``program_sdfg``: the program before the recipe (the recording's original)."""
    started = time.monotonic()
    steps = recording.steps
    record = BisectRecord(verdict="BISECTED", steps=[s.name for s in steps])
    store = Store(Path(recording.store))
    candidates = Candidates(options, started + options.time_s)

    def after(count: int) -> str:
        return recording.final if count == len(steps) else steps[count].before

    def differs(count: int) -> bool:
        digest = after(count)
        return candidates.differs(lambda: whole_program_pair(
            program_sdfg, "bisect", changed=lambda name: store.program(digest, name)))

    def search() -> None:
        if not steps or not differs(len(steps)):
            record.verdict = "NOT_SHOWN"
            record.reason = ("the program after the recipe does not differ on the finding's inputs and the boundary "
                             "seeds")
        elif differs(0):
            record.verdict = "NOT_SHOWN"
            record.reason = "the program differs from itself on these inputs (it is not deterministic)"
        else:
            record.first_step = first_failing_prefix(len(steps), differs)
            record.first_pass = steps[record.first_step - 1].describe()
            record.minimal_steps, record.reason = _fewest_steps(recording, store, record.first_step, candidates,
                                                                program_sdfg)

    return searched(record, candidates, search, options.time_s, started)


def _fewest_steps(recording: Recording, store: Store, first: int, candidates: Candidates, program_sdfg) -> tuple:
    """The fewest steps up to ``first`` that still change the results, replayed; with why
    they were not searched where they were not."""
    if not replayable(recording.step(first)):
        return [], f"fewest steps not searched: step {first} cannot be replayed on another program"
    before = [s.index for s in recording.steps[:first - 1] if replayable(s)]

    def differs(indices) -> bool:
        return candidates.differs(lambda: whole_program_pair(
            program_sdfg, "shrink", changed=lambda name: replayed(recording, store, indices, name)[0]),
            unmade_differs=False)

    if differs([first]):
        return [first], ""
    if not differs(before + [first]):
        return [], ("fewest steps not searched: the replayable steps up to the first guilty one do not change the "
                    "results when replayed (those that cannot be replayed are needed)")
    return minimal_subset(before, lambda subset: differs(list(subset) + [first])) + [first], ""
