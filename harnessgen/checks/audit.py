"""Stage: the whole-program audit. Does the cutout's verdict hold for the program?

The same match is applied to a copy of the whole program; whole-pre (the program) and
whole-post (the program after the transformation) are built like any cutout pair and run
on the instance's own inputs carried into the program (its findings', then its seeds: the
same sizes, the same contents where a container is the same) and on boundary seeds and
random inputs at small sizes, bounded in time. Then:

* the whole program differs while the cutout passed: ``CUTOUT_MISSED``, a defect of
  harnessgen (the cutout computed something else than its place in the program), with a
  reproducer of the whole-program difference;
* a cutout finding the whole program also shows is *observable*; one it does not show is
  *latent*: a real bug of the transformation that these inputs of this program do not
  expose (or that only other callers of the transformed code would);
* the whole program after the change fails statically (it does not apply, validate or
  build) while the cutout passed: a ``WHOLE_PROGRAM_FINDING`` of its own, with the whole
  program's static reproducer; never CUTOUT_MISSED (nothing ran differently). "Build" is
  DaCe's own build of the changed program as DaCe made it (``dace_build_error``), before
  harnessgen adapts it for its harness (a symbol declared for it, scalars read back), and
  only where DaCe builds the unchanged program.

The audit runs by default where a whole-program run is cheap (``is_cheap``); ``--audit``
and ``--no-audit`` decide otherwise.
"""
from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from ..core.errors import BuildError, Unsupported
from ..core.files import write_atomic
from ..core.outcome import CUTOUT_MISSED, STATIC_OUTCOMES, Outcome
from ..cutout.extract import PRE_NAME, CutoutPair, plain_copy
from ..engines import RawCrash
from ..harness import judge
from ..harness.build import dace_build_error
from ..harness.compiler import CXX, CXXFLAGS
from ..harness.judge import JudgeOptions
from ..inputs.layout import InputLayout
from ..triage.classify import Triage, TriageOptions
from ..triage.reproducer import write_static_finding

# A whole program with at most this many nodes (all states and nested SDFGs) is audited by
# default: every kernel of our suite is, the CLOUDSC port (thousands) is not.
CHEAP_NODES = 600

AGREES = "AGREES"           # whole-pre and whole-post agreed on every audited input
DIFFERS = "DIFFERS"         # they differ on some input (a reproducer is written)
SKIPPED = "SKIPPED"         # not audited (too large, or asked not to)
# the cutout passed; the whole program after the change does not apply, validate or build
WHOLE_PROGRAM_FINDING = "whole-program finding"


# sizes of the whole program stay small: it runs everything
AUDIT_MAX_SIZE = 6


@dataclasses.dataclass
class AuditOptions:
    keep_root: Path                   # crashes/<target>/<instance>/audit
    judge: JudgeOptions = JudgeOptions(max_size=AUDIT_MAX_SIZE)
    inputs: int = 24                  # boundary seeds and random inputs of the whole program
    time_s: float = 60.0              # running the inputs stops after this (the build is extra)
    command_line: str = ""
    race_threads: int = 4             # where whole-post runs in parallel what whole-pre does not (0: never)
    race_repeat: int = 10             # ... whole-post runs per input
    # seconds to shrink a whole-program difference: what a CUTOUT_MISSED reproducer deserves;
    # 0 where the audit only confirms a cutout finding (observable or latent)
    shrink_seconds: float = 30.0
    # the instance's own inputs (its findings' first, then its seeds) in its cutout's layout:
    # carried into the program (``seeds.translated``) and run before the audit's own inputs
    instance_layout: Optional[InputLayout] = None
    instance_inputs: List[Tuple[str, bytes]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class AuditRecord:
    """What the whole program showed for one instance."""

    verdict: str                      # AGREES, DIFFERS, SKIPPED, or the whole program's static outcome
    inputs: int = 0
    from_instance: int = 0            # of ``inputs``: the instance's own, carried into the program
    differing: int = 0
    outcome: Optional[str] = None     # the whole-program finding's outcome (MISMATCH, ...)
    finding: Optional[str] = None     # its reproducer folder
    seconds: float = 0.0
    reason: str = ""

    @property
    def shows_a_difference(self) -> bool:
        return self.verdict not in (AGREES, SKIPPED)

    def to_json(self) -> Dict:
        return dataclasses.asdict(self)


def is_cheap(program_sdfg) -> bool:
    return sum(1 for _ in program_sdfg.all_nodes_recursive()) <= CHEAP_NODES


def audit(whole_pair: Callable[[], CutoutPair], options: AuditOptions) -> AuditRecord:
    """Whole-pre against whole-post (``whole_pair()``: the program, and the program after the
    instance's change) on the audit's inputs; a difference is triaged into an ordinary finding
    under ``options.keep_root``."""
    started = time.monotonic()
    try:
        pair = whole_pair()
    except Unsupported as exc:
        return AuditRecord(verdict=SKIPPED, reason=str(exc), seconds=_since(started))
    if not pair.ok:
        return _static_record(pair, pair.verdict.name, pair.error, options, started)
    if pair.post_as_made is not None:
        failed = dace_build_error(pair.post_as_made, pair.program_sdfg, options.judge.work_dir)
        if failed:
            # the finding is the program as DaCe made it, before and after: what its reproducer
            # applies the change to and builds again
            made = dataclasses.replace(pair, pre=plain_copy(pair.program_sdfg, PRE_NAME), post=pair.post_as_made)
            return _static_record(made, Outcome.BUILD_FAILURE.name, failed, options, started)
    try:
        prepared = judge.prepare(pair, options.judge)
    except BuildError as exc:
        if not exc.of_the_code:
            return AuditRecord(verdict=SKIPPED, reason=f"the build failed, saying nothing of the code: {exc}"[:300],
                               seconds=_since(started))
        if exc.side != "hg_post":
            return AuditRecord(verdict=SKIPPED, reason=f"the whole program itself does not build: {exc}"[:300],
                               seconds=_since(started))
        return _static_record(pair, Outcome.BUILD_FAILURE.name, f"{exc}\n{exc.log}", options, started)
    harness = prepared.harness
    named = judge.inputs(prepared.layout, options.inputs, options.judge.seed,
                         carried=(options.instance_layout, options.instance_inputs), carried_limit=options.inputs)
    with tempfile.TemporaryDirectory(prefix="hg-audit-") as tmp:
        parallel = options.race_threads > 1 and harness.parallelism_changed
        deadline = judge.until(options.time_s)
        passing, differing = judge.screen(harness, named, Path(tmp), threads=options.race_threads if parallel else 1,
                                          repeat=options.race_repeat if parallel else 1, deadline=deadline)
        record = AuditRecord(verdict=AGREES, inputs=len(passing) + len(differing), differing=len(differing),
                             from_instance=len(named) - options.inputs)
        if differing:
            # the replays too end with the audit's time (and a finding's shrinking after it)
            _triage_difference(harness.dir, differing, "race" if parallel else "audit", options, record,
                               deadline=None if deadline is None else max(deadline, time.monotonic() + 10.0))
    record.seconds = _since(started)
    return record


def _static_record(pair: CutoutPair, verdict: str, message: str, options: AuditOptions, started: float) -> AuditRecord:
    """The whole program after the change fails statically: its reproducer is written (under the
    audit's folder), and the record names it."""
    folder = write_static_finding(options.keep_root / verdict.lower(), pair, verdict, message, CXX, CXXFLAGS)
    return AuditRecord(verdict=verdict, reason=message.splitlines()[0][:300], finding=str(folder), outcome=verdict,
                       seconds=_since(started))


def _triage_difference(build_dir: Path, differing: List[Path], kind: str, options: AuditOptions,
                       record: AuditRecord, deadline: Optional[float] = None) -> None:
    kept = []
    for path in differing:
        target = options.keep_root / "raw" / f"audit-{path.name}"
        write_atomic(target, path.read_bytes())
        kept.append(RawCrash(target, None, kind))     # "race": triage replays it on several threads
    triaged = Triage(build_dir, TriageOptions(
        tolerance=options.judge.tolerance, keep_root=options.keep_root, work_dir=options.judge.work_dir, localize=False,
        command_line=options.command_line, race_threads=max(options.race_threads, 2),
        # one confirmed difference is the audit's answer
        max_raw=4, tsan=False, shrink_seconds=options.shrink_seconds,
        shrink_budget=3000 if options.shrink_seconds else 0, deadline=deadline)).run(kept)
    if triaged.findings:
        first = triaged.findings[0]
        record.verdict, record.outcome, record.finding = DIFFERS, first.outcome.name, str(first.folder)
    else:    # pre failed on its own inputs, or the difference did not replay: not a difference
        record.reason = f"{len(differing)} input(s) crashed but none replayed as a difference " \
                        f"({len(triaged.invalid)} invalid, {len(triaged.flaky)} flaky)"


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)


def classify(cutout_verdict: str, record: AuditRecord) -> Optional[str]:
    """``CUTOUT_MISSED`` where the cutout passed and the program differs; ``observable`` or
    ``latent`` for a cutout finding; None where the audit says nothing (skipped)."""
    if record.verdict == SKIPPED:
        return None
    if cutout_verdict == Outcome.PASS.name:
        if record.verdict in STATIC_OUTCOMES:
            return WHOLE_PROGRAM_FINDING
        return CUTOUT_MISSED if record.shows_a_difference else None
    return "observable" if record.shows_a_difference else "latent"
