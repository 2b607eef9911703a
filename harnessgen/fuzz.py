"""The ``harnessgen fuzz`` pipeline: every selected instance through every stage.

Per instance: cutout -> constraints -> layout -> build -> seeds (screened by
the replay binary: a seed that already crashes is a finding at once) ->
engine -> replay of the raw crashes through cffi -> verdict. Everything the
user keeps goes to ``corpus/<target>/<instance>/`` (seeds) and
``crashes/<target>/<instance>/`` (findings); working files go under the
output directory. ``summary.json`` is rewritten after every instance.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import time
import traceback
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from . import runlog, seeds as seedlib
from .audit import CUTOUT_MISSED, SKIPPED, AuditOptions, audit, classify, is_cheap
from .build import CXX, CXXFLAGS, HarnessBuild, build
from .cuda import kernels as cuda_kernels, sanitizer
from .cuda.kernel_build import build_kernel
from .constraints import DEFAULT_FLOAT_BOUND, DEFAULT_MAX_SIZE, derive
from .cutout import CutoutPair, extract, volume_at_probe
from .engines import FuzzJob, RawCrash, get_engine
from .engines.afl import read_options
from .errors import BuildError, ConfigError, Unsupported
from .files import clear_stale_omp_registrations, write_atomic, write_json
from .instances import Instance, enumerate_instances, load_transformation, parse_settings
from .layout import InputLayout, build_layout
from .runtime import Tolerance
from .outcome import Outcome
from .reproducer import write_static_finding
from .triage import TriageOptions, triage_build
from .targets import Target, resolve, with_afl_configs


# post parallel where pre is not (the race check no one has to ask for): threads, and the least
# time its final-queue pass gets
AUTO_RACE_THREADS = 4
AUTO_RACE_MIN_S = 10.0

# every verdict an instance can end with: the triage outcomes plus the harness's own two
# how many larger cutouts an instance is judged in after the audit showed its cutout missing a
# difference of the whole program (the ladder has at most two: the nested SDFG, the program)
MAX_GROWTH_AFTER_AUDIT = 2
VERDICTS = tuple(o.name for o in Outcome) + ("BUILT", "UNSUPPORTED", "ERROR", CUTOUT_MISSED)


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
    verbose: bool = False                # library warnings on the terminal too (always in warnings.log)

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
                                         # a GPU build where no GPU is), UNSUPPORTED, or ERROR (a harnessgen bug)
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
    race_check: str = ""                 # why and on what post was run on several threads

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


def per_transformation(results: List[InstanceResult]) -> List[Dict]:
    """The summary table: per transformation, instances, verdict counts, findings, the median
    time to the first verdict and where the reproducers are."""
    import statistics

    rows = {}
    for r in results:
        row = rows.setdefault(r.transformation, {"transformation": r.transformation, "instances": 0, "verdicts": {},
                                                 "findings": 0, "times": [], "reproducers": []})
        row["instances"] += 1
        row["verdicts"][r.verdict] = row["verdicts"].get(r.verdict, 0) + 1
        row["times"].append(r.verdict_seconds)
        row["findings"] += len(r.findings) or (1 if r.crashes and not r.build_dir else 0)
        row["reproducers"] += [f["path"] for f in r.findings] + ([] if r.build_dir else r.crashes)
    out = []
    for name in sorted(rows):
        row = rows[name]
        times = row.pop("times")
        row["median_verdict_seconds"] = round(statistics.median(times), 2) if times else None
        row["verdicts"] = dict(sorted(row["verdicts"].items()))
        out.append(row)
    return out


# ------------------------------------------------------------------ helpers
def _keep_dir(options: FuzzOptions, inst: Instance) -> Path:
    return options.crashes_root / inst.target / inst.id


def _mark_finding(folder: Path, label: str, record) -> None:
    """meta.json of a finding says whether the whole program shows it (observable) or not (latent)."""
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        return
    meta = json.loads(meta_path.read_text())
    meta["audit"] = {"classification": label, "whole_program": record.to_json()}
    write_json(meta_path, meta)


def _record_static_finding(options: FuzzOptions, pair: CutoutPair, verdict: Outcome, message: str) -> str:
    """FAILED_TO_APPLY / INVALID_SDFG / BUILD_FAILURE: keep what reproduces it."""
    folder = _keep_dir(options, pair.instance) / verdict.name.lower()
    return str(write_static_finding(folder, pair, verdict.name, message, CXX, CXXFLAGS))


# ------------------------------------------------------------------ one instance
class InstanceRunner:
    def __init__(self, target: Target, program_sdfg, cls: type, options: FuzzOptions,
                 progress: Optional[Callable] = None):
        self.target = target
        self.sdfg = program_sdfg
        self.cls = cls
        self.options = options
        self.progress = progress

    def run(self, inst: Instance) -> InstanceResult:
        started = time.monotonic()
        result = InstanceResult(id=inst.id, transformation=inst.transformation, program=inst.program,
                                target=inst.target, verdict=Outcome.PASS.name)
        try:
            self._run(inst, result, started)
        except Unsupported as exc:
            result.verdict, result.message = "UNSUPPORTED", str(exc)
        except (ConfigError, KeyboardInterrupt):
            raise                      # the user must act; every other instance would fail the same way
        except Exception as exc:       # a bug in harnessgen (or DaCe): record it, go on with the others
            where = self.options.out_dir / "errors" / f"{inst.id}.txt"
            write_atomic(where, traceback.format_exc().encode())
            result.verdict = "ERROR"
            result.message = f"{type(exc).__name__}: {exc} (traceback in {where})"
        return result

    def _run(self, inst: Instance, result: InstanceResult, started: float) -> None:
        if inst.transformation == "kernel":     # self.sdfg is the kernel's manifest
            return self._run_kernel(inst, result, started)
        self._cut_out_and_fuzz(inst, result, started)
        self._audit(inst, result)
        if result.verdict == CUTOUT_MISSED:
            self._grow_after_audit(inst, result)

    def _grow_after_audit(self, inst: Instance, result: InstanceResult) -> None:
        """The cutout passed where the whole program differs: judge the instance again in the
        next larger cutouts that hold the match (the whole nested SDFG, then the whole program),
        under an instance folder of their own, until one shows a finding. The verdict becomes
        that finding; the audit keeps saying CUTOUT_MISSED of the smaller cutout."""
        for past in range(1, MAX_GROWTH_AFTER_AUDIT + 1):
            grown = dataclasses.replace(inst, id=f"{inst.id}-grown{past}")
            again = InstanceResult(id=grown.id, transformation=inst.transformation, program=inst.program,
                                   target=inst.target, verdict=Outcome.PASS.name)
            try:
                self._cut_out_and_fuzz(grown, again, time.monotonic(), past=past)
            except Unsupported as exc:
                result.message += f"; {exc}"
                return
            step = {"cutout": past, "verdict": again.verdict, "execs": again.execs, "build_dir": again.build_dir,
                    "findings": len(again.findings), "message": again.message[:300]}
            result.audit.setdefault("grown", []).append(step)
            result.execs += again.execs
            if again.verdict != Outcome.PASS.name:
                for finding in again.findings:
                    finding["observable"] = True            # the audit saw the whole program differ
                result.verdict, result.findings = again.verdict, again.findings
                result.crashes, result.triage = again.crashes, again.triage
                result.message = (f"found in a larger cutout ({past} step(s) up) after the whole-program audit "
                                  f"showed the smaller one missing it (CUTOUT_MISSED, a harnessgen defect; "
                                  f"whole-program reproducer {result.audit.get('finding')}): {again.message}")
                return

    def _cut_out_and_fuzz(self, inst: Instance, result: InstanceResult, started: float, past: int = 0) -> None:
        opts = self.options
        pair = extract(self.sdfg, inst, self.cls, past=past)
        result.input_config_before = f"{pair.input_volume_before} (= {volume_at_probe(pair.input_volume_before)} at 20)"
        result.input_config_after = f"{pair.input_volume_after} (= {volume_at_probe(pair.input_volume_after)} at 20)"
        if not pair.ok:
            result.verdict, result.message = pair.verdict.name, pair.error
            result.crashes = [_record_static_finding(opts, pair, pair.verdict, pair.error)]
            result.seconds_to_first_finding = round(time.monotonic() - started, 3)
            return
        constraints = derive(pair, max_size=opts.max_size, user_file=opts.constraints, float_bound=opts.float_bound,
                             allow_nonfinite=opts.nonfinite, strict_names=len(self.target.programs) == 1)
        layout = build_layout(pair, constraints)
        try:
            harness = build(pair, layout, opts.work_dir, opts.tolerance, afl=opts.engine == "afl",
                            cmplog=opts.cmplog or opts.afl_jobs > 1)
        except BuildError as exc:
            if exc.side != "hg_post":
                raise Unsupported(f"the cutout itself does not build ({exc})") from exc
            message = f"{exc}\n{exc.log}"
            result.verdict, result.message = Outcome.BUILD_FAILURE.name, str(exc)
            result.crashes = [_record_static_finding(opts, pair, Outcome.BUILD_FAILURE, message)]
            result.seconds_to_first_finding = round(time.monotonic() - started, 3)
            return
        result.build_dir = str(harness.dir)
        write_json(harness.dir / "constraints.json", constraints.to_json())
        self._fuzz_built(inst, harness, result, started)

    def _audit(self, inst: Instance, result: InstanceResult) -> None:
        """The whole-program audit, after the cutout's verdict: CUTOUT_MISSED where the program
        differs and the cutout passed; each finding marked observable or latent."""
        opts = self.options
        if result.verdict in ("BUILT", "UNSUPPORTED", "ERROR"):
            return
        if not (opts.audit if opts.audit is not None else is_cheap(self.sdfg)):
            result.audit = {"verdict": SKIPPED, "reason": "--no-audit" if opts.audit is False else
                            "the whole program is too large to run by default (--audit runs it)"}
            return
        record = audit(self.sdfg, inst, self.cls, AuditOptions(
            keep_root=_keep_dir(opts, inst) / "audit", work_dir=opts.work_dir, tolerance=opts.tolerance,
            time_s=opts.audit_time_s, seed=opts.seed, constraints=opts.constraints, command_line=opts.command_line,
            race_threads=opts.check_threads if opts.race_check else 0,
            race_repeat=opts.race_repeat * 5, shrink_seconds=30.0 if result.verdict == Outcome.PASS.name else 0.0,
            **self._instance_inputs(inst, result)))
        label = classify(result.verdict, record)
        result.audit = {**record.to_json(), "classification": label}
        if label == CUTOUT_MISSED:
            result.verdict = CUTOUT_MISSED
            result.message = (f"the whole program differs ({record.outcome}) while the cutout passed: the cutout "
                              f"did not compute what its place in the program computes (a harnessgen defect); "
                              f"whole-program reproducer {record.finding}")
        elif label:
            for finding in result.findings:
                finding["observable"] = label == "observable"
                _mark_finding(Path(finding["path"]), label, record)

    def _instance_inputs(self, inst: Instance, result: InstanceResult) -> Dict:
        """The cutout's layout and inputs for the audit: each finding's input, then the corpus
        (seeds and the user's files); none where nothing was built."""
        if not result.build_dir:
            return {}
        corpus = self.options.corpus_root / inst.target / inst.id
        paths = [Path(f["path"]) / "input.bin" for f in result.findings]
        paths += sorted(p for p in corpus.iterdir() if p.is_file()) if corpus.is_dir() else []
        inputs = [(p.parent.name if p.name == "input.bin" else p.name, p.read_bytes()) for p in paths if p.is_file()]
        return {"instance_layout": InputLayout.load(Path(result.build_dir) / "layout.json"), "instance_inputs": inputs}

    def _run_kernel(self, inst: Instance, result: InstanceResult, started: float) -> None:
        opts = self.options
        try:
            harness = build_kernel(self.sdfg, inst.target, opts.work_dir, opts.tolerance,
                                   afl=opts.engine == "afl")
        except BuildError as exc:
            if exc.side == "harness":
                raise
            # the user's kernel (post) or reference (pre) does not compile: nothing to fuzz
            result.verdict = Outcome.BUILD_FAILURE.name
            result.message = f"{exc} (the {'kernel' if exc.side == 'hg_post' else 'reference'}; log:\n{exc.log[-2000:]})"
            return
        result.build_dir = str(harness.dir)
        self._fuzz_built(inst, harness, result, started)

    def _fuzz_built(self, inst: Instance, harness: HarnessBuild, result: InstanceResult, started: float) -> None:
        opts = self.options
        result.setup_seconds = round(time.monotonic() - started, 3)
        if opts.build_only:
            result.verdict, result.message = "BUILT", f"built in {harness.dir} (--build-only: not fuzzed)"
            return
        missing = harness.gpu_missing()
        if missing:
            result.verdict = "BUILT"
            result.message = (f"post runs on a GPU and this machine cannot run it ({missing}); built in "
                              f"{harness.dir}: fuzz it where a GPU is")
            return
        self._fuzz(inst, harness, result)

    def _fuzz(self, inst: Instance, harness: HarnessBuild, result: InstanceResult) -> None:
        opts = self.options
        fuzz_started = time.monotonic()
        corpus = opts.corpus_root / inst.target / inst.id
        if opts.seed_mode == "random":
            generated = seedlib.random_inputs(seed=opts.seed)
        elif opts.seed_mode == "none":
            generated = []
        else:
            generated = seedlib.sample(harness.layout, opts.num_seeds, opts.seed)
        seed_paths = seedlib.write(generated, corpus)
        user_files = [p for p in sorted(corpus.iterdir()) if p.is_file()
                      and not p.name.startswith((".",) + seedlib.OWN_PREFIXES)]
        if not seed_paths and not user_files:
            raise ConfigError(f"--seed-mode none: put seed inputs into {corpus} first")
        passing, crashing = seedlib.screen_seeds(harness, seed_paths + user_files)
        raw: List[RawCrash] = [RawCrash(p, time.monotonic() - fuzz_started, "seed", execs=position)
                               for p, position in crashing]
        if "kernel" in harness.manifest:     # what only compute-sanitizer sees, on a few passing seeds
            raw += [RawCrash(p, time.monotonic() - fuzz_started, "sanitizer", execs=None)
                    for p in sanitizer.sweep(harness.harness_replay, passing)]
        # post runs in parallel where pre does not: judged on several threads without being asked
        auto_race = opts.race_check and opts.race_threads <= 1 and harness.parallelism_changed
        race_threads = opts.check_threads if opts.race_threads > 1 or auto_race else 0
        if race_threads:   # the passing seeds once more, in race mode
            passing, racing = seedlib.screen_seeds(harness, passing, threads=race_threads, repeat=opts.race_repeat * 5)
            raw += [RawCrash(p, time.monotonic() - fuzz_started, "race", execs=len(crashing) + position)
                    for p, position in racing]
            crashing += racing
            result.race_check = (f"--race {race_threads}" if not auto_race else
                                 f"post's OpenMP regions differ from pre's: seeds on {race_threads} threads")

        work = opts.out_dir / "afl" / inst.id
        screened = opts.out_dir / "afl" / f"{inst.id}.seeds"
        shutil.rmtree(screened, ignore_errors=True)
        screened.mkdir(parents=True)
        for p in passing:
            shutil.copy(p, screened / p.name)
        remaining = opts.time_s - (time.monotonic() - fuzz_started)
        if passing and remaining >= 1 and not (crashing and opts.until_crash):
            engine = get_engine(opts.engine)
            job = FuzzJob(build=harness, seeds_dir=screened, out_dir=work, time_s=remaining,
                          options=read_options(self.target.options_file), dict_file=self.target.dict_file,
                          until_crash=opts.until_crash, seed=opts.seed, progress=self._progress_hook(inst),
                          race_threads=opts.race_threads, race_repeat=opts.race_repeat,
                          parallel=opts.afl_jobs, max_execs=opts.max_execs, resume=opts.resume)
            engine_started = time.monotonic() - fuzz_started
            res = engine.run(job)
            result.execs, result.execs_per_sec = res.execs, round(res.execs_per_sec, 1)
            if "race_execs_per_sec" in res.stats:
                result.race_execs_per_sec = float(res.stats["race_execs_per_sec"])
            for crash in res.crashes:
                crash.seconds = None if crash.seconds is None else engine_started + crash.seconds
                if crash.execs is not None:
                    crash.execs += len(passing) + len(crashing)
            raw += sorted(res.crashes, key=lambda c: (c.seconds is None, c.seconds or 0.0, c.path.name))
            if auto_race:
                raw += self._race_check_queue(harness, res.queue, fuzz_started, result)
        result.execs += len(passing) + len(crashing)
        result.fuzz_seconds = round(time.monotonic() - fuzz_started, 3)
        self._triage(inst, harness, raw, result)

    def _race_check_queue(self, harness: HarnessBuild, queue: List[Path], fuzz_started: float,
                          result: InstanceResult) -> List[RawCrash]:
        """The engine's final queue in race mode, for at most a quarter of the instance's time
        (at least AUTO_RACE_MIN_S): the inputs its coverage found worth keeping."""
        deadline = time.monotonic() + max(AUTO_RACE_MIN_S, self.options.time_s / 4)
        passing, racing = seedlib.screen_seeds(harness, queue, threads=AUTO_RACE_THREADS,
                                               repeat=self.options.race_repeat * 5, deadline=deadline)
        result.race_check += f", final queue {len(passing) + len(racing)} of {len(queue)}"
        return [RawCrash(p, time.monotonic() - fuzz_started, "race", execs=None) for p, _ in racing]

    def _progress_hook(self, inst: Instance):
        if self.progress is None:
            return None
        return lambda stats: self.progress(inst, stats)

    def _triage(self, inst: Instance, harness: HarnessBuild, raw: List[RawCrash], result: InstanceResult) -> None:
        """Keep every raw crash, then triage them into findings (reproducer directories)."""
        opts = self.options
        keep = _keep_dir(opts, inst)
        kept: List[RawCrash] = []
        for crash in raw:
            data = crash.path.read_bytes()
            target = keep / "raw" / f"{crash.kind}-{hashlib.sha1(data).hexdigest()[:12]}.bin"
            if not target.exists():
                write_atomic(target, data)
            kept.append(dataclasses.replace(crash, path=target))
        result.crashes = [str(c.path) for c in kept]
        if kept:  # lets `harnessgen replay <raw crash>` find the libraries
            write_json(keep / "build.json", {"build_dir": str(harness.dir), "instance": inst.id})
        if not kept:
            result.verdict = Outcome.PASS.name
            return
        triaged = triage_build(harness.dir, kept, TriageOptions(
            tolerance=opts.tolerance, keep_root=keep, work_dir=opts.work_dir, max_raw=opts.max_replays,
            command_line=opts.command_line, race_threads=max(opts.race_threads, 2) if opts.race_threads else 4))
        when = {str(c.path): (c.seconds, c.kind, c.execs) for c in kept}
        for finding in triaged.findings:
            entry = finding.to_json()
            times = sorted((when[p] for p in finding.raw if p in when), key=lambda t: (t[0] is None, t[0] or 0))
            entry.update(input=str(finding.folder / "input.bin"), seconds=times[0][0] if times else None,
                         kind=times[0][1] if times else None, execs=times[0][2] if times else None)
            result.findings.append(entry)
        found_at = [f["seconds"] for f in result.findings if f["seconds"] is not None]
        result.seconds_to_first_finding = round(min(found_at), 3) if found_at else None
        result.verdict = triaged.verdict.name
        result.triage = {"raw": triaged.raw_total, "findings": len(triaged.findings),
                         "invalid_inputs": len(triaged.invalid), "flaky": len(triaged.flaky),
                         "seconds": triaged.seconds, "confirmed_seconds": triaged.confirmed_seconds}
        if result.findings:
            result.message = result.findings[0]["summary"]
        elif triaged.invalid:
            result.message = (f"{len(triaged.invalid)} raw crash(es) were pre failing on its own input "
                              f"(missing constraint; see {keep / 'notes.json'})")


# ------------------------------------------------------------------ the command
@dataclasses.dataclass
class _Plan:
    """What every worker needs; a forked worker inherits it (SDFGs are never pickled)."""

    target: Target
    sdfgs: Dict[str, object]
    classes: Dict[str, type]
    options: FuzzOptions


_PLAN: Optional[_Plan] = None


def transformation_specs(target: Target, xform_spec: Optional[str]) -> List[str]:
    """``None``/empty: the target's default set; ``gpu``: its GPU set; otherwise a comma-separated
    list (``gpu`` may be one of its items)."""
    if not xform_spec:
        if not target.default_transformations:
            raise ConfigError(f"target {target.name!r} has no default transformations: pass --transformation")
        return list(target.default_transformations)
    specs: List[str] = []
    for spec in (s.strip() for s in xform_spec.split(",") if s.strip()):
        if spec == "gpu":
            if not target.gpu_transformations:
                raise ConfigError(f"target {target.name!r} has no GPU transformations: name them in --transformation")
            specs += [s for s in target.gpu_transformations if s not in specs]
        elif spec not in specs:
            specs.append(spec)
    return specs


def split_ids(values: Optional[List[str]]) -> List[str]:
    """``--instance`` values, each repeatable and comma-separated, as one list."""
    return [i.strip() for item in values or [] for i in item.split(",") if i.strip()]


def with_target_constraints(options: FuzzOptions, target: Target) -> FuzzOptions:
    """The target's own constraints file (afl_configs/<target>.constraints.json) unless one is given."""
    if options.constraints is None and target.constraints_file is not None:
        return dataclasses.replace(options, constraints=target.constraints_file)
    return options


def plan_instances(program_spec: str, xform_spec: Optional[str], instance_ids: Optional[List[str]],
                   settings: Optional[List[str]] = None):
    """(target, program SDFGs, {spec: class}, [(spec, instance)]) in a deterministic order; for
    a CUDA kernel target, its kernel manifests in place of SDFGs and the one "transformation"
    ``kernel``."""
    if cuda_kernels.is_kernel_spec(program_spec):
        return _plan_kernels(program_spec, xform_spec, instance_ids)
    target, program = resolve(program_spec)
    specs = transformation_specs(target, xform_spec)
    if settings and len(specs) != 1:
        raise ConfigError("--set applies to one transformation: pass exactly one --transformation")
    classes = {spec: load_transformation(spec) for spec in specs}
    programs = target.select(program)
    sdfgs = {p.name: p.build() for p in programs}
    planned = []
    for spec in specs:
        found = enumerate_instances(target, programs, classes[spec], spec, sdfgs,
                                    parse_settings(settings, classes[spec]) if settings else None)
        planned += [(spec, inst) for inst in found]
    planned = _select(planned, instance_ids, lambda missing: (
        f"--instance {', '.join(missing)}: no such instance; `harnessgen instances --program {program_spec} "
        f"--transformation {specs[0]}` lists them"))
    return target, sdfgs, classes, planned


def _plan_kernels(program_spec: str, xform_spec: Optional[str], instance_ids: Optional[List[str]]):
    if xform_spec:
        raise ConfigError(f"--program {program_spec} is a CUDA kernel target: each kernel is tested against its "
                          f"reference, so leave out --transformation")
    name, specs = cuda_kernels.resolve(program_spec)
    target = with_afl_configs(Target(name=name, programs={}))
    everything = [("kernel", spec.instance(name)) for spec in specs]
    planned = _select(everything, instance_ids, lambda missing: (
        f"--instance {', '.join(missing)}: no such kernel; choose from "
        f"{', '.join(inst.id for _, inst in everything)}"), by_program=True)
    return target, {spec.name: spec for spec in specs}, {"kernel": None}, planned


def _select(planned: List[tuple], instance_ids: Optional[List[str]], unknown: Callable[[List[str]], str],
            by_program: bool = False) -> List[tuple]:
    """The (spec, instance) pairs ``--instance`` names, in its order (all of them without it);
    ``by_program``: a program's name (a kernel's) names its instance too, after the ids."""
    wanted = split_ids(instance_ids)
    if not wanted:
        return planned
    named = {inst.id: (spec, inst) for spec, inst in planned}
    for spec, inst in planned if by_program else ():
        named.setdefault(inst.program, (spec, inst))
    missing = [i for i in wanted if i not in named]
    if missing:
        raise ConfigError(unknown(missing))
    return [named[i] for i in wanted]


def _run_planned(spec: str, inst: Instance, progress: Optional[Callable] = None) -> InstanceResult:
    plan = _PLAN
    started = time.monotonic()
    runner = InstanceRunner(plan.target, plan.sdfgs[inst.program], plan.classes[spec], plan.options, progress)
    result = runner.run(inst)
    result.wall_seconds = round(time.monotonic() - started, 3)
    return result


def interleave(planned: List[tuple]) -> List[tuple]:
    """Round-robin over transformations (in their given order), so that a run cut short by its
    budget has tested every transformation, not only the first ones."""
    queues: Dict[str, List[tuple]] = {}
    for item in planned:
        queues.setdefault(item[0], []).append(item)
    out = []
    while any(queues.values()):
        for queue in queues.values():
            if queue:
                out.append(queue.pop(0))
    return out


def _previous_results(options: FuzzOptions, program_spec: str, label: str) -> Dict[str, InstanceResult]:
    """Finished instances of an earlier run of the same command into the same directory."""
    path = options.out_dir / "summary.json"
    if not options.resume or not path.is_file():
        return {}
    try:
        old = json.loads(path.read_text())
    except json.JSONDecodeError:
        return {}
    if old.get("program") != program_spec or old.get("transformation") != label:
        return {}
    fields = {f.name for f in dataclasses.fields(InstanceResult)}
    done = {}
    for entry in old.get("instances", []):
        # a harnessgen error is always worth another try; other verdicts when asked (--redo)
        if entry.get("verdict") != "ERROR" and not {entry.get("verdict"), entry.get("transformation")} & set(options.redo):
            done[entry["id"]] = InstanceResult(**{k: v for k, v in entry.items() if k in fields})
    return done


def fuzz(program_spec: str, xform_spec: Optional[str], instance_ids: Optional[List[str]], options: FuzzOptions,
         progress: Optional[Callable] = None, on_result: Optional[Callable] = None,
         settings: Optional[List[str]] = None, jobs: int = 1,
         on_plan: Optional[Callable[[int, int], None]] = None) -> List[InstanceResult]:
    """Fuzz every selected instance of every selected transformation, ``jobs`` instances at a time
    (forked worker processes; each instance's afl-fuzz binds to a free core when there is one),
    round-robin over transformations. With ``options.budget_s`` no instance starts after the
    budget; running the same command again continues with the instances not yet done
    (``options.resume``). ``summary.json`` is rewritten after every instance."""
    if not options.resume:
        (options.out_dir / runlog.LOG_NAME).unlink(missing_ok=True)
    with runlog.captured_warnings(options.out_dir, echo=options.verbose):
        return _fuzz(program_spec, xform_spec, instance_ids, options, progress, on_result, settings, jobs, on_plan)


def _fuzz(program_spec, xform_spec, instance_ids, options: FuzzOptions, progress, on_result, settings, jobs,
          on_plan) -> List[InstanceResult]:
    global _PLAN
    started = time.monotonic()
    clear_stale_omp_registrations()
    target, sdfgs, classes, planned = plan_instances(program_spec, xform_spec, instance_ids, settings)
    options = with_target_constraints(options, target)
    label = ",".join(classes)
    if len(planned) == 1 and jobs > 1:   # one instance: the cores go to afl-fuzz instances on it
        options = dataclasses.replace(options, afl_jobs=jobs)
        jobs = 1
    previous = _previous_results(options, program_spec, label)
    results: List[InstanceResult] = [previous[inst.id] for _, inst in planned if inst.id in previous]
    todo = interleave([(spec, inst) for spec, inst in planned if inst.id not in previous])
    options.out_dir.mkdir(parents=True, exist_ok=True)
    _PLAN = _Plan(target, sdfgs, classes, options)
    summary_path = options.out_dir / "summary.json"
    if on_plan:
        on_plan(len(planned), len(results))

    def write_summary() -> None:
        write_json(summary_path, summary(program_spec, label, options, results, total=len(planned), jobs=jobs))

    def finished(result: InstanceResult) -> None:
        results.append(result)
        write_summary()
        if on_result:
            on_result(result)

    def may_start() -> bool:
        return options.budget_s is None or time.monotonic() - started < options.budget_s

    try:
        if jobs <= 1 or len(todo) <= 1:
            for spec, inst in todo:
                if not may_start():
                    break
                finished(_run_planned(spec, inst, progress))   # live afl-fuzz stats only here
        else:
            _run_in_workers(todo, jobs, finished, may_start)
    finally:
        _PLAN = None
    write_summary()
    return results


def _run_in_workers(todo, jobs: int, finished: Callable, may_start: Callable[[], bool]) -> None:
    import concurrent.futures as cf
    import multiprocessing

    context = multiprocessing.get_context("fork")   # workers inherit the parsed programs
    queue = list(todo)
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        running = set()
        try:
            while queue or running:
                while queue and len(running) < jobs and may_start():
                    spec, inst = queue.pop(0)
                    running.add(pool.submit(_run_planned, spec, inst))
                if not running:
                    break
                done, running = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    finished(future.result())
        except BaseException:
            for future in running:
                future.cancel()
            raise


def summary(program_spec: str, xform_spec: str, options: FuzzOptions, results: List[InstanceResult],
            total: int, jobs: int) -> Dict:
    import dace

    from . import __version__

    return {
        "harnessgen": __version__, "dace": dace.__version__, "program": program_spec,
        "transformation": xform_spec, "time_per_instance_s": options.time_s,
        "tolerance": options.tolerance.to_json(), "jobs": jobs, "afl_jobs": options.afl_jobs,
        "budget_s": options.budget_s,
        "planned": total, "finished": len(results), "not_run": total - len(results),
        "warnings": {"count": runlog.count(options.out_dir), "log": str(options.out_dir / runlog.LOG_NAME)},
        "per_transformation": per_transformation(results),
        "instances": [r.to_json() for r in results],
    }
