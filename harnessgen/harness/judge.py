"""A pair judged on inputs: the one sequence every stage that runs pre and post goes through.

    the pair's constraints (the program's loops and indices, the user's ranges file, the sizes)
    -> its input layout -> pre, post and the harness built (the shared build cache)
    -> inputs (another layout's carried over, then boundary seeds) -> run natively

The runner, the whole-program audit, the pipeline bisection, the reference check and the bug
reducer all judge pairs this way, with one options record (``JudgeOptions``); what each does
with the verdicts (fuzz, triage, compare with a reference) is its own.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import List, Optional, Tuple

from ..core.records import DEFAULT_FLOAT_BOUND, DEFAULT_MAX_SIZE
from ..core.runtime import Tolerance
from ..cutout.extract import CutoutPair
from ..inputs import seeds as seedlib
from ..inputs.constraints import Constraints, derive
from ..inputs.layout import InputLayout, build_layout
from .build import SavedSides, build
from .built import HarnessBuild

Inputs = List[Tuple[str, bytes]]


@dataclasses.dataclass(frozen=True)
class JudgeOptions:
    """How pairs are prepared and run, wherever they are judged."""

    work_dir: Path = Path(".harnessgen")      # builds go to its shared, content-addressed cache
    tolerance: Tolerance = Tolerance()
    constraints: Optional[Path] = None          # the user's ranges file (--constraints)
    max_size: int = DEFAULT_MAX_SIZE            # the largest value of a size symbol
    float_bound: float = DEFAULT_FLOAT_BOUND
    nonfinite: bool = False                     # let NaN and Inf through the decoder
    seed: int = 0                               # of the boundary seeds
    # a ranges file naming what the pair does not have is an error (only where the pair is the
    # program the file was written for)
    strict_names: bool = False
    afl: bool = False                           # the instrumented harness too (to fuzz it)
    cmplog: bool = False
    # the replay binary at once; False: when first asked for (``harness.forked`` screens the
    # inputs of a pair proven equal through cffi first)
    replay_binary: bool = True

    @classmethod
    def of(cls, options, **changes) -> "JudgeOptions":
        """From a run's options (``core.records.FuzzOptions``), with ``changes``."""
        return dataclasses.replace(cls(work_dir=options.work_dir, tolerance=options.tolerance,
                                       constraints=options.constraints, max_size=options.max_size,
                                       float_bound=options.float_bound, nonfinite=options.nonfinite,
                                       seed=options.seed), **changes)


@dataclasses.dataclass
class Prepared:
    """A pair ready to run: its constraints, its layout and its build."""

    pair: CutoutPair
    constraints: Optional[Constraints]      # None where the layout was made elsewhere and given
    layout: InputLayout
    harness: HarnessBuild


def constrain(pair: CutoutPair, options: JudgeOptions) -> Tuple[Constraints, InputLayout]:
    """The pair's constraints and input layout."""
    constraints = derive(pair, max_size=options.max_size, user_file=options.constraints,
                         float_bound=options.float_bound, allow_nonfinite=options.nonfinite,
                         strict_names=options.strict_names)
    return constraints, build_layout(pair, constraints)


def prepare(pair: CutoutPair, options: JudgeOptions, layout: Optional[Tuple[Optional[Constraints], InputLayout]] = None,
            saved: Optional[SavedSides] = None) -> Prepared:
    """The pair constrained (or with ``layout``, (constraints or None, the layout) made
    elsewhere: one layout for several programs) and built (BuildError names the side that did
    not build). ``saved``: its sides serialised already, unchanged since."""
    constraints, input_layout = layout or constrain(pair, options)
    harness = build(pair, input_layout, options.work_dir, options.tolerance, afl=options.afl,
                    cmplog=options.afl and options.cmplog, replay_binary=options.replay_binary, saved=saved)
    return Prepared(pair, constraints, input_layout, harness)


def inputs(layout: InputLayout, count: int, seed: int = 0,
           carried: Optional[Tuple[Optional[InputLayout], Inputs]] = None, carried_limit: Optional[int] = None) \
        -> Inputs:
    """Inputs for ``layout``: ``carried`` ones first (another layout's inputs, at most
    ``carried_limit``, each container and symbol carried over where this layout has it), then
    ``count`` boundary seeds."""
    out: Inputs = []
    if carried is not None and carried[0] is not None and carried[1]:
        out += seedlib.translated(carried[0], carried[1][:carried_limit], layout, seed)
    return out + seedlib.sample(layout, count, seed)


def screen(harness: HarnessBuild, named: Inputs, folder: Path, threads: int = 1, repeat: int = 1,
           deadline: Optional[float] = None) -> Tuple[List[Path], List[Path]]:
    """Write the inputs into ``folder`` and run them natively (the replay binary, each in a
    process of its own) until ``deadline``: (the files that passed, the files that failed)."""
    paths = seedlib.write(named, Path(folder))
    passing, failing = seedlib.screen_seeds(harness, paths, threads=threads, repeat=repeat, deadline=deadline)
    return passing, [p for p, _ in failing]


def until(seconds: Optional[float]) -> Optional[float]:
    """A deadline ``seconds`` from now (None: none)."""
    return None if seconds is None else time.monotonic() + seconds
