"""The SDFG subject: a change DaCe makes at one place in a program, judged in a cutout.

Two kinds of change, each a ``Change`` (how its instances are found and how one is cut out
and applied): a pattern transformation at one of its matches (``Patterns``), and a pass or
pipeline (simplify, FuseStates, ...) at one SDFG of the program it changed (``Passes``).
Per instance: cutout -> constraints -> layout -> build (or a static verdict: FAILED_TO_APPLY,
INVALID_SDFG, BUILD_FAILURE, each with a reproducer); after the verdict the whole-program
audit, and where it shows the cutout missing a difference, the next larger cutouts; for a
pipeline that changed results, the bisection to its first and its fewest guilty passes.
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

from ..checks import confirm
from ..checks.audit import AUDIT_MAX_SIZE, SKIPPED, WHOLE_PROGRAM_FINDING, AuditOptions, audit, classify, is_cheap
from ..checks.pipeline_bisect import BISECT_MAX_SIZE, BisectOptions, bisect
from ..checks.reference_check import CHECK_MAX_SIZE, CheckOptions, check_program, not_loaded
from ..core.errors import BuildError, ConfigError, Unsupported
from ..core.files import write_json
from ..core.names import JUDGED_FILE, SYMBOL_OUTPUT_PREFIX
from ..core.outcome import CUTOUT_MISSED, STATIC_OUTCOMES, Outcome
from ..core.records import BLOCKED, DEFERRED_AUDIT, MIN_ENGINE_S, InstanceResult
from ..core import shared_pairs
from ..cutout.canonical import pair_key
from ..cutout.changes import Change, Passes, Patterns, load_change
from ..cutout.cut import volume_at_probe
from ..cutout.extract import PRE_NAME, CutoutPair, whole_program_pair
from ..cutout.ordering import UNORDERED
from ..dacecompat import keep_template
from ..engines import RawCrash
from ..harness.build import (SavedSides, cause_registry, compile_errors, dace_build_error, program_compile_causes,
                             program_fails_alike, with_afl)
from ..harness.compiler import CXX, CXXFLAGS
from ..harness.codegen_causes import diagnostics, from_compiler_output, line_context
from ..harness.judge import JudgeOptions, constrain, prepare as prepare_pair
from ..inputs.layout import InputLayout
from ..inputs.seeds import own_inputs as seeds_of_program, screen_seeds
from ..plan import params
from ..plan.instances import Instance, cpu_builtin_transformations
from ..plan.params import ParamOptions
from ..prove import PROVEN, keep_proof, prove
from ..recipe import steps as recipe_steps
from ..recipe.bisect import bisect_recipe
from ..targets import resolve
from ..triage.classify import Triage, TriageOptions
from ..triage.reproducer import write_codegen_finding, write_static_finding
from . import Subject

# a static verdict of the cutout that the whole program does not show (it takes the change)
CUTOUT_ONLY = "cutout-only"
# how many larger cutouts an instance is judged in after the audit showed its cutout missing a
# difference of the whole program (the ladder has at most two: the nested SDFG, the program)
MAX_GROWTH_AFTER_AUDIT = 2
# the largest sizes of a program's own inputs as seeds (scaled-down copies of its smallest preset)
OWN_SEED_SIZES = (8, 4)
# how many larger cutouts a difference in symbol outputs only is judged in: a region ladder has
# a rung per enclosing loop or branch, then the nested SDFG and the program
MAX_GROWTH_PAST_SYMBOLS = 8
# --transformation all: every DaCe built-in that makes CPU code plus the target's own
ALL = "all"
# verdicts that blame the transformation (a variant with one looks for simpler parameters)
FINDING_VERDICTS = tuple(o.name for o in Outcome if o.is_finding)
# verdicts of a pipeline's instance that the bisection looks for the guilty passes of
BISECTED_VERDICTS = ("MISMATCH", "POST_CRASH", "POST_HANG", "OOB_WRITE", "RACE", "FAILED_TO_APPLY", "INVALID_SDFG",
                     "BUILD_FAILURE", CUTOUT_MISSED)


class SdfgSubject(Subject):
    kind = "sdfg"

    @classmethod
    def claims(cls, program_spec: str) -> bool:
        return True              # every --program value no other kind takes: a target, file.sdfg, file.py:function

    def __init__(self, program_spec: str, simplify: Optional[bool] = None):
        super().__init__(program_spec, simplify)
        self.target, self.program = resolve(program_spec)
        # an SDFG given as a file is tested as given; a program a frontend wrote, simplified
        if self.simplify is None:
            self.simplify = self.target.simplify_by_default
        self._sdfgs: Dict[tuple, object] = {}
        self._changes: Dict[str, Change] = {}
        self._compiled: Dict[str, Optional[str]] = {}     # pre's content -> compiler errors (``_pre_builds``)

    # ---------------------------------------------------------------- programs and transformations
    def sdfg(self, name: str, simplified: bool = True):
        """A program's SDFG (simplified, or as written), built once per process. Every program
        arrives read from JSON and is never changed in place: its copies (the whole program
        for audits and passes) come from its pickle."""
        key = (name, simplified)
        if key not in self._sdfgs:
            self._sdfgs[key] = self.target.programs[name].sdfg(simplified)
            keep_template(self._sdfgs[key], identity=self._program_identity(name, simplified))
        return self._sdfgs[key]

    def program_of(self, inst: Instance):
        if inst.step:                 # a recipe's step: the program just before it
            return recipe_steps.program_before(inst)
        return self.sdfg(inst.program, inst.simplified)

    def change(self, spec: str) -> Change:
        if spec not in self._changes:
            self._changes[spec] = (recipe_steps.RecipeSteps(spec) if recipe_steps.is_recipe(spec)
                                   else load_change(spec, self.simplify))
        return self._changes[spec]

    def transformation_specs(self, xform_spec: Optional[str]) -> List[str]:
        return transformation_specs(self.target, xform_spec)

    def transformation_name(self, spec: str) -> str:
        return self.change(spec).name

    def matches_in_other_form(self, spec: str) -> Optional[int]:
        """A program tested as given that a pattern matches nowhere: its matches in the
        simplified form (what ``--simplify`` would plan)."""
        if self.simplify or not isinstance(self.change(spec), Patterns):
            return None
        simplified = Patterns(spec, simplified=True)
        try:
            return len(simplified.instances(self.target, self.target.select(self.program), self.sdfg, None,
                                            ParamOptions()))
        except Exception:  # noqa: BLE001 -- a hint only: simplify or the matcher failed on the program
            return None

    def declined(self, spec: str) -> List[Dict]:
        return list(self.change(spec).declined)

    def warm(self, instance: Dict) -> None:
        if not instance.get("step"):
            self.sdfg(instance["program"], instance.get("simplified", True))

    def plan_identity(self, spec: str) -> Optional[Dict]:
        programs = self.target.select(self.program)
        if not all(p.identity for p in programs) or recipe_steps.is_recipe(spec):
            return None        # (a recipe's recording is kept by its own identity)
        change = self.change(spec)
        return {"target": self.target.name, "programs": {p.name: p.identity for p in programs},
                "simplified": change.simplified, "code": code_identity(spec)}

    def whole_program(self, spec: str) -> bool:
        return isinstance(self.change(spec), Passes)

    def quick_to_judge(self, spec: str) -> bool:
        # a match inside one state is cut out of that state: a loop or a region's transformation
        # takes the whole loop, whose cutout (a CLOUDSC loop, unrolled) builds for seconds
        from dace.transformation.transformation import SingleStateTransformation

        change = self.change(spec)
        return isinstance(change, Patterns) and issubclass(change.cls, SingleStateTransformation)

    def loading_steps(self, specs: List[str]):
        forms = sorted({self.change(spec).simplified for spec in specs}, reverse=True)
        steps = []
        for program in self.target.select(self.program):
            for simplified in forms:
                form = "simplified" if simplified else "as its frontend wrote it"
                steps.append((f"program {program.name}, {form} (cached, or its shipped parse; else parsed by DaCe)",
                              lambda name=program.name, simplified=simplified: self._load(name, simplified)))
        return steps

    def _load(self, name: str, simplified: bool) -> None:
        """Load one program. In a suite of others' programs (``Target.partial``) one that cannot
        be loaded is left out with its reason, and the run goes on with the others."""
        if name in self.target.unloadable:
            return
        try:
            sdfg = self.sdfg(name, simplified)
            if self.target.partial:
                _sizes_decode(sdfg)
        except ConfigError as exc:
            if not self.target.partial or self.program is not None:
                raise
            self.target.unloadable[name] = str(exc)

    def unloadable(self) -> Dict[str, str]:
        return dict(self.target.unloadable)

    def own_seeds(self, inst: Instance, layout: InputLayout) -> List:
        """The program's own inputs (``Program.own_inputs``) where they fit the cutout's layout:
        its arguments by name (``seeds.own_inputs``)."""
        program = self.target.programs.get(inst.program)
        if program is None or program.own_inputs is None or inst.step:
            return []
        return seeds_of_program(layout, program.own_inputs, OWN_SEED_SIZES)

    def program_options(self, program: str, options):
        """The run's options for one program: its own constraints file where the user gave none."""
        own = self.target.programs[program].constraints if program in self.target.programs else None
        if options.constraints is not None or own is None:
            return options
        path = own()
        return options if path is None else dataclasses.replace(options, constraints=path)

    def check_programs(self, options) -> List[Dict]:
        """Each selected program that has a reference, as the frontend wrote it and simplified,
        against it (``reference.check_program``)."""
        checks = [not_loaded(name, reason) for name, reason in sorted(self.target.unloadable.items())]
        for program in self.target.select(self.program):
            own = self.program_options(program.name, options)
            try:
                check = check_program(self.target.name, program, CheckOptions(
                    crashes_root=options.crashes_root, judge=JudgeOptions(
                        work_dir=options.work_dir, tolerance=options.tolerance, seed=options.seed,
                        constraints=own.constraints or self.target.constraints_file, max_size=CHECK_MAX_SIZE)))
            except ConfigError as exc:
                if not self.target.partial:
                    raise
                checks.append(not_loaded(program.name, str(exc), checked=True))
                continue
            if check is not None:
                checks.append(check.to_json())
        return checks

    def instances(self, spec: str, settings: Optional[List[str]] = None,
                  params: ParamOptions = ParamOptions()) -> List[Instance]:
        return self.change(spec).instances(self.target, self.target.select(self.program), self.sdfg, settings, params)

    # ---------------------------------------------------------------- one instance
    def prepare(self, spec: str, inst: Instance, options, result, started: float, past: int = 0,
                claim: Optional[Callable[[str], str]] = None, cutout_only: bool = False):
        """The instance's harness, built; None where its verdict came without one (a static
        finding, BLOCKED), in ``result``. What its smallest cutout gave is recorded for the
        parameter simplification of the match's other variants (``shared_pairs.prepared``).
        ``cutout_only``: a question only the cutout answers (does the change fail to apply or
        to validate there?): where it takes, ``_ChangeTaken`` is raised before anything is built."""
        options = self.program_options(inst.program, options)
        try:
            harness = self._prepare(spec, inst, options, result, started, past, claim, cutout_only)
        except Unsupported:
            if not past:
                shared_pairs.record_prepared(options.out_dir, inst.id, "UNSUPPORTED")
            raise
        if not past:
            shared_pairs.record_prepared(options.out_dir, inst.id,
                                         shared_pairs.BUILT if harness is not None else result.verdict)
        return harness

    def _prepare(self, spec: str, inst: Instance, options, result, started: float, past: int = 0,
                 claim: Optional[Callable[[str], str]] = None, cutout_only: bool = False):
        whole_key = self._whole_program_key(inst)
        if self.change(spec).judged_whole(inst, past) and _blocked_program(whole_key, inst, options, result):
            return None

        def before_whole() -> None:       # a nested cutout that falls back to the whole program
            if _blocked_program(whole_key, inst, options, result):
                raise _Blocked

        try:
            with result.timed("cutout"):
                pair = self.change(spec).extract(self.program_of(inst), inst, past, before_whole)
        except _Blocked:
            return None
        result.notes += [n for n in pair.notes if n not in result.notes]
        if not pair.ok:
            _record_volumes(pair, result)
            return _static_finding(options, pair, pair.verdict, pair.error, result, started)
        if pair.unordered:
            self._unordered_pairs()[inst.id] = pair       # INVALID_SDFG unless the harness finds more
        if cutout_only:
            raise _ChangeTaken(inst.id)
        judging = JudgeOptions.of(options, strict_names=len(self.target.programs) == 1)
        with result.timed("constraints"):
            constraints, layout = constrain(pair, judging)
        saved = None      # pre and post serialised once: for the pair's key and for its build
        if claim is not None and (options.defer_audits or not self._audited(spec, inst, options)):
            # (a verdict audited beside it rests on its place in the program: never shared; a
            # deferred audit judges each place, the representative's and its followers', later)
            with result.timed("pair_key"):
                saved = SavedSides.of(pair)
                key = _pair_key(pair, constraints, saved)
            result.pair_key = key or ""
            owner = claim(key) if key else inst.id
            if owner != inst.id:
                raise shared_pairs.SamePair(owner, key)     # its volumes are the owner's
        _record_volumes(pair, result)
        # a pair proven equal bit for bit, or disproven, is not fuzzed: its build needs no
        # instrumented harness (a counterexample that does not replay is fuzzed after all: the
        # runner asks ``fuzzable`` for the harness then)
        with result.timed("prove"):
            proof = prove(pair.pre, pair.post, layout) if options.prove != "off" else None
        # an instance whose time is too short for the engine (a bounded run's share) is judged on
        # its seeds alone: no instrumented harness either
        seeds_only = options.time_s < MIN_ENGINE_S
        fuzzed = options.engine == "afl" and not (proof is not None and proof.settles) and not seeds_only
        # a pair proven equal bit for bit, or judged on its seeds alone, has its inputs screened
        # through cffi first: its replay binary is compiled only where one of them fails there
        # (``harness.forked``)
        screened_first = (proof is not None and proof.settles and proof.verdict == PROVEN) or seeds_only
        if pair.whole_program and _blocked_program(whole_key, inst, options, result):
            return None
        try:
            with result.timed("build"):
                harness = prepare_pair(pair, dataclasses.replace(judging, afl=fuzzed, cmplog=options.cmplog or
                                                                 options.afl_jobs > 1, replay_binary=not screened_first),
                                       (constraints, layout), saved).harness
        except BuildError as exc:
            if exc.missing_header:     # a library the machine lacks: nothing known of the code (as the reference check)
                raise Unsupported(f"this machine lacks {exc.missing_header}, which DaCe's code for the cutout "
                                  "includes: install the library that provides it") from exc
            if not exc.of_the_code:
                raise      # a compiler killed or silent, the harness's own code: this instance's ERROR
            if exc.side != "hg_post":
                # checking DaCe's own code for the program is a compile of it: once per program,
                # and so once per step of a recipe
                if inst.step and not pair.whole_program and not _whole_program_runs(options, pair.program_sdfg):
                    raise Unsupported(
                        f"pre does not build in its cutout ({exc.first_error or exc}); whether DaCe's own code for "
                        "the program just before this step compiles was not checked: each step of a recipe has a "
                        "program of its own, too large to compile per step by default (--audit checks it; an "
                        "earlier step that made the program's code fail to build shows as that step's finding)"
                    ) from exc
                origin = _blocked(exc, pair, options, result, whole_key if pair.whole_program else "")
                if origin == DACE_MADE:
                    return None
                if origin == CUTOUT_MADE:
                    return self._larger_after_build_failure(spec, inst, options, result, started, past, pair, exc)
                what = "the program as its frontend wrote it" if not inst.simplified and self.change(spec).judged_whole(
                    inst, past) else "the cutout itself"
                raise Unsupported(f"{what} does not build ({exc}: {exc.first_error})") from exc
            _static_finding(options, pair, Outcome.BUILD_FAILURE, f"{exc}\n{exc.log}", result, started)
            result.message = str(exc)
            return None
        write_json(harness.dir / "constraints.json", constraints.to_json())
        if proof is not None:
            keep_proof(harness.dir, proof)
        return harness

    def fuzzable(self, harness, inst, options):
        if options.engine != "afl":
            return harness
        return with_afl(harness, inst, options.work_dir, cmplog=options.cmplog or options.afl_jobs > 1)

    def _larger_after_build_failure(self, spec: str, inst: Instance, options, result, started: float, past: int,
                                    pair: CutoutPair, exc: BuildError):
        """Pre did not compile where DaCe compiles the program itself: the failing shape is
        harnessgen's (its cutout or stand-ins), never filed against DaCe. The instance is
        judged in the next larger cutout; where there is none, UNSUPPORTED with the reason."""
        first = (exc.first_error or str(exc)).strip()[:200]
        said = (f"pre of {'the whole-program pair' if pair.whole_program else f'cutout {past}'} did not compile "
                f"({first}), though DaCe's own code for the program compiles: harnessgen's cutout made that shape")
        result.notes.append(f"{said}; judged in the next larger cutout")
        result.pair_key = ""          # the verdict is the larger cutout's, whose pair is its place's
        if pair.whole_program:
            raise Unsupported(f"{said} (a harnessgen defect: its stand-ins; please report it)") from exc
        try:
            return self.prepare(spec, inst, options, result, started, past + 1)
        except Unsupported as larger:
            raise Unsupported(f"{said}, and no larger cutout could be judged ({larger})") from exc

    def _whole_program_key(self, inst: Instance) -> str:
        """What names the instance's whole program, as it is judged (its content and form);
        '' where its content has no identity."""
        if inst.step:
            return recipe_steps.program_key(inst)
        return self._program_identity(inst.program, inst.simplified)

    def _program_identity(self, name: str, simplified: bool) -> str:
        identity = self.target.programs[name].identity
        return f"{identity}-{'simplified' if simplified else 'as-given'}" if identity else ""

    def _unordered_pairs(self) -> Dict[str, CutoutPair]:
        if not hasattr(self, "_unordered"):
            self._unordered: Dict[str, CutoutPair] = {}
        return self._unordered

    def _unordered_if_silent(self, inst: Instance, options, result) -> None:
        """A pair whose post leaves accesses unordered that pre orders, where the harness found
        no difference (DaCe's sequential code hides the race): INVALID_SDFG, a static finding."""
        pair = self._unordered_pairs().pop(inst.id, None)
        if pair is not None and result.verdict == Outcome.PASS.name:
            _static_finding(options, pair, Outcome.INVALID_SDFG, f"{UNORDERED}{pair.unordered}", result,
                            time.monotonic())

    def after_verdict(self, spec: str, inst: Instance, options, result, judge: Callable) -> None:
        options = self.program_options(inst.program, options)
        self._unordered_if_silent(inst, options, result)
        if result.verdict in STATIC_OUTCOMES:
            if options.defer_audits and self._static_confirmation_runs(spec, inst, options, result):
                # a bounded run: after every match's verdict, or beside them within the findings'
                # audits' share (applying a change to a whole program takes seconds)
                result.audit = dict(DEFERRED_AUDIT)
            else:
                with result.timed("whole_program_static"):
                    self._confirm_static(spec, inst, options, result, judge)
        else:
            with result.timed("audit"):
                self._audit(spec, inst, options, result)
        if result.verdict == CUTOUT_MISSED:
            with result.timed("grown"):
                self._grow_after_audit(spec, inst, result, judge, options)
        elif _only_symbol_outputs_differ(result):
            with result.timed("grown"):
                self._grow_past_symbol_outputs(inst, result, judge)
        with result.timed("params"):
            self._simplify_params(spec, inst, options, result)
        with result.timed("bisect"):
            self._bisect(spec, inst, options, result)

    # ---------------------------------------------------------------- a variant's simplest parameters
    def _simplify_params(self, spec: str, inst: Instance, options, result) -> None:
        """A finding with parameters other than the defaults: the simplest parameters that fail
        alike (a property back at its default, or at a value nearer it, greedily, for at most
        ``--params-shrink-time``), and the finding they give, with its own reproducer."""
        if not inst.params:
            return
        result.params = inst.variant_record
        if result.verdict not in FINDING_VERDICTS or options.params_shrink_s <= 0:
            return
        started = time.monotonic()
        deadline = started + options.params_shrink_s
        change = self.change(spec)
        inputs = [Path(f["input"]) for f in result.findings if f.get("input") and Path(f["input"]).is_file()]
        current, harness, tried, complete = inst, None, 0, True
        defaults = change.with_params(inst, {})
        if result.verdict in STATIC_OUTCOMES and \
                shared_pairs.prepared(options.out_dir, defaults.id) == result.verdict:
            # the match's defaults, prepared before in this run, fail alike: nothing is simpler
            # (the greedy steps would prepare each property's way back to them)
            current, tried = defaults, 1
        space = change.param_space(self.program_of(inst), inst, max_size=options.max_size) if current.params else None
        while complete and current.params:
            for values in params.simpler(space, current.params):
                if time.monotonic() >= deadline:
                    complete = False
                    break
                candidate = change.with_params(current, values)
                tried += 1
                alike, built = self._fails_alike(spec, candidate, options, result.verdict, inputs)
                if alike:
                    current, harness = candidate, built
                    break
            else:
                break
        result.params.update(simplest=current.params, simplest_instance=current.id, tried=tried,
                             complete=complete, seconds=round(time.monotonic() - started, 3))
        if current is inst:
            return
        if harness is None:          # a static verdict: prepare wrote the variant's finding
            folder = str(options.keep_dir(current) / result.verdict.lower())
            result.crashes.append(folder)
            result.params["findings"] = [folder]
            return
        found = self._findings_with(current, harness, options, inputs)
        for finding in found:
            finding["params_simplified_from"] = inst.id
        result.findings += found
        result.params["findings"] = [f["path"] for f in found]

    def _fails_alike(self, spec: str, candidate: Instance, options, verdict: str, inputs: List[Path]):
        """(whether the variant fails as the finding did, its harness where it built). A static
        verdict must recur; a dynamic one must show on one of the finding's inputs."""
        if verdict in STATIC_OUTCOMES:
            known = shared_pairs.prepared(options.out_dir, candidate.id)
            if known is not None:       # prepared before in this run: its static verdict, or none
                return known == verdict, None
        probe = InstanceResult(id=candidate.id, transformation=candidate.transformation, program=candidate.program,
                               target=candidate.target, verdict=Outcome.PASS.name)
        try:
            # whether a change fails to apply or to validate is its cutout's answer: a variant
            # the cutout takes is not built (a build would only say it passes that far)
            harness = self.prepare(spec, candidate, options, probe, time.monotonic(),
                                   cutout_only=verdict in CUTOUT_VERDICTS)
        except (Unsupported, _ChangeTaken):
            return False, None
        if harness is None:
            return probe.verdict == verdict, None
        if verdict in STATIC_OUTCOMES or not inputs:
            return False, harness
        threads = options.check_threads if verdict == Outcome.RACE.name else 1
        _, failing = screen_seeds(harness, inputs, threads=threads, repeat=options.race_repeat * 5 if threads > 1 else 1)
        return bool(failing), harness

    def _findings_with(self, inst: Instance, harness, options, inputs: List[Path]) -> List[Dict]:
        """The findings a (simpler) variant's harness gives on the inputs that failed."""
        triaged = self.triage_class()(harness.dir, TriageOptions.for_instance(options, inst)).run(
            [RawCrash(path, None, "params", execs=None) for path in inputs])
        return [{**f.to_json(), "input": str(f.folder / "input.bin"), "seconds": None, "kind": "params", "execs": None}
                for f in triaged.findings]

    def _bisect(self, spec: str, inst: Instance, options, result) -> None:
        """A pipeline that changed what the program computes: its first and its fewest guilty
        passes; a whole recipe that did: its first guilty step."""
        change = self.change(spec)
        if result.verdict not in BISECTED_VERDICTS:
            return
        bisecting = BisectOptions(judge=JudgeOptions.of(options, max_size=BISECT_MAX_SIZE),
                                  time_s=options.audit_time_s * 5, **_instance_inputs(options, inst, result))
        if isinstance(change, Passes) and change.pspec.is_pipeline:
            record = bisect(self.program_of(inst), change.pspec, bisecting)
        elif recipe_steps.is_whole_recipe(inst):
            record = bisect_recipe(self.program_of(inst), recipe_steps.recording_of(inst), bisecting)
        else:
            return
        result.bisect = record.to_json()
        for finding in result.findings:
            _record_in_finding(Path(finding["path"]), "bisect", record.to_json())

    def describe(self, spec: str, inst: Instance, prove_max_size: Optional[int] = None,
                 builds: Optional[Path] = None) -> Dict:
        row = {"id": inst.id, "transformation": spec, "program": inst.program, "match": inst.description,
               "form": "simplified" if inst.simplified else "as given"}
        try:
            pair = self.change(spec).extract(self.program_of(inst), inst, 0)
            if builds is not None and pair.ok:      # a static verdict's pre is never built
                row["builds"] = self._pre_builds(pair, builds)
            before, after = pair.volumes()
            row.update(before=before, after=after, before_at_20=volume_at_probe(before),
                       after_at_20=volume_at_probe(after),
                       inputs=pair.input_config, outputs=pair.output_config, status=pair.verdict.name,
                       grown_for=pair.grown_for)
            if prove_max_size is not None and pair.ok:
                _, layout = constrain(pair, JudgeOptions(max_size=prove_max_size,
                                                         strict_names=len(self.target.programs) == 1))
                proof = prove(pair.pre, pair.post, layout)
                row["proof"] = {**proof.to_json(), "summary": proof.summary()}
        except Unsupported as exc:
            row.update(status="UNSUPPORTED", reason=str(exc))
        return row

    def _pre_builds(self, pair: CutoutPair, work_dir: Path) -> Dict:
        """Whether the pair's pre compiles (``-fsyntax-only``), and where it does not, whether the
        program it was cut from does: a pre that fails where its program compiles is a shape
        harnessgen made (``instances --builds``)."""
        key = pair.pre.hash_sdfg()
        if key not in self._compiled:
            self._compiled[key] = compile_errors(pair.pre, work_dir=work_dir)
        errors = self._compiled[key]
        if errors is None:
            return {"pre": True}
        first = from_compiler_output(errors, PRE_NAME)
        dace_made = first is not None and program_fails_alike(pair.program_sdfg, first, work_dir, afl=False)
        program = program_compile_causes(pair.program_sdfg, work_dir, afl=False)
        return {"pre": False, "program": not program, "dace_made": dace_made,
                "error": first.describe() if first is not None else errors.strip().splitlines()[-1][:300]}

    @classmethod
    def triage_class(cls) -> type:
        return Triage

    # ---------------------------------------------------------------- the whole-program audit
    def _audit(self, spec: str, inst: Instance, options, result) -> None:
        """After the cutout's verdict: CUTOUT_MISSED where the program differs and the cutout
        passed; each finding marked observable or latent."""
        if result.verdict in ("BUILT", BLOCKED, "UNSUPPORTED", "ERROR"):
            return
        change = self.change(spec)
        if change.judged_whole(inst, 0):
            result.audit = {"verdict": SKIPPED, "reason": "the instance's cutout is the whole program"}
            return
        sdfg = self.program_of(inst)
        if not self._audited(spec, inst, options):
            result.audit = {"verdict": SKIPPED, "reason": "--no-audit" if options.audit is False else
                            "the whole program is too large to run by default (--audit runs it)"}
            return
        if options.defer_audits:      # after every match's verdict (its followers share the verdict meanwhile)
            result.audit = dict(DEFERRED_AUDIT)
            return
        record = audit(lambda: change.whole_program(sdfg, inst, keep_as_made=True), AuditOptions(
            keep_root=options.keep_dir(inst) / "audit", judge=JudgeOptions.of(options, max_size=AUDIT_MAX_SIZE),
            time_s=options.audit_time_s, command_line=options.command_line, race_threads=options.check_threads if options.race_check else 0,
            race_repeat=options.race_repeat * 5,
            shrink_seconds=30.0 if result.verdict == Outcome.PASS.name else 0.0,
            **_instance_inputs(options, inst, result)))
        label = classify(result.verdict, record)
        result.audit = {**record.to_json(), "classification": label}
        differing = Path(record.finding) if record.finding else None
        if label == WHOLE_PROGRAM_FINDING:
            self._keep_confirm(spec, inst, [record.finding], differing, options)
            result.verdict, result.crashes = record.verdict, [record.finding]
            result.message = (f"{record.verdict} of the whole program after the change, though the cutout passed "
                              f"(a finding of its own, not CUTOUT_MISSED: nothing ran differently): {record.reason}")
        elif label == CUTOUT_MISSED:
            result.verdict = CUTOUT_MISSED
            result.message = (f"the whole program differs ({record.outcome}) while the cutout passed: the cutout "
                              f"did not compute what its place in the program computes (a harnessgen defect); "
                              f"whole-program reproducer {record.finding}")
        elif label:
            for finding in result.findings:
                finding["observable"] = label == "observable"
                _mark_finding(Path(finding["path"]), label, record)
            if label == "observable":
                self._keep_confirm(spec, inst, [f["path"] for f in result.findings], differing, options)

    def audit_later(self, spec: str, inst: Instance, options, result, judge: Callable) -> None:
        """The whole-program audit a bounded run left until every match had its verdict
        (``DEFERRED_AUDIT``), and what follows from it: a larger cutout where it shows the
        cutout missing a difference."""
        options = dataclasses.replace(self.program_options(inst.program, options), defer_audits=False)
        result.audit = {}
        if result.verdict in STATIC_OUTCOMES:
            with result.timed("whole_program_static"):
                self._confirm_static(spec, inst, options, result, judge)
            return
        with result.timed("audit"):
            self._audit(spec, inst, options, result)
        if result.verdict == CUTOUT_MISSED:
            with result.timed("grown"):
                self._grow_after_audit(spec, inst, result, judge, options)

    def _audited(self, spec: str, inst: Instance, options) -> bool:
        """Whether a dynamic verdict of the instance gets the whole-program audit."""
        if self.change(spec).judged_whole(inst, 0):
            return False
        return _whole_program_runs(options, self.program_of(inst))

    # ---------------------------------------------------------------- a static verdict, on the whole program
    def _confirm_static(self, spec: str, inst: Instance, options, result, judge: Callable) -> None:
        """FAILED_TO_APPLY, INVALID_SDFG, BUILD_FAILURE found in a cutout are DaCe's only where
        the same match fails alike on the whole program (then they are observable). Where the
        whole program takes the change (it applies, validates and, for a build failure, its
        code compiles), the verdict was the cutout's making: the instance is judged again in
        the next larger cutouts, dynamically."""
        change = self.change(spec)
        if not self._static_confirmation_due(spec, inst, result):
            return
        if self._build_failure_unasked(inst, options, result):
            result.audit = {"verdict": SKIPPED, "reason": "whether the whole program's code compiles is not "
                            "checked: it is too large to compile by default (--audit checks it)"}
            return
        started = time.monotonic()
        sdfg = self.program_of(inst)
        build_failure = result.verdict == Outcome.BUILD_FAILURE.name
        try:
            # only whether and how the change fails there is asked: no copy of the program as pre
            whole = change.whole_program(sdfg, inst, pre_on_failure=False, keep_as_made=build_failure)
        except Unsupported as exc:
            result.audit = {"verdict": SKIPPED, "reason": f"the whole program: {exc}"}
            return
        shows = whole.verdict.name if not whole.ok else None
        if shows is None and whole.unordered and result.message.startswith(UNORDERED):
            shows, whole.error = Outcome.INVALID_SDFG.name, f"{UNORDERED}{whole.unordered}"
        if shows is None and build_failure:
            # the program after the change as DaCe made it and builds it, where DaCe builds the program
            shows = Outcome.BUILD_FAILURE.name if dace_build_error(whole.post_as_made, sdfg, options.work_dir) else None
        record = {"verdict": shows or "TAKES_THE_CHANGE", "seconds": round(time.monotonic() - started, 3),
                  "reason": (whole.error.splitlines()[0][:300] if whole.error else "")}
        if shows is not None:
            result.audit = {**record, "classification": "observable"}
            for folder in result.crashes:
                _record_in_finding(Path(folder), "audit", {"classification": "observable", "whole_program": record})
            self._keep_confirm(spec, inst, result.crashes, None, options)
            return
        result.audit = {**record, "classification": CUTOUT_ONLY}
        for folder in result.crashes:
            _record_in_finding(Path(folder), "audit", {"classification": CUTOUT_ONLY, "whole_program": record})
        said = f"{result.verdict} in the cutout only (the whole program takes the change: {result.message.splitlines()[0][:160]})"
        again = self._grown(inst, result, judge)
        if again is None:
            result.verdict = "UNSUPPORTED"
            result.message = f"{said}, and no larger cutout could be judged: {result.message[-300:]}"
            return
        for folder in list(again.crashes) + [f["path"] for f in again.findings]:
            # the larger cutout's finding: the whole program took the change all the same
            _record_in_finding(Path(folder), "audit", {"classification": CUTOUT_ONLY, "whole_program": record})
        self._take_grown(result, again, f"{said}; judged in a larger cutout ({len(result.audit['grown'])} step(s) up)",
                         observable=False)
        if result.verdict not in STATIC_OUTCOMES and result.findings:
            # whether the whole program shows the larger cutout's wrong result: the audit marks
            # its findings (observable, with confirm.py; or latent), its record kept beside
            kept = result.audit
            self._audit(spec, inst, options, result)
            result.audit = {**kept, "after_growth": result.audit}

    def _static_confirmation_runs(self, spec: str, inst: Instance, options, result) -> bool:
        """Whether ``_confirm_static`` asks the whole program anything."""
        return self._static_confirmation_due(spec, inst, result) and not self._build_failure_unasked(inst, options,
                                                                                                    result)

    def _static_confirmation_due(self, spec: str, inst: Instance, result) -> bool:
        """Not where the cutout is the whole program, or was grown already."""
        return not (self.change(spec).judged_whole(inst, 0) or result.audit.get("grown"))

    def _build_failure_unasked(self, inst: Instance, options, result) -> bool:
        """A build failure of a program too large to compile by default: applying the change to
        it (seconds on CLOUDSC) would not say whether its code compiles, the only question a
        build failure asks of it."""
        return result.verdict == Outcome.BUILD_FAILURE.name and not _whole_program_runs(options, self.program_of(inst))

    def _keep_confirm(self, spec: str, inst: Instance, folders: List, inputs: Optional[Path], options) -> None:
        """Beside each finding the whole program shows, what ``confirm.py`` needs to show it with
        DaCe alone (``checks.confirm``): a pattern's match in the program, the program, and the
        whole program's inputs on which it differed (``inputs``: the whole program's finding
        folder; none for a static verdict)."""
        if not isinstance(self.change(spec), Patterns) or inst.step:
            return
        kept = confirm.saved_program_dir(options.work_dir, self._whole_program_key(inst))
        for folder in folders:
            if folder and Path(folder).is_dir():
                confirm.write(Path(folder), self.program_of(inst), inst.match, spec,
                              inputs if inputs is not None and inputs.is_dir() else None, options.tolerance, kept)

    def _grow_after_audit(self, spec: str, inst: Instance, result, judge: Callable, options) -> None:
        """The cutout passed where the whole program differs: judge the instance again in the
        next larger cutouts that hold the match (the whole nested SDFG, then the whole program),
        under an instance folder of their own, until one shows a finding. The verdict becomes
        that finding; the audit keeps saying CUTOUT_MISSED of the smaller cutout."""
        again = self._grown(inst, result, judge)
        if again is not None and again.verdict != Outcome.PASS.name:
            finding = result.audit.get("finding")
            self._keep_confirm(spec, inst, [f["path"] for f in again.findings] + list(again.crashes),
                               Path(finding) if finding else None, options)
            self._take_grown(result, again, f"found in a larger cutout ({len(result.audit['grown'])} step(s) up) "
                             f"after the whole-program audit showed the smaller one missing it (CUTOUT_MISSED, a "
                             f"harnessgen defect; whole-program reproducer {result.audit.get('finding')})")

    def _grown(self, inst: Instance, result, judge: Callable, steps: int = MAX_GROWTH_AFTER_AUDIT,
               done: Callable = lambda judged: judged.verdict != Outcome.PASS.name):
        """The instance judged in the next larger cutouts (at most ``steps``) until one is
        ``done`` (by default: shows a finding): that judgement, or the last one; None where no
        larger cutout holds the match (the reason added to the message). Each step is recorded
        in ``result.audit["grown"]``."""
        again = None
        for past in range(1, steps + 1):
            grown = dataclasses.replace(inst, id=f"{inst.id}-grown{past}")
            try:
                again = judge(grown, past)
            except Unsupported as exc:
                result.message += f"; {exc}"
                return again
            step = {"cutout": past, "verdict": again.verdict, "execs": again.execs, "build_dir": again.build_dir,
                    "findings": len(again.findings), "message": again.message[:300]}
            result.audit.setdefault("grown", []).append(step)
            result.execs += again.execs
            if done(again):
                return again
        return again

    def _grow_past_symbol_outputs(self, inst: Instance, result, judge: Callable) -> None:
        """Only harnessgen's own symbol outputs differ (``hg_symout_*``: a symbol the cutout
        assigns and the program reads after it), and the whole program did not show a
        difference. What the program observes of a symbol is what its later readers compute:
        the instance is judged in the next larger cutouts, which hold those readers (the whole
        program has no symbol outputs), and their verdict stands, a PASS included."""
        symbols = sorted({f["container"][len(SYMBOL_OUTPUT_PREFIX):] for f in result.findings})
        said = (f"only harnessgen's own symbol output(s) of {symbols} differed in the cutout, and the whole program "
                "did not show it")
        again = self._grown(inst, result, judge, steps=MAX_GROWTH_PAST_SYMBOLS,
                            done=lambda judged: not _only_symbol_outputs_differ(judged))
        if again is None or _only_symbol_outputs_differ(again):
            result.verdict = "UNSUPPORTED"
            result.message = (f"{said}; no larger cutout holding the symbols' readers could be judged: "
                              f"{result.message[-300:]}")
            return
        self._take_grown(result, again, f"{said}: judged where the program reads them, in a larger cutout "
                                        f"({len(result.audit['grown'])} step(s) up)", observable=False)

    @staticmethod
    def _take_grown(result, again, why: str, observable: bool = True) -> None:
        """The larger cutout's judgement becomes the instance's (``observable``: its findings
        are, for the whole program shows a difference, or takes the change the smaller cutout
        refused)."""
        for finding in again.findings:
            finding["observable"] = finding.get("observable") or observable
        result.verdict, result.findings = again.verdict, again.findings
        result.crashes, result.triage, result.evidence = again.crashes, again.triage, again.evidence
        result.build_dir = again.build_dir
        result.message = f"{why}: {again.message}"


def _sizes_decode(sdfg) -> None:
    """Whether harnessgen can decode inputs of the whole program (its sizes' bounds parse):
    ConfigError, saying so, where it cannot (a size ``R**K``: a power with a symbolic exponent)."""
    try:
        constrain(whole_program_pair(sdfg, f"sizes-{sdfg.name}"), JudgeOptions())
    except ConfigError as exc:
        raise ConfigError(f"harnessgen cannot decode its inputs ({exc}): a harnessgen limit, left out; please "
                          "report it") from exc


def _only_symbol_outputs_differ(result) -> bool:
    """A wrong result whose every finding is in a symbol output of harnessgen's (none in a
    container of the program), which the whole-program audit did not see (or did not run)."""
    return (result.verdict == Outcome.MISMATCH.name and bool(result.findings)
            and all(str(f.get("container", "")).startswith(SYMBOL_OUTPUT_PREFIX) for f in result.findings)
            and result.audit.get("classification") != "observable")


def _pair_key(pair: CutoutPair, constraints, saved: SavedSides) -> Optional[str]:
    """The pair's canonical key: pre, post (``saved``: as its build serialises them; the key
    drops their hashes), what they read and write, which of their containers are one buffer
    (aliases), and their constraints."""
    return pair_key(saved.pre, saved.post, {
        "inputs": sorted(pair.input_config), "outputs": sorted(pair.output_config),
        "symbol_outputs": list(pair.symbol_outputs), "whole_program": pair.whole_program,
        "aliases": pair.aliases, "constraints": constraints.to_json()})


def code_identity(spec: str) -> str:
    """The code a ``--transformation`` value names beyond DaCe's and harnessgen's own (both
    hashed elsewhere): the file of ``file.py:Class``, or of ``module:Class`` outside harnessgen."""
    import hashlib
    import importlib.util

    where = spec.rpartition(":")[0]
    if not where:
        return ""
    if where.endswith(".py"):
        path = Path(where)
    else:
        found = importlib.util.find_spec(where)
        path = Path(found.origin) if found is not None and found.origin else None
    if path is None or not path.is_file():
        return where
    return hashlib.sha256(path.read_bytes()).hexdigest()[:24]


def transformation_specs(target, xform_spec: Optional[str]) -> List[str]:
    """Empty: the target's default set (``all`` for a user's program, which has none);
    otherwise a comma-separated list whose items may be ``all`` (every CPU built-in plus the
    target's own ``module:Class`` ones) and ``gpu`` (the target's GPU set), in the target's
    defaults as well."""
    if not xform_spec:
        items = list(target.default_transformations) or [ALL]
    else:
        items = [s.strip() for s in xform_spec.split(",") if s.strip()]
    specs: List[str] = []
    for spec in items:
        if spec.lower() == ALL:
            expanded = cpu_builtin_transformations() + [s for s in target.default_transformations if ":" in s]
        elif spec == "gpu":
            if not target.gpu_transformations:
                raise ConfigError(f"target {target.name!r} has no GPU transformations: name them in "
                                  "--transformation")
            expanded = target.gpu_transformations
        else:
            expanded = [spec]
        specs += [s for s in expanded if s not in specs]
    return specs


def _whole_program_runs(options, program_sdfg) -> bool:
    """Whether the whole program is built and run for an instance's checks: --audit and
    --no-audit say so; by default only where it is small (``checks.audit.is_cheap``)."""
    return options.audit if options.audit is not None else is_cheap(program_sdfg)


class _Blocked(Exception):
    """The cutout came to the whole program, which is known not to build (the result says so)."""


class _ChangeTaken(Exception):
    """Asked only whether the change fails in its cutout (``cutout_only``): it takes there."""


# verdicts a cutout gives before anything is built: a variant whose cutout takes the change cannot
# have them (short of a larger cutout after a build failure harnessgen's cutout made: the
# parameter simplification then stops one step early, with the finding it has)
CUTOUT_VERDICTS = (Outcome.FAILED_TO_APPLY.name, Outcome.INVALID_SDFG.name)


def _blocked_program(whole_key: str, inst: Instance, options, result) -> bool:
    """The instance is judged on a whole program known not to build before any change (its
    cause recorded by an earlier instance): BLOCKED by that cause, with nothing applied or
    generated. False where the program is not known to be blocked."""
    if not whole_key:
        return False
    cause = cause_registry(options.work_dir, afl=options.engine == "afl").blocking_program(whole_key)
    folder = cause.folder(options.crashes_root, inst.target) if cause is not None else None
    if folder is None or not (folder / "meta.json").is_file():
        return False           # this run has no finding for it yet: the instance writes it
    result.verdict, result.blocked_by, result.crashes = BLOCKED, cause.id, [str(folder)]
    result.message = (f"pre does not build: DaCe's code generator emits {cause.describe()} (a known cause, first "
                      f"met in {cause.first_instance}, in this whole program: the change was not applied to it, pre "
                      "not generated again); nothing about the change can be judged here")
    return True


# where a construct that does not compile comes from (``_blocked``)
DACE_MADE = "dace"          # DaCe's own code for the program fails alike: a finding against DaCe
CUTOUT_MADE = "cutout"      # DaCe's code for the program compiles: harnessgen's cutout made the shape


def _blocked(exc: BuildError, pair: CutoutPair, options, result, whole_key: str = "") -> Optional[str]:
    """Pre does not compile. Where DaCe's own code for the program (as DaCe made it: no cutout,
    no stand-in) fails with the same error at the same line, the construct is DaCe's: the
    instance is BLOCKED by that cause, whose finding against DaCe's code generator is written
    once per run's crashes folder (the run's bug analysis reduces it); returns DACE_MADE.
    Where the program's code compiles, or fails otherwise, the shape is harnessgen's: nothing
    is filed; returns CUTOUT_MADE. None where the failure shows no compiler error.
    ``whole_key``: pre is that whole program, recorded as blocked by a cause of DaCe's."""
    afl = options.engine == "afl"
    registry = cause_registry(options.work_dir, afl)
    cause = registry.get(exc.cause) if exc.cause else None      # a known cause of DaCe's, matched before compiling
    if cause is None:
        found = from_compiler_output(exc.log, PRE_NAME)
        if found is None:
            return None
        if not program_fails_alike(pair.program_sdfg, found, options.work_dir, afl):
            return CUTOUT_MADE
        cause = registry.record(dataclasses.replace(
            found, log=diagnostics(exc.log), first_instance=pair.instance.id,
            context=line_context(found.line, pair.pre), program=_program_label(pair)))
    if whole_key:
        registry.record_program(whole_key, cause)
    folder = cause.folder(options.crashes_root, pair.instance.target)
    if not (folder / "meta.json").is_file():
        write_codegen_finding(folder, pair.pre, cause, cause.log, pair.instance.id, pair.instance.target,
                              "not reduced yet (the run's bug analysis reduces it: bugs/<id>/)", CXX, CXXFLAGS)
    result.verdict, result.blocked_by, result.crashes = BLOCKED, cause.id, [str(folder)]
    how = (f"finding {folder}" if cause.first_instance == pair.instance.id else
           f"a known cause, first met in {cause.first_instance}: pre was not compiled again")
    result.message = (f"pre does not build: DaCe's code generator emits {cause.describe()}, as it does for the "
                      f"program {cause.program or _program_label(pair)} itself ({how}); nothing about the change "
                      "can be judged here")
    return DACE_MADE


def _program_label(pair: CutoutPair) -> str:
    """The program DaCe made, as a finding names it."""
    form = "simplified" if pair.instance.simplified else "as its frontend wrote it"
    return f"{pair.instance.program or pair.program_sdfg.name} ({form})"


def _record_volumes(pair: CutoutPair, result) -> None:
    """The pair's input volumes on its result, unreduced and as judged."""
    before, after = pair.volumes()
    result.input_config_before = f"{before} (= {volume_at_probe(before)} at 20)"
    result.input_config_after = f"{after} (= {volume_at_probe(after)} at 20)"


def _static_finding(options, pair: CutoutPair, verdict: Outcome, message: str, result, started: float) -> None:
    """FAILED_TO_APPLY / INVALID_SDFG / BUILD_FAILURE: the verdict, and what reproduces it kept."""
    folder = options.keep_dir(pair.instance) / verdict.name.lower()
    result.verdict, result.message = verdict.name, message
    result.crashes = [str(write_static_finding(folder, pair, verdict.name, message, CXX, CXXFLAGS))]
    result.seconds_to_first_finding = round(time.monotonic() - started, 3)
    return None


def _mark_finding(folder: Path, label: str, record) -> None:
    """meta.json of a finding says whether the whole program shows it (observable) or not (latent)."""
    _record_in_finding(folder, "audit", {"classification": label, "whole_program": record.to_json()})


def _record_in_finding(folder: Path, key: str, value: Dict) -> None:
    """Add what a later stage learnt to a finding's meta.json (a static finding, which has
    none, keeps it in ``judged.json``)."""
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        meta_path = folder / JUDGED_FILE
        if not folder.is_dir():
            return
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    meta[key] = value
    write_json(meta_path, meta)


def _instance_inputs(options, inst: Instance, result) -> Dict:
    """The cutout's layout and inputs for the audit: each finding's input, then the corpus
    (seeds and the user's files); none where nothing was built."""
    if not result.build_dir:
        return {}
    corpus = options.corpus_root / inst.target / inst.id
    paths = [Path(f["path"]) / "input.bin" for f in result.findings]
    paths += sorted(p for p in corpus.iterdir() if p.is_file()) if corpus.is_dir() else []
    inputs = [(p.parent.name if p.name == "input.bin" else p.name, p.read_bytes()) for p in paths if p.is_file()]
    return {"instance_layout": InputLayout.load(Path(result.build_dir) / "layout.json"), "instance_inputs": inputs}
