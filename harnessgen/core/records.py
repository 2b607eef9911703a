"""The records the driver and the subjects pass between them: what every instance is run
with (``FuzzOptions``) and what it ended with (``InstanceResult``, one entry of summary.json's
``instances``).
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from .. import __version__
from .outcome import CUTOUT_MISSED, STATIC_OUTCOMES, Outcome
from .runtime import Tolerance
from .versions import dace_source

# the largest value of a size symbol, and the bound of decoded floats, by default (--max-size,
# --float-bound)
DEFAULT_MAX_SIZE = 16
DEFAULT_FLOAT_BOUND = 1e6
# post parallel where pre is not (the race check no one has to ask for): threads, and the least
# time its final-queue pass gets
AUTO_RACE_THREADS = 4
AUTO_RACE_MIN_S = 10.0

def engine_dir(run_dir: Path, instance_id: str) -> Path:
    """Where an instance's engine works in a run directory: its afl-fuzz sync directory
    (``afl/<id>/``; the screened seeds beside it in ``afl/<id>.seeds``)."""
    return Path(run_dir) / "afl" / instance_id


# pre itself does not build: DaCe's code generator fails on a construct in it (codegen_causes)
BLOCKED = "BLOCKED"
# every verdict an instance can end with: the triage outcomes plus BUILT (built, not fuzzed),
# BLOCKED, UNSUPPORTED, ERROR (a harnessgen bug) and CUTOUT_MISSED (the whole-program audit's)
VERDICTS = tuple(o.name for o in Outcome) + ("BUILT", BLOCKED, "UNSUPPORTED", "ERROR", CUTOUT_MISSED)
# an instance with less time than this for seeds and fuzzing is judged on its seed inputs alone
# (afl-fuzz's start-up and dry run take most of a second)
MIN_ENGINE_S = 1.0
# the whole-program audit that a bounded run left until every match had its verdict
# (``FuzzOptions.defer_audits``): the result's ``audit`` until a worker of the AUDITS queue runs it
AUDIT_DEFERRED = "DEFERRED"
DEFERRED_AUDIT = {"verdict": AUDIT_DEFERRED,
                  "reason": "the whole-program audit runs after every match has its verdict (a bounded run)"}


def audit_deferred(result: Optional[Dict]) -> bool:
    """Whether a result (JSON) still waits for its deferred whole-program audit."""
    return bool(result) and (result.get("audit") or {}).get("verdict") == AUDIT_DEFERRED


@dataclasses.dataclass
class FuzzOptions:
    time_s: float = 60.0
    max_execs: Optional[int] = None      # per instance, besides the time: afl-fuzz -E
    afl_jobs: int = 1                    # afl-fuzz instances per instance (-M main, -S s1..; s1 with CMPLOG)
    budget_s: Optional[float] = None     # whole run: no instance starts after this many seconds
    resume: bool = True                  # skip instances the output directory's summary already has
    redo: Tuple[str, ...] = ()           # ...except those with one of these verdicts or transformations
    max_size: int = DEFAULT_MAX_SIZE
    constraints: Optional[Path] = None
    tolerance: Tolerance = Tolerance()
    float_bound: float = DEFAULT_FLOAT_BOUND
    nonfinite: bool = False
    out_dir: Path = Path(".harnessgen/runs/latest")
    work_dir: Path = Path(".harnessgen")
    corpus_root: Path = Path("corpus")
    crashes_root: Path = Path("crashes")
    until_crash: bool = False
    engine: str = "afl"
    cmplog: bool = False
    max_replays: int = 500               # raw crashes triaged per instance
    race_threads: int = 0                # > 1: a second afl-fuzz instance in race mode
    race_repeat: int = 2                 # race mode: post runs per input while fuzzing
    command_line: str = ""
    seed: int = 0
    num_seeds: int = 12
    seed_mode: str = "boundary"          # "random": no boundary knowledge; "none": the user's files only
    show_progress: bool = True
    build_only: bool = False             # stop every instance once its harness is built (verdict BUILT)
    race_check: bool = True              # post parallel where pre is not: seeds and final queue on threads
    audit: Optional[bool] = None         # whole-program audit; None: where the whole program is cheap
    audit_time_s: float = 60.0           # the audit's inputs, per instance (its build is extra)
    # a bounded run: the whole-program audit waits until every match has its verdict
    # (campaign.schedule's AUDITS queue; a finding's first), and the pair is shared meanwhile
    defer_audits: bool = False
    # a bounded run gave the instance less than --time: its share of what remained of the bound
    time_cut_by_bound: bool = False
    # a bounded run: when its bound ends (time.time(), as workers on other hosts read it); an
    # instance's triage starts no replay long after it
    run_ends_at: Optional[float] = None
    verbose: bool = False                # library warnings on the terminal too (always in warnings.log)
    simplify: Optional[bool] = None      # pattern instances on the simplified program (True) or as given
                                         # (False); None: the program kind's default (SDFG files as given)
    reference_check: bool = True         # check each program against its reference before the instances
    reduce_seconds: float = 60.0         # per distinct bug, when the run's findings are clustered (0: none)
    reduce_candidates: int = 2000        # programs judged per bug at most
    plots: bool = True                   # the report draws its plots (--no-plots: not)
    params: str = "pairs"                # parameter variants per match: pairs(:K), default, boundary or a count
    params_shrink_s: float = 120.0       # per finding of a variant: time to look for simpler parameters
    prove: str = "first"                 # first: prove, fuzz what the proof does not settle; only: never fuzz; off
    whole_share: float = 0.25            # of the workers' time, for instances judged on whole programs (passes)
    variant_share: float = 0.0           # of the workers' time, for parameter variants beyond each match's
                                         # defaults, beside the matches (0: after every match and audit)
    share_pairs: bool = True             # an instance whose pair equals a judged one's up to names takes its verdict

    def keep_dir(self, inst) -> Path:
        """Where an instance's findings and raw crashes are kept: crashes/<target>/<instance>/."""
        return self.crashes_root / inst.target / inst.id

    @property
    def check_threads(self) -> int:
        """Threads for post wherever it is judged on several: --race's, else the race check's."""
        return self.race_threads if self.race_threads > 1 else AUTO_RACE_THREADS


@dataclasses.dataclass
class InstanceResult:
    id: str
    transformation: str
    program: str
    target: str
    verdict: str                         # PASS, an Outcome name, BUILT (built, not fuzzed: --build-only, or
                                         # a GPU build where no GPU is), UNSUPPORTED, or ERROR (not judged:
                                         # see ``error``)
    execs: int = 0
    execs_per_sec: float = 0.0           # of the single-thread instance
    race_execs_per_sec: Optional[float] = None
    seconds_to_first_finding: Optional[float] = None
    crashes: List[str] = dataclasses.field(default_factory=list)
    setup_seconds: float = 0.0
    fuzz_seconds: float = 0.0
    wall_seconds: float = 0.0            # the whole instance: cutout, build, fuzzing, triage
    message: str = ""
    input_config_before: str = ""
    input_config_after: str = ""
    build_dir: Optional[str] = None
    findings: List[Dict] = dataclasses.field(default_factory=list)
    triage: Dict = dataclasses.field(default_factory=dict)
    audit: Dict = dataclasses.field(default_factory=dict)    # the whole-program audit (audit.py)
    bisect: Dict = dataclasses.field(default_factory=dict)   # a pipeline's guilty passes (bisect.py)
    race_check: str = ""                 # why and on what post was run on several threads
    params: Dict = dataclasses.field(default_factory=dict)   # a parameter variant's (subjects.sdfg)
    proof: Dict = dataclasses.field(default_factory=dict)    # the cutout pair's proof (prove.Proof), --prove
    evidence: Dict = dataclasses.field(default_factory=dict)  # what the verdict rests on (evidence.Evidence)
    blocked_by: str = ""                 # BLOCKED: the cause's id (codegen_causes.Cause)
    seeds_note: str = ""                 # where not every seed input ran within the instance's time
    exec_timing: Dict = dataclasses.field(default_factory=dict)  # measured seed runs, afl-fuzz's -t (runner)
    phases: Dict = dataclasses.field(default_factory=dict)       # seconds per part of the instance (``timed``)
    notes: List[str] = dataclasses.field(default_factory=list)   # what the verdict was judged with (never a finding)
    # ERROR: {"stage": engine | build | setup | config | worker | harnessgen, "reason": ..., "log": path}
    error: Dict = dataclasses.field(default_factory=dict)
    pair_key: str = ""                   # the pair's canonical key (cutout.canonical), where it has one
    same_pair_as: str = ""               # the instance whose verdict this one takes (core.shared_pairs)

    @contextlib.contextmanager
    def timed(self, phase: str):
        """Add the time the block takes to ``phases[phase]``: where an instance's time went
        (cutout, build, seeds, engine, race, triage, audit, ...), summed over the run."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.phases[phase] = round(self.phases.get(phase, 0.0) + time.monotonic() - started, 3)

    @property
    def verdict_seconds(self) -> float:
        """Seconds from the start of the instance until its verdict was known: the first
        finding's time when there is one, else the whole instance (a PASS needs the budget)."""
        if self.seconds_to_first_finding is None:
            return self.wall_seconds
        static = not self.build_dir        # FAILED_TO_APPLY, INVALID_SDFG, BUILD_FAILURE: timed from the start
        return self.seconds_to_first_finding + (0.0 if static else self.setup_seconds)

    def to_json(self) -> Dict:
        out = dataclasses.asdict(self)
        out["verdict_seconds"] = round(self.verdict_seconds, 3)
        return out

    @classmethod
    def from_json(cls, entry: Dict) -> "InstanceResult":
        """From ``to_json`` (or a worker's result, which says more: its extra keys are left out)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in entry.items() if k in fields})


# ------------------------------------------------------------------ summary.json of a run
def per_program(results: List[InstanceResult], bugs: List[Dict] = ()) -> List[Dict]:
    """Per program of a run: instances, verdict counts, findings, and the distinct bugs seen in
    it (``bugs``: bugs.json's records) with how many DaCe alone shows."""
    rows: Dict[str, Dict] = {}
    for r in results:
        row = rows.setdefault(r.program, {"program": r.program, "instances": 0, "verdicts": {}, "findings": 0})
        row["instances"] += 1
        row["verdicts"][r.verdict] = row["verdicts"].get(r.verdict, 0) + 1
        row["findings"] += len(r.findings) or (1 if r.verdict in STATIC_OUTCOMES and r.crashes else 0)
    for row in rows.values():
        seen = [b for b in bugs if row["program"] in b.get("programs", [])]
        row["bugs"] = len(seen)
        row["confirmed"] = sum(1 for b in seen if b.get("dace_alone") == "CONFIRMED")
    return [rows[name] for name in sorted(rows)]


def per_transformation(results: List[InstanceResult]) -> List[Dict]:
    """The summary table: per transformation, instances, verdict counts, findings, the median
    time to the first verdict and where the reproducers are."""
    import statistics

    rows = {}
    for r in results:
        row = rows.setdefault(r.transformation, {"transformation": r.transformation, "instances": 0, "verdicts": {},
                                                 "findings": 0, "times": [], "reproducers": [], "matches": set(),
                                                 "param_variants": 0, "proofs": {}, "pass_evidence": {},
                                                 "not_fuzzed_as_meant": 0, "distinct_pairs": 0, "same_pair": 0})
        row["instances"] += 1
        row["same_pair" if r.same_pair_as else "distinct_pairs"] += 1
        if r.verdict == Outcome.PASS.name and r.evidence:
            kind = r.evidence["kind"]
            row["pass_evidence"][kind] = row["pass_evidence"].get(kind, 0) + 1
            row["not_fuzzed_as_meant"] += bool(r.evidence.get("meant_to_fuzz") and kind == "SEEDS_ONLY")
        if r.proof:
            row["proofs"][r.proof["verdict"]] = row["proofs"].get(r.proof["verdict"], 0) + 1
        row["matches"].add(r.params.get("match") or r.id)
        row["param_variants"] += bool(r.params.get("values"))
        row["verdicts"][r.verdict] = row["verdicts"].get(r.verdict, 0) + 1
        row["times"].append(r.verdict_seconds)
        static = r.crashes if r.verdict in STATIC_OUTCOMES and not r.findings else []   # BLOCKED's is DaCe's
        row["findings"] += len(r.findings) or (1 if static else 0)
        row["reproducers"] += [f["path"] for f in r.findings] + static
    out = []
    for name in sorted(rows):
        row = rows[name]
        times = row.pop("times")
        row["matches"] = len(row["matches"])
        row["median_verdict_seconds"] = round(statistics.median(times), 2) if times else None
        row["verdicts"] = dict(sorted(row["verdicts"].items()))
        row["proofs"] = dict(sorted(row["proofs"].items()))
        row["pass_evidence"] = dict(sorted(row["pass_evidence"].items()))
        out.append(row)
    return out


def codegen_causes(results: List[InstanceResult]) -> List[Dict]:
    """Constructs DaCe's code generator could not build, each with the instances it BLOCKED
    and its finding (a program DaCe cannot build, with its BUG.md)."""
    causes: Dict[str, Dict] = {}
    for r in results:
        if r.verdict == BLOCKED and r.blocked_by:
            entry = causes.setdefault(r.blocked_by, {"id": r.blocked_by, "finding": (r.crashes or [""])[0],
                                                     "instances": 0, "transformations": []})
            entry["instances"] += 1
            if r.transformation not in entry["transformations"]:
                entry["transformations"].append(r.transformation)
    return sorted(causes.values(), key=lambda c: c["id"])


def run_summary(settings: Dict, results: List[InstanceResult], planned: int, warnings: Dict,
                reference_checks: Optional[List[Dict]] = None, bugs: Optional[List[Dict]] = None) -> Dict:
    """summary.json of ``harnessgen fuzz`` (the contract scripts rely on): the run's settings,
    how many instances were planned and finished, per transformation and per instance."""
    import dace

    return {
        "harnessgen": __version__, "dace": dace.__version__, "dace_source": dace_source(), **settings,
        "distinct_bugs": bugs or [],      # bugs.json's table: findings clustered by root cause
        "planned": planned, "finished": len(results), "not_run": planned - len(results), "warnings": warnings,
        # finished instances judged themselves, and those that took an equal pair's verdict
        "distinct_pairs": sum(1 for r in results if not r.same_pair_as),
        "same_pair": sum(1 for r in results if r.same_pair_as),
        "reference_checks": reference_checks or [],
        "codegen_causes": codegen_causes(results),
        "per_transformation": per_transformation(results),
        "per_program": per_program(results, bugs or []),
        "errors": error_counts(results),
        "time_by_phase": time_by_phase(results),
        "instances": [r.to_json() for r in results],
    }


def error_counts(results: List[InstanceResult]) -> Dict:
    """The instances harnessgen could not judge (ERROR), apart from the verdicts: how many, per
    stage they failed in, and each distinct reason once with its first instance and log."""
    errors = [r for r in results if r.verdict == "ERROR"]
    stages: Dict[str, int] = {}
    for r in errors:
        stage = _error_stage(r.error)
        stages[stage] = stages.get(stage, 0) + 1
    return {"count": len(errors), "by_stage": dict(sorted(stages.items())),
            "reasons": error_reasons((r.id, r.error, r.message) for r in errors)}


def error_reasons(errors: Iterable[Tuple[str, Dict, str]]) -> List[Dict]:
    """Each distinct reason instances could not be judged, once (its first line): its stage, how
    many, the first instance and its log; most first. ``errors``: (id, error record, message)."""
    reasons: Dict[str, Dict] = {}
    for ident, error, message in errors:
        reason = (error.get("reason") or message or "").split("\n", 1)[0][:300]
        entry = reasons.setdefault(reason, {"reason": reason, "stage": _error_stage(error), "instances": 0,
                                            "first": ident, "log": error.get("log", "")})
        entry["instances"] += 1
    return sorted(reasons.values(), key=lambda e: -e["instances"])


def _error_stage(error: Dict) -> str:
    return error.get("stage", "harnessgen")     # results written before ``error`` was: no stage


def time_by_phase(results: List[InstanceResult]) -> Dict[str, float]:
    """Where the workers' time went, summed over the instances (``InstanceResult.phases``),
    largest first; "other" is the rest of their wall time."""
    totals: Dict[str, float] = {}
    for r in results:
        for phase, seconds in r.phases.items():
            totals[phase] = totals.get(phase, 0.0) + seconds
    wall = sum(r.wall_seconds for r in results)
    totals["other"] = max(0.0, wall - sum(totals.values()))
    return {phase: round(seconds, 1) for phase, seconds in sorted(totals.items(), key=lambda kv: -kv[1])}
