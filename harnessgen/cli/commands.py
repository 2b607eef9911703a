"""``harnessgen`` command line. The ``fuzz`` flags are a contract other tools rely on."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional

from .. import __version__
from ..bugs.analysis import analyse
from ..bugs.bug_report import shown_path
from ..bugs.cluster import bug_rows
from ..bugs.reduce import ReduceOptions
from ..campaign import Budget, CampaignConfig, run_campaign, run_report as report
from ..campaign.executors import ExecutorSpec, SlurmOptions
from ..campaign.fuzz_run import fuzz
from ..campaign.retriage import triage_directory
from ..checks.pipeline_bisect import BisectRecord
from ..checks.reference_check import describe_checks
from ..core import runlog
from ..core.errors import ConfigError, HarnessgenError, InternalError, Unsupported
from ..core.evidence import SEEDS_ONLY, Evidence
from ..core.files import write_json
from ..core.records import VERDICTS, FuzzOptions, per_transformation
from ..core.runtime import Tolerance
from ..gpukernels import barriers, spec as kernels
from ..harness.build import HarnessBuild
from ..harness.judge import JudgeOptions
from ..harness.replay import replay
from ..plan.params import ParamOptions, describe, parse_mode
from ..progen.target import program_file, stream_coverage, stream_span
from ..prove import Proof
from ..pyfuzz.interpreters import resolve_python
from ..pyfuzz.run import PyFuzzConfig, run_pyfuzz
from ..subjects import plan, split_ids
from ..targets import BUILTIN_TARGETS, resolve
from ..triage.classify import TriageOptions
from .progress import VERDICT_COLOURS, LiveProgress, PlanDisplay, describe_enumeration


def _console():
    from rich.console import Console

    return Console(stderr=True, highlight=False)


# ------------------------------------------------------------------ fuzz
def _add_fuzz(sub) -> None:
    p = sub.add_parser("fuzz", help="fuzz every instance of a transformation in a program")
    p.add_argument("--program", required=True, help="kernels | kernels:NAME | file.sdfg | file.py:function")
    p.add_argument("--transformation", metavar="SPEC[,SPEC...]",
                   help="DaCe class name | file.py:Class | module:Class, comma-separated for several "
                        "(default: the target's default set)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--instance", action="append", metavar="ID", help="fuzz only this instance (repeatable, or comma-separated)")
    which.add_argument("--all", action="store_true", help="fuzz every instance (the default)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="set a transformation property, VALUE as JSON (e.g. tile_sizes=[4,4])")
    p.add_argument("--time", type=float, default=60.0, metavar="SECONDS",
                   help="budget per instance: seed screening plus afl-fuzz (default 60)")
    _add_executor_flags(p, default=1, jobs_help=(
        "instances fuzzed at the same time, in local worker processes (default 1: in this process, with live "
        "statistics); with a single instance, afl-fuzz instances on it sharing one sync directory: -M main, "
        "-S s1 (with CMPLOG), -S s2, ..."))
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="whole run: no instance starts after this; the same command again continues "
                        "with the instances not yet done (default: no limit)")
    p.add_argument("--fresh", action="store_true",
                   help="fuzz every instance again instead of continuing the run in --out")
    p.add_argument("--redo", type=_redo_list, default=(), metavar="VERDICT|Class[,...]",
                   help="continue the run in --out, but fuzz again the instances that ended with one of "
                        "these verdicts or belong to these transformations (e.g. UNSUPPORTED after "
                        "upgrading harnessgen, or MyTransformation after changing it)")
    p.add_argument("--out", type=Path, default=Path(".harnessgen/runs/latest"), metavar="DIR",
                   help="the run directory: summary.json, report.html, campaign.db (its state) and AFL++'s output")
    p.add_argument("--until-crash", action="store_true", help="stop an instance at its first crash")
    p.add_argument("--build-only", action="store_true",
                   help="build every instance's libraries and harness, fuzz none (verdict BUILT; a GPU "
                        "instance on a machine without a GPU ends so anyway)")
    _add_instance_options(p)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_fuzz)


def _add_tolerance_flags(p, default_from: str = "") -> None:
    """--rtol / --atol / --exact; unset, each keeps the oracle's own default (runtime.Tolerance)
    or, where ``default_from`` says so, the value recorded there."""
    where = default_from or "{:g}"
    p.add_argument("--rtol", type=float, help=f"relative tolerance (default {where.format(Tolerance.rtol)})")
    p.add_argument("--atol", type=float, help=f"absolute tolerance (default {where.format(Tolerance.atol)})")
    p.add_argument("--exact", action="store_true", default=None, help="compare floats bit for bit")


def _tolerance(args, recorded=None):
    """The one Tolerance the flags of _add_tolerance_flags give: each flag not given keeps the
    ``recorded`` tolerance's value (a build's), else the oracle's default."""
    import dataclasses

    base = recorded or Tolerance()
    given = {name: getattr(args, name) for name in ("rtol", "atol", "exact") if getattr(args, name, None) is not None}
    return dataclasses.replace(base, **given)


def _add_simplify_flag(p) -> None:
    p.add_argument("--simplify", dest="simplify", action=argparse.BooleanOptionalAction, default=None,
                   help="which form of the program pattern transformations meet: --simplify the simplified one, "
                        "--no-simplify the program as given (as its frontend wrote it). Default: a @dace.program "
                        "and the built-in targets simplified (what their users run), an SDFG file or a builder's "
                        "SDFG as given (passes such as simplify always start from the form as given)")


def _add_params_flag(p) -> None:
    p.add_argument("--params", default="pairs", metavar="pairs|pairs:K|default|boundary|N",
                   help="the transformation's own parameters (tile sizes, overlaps, vector widths, unroll counts, "
                        "choices): pairs (the default: the default values and 2 variants per match that change two "
                        "interacting parameters together, judged in their own share of the run's time), pairs:K (K "
                        "such variants), default (the default values or --set's only), boundary (every boundary "
                        "value of each parameter, the others at their defaults) or N (at most N combinations per "
                        "match, seeded, simplest first); each variant is an instance of its own")


def _add_instance_options(p) -> None:
    """What every instance is fuzzed with: oracle, decoder ranges, seeds, where files go."""
    p.add_argument("--constraints", type=Path, metavar="FILE",
                   help='symbol/data ranges, {"name": ["lo", "hi"]} (default afl_configs/<target>.constraints.json)')
    _add_simplify_flag(p)
    _add_params_flag(p)
    p.add_argument("--params-shrink-time", type=float, default=120.0, metavar="SECONDS",
                   help="a finding of a parameter variant: look this long for simpler parameters that fail alike, "
                        "defaults and small values first (default 120; 0: none)")
    p.add_argument("--no-reference-check", dest="reference_check", action="store_false",
                   help="do not check the programs against their references before the instances (a check "
                        "runs where a program has one: the kernels, a @dace.program run as plain Python)")
    _add_tolerance_flags(p)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show DaCe's warnings as they come (always written to warnings.log in the output directory)")
    p.add_argument("--max-size", type=int, default=16, help="largest value of a size symbol (default 16)")
    p.add_argument("--float-bound", type=float, default=1e6, help="floats are decoded into [-B, B] (default 1e6)")
    p.add_argument("--nonfinite", action="store_true", help="let NaN and Inf through the decoder")
    p.add_argument("--race", nargs="?", type=int, const=4, default=0, metavar="THREADS",
                   help="also fuzz in race mode: a second afl-fuzz instance runs post on THREADS OpenMP "
                        "threads (default 4) and compares with pre on one thread")
    p.add_argument("--race-repeat", type=int, default=2, metavar="R", help="race mode: post runs per input (default 2)")
    p.add_argument("--race-check", action=argparse.BooleanOptionalAction, default=True,
                   help="where post runs parallel code pre does not run identically (a new parallel region, a "
                        "region whose body or callees changed), run the seeds and the final queue with post on 4 "
                        "threads, unasked (default on)")
    p.add_argument("--whole-share", type=float, default=0.25, metavar="F",
                   help="share of the workers' time for instances judged on whole programs (passes, and "
                        "transformations whose instances prove slow); default 0.25")
    p.add_argument("--variant-share", type=float, default=0.15, metavar="F",
                   help="share of the workers' time for parameter variants beyond each match's defaults "
                        "(--params); default 0.15")
    p.add_argument("--cmplog", action="store_true", help="also build a CMPLOG harness and pass it to afl-fuzz -c")
    p.add_argument("--prove", choices=("first", "only", "off"), default="first",
                   help="translation validation of affine cutouts (islpy + z3): first (default) proves each pair "
                        "and fuzzes those neither PROVEN bit for bit nor DISPROVEN, a counterexample becoming a "
                        "finding and a seed; only: prove and replay counterexamples, never fuzz; off: fuzz only")
    p.add_argument("--seed", type=int, default=0, help="seed of the seed sampler")
    p.add_argument("--seed-mode", choices=("boundary", "random", "none"), default="boundary",
                   help="boundary-aware seeds (default), a few random byte strings, or only your own "
                        "files in the corpus directory")
    p.add_argument("--work-dir", type=Path, default=Path(".harnessgen"), help="build cache (default .harnessgen)")
    p.add_argument("--corpus-dir", type=Path, default=Path("corpus"))
    p.add_argument("--crashes-dir", type=Path, default=Path("crashes"))
    p.add_argument("--max-replays", type=int, default=500, help="raw crashes triaged per instance (default 500)")
    p.add_argument("--audit", action=argparse.BooleanOptionalAction, default=None,
                   help="whole-program audit of every instance: the same match applied to the whole program, "
                        "whole-pre against whole-post on small inputs; CUTOUT_MISSED where the program differs "
                        "and the cutout passed, findings marked observable or latent (default: on where the "
                        "whole program is small)")
    p.add_argument("--audit-time", type=float, default=60.0, metavar="SECONDS",
                   help="the audit's inputs stop after this many seconds per instance (default 60; its build is extra)")
    _add_reduce_flag(p)


def _add_reduce_flag(p) -> None:
    p.add_argument("--reduce-time", type=float, default=60.0, metavar="SECONDS",
                   help="when the findings are clustered into bugs, reduce each bug's program for at most this "
                        "long (default 60; 0: no reduction)")
    p.add_argument("--reduce-candidates", type=int, default=2000, metavar="N",
                   help="... and judge at most N smaller programs per bug (default 2000)")


def _fuzz_options(args, **fields):
    """FuzzOptions from the flags _add_instance_options declares (plus ``fields``)."""
    return FuzzOptions(
        constraints=args.constraints, tolerance=_tolerance(args), max_size=args.max_size,
        float_bound=args.float_bound, nonfinite=args.nonfinite, work_dir=args.work_dir, corpus_root=args.corpus_dir,
        crashes_root=args.crashes_dir, cmplog=args.cmplog, max_replays=args.max_replays, seed=args.seed,
        seed_mode=args.seed_mode, race_threads=args.race, race_repeat=args.race_repeat,
        race_check=args.race_check, audit=args.audit, verbose=args.verbose, simplify=args.simplify,
        reference_check=args.reference_check, audit_time_s=args.audit_time, reduce_seconds=args.reduce_time,
        reduce_candidates=args.reduce_candidates, params=parse_mode(args.params),
        params_shrink_s=args.params_shrink_time, prove=args.prove, whole_share=args.whole_share,
        variant_share=args.variant_share, command_line=" ".join(["harnessgen"] + sys.argv[1:]), **fields)


def _redo_list(text: str) -> tuple:
    """Verdicts (upper case) and transformation class names, comma-separated."""
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    unknown = [v for v in names if v.isupper() and v not in VERDICTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown verdict(s) {', '.join(unknown)}; "
                                         f"one of {', '.join(VERDICTS)} (or a transformation's class name)")
    return names


def cmd_fuzz(args) -> int:
    from rich.markup import escape

    options = _fuzz_options(args, time_s=args.time, budget_s=args.budget, resume=not args.fresh, redo=args.redo,
                            out_dir=args.out, until_crash=args.until_crash, show_progress=not args.no_progress,
                            build_only=args.build_only)
    console = _console()
    # live afl-fuzz statistics come from this process only: with --jobs over several instances, a
    # line per instance (on one instance, --jobs means afl-fuzz instances, still run from here)
    one_instance = len(split_ids(args.instance)) == 1
    progress, finish = _progress_display(console, args.time,
                                         enabled=not args.no_progress and (args.jobs <= 1 or one_instance))
    planned, done = [0], [0]      # instances in the run, and finished ones (set by the callbacks)

    def on_plan(total: int, already: int, checks: list) -> None:
        planned[0] = total
        done[0] = already
        for line in describe_checks(checks):
            console.print(line)
        budget = f", no instance starting after {args.budget:g} s" if args.budget else ""
        console.print(f"{total} instance(s) of {args.transformation or 'the default transformations'} in "
                      f"{args.program}; {args.time:g} s each, {args.jobs} at a time{budget}")
        if already:
            console.print(f"{already} of them done by an earlier run into {args.out} (--fresh starts over)")

    def on_result(r) -> None:
        finish(r)
        done[0] += 1
        colour = VERDICT_COLOURS.get(r.verdict, "red")
        rate = f"{r.execs_per_sec:,.0f} execs/s" if r.execs_per_sec else ""
        if r.race_execs_per_sec:
            rate += f" (+ {r.race_execs_per_sec:,.0f}/s in race mode)"
        first = f", first finding after {r.seconds_to_first_finding:.1f} s" if r.seconds_to_first_finding is not None else ""
        console.print(f"[{colour}]{r.verdict:<15}[/] [{done[0]}/{planned[0]}] {r.program}/{r.id}  "
                      f"{r.execs:,} execs {rate}{first}")
        if r.verdict != "PASS" and r.message:
            console.print(f"    {r.message.splitlines()[0]}")
        evidence = Evidence.from_json(r.evidence)
        if r.verdict == "PASS" and evidence is not None:
            warn = evidence.kind == SEEDS_ONLY and evidence.meant_to_fuzz
            console.print(f"    {'[yellow]' if warn else ''}{escape(evidence.describe())}{'[/]' if warn else ''}")
        if r.proof:
            console.print(f"    proof: {Proof.from_json(r.proof).summary()} ({r.proof['seconds']:.2f} s)")
        for finding in r.findings:
            seen = {True: ", observable in the whole program", False: ", latent: the whole program does not show it"}
            console.print(f"    -> {finding['outcome']}: {finding['path']}  ({finding['raw_crashes']} raw crash(es)"
                          f"{seen.get(finding.get('observable'), '')})")
        if r.audit and r.audit.get("verdict") not in (None, "SKIPPED"):
            judged = f"on {r.audit['inputs']} input(s) " if "inputs" in r.audit else f"({r.audit.get('classification')}) "
            console.print(f"    audit: whole program {r.audit['verdict']} {judged}in {r.audit['seconds']:.1f} s")
        if r.params.get("simplest") is not None:
            console.print(f"    parameters {describe(r.params['values'])}; the simplest that fail alike: "
                          f"{describe(r.params['simplest'])} ({r.params['tried']} tried in {r.params['seconds']:.1f} s"
                          + ("" if r.params["complete"] else ", out of time") + ")")
        if r.bisect:
            console.print(f"    {BisectRecord(**r.bisect).describe()} in {r.bisect['seconds']:.1f} s")

    def on_more(row, seconds: float, count: int) -> None:
        planned[0] += count
        console.print(describe_enumeration(row, seconds, count=count) + " [dim](enumerated beside the run)[/]")

    console.print(f"planning {escape(args.program)} x {escape(args.transformation or 'its default transformations')}"
                  f" (DaCe {_dace_version()})")
    results = fuzz(args.program, args.transformation, args.instance, options, progress=progress, on_result=on_result,
                   settings=args.set, jobs=max(1, args.jobs or 1), on_plan=on_plan, executor=elsewhere(args),
                   plan_progress=PlanDisplay(console), on_more=on_more)
    print_bugs(console, args.out)
    _print_summary(console, results)
    counts = {}
    for r in results:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    console.print(f"{len(results)} instance(s): " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
                  + f"; summary in {args.out / 'summary.json'}")

    logged = runlog.count(args.out)
    if logged and not args.verbose:
        console.print(f"{logged} library warning(s) (DaCe's) in {args.out / runlog.LOG_NAME}; "
                      "-v shows them as they come")
    regrown = [r for r in results if r.verdict != "CUTOUT_MISSED" and (r.audit or {}).get("grown")]
    if regrown:
        console.print(f"[bold white on red]{len(regrown)} instance(s) found only in a larger cutout:[/] their "
                      "first cutouts passed while the whole program differs (CUTOUT_MISSED of the first cutout, a "
                      "harnessgen defect: please report it); the finding is from the larger cutout: "
                      + ", ".join(r.id for r in regrown))
    missed = [r for r in results if r.verdict == "CUTOUT_MISSED"]
    if missed:
        console.print(f"[bold white on red]{len(missed)} instance(s) CUTOUT_MISSED:[/] their cutouts passed while the "
                      "whole program differs; harnessgen judged a different program there. Please report it with "
                      "the whole-program reproducers: " + ", ".join(r.audit.get("finding") or r.id for r in missed))
    unfuzzed = [r for r in results if r.verdict == "PASS" and (r.evidence or {}).get("meant_to_fuzz")
                and r.evidence.get("kind") == SEEDS_ONLY]
    if unfuzzed:
        console.print(f"[yellow]{len(unfuzzed)} PASS verdict(s) rest on the seed inputs only:[/] afl-fuzz was meant "
                      f"to run and did not ({unfuzzed[0].evidence['why_not_fuzzed']}); they are not counted as fuzzed")
    _print_codegen_causes(console, args.out)
    _print_remaining(console, args.out)
    return 0


def _print_codegen_causes(console, out: Path) -> None:
    """Programs DaCe could not build before any change: one finding per cause."""
    from rich.markup import escape

    for cause in json.loads((out / "summary.json").read_text()).get("codegen_causes", []):
        console.print(f"[yellow]{cause['instances']} instance(s) BLOCKED[/] ({escape(', '.join(cause['transformations']))}):"
                      f" DaCe's code generator cannot build their program before the change; one finding against "
                      f"DaCe: {escape(cause['finding'])}/BUG.md")


def _print_remaining(console, out: Path) -> None:
    """How much of the plan is judged, what is left, and how long the rest would take."""
    from rich.markup import escape

    summary = json.loads((out / "summary.json").read_text())
    left = summary.get("remaining") or {}
    judged = summary["finished"]
    line = f"judged {judged} of {summary['planned']} planned instance(s)"
    if left.get("instances"):
        eta = left.get("estimated_seconds")
        when = f"; the rest would take about {_duration(eta)} on {left['workers']} worker(s)" if eta else ""
        line = f"[yellow]{line}: {left['instances']} not started within the budget{when}[/]; " \
               "the same command again continues"
    if left.get("not_enumerated"):
        line += f"; [yellow]not enumerated yet: {escape(', '.join(left['not_enumerated']))}[/]"
    console.print(line)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _dace_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dace")
    except PackageNotFoundError:
        return "not installed"


def _print_summary(console, results) -> None:
    """Per transformation: instances, verdicts, findings, median time to a verdict, reproducers."""
    from rich.table import Table

    rows = per_transformation(results)
    if not rows:
        return
    table = Table(title="verdicts per transformation")
    variants = any(row["param_variants"] for row in rows)
    proofs = any(row["proofs"] for row in rows)
    columns = ("transformation", "instances") + (("matches", "parameter variants") if variants else ()) \
        + ("verdicts", "PASS rests on") + (("proofs",) if proofs else ()) + ("findings", "median s to verdict")
    for col in columns:
        table.add_column(col, justify="left" if col in ("transformation", "verdicts", "PASS rests on", "proofs")
                         else "right")
    for row in rows:
        verdicts = ", ".join(f"{n} {v}" for v, n in row["verdicts"].items())
        table.add_row(row["transformation"], str(row["instances"]),
                      *((str(row["matches"]), str(row["param_variants"])) if variants else ()), verdicts,
                      describe_pass_evidence(row),
                      *((", ".join(f"{n} {v}" for v, n in row["proofs"].items()),) if proofs else ()),
                      str(row["findings"]), f"{row['median_verdict_seconds']:.1f}")
    console.print(table)
    reproducers = [(row["transformation"], path) for row in rows for path in row["reproducers"]]
    if reproducers:
        console.print("reproducers (run `make replay CRASH=<dir>` or `python <dir>/repro.py`):")
        for name, path in reproducers:
            console.print(f"  {name}: {path}")


def describe_pass_evidence(row) -> str:
    """A per-transformation row's PASS verdicts by what they rest on (seeds only in yellow
    where afl-fuzz was meant to run)."""
    names = {"PROVEN": "proven", "FUZZED": "fuzzed", "SEEDS_ONLY": "seeds only"}
    parts = [f"{n} {names.get(kind, kind)}" for kind, n in row["pass_evidence"].items()]
    if row["not_fuzzed_as_meant"]:
        parts.append(f"[yellow]{row['not_fuzzed_as_meant']} not fuzzed as meant[/]")
    return ", ".join(parts)


def _progress_display(console, time_s: float, enabled: bool):
    """A rich progress bar per instance, fed by afl-fuzz's fuzzer_stats."""
    if not enabled or not console.is_terminal:
        return None, lambda result: None
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                   TextColumn("{task.fields[stats]}"), console=console, transient=True)
    tasks = {}

    def update(inst, stats) -> None:
        if inst.id not in tasks:
            bar.start()
            tasks[inst.id] = bar.add_task(f"{inst.program}/{inst.id}", total=time_s, stats="")
        run_time = float(stats.get("run_time", 0) or 0)
        text = f"{stats.get('execs_per_sec', '0')} execs/s, {stats.get('saved_crashes', '0')} crashes"
        bar.update(tasks[inst.id], completed=min(run_time, time_s), stats=text)

    def finish(result) -> None:
        if result.id in tasks:
            bar.remove_task(tasks.pop(result.id))
        if not tasks:
            bar.stop()

    return update, finish


# ------------------------------------------------------------------ campaign
def _add_campaign(sub) -> None:
    p = sub.add_parser("campaign", help="every instance of every selected transformation, in parallel, resumable, "
                                        "with a report")
    p.add_argument("--program", required=True, help="kernels | cloudsc | kernels:NAME | file.sdfg | file.py:function")
    p.add_argument("--transformation", default="", metavar="all|SPEC[,SPEC...]",
                   help="'all' (every DaCe built-in that makes CPU code plus the target's own), or a comma-separated "
                        "list (default: the target's default set)")
    p.add_argument("--budget", default="60s", metavar="BUDGET",
                   help="per instance: seconds (60, 60s, 5m), executions (200000x) or both (60s,200000x); default 60s")
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="campaign directory: campaign.db, results/, afl/, report.html, report.md (the same DIR "
                        "again continues the campaign)")
    p.add_argument("--fresh", action="store_true", help="start the campaign in --out over")
    p.add_argument("--redo", type=_redo_list, default=(), metavar="VERDICT|Class[,...]",
                   help="run again the finished instances with these verdicts or of these transformations")
    _add_executor_flags(p, default=None, jobs_help="local worker processes (default: the number of cores)")
    _add_instance_options(p)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_campaign)


def _add_executor_flags(p, default, jobs_help: str) -> None:
    """Where instances run: --jobs (local), --dask-local, --scheduler or --slurm (and its options)."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--jobs", type=int, default=default, metavar="N", help=jobs_help)
    where.add_argument("--dask-local", type=int, metavar="N", help="run on a Dask LocalCluster of N workers")
    where.add_argument("--scheduler", metavar="ADDRESS", help="run on a Dask scheduler (tcp://host:8786 or a "
                                                                "scheduler file); workers must see --out's path")
    where.add_argument("--slurm", action="store_true", help="submit Dask workers as Slurm jobs (dask-jobqueue)")
    slurm = p.add_argument_group("Slurm (with --slurm)")
    slurm.add_argument("--slurm-queue", help="partition (sbatch -p)")
    slurm.add_argument("--slurm-account", help="account (sbatch -A)")
    slurm.add_argument("--slurm-walltime", default="02:00:00", help="per job (default 02:00:00)")
    slurm.add_argument("--slurm-cores", type=int, default=8, help="cores per job, one instance each (default 8)")
    slurm.add_argument("--slurm-memory", default="16GB", help="memory per job (default 16GB)")
    slurm.add_argument("--slurm-jobs", type=int, default=1, help="jobs to submit (default 1)")
    slurm.add_argument("--slurm-directive", action="append", default=[], metavar="TEXT",
                       help="one more #SBATCH directive, e.g. --slurm-directive=--constraint=mc (repeatable)")


def elsewhere(args):
    """The executor --dask-local, --scheduler or --slurm ask for; None without them."""
    if args.slurm:
        return ExecutorSpec("slurm", slurm=SlurmOptions(
            queue=args.slurm_queue, account=args.slurm_account, walltime=args.slurm_walltime,
            cores=args.slurm_cores, memory=args.slurm_memory, jobs=args.slurm_jobs, extra=tuple(args.slurm_directive)))
    if args.scheduler:
        return ExecutorSpec("dask", scheduler=args.scheduler)
    if args.dask_local:
        return ExecutorSpec("dask-local", workers=args.dask_local)
    return None


def executor_spec(args):
    """The campaign's executor: as _add_executor_flags ask, else --jobs local workers (default the cores)."""
    import os

    return elsewhere(args) or ExecutorSpec("local", workers=args.jobs or os.cpu_count() or 1)


def cmd_campaign(args) -> int:
    budget = Budget.parse(args.budget)
    config = CampaignConfig(program=args.program, transformations=args.transformation, directory=args.out,
                            budget=budget, options=_fuzz_options(args), fresh=args.fresh, redo=args.redo)
    console = _console()
    executor = executor_spec(args)
    progress = None if args.no_progress else LiveProgress(console)

    def on_planned(state, selection) -> None:
        for line in describe_checks(state.reference_checks()):
            console.print(line)
        counts = state.counts()
        applying = sum(1 for t in state.transformations() if t["instances"])
        console.print(f"campaign {args.out}: {sum(counts.values())} instance(s) of {len(state.transformations())} "
                      f"transformation(s) ({applying} apply) in {args.program}, {budget.describe()} each; "
                      f"{counts['done']} done earlier")

    outcome = run_campaign(config, executor, progress=progress, on_planned=on_planned,
                           plan_progress=PlanDisplay(console))
    print_bugs(console, outcome.directory)
    console.print(f"{outcome.ran} instance(s) run in {outcome.wall_seconds:.0f} s on {executor.kind}; "
                  f"{outcome.done}/{outcome.planned} done")
    if outcome.recovered.get("requeued") or outcome.recovered.get("recorded"):
        console.print(f"continued an interrupted run: {outcome.recovered['recorded']} result(s) recovered, "
                      f"{outcome.recovered['requeued']} instance(s) run again")
    console.print(f"report: {outcome.report} and {outcome.report.with_suffix('.md')}")
    return 0


def _add_report(sub) -> None:
    p = sub.add_parser("report", help="write a campaign's report.html, report.md and summary.json again")
    p.add_argument("directory", type=Path, help="a campaign directory (campaign --out)")
    p.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    path = report.write(args.directory)
    print(f"{path}\n{path.with_suffix('.md')}")
    return 0


# ------------------------------------------------------------------ bugs
def _add_bugs(sub) -> None:
    p = sub.add_parser("bugs", help="cluster the findings of one or several runs into distinct bugs "
                                    "(bugs.json, BUG.md per bug)")
    p.add_argument("runs", type=Path, nargs="+", metavar="RUN_DIR",
                   help="run directories (fuzz or campaign --out); their summary.json lists the findings")
    p.add_argument("--out", type=Path, default=None,
                   help="where bugs.json and bugs/<id>/BUG.md go (default: the first run directory); the "
                        "findings of a bugs.json already there are clustered again with the new ones")
    _add_reduce_flag(p)
    p.add_argument("--work-dir", type=Path, default=Path(".harnessgen"),
                   help="build cache for the programs reduction judges (default .harnessgen)")
    p.set_defaults(func=cmd_bugs)


def cmd_bugs(args) -> int:
    out = args.out or args.runs[0]
    bugs = analyse(args.runs, out, ReduceOptions(seconds=args.reduce_time, max_candidates=args.reduce_candidates,
                                                 judge=JudgeOptions(work_dir=args.work_dir)))
    console = _console()
    print_bugs(console, out)
    findings = sum(len(b.findings) for b in bugs)
    console.print(f"{findings} finding(s) in {len(bugs)} distinct bug(s); {out / 'bugs.json'}, "
                  f"{out / 'bugs'}/<id>/BUG.md")
    return 0


def print_bugs(console, run_dir: Path) -> None:
    """The "Distinct bugs" of a run (from its bugs.json), most instances first, when it has any."""
    import os

    from rich.markup import escape

    rows = bug_rows(run_dir)
    if not rows:
        return
    console.print(f"[bold]distinct bugs:[/] {sum(r['findings'] for r in rows)} finding(s) in {len(rows)}")
    for row in rows:
        size = row["size"]
        where = shown_path(Path(os.path.normpath(Path(run_dir) / row["representative"])))
        console.print(f"  [bold]{row['instances']:>4} x {escape(row['transformation'])} {row['kind']}[/]  {row['id']}\n"
                      f"         {escape(row['description'])}\n         smallest: {escape(where)} ({size})",
                      highlight=False)


# ------------------------------------------------------------------ instances
def _add_instances(sub) -> None:
    p = sub.add_parser("instances", help="list every instance with its cutout's input configuration size")
    p.add_argument("--program", required=True)
    p.add_argument("--transformation", help="as for fuzz (default: the target's default set)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="set a transformation property, VALUE as JSON")
    _add_simplify_flag(p)
    _add_params_flag(p)
    p.add_argument("--max-size", type=int, default=16, help="largest value of a size symbol (default 16)")
    p.add_argument("--prove", action="store_true",
                   help="prove each cutout pair too (nothing is built: a counterexample is shown, not replayed)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_instances)


def cmd_instances(args) -> int:
    run_plan = plan(args.program, args.transformation, None, args.set, simplify=args.simplify,
                    params=ParamOptions(parse_mode(args.params), args.max_size))
    rows = [run_plan.subject.describe(spec, inst, prove_max_size=args.max_size if args.prove else None)
            for spec, inst in run_plan.planned]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{args.transformation or 'default transformations'} in {args.program}: "
                        f"{len(rows)} instance(s)")
    for col in ("id", "program", "form", "match", "input config (elements)", "at 20", "status") + \
            (("proof",) if args.prove else ()):
        table.add_column(col)
    for r in rows:
        vol = f"{r.get('before', '?')} -> {r.get('after', '?')}"
        at = f"{r.get('before_at_20', '?')} -> {r.get('after_at_20', '?')}"
        table.add_row(r["id"], r["program"], r.get("form", "-"), r["match"], vol, at, r["status"],
                      *((r.get("proof", {}).get("summary", "-"),) if args.prove else ()))
    Console().print(table)
    return 0


# ------------------------------------------------------------------ replay
def _add_replay(sub) -> None:
    p = sub.add_parser("replay", help="replay a crash input through cffi and show the difference")
    p.add_argument("input", type=Path, help="a finding directory (runs its repro.py), a crash file "
                                            "(crashes/<target>/<instance>/raw/*.bin) or any input file")
    p.add_argument("--build", type=Path, help="build directory (default: the one recorded next to the crash)")
    _add_tolerance_flags(p, default_from="the build's")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_replay)


def cmd_replay(args) -> int:
    if args.input.is_dir():
        return _run_reproducer(args)
    if not args.input.is_file():
        raise ConfigError(f"replay: no such input file {str(args.input)!r}")
    build_dir = args.build
    for sidecar in (args.input.with_suffix(".json"), args.input.with_name("meta.json"),
                    args.input.parent.parent / "build.json"):
        if build_dir is None and sidecar.is_file():
            build_dir = Path(json.loads(sidecar.read_text())["build_dir"])
    if build_dir is None or not (build_dir / "manifest.json").is_file():
        raise ConfigError("replay: pass --build DIR (the instance's build directory, see summary.json build_dir)")
    tol = _tolerance(args, HarnessBuild.open(build_dir).tolerance)
    result = replay(build_dir, args.input.read_bytes(), tol)
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
    else:
        print(result.describe())
        if result.symbols:
            print("symbols: " + ", ".join(f"{k}={v}" for k, v in result.symbols.items()))
    return 1 if result.outcome.is_finding else 0


def _run_reproducer(args) -> int:
    """``harnessgen replay <finding dir>``: run the finding's own repro.py."""
    import subprocess

    repro = args.input.resolve() / "repro.py"     # absolute: it runs inside its own directory
    if not repro.is_file():
        raise ConfigError(f"replay: {args.input} is not a finding directory (it has no repro.py)")
    extra = ([f"--rtol={args.rtol}"] if args.rtol is not None else []) + \
        ([f"--atol={args.atol}"] if args.atol is not None else []) + (["--exact"] if args.exact else [])
    return subprocess.run([sys.executable, str(repro), *extra], cwd=repro.parent).returncode


# ------------------------------------------------------------------ triage
def _add_triage(sub) -> None:
    p = sub.add_parser("triage", help="turn raw crashes into de-duplicated, minimized reproducers")
    p.add_argument("directory", type=Path, help="a `harnessgen fuzz --out` directory or an AFL++ output directory")
    p.add_argument("--crashes-dir", type=Path, default=Path("crashes"))
    p.add_argument("--work-dir", type=Path, default=Path(".harnessgen"))
    _add_tolerance_flags(p)
    p.add_argument("--max-replays", type=int, default=500, help="raw crashes triaged per instance")
    p.set_defaults(func=cmd_triage)


def cmd_triage(args) -> int:
    if not args.directory.is_dir():
        raise ConfigError(f"triage: no such directory {str(args.directory)!r}")
    options = TriageOptions(tolerance=_tolerance(args), work_dir=args.work_dir,
                            max_raw=args.max_replays, command_line=" ".join(["harnessgen"] + sys.argv[1:]))
    console = _console()
    results = triage_directory(args.directory, args.crashes_dir, options)
    for instance_id, result in results:
        console.print(f"{instance_id}: {result.raw_total} raw crash(es) -> {len(result.findings)} finding(s), "
                      f"{len(result.invalid)} invalid input(s), {len(result.flaky)} flaky, {result.seconds:.1f} s")
        for finding in result.findings:
            console.print(f"    {finding.outcome.name:<11} {finding.folder}")
    if not results:
        console.print("nothing to triage")
    return 0


# ------------------------------------------------------------------ targets
def _add_barriers(sub) -> None:
    p = sub.add_parser("barriers", help="CUDA kernels: which __syncthreads() can go (REDUNDANT_BARRIER) and "
                                        "which are needed (on a GPU; elsewhere the variants are only built)")
    p.add_argument("--program", default="gpukernels", help="gpukernels[:NAME] or DIR[:NAME] of kernel manifests")
    p.add_argument("--inputs", type=int, default=24, help="seed inputs each variant runs on (default 24)")
    p.add_argument("--corpus-dir", type=Path, default=Path("corpus"), help="also the inputs kept for each kernel here")
    p.add_argument("--work-dir", type=Path, default=Path(".harnessgen"))
    p.add_argument("--out", type=Path, help="write the verdicts as JSON to this file")
    p.set_defaults(func=cmd_barriers)


def cmd_barriers(args) -> int:
    target, specs = kernels.resolve(args.program)
    console = _console()
    verdicts = []
    for spec in specs:
        corpus = args.corpus_dir / target / spec.instance(target).id
        for v in barriers.analyse(spec, target, args.work_dir, corpus, args.inputs):
            verdicts.append(v)
            colour = {"REDUNDANT_BARRIER": "yellow", "NEEDED": "green", "BUILT": "cyan"}.get(v.verdict, "red")
            console.print(f"[{colour}]{v.verdict:<17}[/] {spec.source.name}:{v.line} in {v.kernel}  {v.evidence}")
    if args.out:
        write_json(args.out, [v.to_json() for v in verdicts])
    if not verdicts:
        console.print(f"no __syncthreads() in the kernels of {args.program}")
    return 0


def _add_targets(sub) -> None:
    p = sub.add_parser("targets", help="list built-in targets and their programs")
    p.set_defaults(func=cmd_targets)


def cmd_targets(args) -> int:
    for name in sorted(BUILTIN_TARGETS):
        target, _ = resolve(name)
        print(f"{name}: default transformations {', '.join(target.default_transformations)}")
        if target.gpu_transformations:
            print(f"{' ' * len(name)}  --transformation gpu: {', '.join(target.gpu_transformations)}")
        for program, description in target.listing():
            print(f"  {name}:{program:<20} {description}")
    return 0


def _add_generate(sub) -> None:
    p = sub.add_parser("generate", help="print a generated program (generated:SEED), or a guided stream's programs "
                                        "and what they matched (generated:FIRST-LAST)")
    p.add_argument("program", metavar="SEED|FIRST-LAST", help="17, 17+reduce (a seed, block kinds first), or 0-29")
    p.set_defaults(func=cmd_generate)


def cmd_generate(args) -> int:
    target, _ = resolve("generated")
    programs = target.select(args.program)
    span = stream_span(args.program)
    if span is None:
        [program] = programs
        print(program_file(program.name).read_text(), end="")
        return 0
    coverage = stream_coverage(*span)
    for program in programs:
        print(f"generated:{program.name:<24} {program.description}")
    print(f"{coverage['programs']} program(s); matched: "
          + ", ".join(f"{name} {count}" for name, count in coverage["matches"].items()))
    print(f"never matched: {', '.join(coverage['never_matched']) or 'none'}")
    for name, error in coverage["rejected"].items():
        print(f"left out generated:{name}: DaCe could not take it: {error.splitlines()[0]}")
    return 0


# ------------------------------------------------------------------ main
def _add_pyfuzz(sub) -> None:
    p = sub.add_parser("pyfuzz", help="fuzz a Python-level compiler (DaCe's frontend, torch.compile) with Atheris",
                       description="Generated programs, run as written and compiled; findings are triaged into "
                                   "crashes/pyfuzz/<compiler>/. Arguments after -- go to libFuzzer "
                                   "(-fork=2, -dict=FILE, -max_len=N).")
    p.add_argument("--compiler", required=True, choices=["dace", "torch", "tvm"])
    p.add_argument("--time", type=float, default=120.0,
                   help="seconds of fuzzing (default 120; 0: only triage the raw findings already in --out)")
    p.add_argument("--out", type=Path, default=None, help="run directory (default .harnessgen/pyfuzz/<compiler>)")
    p.add_argument("--crashes", type=Path, default=Path("crashes"), help="where findings go (default crashes/)")
    p.add_argument("--mode", choices=["strict", "disruptive"], default="strict",
                   help="strict: valid programs only; disruptive: one rule broken on purpose")
    p.add_argument("--unguided", action="store_true", help="choose operators without the coverage criteria")
    # defaults of the generator's options live in pyfuzz.target, which the engine runs
    p.add_argument("--dims", help="range of every array dimension (default 1-8)")
    p.add_argument("--max-stmts", help="most statements per program (default 8)")
    p.add_argument("--mutations", help="mutation families to apply (default loops,closure,guard,recover; empty: none)")
    p.add_argument("--dace-pass", action="append", default=[], metavar="MODULE:CLASS",
                   help="a transformation applied after auto_optimize (test your own in the pipeline)")
    p.add_argument("--torch-pass", action="append", default=[], metavar="MODULE:FUNCTION",
                   help="a graph pass (graph, example inputs) -> graph run on Dynamo's graph before the backend "
                        "(test your own; harnessgen.pyfuzz.planted_passes:drop_alias_writes is a planted bug)")
    p.add_argument("--compile-modes", default=None, metavar="MODE,...",
                   help="judge only these modes (torch: aot_eager,inductor,inductor-dynamic; dace: "
                        "simplify,auto_optimize; default: all)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--python", default=None, metavar="PATH",
                       help="the interpreter the compiler under test runs in (a nightly, a source build; it "
                            "needs numpy, jinja2 and atheris beside the compiler); harnessgen stays in its venv")
    where.add_argument("--torch", default=None, metavar="VERSION",
                       help="torch VERSION from `make setup-torch TORCH=VERSION` (its own interpreter)")
    p.add_argument("--instrument", default=None, metavar="PREFIX,...",
                   help="modules Atheris instruments (default: the compiler's passes)")
    _add_tolerance_flags(p)
    p.add_argument("--no-shrink", action="store_true", help="write findings without delta debugging")
    p.add_argument("--shrink-time", type=float, default=300.0, help="seconds of delta debugging per finding")
    p.add_argument("--fresh", action="store_true", help="start over instead of continuing the corpus")
    p.add_argument("--seed", type=int, default=0, help="libFuzzer's seed (0: its own choice)")
    p.add_argument("libfuzzer", nargs="*", help="libFuzzer flags, after --")
    p.set_defaults(func=cmd_pyfuzz)


def cmd_pyfuzz(args) -> int:
    target_args = ["--mode", args.mode] + (["--unguided"] if args.unguided else [])
    for flag, value in (("--dims", args.dims), ("--max-stmts", args.max_stmts), ("--mutations", args.mutations),
                        ("--instrument", args.instrument)):
        if value is not None:
            target_args += [flag, value]

    if args.dace_pass and args.compiler != "dace" or args.torch_pass and args.compiler != "torch":
        raise ConfigError(f"--dace-pass is for --compiler dace, --torch-pass for --compiler torch; "
                          f"this run is --compiler {args.compiler}")
    python = resolve_python(args.compiler, args.python, args.torch)
    default_out = Path(".harnessgen/pyfuzz") / (args.compiler + (f"-{args.torch}" if args.torch else ""))
    config = PyFuzzConfig(compiler=args.compiler, out_dir=args.out or default_out,
                          modes=[m for m in (args.compile_modes or "").split(",") if m], python=python,
                          crashes_dir=args.crashes, time_s=args.time, target_args=target_args,
                          passes=args.dace_pass + args.torch_pass,
                          libfuzzer=args.libfuzzer, tolerance=_tolerance(args),
                          shrink=not args.no_shrink, shrink_budget_s=args.shrink_time, fresh=args.fresh,
                          seed=args.seed)
    console = _console()
    console.print(f"pyfuzz {args.compiler}: {args.time:.0f} s of fuzzing into {config.out_dir}")
    summary = run_pyfuzz(config)
    console.print(f"{summary['execs']} programs in {summary['seconds']} s ({summary['execs_per_sec']:.2f}/s); "
                  f"outcomes {summary['outcomes']}; coverage {summary['coverage']}")
    for finding in summary["findings"]:
        console.print(f"  [bold red]{finding['outcome']}[/] {finding['detail']}\n    {finding['directory']}/repro.py")
    if not summary["findings"]:
        console.print("no findings")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harnessgen", description="Fuzz compiler optimizations in isolation.")
    parser.add_argument("--version", action="version", version=f"harnessgen {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_fuzz(sub)
    _add_campaign(sub)
    _add_report(sub)
    _add_bugs(sub)
    _add_instances(sub)
    _add_replay(sub)
    _add_triage(sub)
    _add_targets(sub)
    _add_generate(sub)
    _add_barriers(sub)
    _add_pyfuzz(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as exc:
        _console().print(f"[bold red]error:[/] {exc}")
        return 2
    except Unsupported as exc:
        _console().print(f"[bold yellow]unsupported:[/] {exc}")
        return 3
    except InternalError as exc:
        _console().print(f"[bold red]internal error (a bug in harnessgen, please report):[/] {exc}")
        return 70
    except HarnessgenError as exc:
        _console().print(f"[bold red]error:[/] {exc}")
        return 1
    except KeyboardInterrupt:
        _console().print("interrupted; AFL++ output and findings so far are kept")
        return 130


if __name__ == "__main__":
    sys.exit(main())
