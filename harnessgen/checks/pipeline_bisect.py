"""Stage: bisect a pipeline whose application changed a program's results.

As a compiler developer bisects an optimization pipeline: run the pipeline on the whole
program step by step (a *step* is one application of a member pass that changed something,
in the pipeline's order, fixed-point rounds included) and find

* the **first step** after which the program's results differ from the program's own
  (binary search over prefixes of the steps), and
* the **fewest member passes** that, run alone as the pipeline would run them, still change
  them (ddmin over the passes that applied): the passes a report names.

Each candidate is judged like the audit judges a whole program: whole-pre against the
candidate on the instance's inputs carried into the program (its findings' first) and the
program's boundary seeds. A candidate the pass cannot make (it raises, or its SDFG is
invalid or does not build) counts as changing the results too, as it is a finding of its own.
"""
from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from ..core.errors import BuildError, Unsupported
from ..cutout.extract import CutoutPair, whole_program_pair
from ..dacecompat import copy_sdfg
from ..harness import judge
from ..harness.judge import JudgeOptions
from ..inputs.layout import InputLayout
from ..plan import passes

# the whole program runs at small sizes, as in the audit
BISECT_MAX_SIZE = 6


@dataclasses.dataclass
class BisectOptions:
    judge: JudgeOptions = JudgeOptions(max_size=BISECT_MAX_SIZE)
    inputs: int = 16                    # boundary seeds besides the instance's own inputs
    time_s: float = 300.0               # candidates stop being judged after this
    instance_layout: Optional[InputLayout] = None
    instance_inputs: List[Tuple[str, bytes]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class BisectRecord:
    """What the bisection found (``verdict``: BISECTED, NOT_SHOWN, PARTIAL (out of time))."""

    verdict: str
    steps: List[str] = dataclasses.field(default_factory=list)   # the pipeline's steps, in order
    first_step: Optional[int] = None    # 1-based index into ``steps``
    first_pass: Optional[str] = None
    minimal_passes: List[str] = dataclasses.field(default_factory=list)
    minimal_steps: List[int] = dataclasses.field(default_factory=list)   # a recipe's fewest steps (1-based)
    candidates: int = 0                 # pipelines built and judged
    seconds: float = 0.0
    reason: str = ""

    def to_json(self) -> Dict:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        if self.verdict == "NOT_SHOWN":
            return f"bisect: {self.reason}"
        where = f"first at step {self.first_step}/{len(self.steps)} ({self.first_pass})" if self.first_step else ""
        fewest = f"fewest passes that still change it: {', '.join(self.minimal_passes)}" if self.minimal_passes else ""
        if self.minimal_steps:
            fewest = f"fewest steps that still change it: {', '.join(map(str, self.minimal_steps))}"
        return f"bisect ({self.verdict}, {self.candidates} pipelines judged): " + "; ".join(
            p for p in (where, fewest, self.reason) if p)


class OutOfTime(Exception):
    pass


class Candidates:
    """Judges candidate programs on the whole program: whether each differs from it."""

    def __init__(self, options: BisectOptions, deadline: float):
        self.options, self.deadline = options, deadline
        self.candidates = 0
        self.inputs: Optional[List[Tuple[str, bytes]]] = None
        self.layout: Optional[InputLayout] = None

    def differs(self, make_pair: Callable[[], CutoutPair], unmade_differs: bool = True) -> bool:
        """Whether the pair ``make_pair()`` makes (the whole program as pre, a candidate as
        post) differs on the inputs; the first candidate judged picks the inputs the later
        ones run (those it fails on). ``unmade_differs``: whether a candidate that cannot be
        made (it raises, is invalid) counts as differing."""
        if time.monotonic() > self.deadline:
            raise OutOfTime()
        self.candidates += 1
        pair = make_pair()
        if not pair.ok:
            return unmade_differs
        layout = self.layout or judge.constrain(pair, self.options.judge)[1]
        self.layout = layout
        try:
            harness = judge.prepare(pair, self.options.judge, (None, layout)).harness
        except BuildError as exc:
            if not exc.of_the_code:
                raise      # a failure of the machine, not of the candidate: it bisects nothing
            return exc.side == "hg_post"
        with tempfile.TemporaryDirectory(prefix="hg-bisect-") as tmp:
            _, failing = judge.screen(harness, self._inputs(layout), Path(tmp), deadline=self.deadline)
            if self.inputs is None:          # the full candidate's run: keep only the inputs it fails on
                names = {p.stem for p in failing}
                self.inputs = [(n, d) for n, d in self._inputs(layout) if n in names]
        return bool(failing)

    def _inputs(self, layout: InputLayout) -> List[Tuple[str, bytes]]:
        if self.inputs is not None:
            return self.inputs
        return judge.inputs(layout, self.options.inputs, self.options.judge.seed,
                            carried=(self.options.instance_layout, self.options.instance_inputs))


def bisect(program_sdfg, pspec: "passes.PassSpec", options: BisectOptions) -> BisectRecord:
    """Bisect ``pspec`` (a pipeline) on the whole program ``program_sdfg``."""
    started = time.monotonic()
    record = BisectRecord(verdict="BISECTED")
    try:
        steps = passes.run_pass(pspec, copy_sdfg(program_sdfg)).applied
    except Exception as exc:  # noqa: BLE001 -- the pipeline raises on the program: nothing to step through
        return BisectRecord(verdict="NOT_SHOWN", reason=f"the pipeline raises on the whole program "
                                                        f"({type(exc).__name__}: {exc})"[:300])
    record.steps = steps
    candidates = Candidates(options, started + options.time_s)

    def differs(**run_kwargs) -> bool:
        return candidates.differs(lambda: whole_program_pair(program_sdfg, "bisect", transform=lambda post: (
            passes.run_pass(pspec, post, **run_kwargs))))

    def search() -> None:
        if not differs():
            record.verdict = "NOT_SHOWN"
            record.reason = "the whole program after the pipeline does not differ on the instance's inputs " \
                            "and the boundary seeds (the finding is latent in the program)"
        elif differs(limit=0):
            record.verdict = "NOT_SHOWN"
            record.reason = "the program differs from itself on these inputs (pre is not deterministic)"
        else:
            record.first_step = first_failing_prefix(len(steps), lambda k: differs(limit=k))
            record.first_pass = steps[record.first_step - 1]
            applied = list(dict.fromkeys(steps))
            record.minimal_passes = passes.minimal_subset(applied, lambda subset: differs(only=subset))

    return searched(record, candidates, search, options.time_s, started)


def searched(record: BisectRecord, candidates: Candidates, search: Callable[[], None], time_s: float,
             started: float) -> BisectRecord:
    """``record`` after ``search()`` filled it: PARTIAL where the time ran out, NOT_SHOWN where
    a candidate could not be judged; with the candidates judged and the seconds taken."""
    try:
        search()
    except OutOfTime:
        record.verdict = "PARTIAL"
        record.reason = f"out of time after {time_s:g} s"
    except Unsupported as exc:
        record.verdict, record.reason = "NOT_SHOWN", str(exc)
    record.candidates = candidates.candidates
    record.seconds = round(time.monotonic() - started, 3)
    return record


def first_failing_prefix(count: int, fails) -> int:
    """The least k in 1..count with ``fails(k)``, given ``fails(count)`` and not ``fails(0)``
    (binary search: a prefix that fails is taken to keep failing as steps are added)."""
    lo, hi = 0, count            # fails(lo) is False, fails(hi) is True
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fails(mid):
            hi = mid
        else:
            lo = mid
    return hi
