"""One instance, whatever its subject: prepare (the subject builds its harness or gives a
verdict) -> seeds, screened by the replay binary (a seed that already crashes is a finding at
once) -> the engine -> every raw crash kept and triaged into findings -> what the subject does
after the verdict. Seeds go to ``corpus/<target>/<instance>/``, findings and raw crashes to
``crashes/<target>/<instance>/``, working files under the output directory.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import shutil
import time
import traceback
from pathlib import Path
from typing import Callable, Dict, List, Optional

from .. import prove as provelib
from ..core import evidence as evidencelib
from ..core import shared_pairs
from ..core.shared_pairs import SamePair
from ..core.errors import BuildError, ConfigError, EngineError, ToolMissing, Unsupported
from ..core.files import write_atomic, write_json
from ..core.outcome import Outcome
from ..core.records import AUTO_RACE_MIN_S, AUTO_RACE_THREADS, MIN_ENGINE_S, FuzzOptions, InstanceResult, engine_dir
from ..engines import FuzzJob, RawCrash, get_engine
from ..engines.afl import read_options
from ..harness import forked
from ..harness.built import HarnessBuild
from ..inputs import seeds as seedlib
from ..plan.instances import Instance
from ..subjects import Subject
from ..triage.classify import TriageOptions


class InstanceRunner:
    def __init__(self, subject: Subject, options: FuzzOptions, progress: Optional[Callable] = None):
        self.subject = subject
        self.target = subject.target
        self.options = options
        self.progress = progress

    def run(self, spec: str, inst: Instance) -> InstanceResult:
        """The instance's verdict. Whatever goes wrong in judging it (harnessgen's error, DaCe's,
        an engine that does not start, a build that fails unexpectedly, a setting the user must
        fix) is this instance's ERROR verdict, with its reason and log: never the end of the run."""
        started = time.monotonic()
        result = _blank(inst)
        try:
            self.judge(spec, inst, result=result, claim=self._claim(inst))
            self.subject.after_verdict(spec, inst, self.options, result,
                                       lambda variant, past: self.judge(spec, variant, past=past))
        except SamePair as same:      # its verdict is the representative's, once there is one
            result.verdict, result.same_pair_as, result.pair_key = shared_pairs.PENDING, same.representative, same.key
            result.message, result.params = str(same), inst.variant_record
        except Unsupported as exc:
            result.verdict, result.message = "UNSUPPORTED", str(exc)
        except Exception as exc:       # noqa: BLE001 -- recorded with its traceback; the run goes on
            record_error(result, exc, self.options.out_dir / "errors" / f"{inst.id}.txt")
        result.wall_seconds = round(time.monotonic() - started, 3)
        return result

    def audit_later(self, spec: str, inst: Instance, earlier: Dict) -> InstanceResult:
        """The instance's deferred whole-program audit, on its finished result ``earlier``
        (JSON): the result with the audit's record, and the verdict it leads to (CUTOUT_MISSED
        and a larger cutout's finding, or a whole-program finding). A failure of the audit
        itself is recorded on the audit, never taken for the instance's verdict."""
        started = time.monotonic()
        result = InstanceResult.from_json(earlier)
        try:
            self.subject.audit_later(spec, inst, self.options, result,
                                     lambda variant, past: self.judge(spec, variant, past=past))
        except Exception as exc:       # noqa: BLE001 -- recorded with its traceback; the run goes on
            where = self.options.out_dir / "errors" / f"{inst.id}.audit.txt"
            write_atomic(where, "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).encode())
            result.audit = {"verdict": "ERROR", "reason": f"{type(exc).__name__}: {exc}"[:300], "log": str(where)}
        result.wall_seconds = round((result.wall_seconds or 0.0) + time.monotonic() - started, 3)
        return result

    def _claim(self, inst: Instance) -> Optional[Callable[[str], str]]:
        """How the instance's pair is claimed (``shared_pairs.claim``): only its own first
        judgement, never a variant's or a larger cutout's after the verdict."""
        if not self.options.share_pairs:
            return None
        return lambda key: shared_pairs.claim(self.options.out_dir, key, inst.id)

    def judge(self, spec: str, inst: Instance, result: Optional[InstanceResult] = None,
              past: int = 0, claim: Optional[Callable[[str], str]] = None) -> InstanceResult:
        """Prepare, fuzz and triage one instance (``past``: in a cutout that many steps larger;
        ``claim``: see ``Subject.prepare``)."""
        result = result if result is not None else _blank(inst)
        started = time.monotonic()
        harness = self.subject.prepare(spec, inst, self.options, result, started, past, claim=claim)
        if harness is not None:
            result.build_dir = str(harness.dir)
            self._fuzz_built(inst, harness, result, started)
        return result

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
            generated = self.subject.own_seeds(inst, harness.layout) + seedlib.sample(harness.layout, opts.num_seeds,
                                                                                       opts.seed)
        with result.timed("prove"):
            proof = self._prove(harness, result)
        if proof is not None and proof.candidate:   # counterexamples: replayed first, then seeds
            generated = provelib.counterexample_inputs(proof, harness.layout, opts.seed) + generated
        seed_paths = seedlib.write(generated, corpus)
        user_files = [p for p in sorted(corpus.iterdir()) if p.is_file()
                      and not p.name.startswith((".",) + seedlib.OWN_PREFIXES)]
        if not seed_paths and not user_files:
            if opts.seed_mode == "none":
                raise ConfigError(f"--seed-mode none: put seed inputs into {corpus} first")
            # the cut-out code runs for no input: it lies in a loop or branch no size enters
            raise Unsupported(f"no input reaches the cutout: {seedlib.unsatisfiable(harness.layout)} "
                              "(the code it cuts out never runs)")
        # within the instance's time (each input still runs alone; the first always does): a
        # cutout that runs for seconds per input must not hold a worker for minutes
        inputs = seed_paths + user_files
        timings: List[float] = []
        # post runs in parallel where pre does not: judged on several threads without being asked
        auto_race = opts.race_check and opts.race_threads <= 1 and harness.parallelism_changed
        race_threads = opts.check_threads if opts.race_threads > 1 or auto_race else 0
        screening = forked.Screening(harness, forked.RacePass(race_threads, opts.race_repeat * 5,
                                                               self._race_check_seconds() if auto_race else None)
                                     if race_threads else None)
        with result.timed("seeds"):
            passing, crashing = screening.seeds(inputs, deadline=fuzz_started + max(opts.time_s, 1.0), timings=timings)
        result.exec_timing = exec_timing(timings)
        ran = len(passing) + len(crashing)
        if ran < len(inputs):
            result.seeds_note = f"{ran} of {len(inputs)} seed inputs ran within the instance's {opts.time_s:g} s"
        raw: List[RawCrash] = [RawCrash(p, time.monotonic() - fuzz_started, _seed_kind(p), execs=position)
                               for p, position in crashing]
        with result.timed("checks"):
            raw += [RawCrash(p, time.monotonic() - fuzz_started, "sanitizer", execs=None)
                    for p in self.subject.passing_checks(harness, passing)]
        if race_threads:   # the passing seeds once more, in race mode (the automatic check within its time)
            deadline = time.monotonic() + self._race_check_seconds() if auto_race else None
            with result.timed("race"):
                checked, racing = screening.race(passing, deadline=deadline)
            raced = {p for p, _ in racing}
            total = len(passing)
            passing = [p for p in passing if p not in raced]
            raw += [RawCrash(p, time.monotonic() - fuzz_started, "race", execs=len(crashing) + position)
                    for p, position in racing]
            crashing += racing
            result.race_check = (f"--race {race_threads}" if not auto_race else
                                 f"post runs {len(harness.new_parallel_regions)} parallel region(s) pre does not run "
                                 f"identically: seeds on {race_threads} threads ({len(checked) + len(racing)} of "
                                 f"{total} within the check's time)")

        work = engine_dir(opts.out_dir, inst.id)
        remaining = _engine_seconds(opts, fuzz_started)
        if proof is not None:
            self._settle_proof(proof, crashing, result)
        why_not = self._why_not_fuzzed(proof, passing, crashing, remaining, fuzz_started)
        engine_execs, engine_seconds, engine_failure = 0, 0.0, None
        if not why_not:
            screened = _engine_seeds(work.with_name(f"{inst.id}.seeds"), passing)
            remaining = _engine_seconds(opts, fuzz_started)
            try:
                fuzzed = self.subject.fuzzable(harness, inst, opts)
                result.build_dir = str(fuzzed.dir)
                engine_started = time.monotonic() - fuzz_started
                with result.timed("engine"):
                    res = get_engine(opts.engine).run(self._job(inst, fuzzed, screened, work, remaining, result))
            except (EngineError, BuildError, ToolMissing) as exc:
                # judged on the seeds alone: a finding among them stands; a PASS does not (ERROR below)
                engine_failure = exc
                why_not = f"the engine could not run: {str(exc).splitlines()[0]}"
            else:
                harness = fuzzed
                engine_execs, engine_seconds = res.execs, time.monotonic() - fuzz_started - engine_started
                raw += self._engine_crashes(res, engine_started, len(passing) + len(crashing), result)
                if auto_race:
                    with result.timed("race"):
                        raw += self._race_check_queue(harness, res.queue, fuzz_started, result)
        result.execs += len(passing) + len(crashing)
        result.fuzz_seconds = round(time.monotonic() - fuzz_started, 3)
        result.evidence = evidencelib.judge(
            ran, engine_execs, engine_seconds, proof,
            why_not or "the engine ran but executed nothing (its log is in the afl/ folder of the run)",
            meant_to_fuzz=not why_not or engine_failure is not None or why_not.startswith(evidencelib.MEANT_PREFIX),
            seeds_planned=len(inputs)).to_json()
        with result.timed("triage"):
            self._triage(inst, harness, raw, result)
        if proof is not None:
            self._report_proof(proof, result)
        if engine_failure is not None:
            self._engine_failed(engine_failure, inst, result, len(passing))
        self._judged_nothing(result, passing, ran, engine_execs, proof)

    def _judged_nothing(self, result: InstanceResult, passing: List[Path], ran: int, engine_execs: int,
                        proof) -> None:
        """A PASS rests on an input that passed, a mutation afl-fuzz ran, or a proof. Where none
        of these is (every seed input failed and triage found no finding among them, or no seed
        ran at all), the instance is not judged: INVALID_INPUT where pre itself failed on the
        inputs that ran (a constraint is missing), UNSUPPORTED where nothing ran in its time.
        NPBench's mandelbrot2 gave 14 such PASS verdicts, on no input."""
        if (result.verdict != Outcome.PASS.name or passing or engine_execs
                or (proof is not None and proof.verdict == provelib.PROVEN)):
            return
        if ran:
            triaged = result.triage or {}
            result.verdict = Outcome.INVALID_INPUT.name
            result.message = (f"not judged: no input passed. Each of the {ran} seed input(s) that ran failed natively "
                              f"and was no finding ({triaged.get('invalid_inputs', 0)} pre failing on its own input, "
                              f"{triaged.get('flaky', 0)} flaky): a constraint is missing (give it in --constraints); "
                              f"{result.message}".rstrip("; "))
        else:
            result.verdict = "UNSUPPORTED"
            result.message = (f"not judged: no seed input ran within the instance's {self.options.time_s:g} s "
                              "(a longer --time or --budget judges it)")
        result.notes.append("a PASS would have rested on no input")

    def _job(self, inst: Instance, harness: HarnessBuild, seeds: Path, work: Path, remaining: float,
             result: InstanceResult) -> FuzzJob:
        opts = self.options
        return FuzzJob(build=harness, seeds_dir=seeds, out_dir=work, time_s=remaining,
                       options=read_options(self.target.options_file), dict_file=self.target.dict_file,
                       until_crash=opts.until_crash, seed=opts.seed, progress=self._progress_hook(inst),
                       race_threads=opts.race_threads, race_repeat=opts.race_repeat,
                       parallel=opts.afl_jobs, max_execs=opts.max_execs, resume=opts.resume,
                       exec_timeout_ms=result.exec_timing.get("afl_timeout_ms"))

    @staticmethod
    def _engine_crashes(res, engine_started: float, seeds_run: int, result: InstanceResult) -> List[RawCrash]:
        """The engine's crashes, timed from the instance's fuzzing start, its statistics on ``result``."""
        result.execs, result.execs_per_sec = res.execs, round(res.execs_per_sec, 1)
        if "race_execs_per_sec" in res.stats:
            result.race_execs_per_sec = float(res.stats["race_execs_per_sec"])
        for crash in res.crashes:
            crash.seconds = None if crash.seconds is None else engine_started + crash.seconds
            if crash.execs is not None:
                crash.execs += seeds_run
        return sorted(res.crashes, key=lambda c: (c.seconds is None, c.seconds or 0.0, c.path.name))

    def _engine_failed(self, exc: Exception, inst: Instance, result: InstanceResult, passed: int) -> None:
        """The engine did not run: a finding of the seeds stands (said in its notes); without
        one the instance is ERROR, never a PASS that rests on less than it was meant to."""
        if result.verdict != Outcome.PASS.name:
            result.notes.append(f"the engine could not run ({str(exc).splitlines()[0][:300]}): "
                                "the verdict rests on the seed inputs")
            return
        record_error(result, exc, self.options.out_dir / "errors" / f"{inst.id}.txt",
                     after=f"the {passed} seed input(s) that ran passed")

    def _why_not_fuzzed(self, proof, passing: List[Path], crashing: List[tuple], remaining: float,
                        fuzz_started: float) -> str:
        """Why the engine does not run on this instance ("" when it runs). A reason that starts
        with ``evidence.MEANT_PREFIX`` is a bound too small for it: the engine was meant to run."""
        opts = self.options
        if proof is not None and proof.settles:
            return f"the proof settles the pair ({proof.verdict})"
        if opts.prove == "only":
            return "--prove only never fuzzes"
        if crashing and opts.until_crash:
            return "--until-crash: a seed input already fails"
        if not passing:
            return "every seed input failed"
        if remaining < MIN_ENGINE_S:
            spent = time.monotonic() - fuzz_started
            if opts.time_cut_by_bound:
                return (f"{evidencelib.MEANT_PREFIX}: the run's bound left this instance {opts.time_s:.1f} s (its "
                        f"share of what remained for the instances still to judge), which went to the seed inputs "
                        f"and checks ({spent:.1f} s); a longer bound fuzzes (--budget, make fuzz BUDGET=)")
            return (f"{evidencelib.MEANT_PREFIX}: the {opts.time_s:g} s per instance went to the seed inputs and "
                    f"checks ({spent:.1f} s); give more (--time, make fuzz TIME=)")
        return ""

    def _prove(self, harness: HarnessBuild, result: InstanceResult) -> Optional[provelib.Proof]:
        """The pair's proof (--prove first|only), recorded on the result; None when off or when
        the build holds no SDFG pair (a CUDA kernel subject)."""
        if self.options.prove == "off":
            return None
        proof = provelib.prove_build(harness.dir, harness.layout)
        if proof is not None:
            result.proof = proof.to_json()
        return proof

    @staticmethod
    def _settle_proof(proof: provelib.Proof, crashing: List[tuple], result: InstanceResult) -> None:
        """After the seeds: the native replay decides a counterexample; a seed that fails a
        PROVEN pair contradicts the proof (the finding stands)."""
        failed = [p for p, _ in crashing]
        if proof.candidate:
            replayed = [p for p in failed if p.name.startswith(seedlib.PROOF_PREFIX)]
            proof.confirm(f"counterexample {replayed[0].name} fails natively" if replayed else None)
        elif failed:
            proof.contradicted(f"the input {failed[0].name} fails natively")
        result.proof = proof.to_json()

    def _report_proof(self, proof: provelib.Proof, result: InstanceResult) -> None:
        """After triage: a finding contradicts a proof; an instance the proof settled says so."""
        if result.verdict != Outcome.PASS.name and result.findings:
            proof.contradicted(f"the native run gives {result.verdict}")
        if proof.settles and result.verdict == Outcome.PASS.name:
            result.message = f"{proof.summary()}: not fuzzed"
        elif self.options.prove == "only" and proof.verdict != provelib.PROVEN and result.verdict == Outcome.PASS.name:
            result.verdict = "BUILT"
            result.message = f"--prove only: {proof.summary()}; not fuzzed"
        result.proof = proof.to_json()

    def _race_check_queue(self, harness: HarnessBuild, queue: List[Path], fuzz_started: float,
                          result: InstanceResult) -> List[RawCrash]:
        """The engine's final queue in race mode, for at most a quarter of the instance's time
        (at least AUTO_RACE_MIN_S, but never longer than the instance's own time): the inputs
        its coverage found worth keeping."""
        deadline = time.monotonic() + self._race_check_seconds()
        passing, racing = seedlib.screen_seeds(harness, queue, threads=AUTO_RACE_THREADS,
                                               repeat=self.options.race_repeat * 5, deadline=deadline)
        result.race_check += f", final queue {len(passing) + len(racing)} of {len(queue)}"
        return [RawCrash(p, time.monotonic() - fuzz_started, "race", execs=None) for p, _ in racing]

    def _race_check_seconds(self) -> float:
        """Each pass of the automatic race check (the seeds, the final queue): a quarter of the
        instance's time, at least AUTO_RACE_MIN_S but never more than the instance's own time."""
        time_s = self.options.time_s
        return max(time_s / 4, min(AUTO_RACE_MIN_S, time_s))

    def _progress_hook(self, inst: Instance):
        if self.progress is None:
            return None
        return lambda stats: self.progress(inst, stats)

    def _triage(self, inst: Instance, harness: HarnessBuild, raw: List[RawCrash], result: InstanceResult) -> None:
        """Keep every raw crash, then triage them into findings (reproducer directories)."""
        opts = self.options
        keep = opts.keep_dir(inst)
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
        triage = self.subject.triage_class()(harness.dir, TriageOptions.for_instance(opts, inst))
        triaged = triage.run(kept)
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
        elif triaged.errors:
            result.message = (f"the replay could not judge {len(triaged.errors)} raw crash(es) (kept in {keep / 'raw'}): "
                              f"{triaged.errors[0]['message'][:300]}")
        elif triaged.invalid:
            result.message = (f"{len(triaged.invalid)} raw crash(es) were pre failing on its own input "
                              f"(missing constraint; see {keep / 'notes.json'})")


def record_error(result: InstanceResult, exc: BaseException, where: Path, after: str = "") -> None:
    """``result`` becomes ERROR with the reason, the stage it failed in and its log: an
    engine's or a build's own log where the error names one, else ``where`` (the traceback)."""
    stage = next((name for kind, name in ERROR_STAGES if isinstance(exc, kind)), "harnessgen")
    log = getattr(exc, "log", "") if isinstance(exc, EngineError) else ""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if isinstance(exc, BuildError) and exc.log:
        text += f"\n--- the build's output ---\n{exc.log}"
    write_atomic(where, text.encode())
    reason = f"{type(exc).__name__}: {exc}" if stage == "harnessgen" else str(exc)
    result.verdict = "ERROR"
    result.error = {"stage": stage, "reason": reason[:2000], "log": str(log or where)}
    result.message = f"{reason.splitlines()[0][:400] if reason else type(exc).__name__}" + \
        (f"; {after}" if after else "") + f" (log: {log or where})"


# what an ERROR's stage is named after (the first that matches); anything else is harnessgen's
ERROR_STAGES = ((EngineError, "engine"), (ToolMissing, "setup"), (BuildError, "build"), (ConfigError, "config"))


# afl-fuzz's own limit for one execution, and how far above the slowest measured run ours stays
AFL_DEFAULT_TIMEOUT_MS = 1000
TIMEOUT_MARGIN = 3.0
MAX_TIMEOUT_MS = 60000


def exec_timing(timings: List[float]) -> Dict:
    """What the seed runs measured (the first input of each process with the process's start-up,
    a device's context and its first execution) and the time limit afl-fuzz gets from them where
    its own default is too short: three times the slowest. A harness whose first execution pays
    a device's start-up (a CUDA context) would otherwise time out in afl-fuzz's dry run."""
    if not timings:
        return {}
    first_ms, median_ms = 1000.0 * max(timings), 1000.0 * sorted(timings)[len(timings) // 2]
    limit = min(MAX_TIMEOUT_MS, int(math.ceil(TIMEOUT_MARGIN * first_ms / 100.0)) * 100)
    # below afl-fuzz's default its own calibration (which also shortens it for fast targets) stays
    return {"slowest_run_ms": round(first_ms, 1), "median_run_ms": round(median_ms, 3), "runs": len(timings),
            "afl_timeout_ms": limit if limit > AFL_DEFAULT_TIMEOUT_MS else None}


def _engine_seeds(folder: Path, passing: List[Path]) -> Path:
    """The engine's seed folder: the inputs that passed (only where the engine runs)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for path in passing:
        shutil.copy(path, folder / path.name)
    return folder


def _seed_kind(path: Path) -> str:
    return "proof" if path.name.startswith(seedlib.PROOF_PREFIX) else "seed"


def _blank(inst: Instance) -> InstanceResult:
    return InstanceResult(id=inst.id, transformation=inst.transformation, program=inst.program, target=inst.target,
                          verdict=Outcome.PASS.name)


def _engine_seconds(opts: FuzzOptions, fuzz_started: float) -> float:
    """What the engine may have of the instance's seconds after its seeds and checks. A share
    of the run's bound that could fuzz (``MIN_ENGINE_S`` or more) fuzzes at least that long
    even where the seeds took the rest: the bound's share is an estimate, computed again for
    every instance, and a share spent on seeds alone would leave a PASS that never fuzzed."""
    remaining = opts.time_s - (time.monotonic() - fuzz_started)
    if opts.time_cut_by_bound and opts.time_s >= MIN_ENGINE_S:
        return max(remaining, MIN_ENGINE_S)
    return remaining
