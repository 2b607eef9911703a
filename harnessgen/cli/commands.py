"""``harnessgen`` command line. The ``fuzz`` flags are a contract other tools rely on."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import List, Optional

from .. import __version__, api, ci
from ..bugs.analysis import analyse
from ..bugs.reduce import ReduceOptions
from ..bugs.versions import rejudge_here, requested_versions
from ..campaign import Budget, CampaignConfig, run_campaign, run_report as report
from ..campaign.worker import worker_subject
from ..campaign.retriage import triage_directory
from ..checks.reference_check import describe_checks
from ..core.errors import ConfigError, HarnessgenError, InternalError, Unsupported
from ..core.files import write_atomic, write_json
from ..core.records import AUDIT_DEFERRED
from ..gpukernels import barriers, spec as kernels
from ..harness.built import HarnessBuild
from ..harness.judge import JudgeOptions
from ..harness.replay import replay
from ..plan.params import ParamOptions, parse_mode
from ..progen.target import program_file, stream_coverage, stream_span
from ..pyfuzz.interpreters import resolve_python
from ..pyfuzz.run import PyFuzzConfig, run_pyfuzz
from ..recipe import report as recipe_report, steps as recipe_steps
from ..subjects import plan, split_ids
from ..targets import BUILTIN_TARGETS, resolve
from ..triage.classify import TriageOptions
from . import render
from .options import (add_executor_flags, add_instance_options, add_params_flag, add_reduce_flag, add_simplify_flag,
                      add_tolerance_flags, elsewhere, executor_spec, fuzz_options, redo_list, tolerance_from)
from .progress import AflProgress, LiveProgress, PlanDisplay


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
    p.add_argument("--execs", type=int, metavar="N",
                   help="... and afl-fuzz stops after N executions (afl-fuzz -E; all its instances together): "
                        "a budget that does not depend on the machine's speed")
    add_executor_flags(p, default=1, jobs_help=(
        "instances fuzzed at the same time, in local worker processes (default 1: in this process, with live "
        "statistics); with a single instance, afl-fuzz instances on it sharing one sync directory: -M main, "
        "-S s1 (with CMPLOG), -S s2, ..."))
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="whole run: no instance starts after this; the same command again continues "
                        "with the instances not yet done (default: no limit)")
    p.add_argument("--fresh", action="store_true",
                   help="fuzz every instance again instead of continuing the run in --out")
    p.add_argument("--redo", type=redo_list, default=(), metavar="VERDICT|Class[,...]",
                   help="continue the run in --out, but fuzz again the instances that ended with one of "
                        "these verdicts or belong to these transformations (e.g. UNSUPPORTED after "
                        "upgrading harnessgen, or MyTransformation after changing it)")
    p.add_argument("--out", type=Path, default=Path(".harnessgen/runs/latest"), metavar="DIR",
                   help="the run directory: summary.json, report.html, campaign.db (its state) and AFL++'s output")
    p.add_argument("--until-crash", action="store_true", help="stop an instance at its first crash")
    p.add_argument("--build-only", action="store_true",
                   help="build every instance's libraries and harness, fuzz none (verdict BUILT; a GPU "
                        "instance on a machine without a GPU ends so anyway)")
    add_instance_options(p)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_fuzz)


def cmd_fuzz(args) -> int:
    _fuzz_and_show(args)
    return 0


def _fuzz_and_show(args) -> list:
    """The fuzz run the flags ask for, shown as it goes; its results."""
    options = fuzz_options(args, time_s=args.time, budget_s=args.budget, resume=not args.fresh, redo=args.redo,
                           out_dir=args.out, until_crash=args.until_crash, show_progress=not args.no_progress,
                           build_only=args.build_only, max_execs=args.execs)
    console = render.console()
    # live afl-fuzz statistics of one instance at a time, read from its afl-fuzz folder by this
    # process: with --jobs over several instances, a line per instance (on one instance, --jobs
    # means afl-fuzz instances)
    one_instance = len(split_ids(args.instance)) == 1
    bars = AflProgress(console, args.time) if not args.no_progress and (args.jobs <= 1 or one_instance) and \
        console.is_terminal else None
    planned, done = [0], [0]      # instances in the run, and finished ones (set by the callbacks)
    audits = [0, 0]               # deferred audits: queued, done
    began = time.monotonic()

    def position(count: int, total: int) -> str:
        """``[n/N]``, and with a bound the time left in it."""
        left = f", {max(0.0, args.budget - (time.monotonic() - began)):.0f} s left" if args.budget else ""
        return f"[{count}/{total}{left}]"

    def on_plan(total: int, already: int, checks: list, enumerating: list = ()) -> None:
        planned[0] = total
        done[0] = already
        budget = f", no instance starting after {args.budget:g} s" if args.budget else ""
        console.print(render.opening_line(total, enumerating, args.transformation or render.DEFAULT_TRANSFORMATIONS,
                                          args.program) + f"; {args.time:g} s each, {args.jobs} at a time{budget}")
        if already:
            console.print(f"{already} of them done by an earlier run into {args.out} (--fresh starts over)")

    def on_result(result) -> None:
        if bars is not None:
            bars.finish(result)
        done[0] += 1
        audits[0] += (result.audit or {}).get("verdict") == AUDIT_DEFERRED
        for line in render.result_lines(result, position(done[0], planned[0])):
            console.print(line)

    def on_checks(records: list) -> None:
        for line in describe_checks(records):
            console.print(line)

    def on_audit(result) -> None:
        audits[1] += 1
        for line in render.audited_lines(result, "audit " + position(audits[1], audits[0])):
            console.print(line)

    def on_more(row, seconds: float, count: int) -> None:
        planned[0] += count
        console.print(render.enumeration_line(row, seconds, count=count) + " [dim](enumerated beside the run)[/]")

    console.print(f"planning {render.escape(args.program)} x "
                  f"{render.escape(args.transformation or render.DEFAULT_TRANSFORMATIONS)} (DaCe {render.dace_version()})")
    hooks = api.Hooks(live=bars.update if bars is not None else None, on_result=on_result, on_plan=on_plan,
                      plan_progress=PlanDisplay(console), on_more=on_more, on_audit=on_audit,
                      on_checks=on_checks)
    results = api.judge(args.program, args.transformation, options, instances=args.instance, settings=args.set,
                        jobs=args.jobs or 1, executor=elsewhere(args), hooks=hooks).results
    for line in render.bug_lines(args.out):
        console.print(line)
    for table in (render.summary_table(results), render.program_table(results, args.out)):
        if table is not None:
            console.print(table)
    for line in render.reproducer_lines(results) + [render.verdict_count_line(results, args.out / "summary.json")] + \
            render.attention_lines(results, args.out, args.verbose):
        console.print(line)
    return results


# ------------------------------------------------------------------ recipe
def _recordings(program_spec: str, spec: str):
    """The recipe recorded on each selected program (or read back where it was), before the run
    plans its steps from the same recordings; and the target's name."""
    subject = worker_subject(program_spec)
    change = subject.change(spec)
    change.instances(subject.target, subject.target.select(subject.program), subject.sdfg, None)
    return subject.target.name, [recording for _, recording in sorted(change.recordings.items())]


def _add_recipe(sub) -> None:
    p = sub.add_parser("recipe", help="judge a user's own optimization step by step: every transformation and "
                                      "pass it applied, where it applied it, and the first step that makes the "
                                      "program wrong")
    p.add_argument("--program", required=True, help="kernels:NAME | cloudsc | file.sdfg | file.py:function")
    p.add_argument("--recipe", metavar="FILE.py:FUNCTION|MODULE:FUNCTION",
                   help="a function that takes the program's SDFG (as its frontend wrote it) and optimizes it in "
                        "place, with any of DaCe's entry points (default: the target's own recipe, cloudsc's)")
    p.add_argument("--time", type=float, default=10.0, metavar="SECONDS",
                   help="budget per step: seed screening plus afl-fuzz (default 10)")
    add_executor_flags(p, default=1, jobs_help="steps judged at the same time, in local worker processes (default 1)")
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="whole run: no step starts after this; the same command again continues (default: no limit)")
    p.add_argument("--fresh", action="store_true", help="judge every step again instead of continuing the run in --out")
    p.add_argument("--out", type=Path, default=Path(".harnessgen/runs/recipe"), metavar="DIR",
                   help="the run directory: recipe.md, recipe.json, summary.json, report.html")
    add_instance_options(p)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_recipe, transformation=None, instance=None, all=True, set=[], execs=None, redo=(),
                   until_crash=False, build_only=False)


def cmd_recipe(args) -> int:
    recipe = args.recipe or resolve(args.program)[0].recipe
    if not recipe:
        raise ConfigError(f"--recipe: {args.program} has no recipe of its own: give file.py:function")
    spec = recipe_steps.PREFIX + recipe
    args.transformation = spec
    console = render.console()
    console.print(f"recording {render.escape(recipe)} on {render.escape(args.program)} ...")
    target, recorded = _recordings(args.program, spec)
    for recording in recorded:
        console.print(f"  {len(recording.steps)} steps recorded on {recording.program} in {recording.seconds:.1f} s"
                      + (f"; the recipe raised: {render.escape(recording.error.strip().splitlines()[-1])}"
                         if recording.error else ""))
    results = {r.id: r.to_json() for r in _fuzz_and_show(args)}
    reports = [recipe_report.recipe_report(recording, results, target, spec) for recording in recorded]
    path = recipe_report.write(args.out, reports)
    for report in reports:
        for line in recipe_report.headline(report):
            console.print(render.escape(line))
    if path is not None:
        console.print(f"every step with its verdict: {path}")
    return 0


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
    p.add_argument("--redo", type=redo_list, default=(), metavar="VERDICT|Class[,...]",
                   help="run again the finished instances with these verdicts or of these transformations")
    add_executor_flags(p, default=None, jobs_help="local worker processes (default: the number of cores)")
    add_instance_options(p)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_campaign)


def cmd_campaign(args) -> int:
    budget = Budget.parse(args.budget)
    config = CampaignConfig(program=args.program, transformations=args.transformation, directory=args.out,
                            budget=budget, options=fuzz_options(args), fresh=args.fresh, redo=args.redo)
    console = render.console()
    executor = executor_spec(args)
    progress = None if args.no_progress else LiveProgress(console)

    def on_planned(state, selection) -> None:
        counts = state.counts()
        applying = sum(1 for t in state.transformations() if t["instances"])
        console.print(f"campaign {args.out}: {sum(counts.values())} instance(s) of {len(state.transformations())} "
                      f"transformation(s) ({applying} apply) in {args.program}, {budget.describe()} each; "
                      f"{counts['done']} done earlier")

    outcome = run_campaign(config, executor, progress=progress, on_planned=on_planned,
                           plan_progress=PlanDisplay(console))
    for line in render.bug_lines(outcome.directory):
        console.print(line)
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
    add_reduce_flag(p)
    p.add_argument("--work-dir", type=Path, default=Path(".harnessgen"),
                   help="build cache for the programs reduction judges (default .harnessgen)")
    p.add_argument("--on-dace", type=requested_versions, default=[], metavar="VERSION[,VERSION]",
                   help="judge each bug again on these DaCe versions, each in its environment (this one, the "
                        "checkout's .venv, or make setup-dace DACE=VERSION): still present, fails otherwise, fixed, "
                        "cannot apply")
    p.set_defaults(func=cmd_bugs)


def cmd_bugs(args) -> int:
    out = args.out or args.runs[0]
    console = render.console()
    bugs = analyse(args.runs, out, ReduceOptions(seconds=args.reduce_time, max_candidates=args.reduce_candidates,
                                                 judge=JudgeOptions(work_dir=args.work_dir)),
                   step=PlanDisplay(console).step, on_dace=args.on_dace)
    for line in render.bug_lines(out):
        console.print(line)
    if (Path(out) / "campaign.db").is_file():       # a run's report shows its bugs: drawn again with them
        report.write(out)
    findings = sum(len(b.findings) for b in bugs)
    console.print(f"{findings} finding(s) in {len(bugs)} distinct bug(s); {out / 'bugs.json'}, "
                  f"{out / 'bugs'}/<id>/BUG.md")
    return 0


def _add_rejudge(sub) -> None:
    p = sub.add_parser("rejudge", help="judge one finding again with the DaCe of this environment; prints one "
                                       "JSON line (what harnessgen bugs --on-dace runs in each environment)")
    p.add_argument("finding", type=Path, metavar="FINDING_DIR")
    p.add_argument("--work-dir", type=Path, default=Path(".harnessgen"), help="build cache (default .harnessgen)")
    p.add_argument("--seeds", type=int, default=12, help="boundary seeds besides the finding's input (default 12)")
    p.set_defaults(func=cmd_rejudge)


def cmd_rejudge(args) -> int:
    if not args.finding.is_dir():
        raise ConfigError(f"{args.finding} is not a finding folder (crashes/<target>/<instance>/<finding>)")
    verdict = rejudge_here(args.finding, JudgeOptions(work_dir=args.work_dir), args.seeds)
    print(json.dumps(verdict.to_json()), flush=True)
    return 0


# ------------------------------------------------------------------ ci
def _add_ci(sub) -> None:
    p = sub.add_parser("ci", help="the pull-request check of a DaCe checkout: the transformations and passes changed "
                                  "between two revisions judged at head, each bug judged again at base; only new "
                                  "bugs fail it (exit 1), as JUnit XML and Markdown")
    p.add_argument("--dace", type=Path, required=True, metavar="CHECKOUT", help="a DaCe git checkout")
    p.add_argument("--base", required=True, metavar="REV", help="the revision the pull request is based on")
    p.add_argument("--head", default="HEAD", metavar="REV", help="the pull request's revision (default HEAD)")
    p.add_argument("--program", action="append", default=[], metavar="PROGRAM",
                   help="a program of yours to judge every changed class on first, as for fuzz (repeatable)")
    p.add_argument("--builtin", default="", metavar="TARGETS",
                   help="built-in targets to judge every changed class on as well, comma-separated (cloudsc: "
                        "our CLOUDSC port)")
    p.add_argument("--exercise", default=",".join(ci.EXERCISE), metavar="SOURCES",
                   help="where programs for a changed class come from, in order, each only for the classes the "
                        "ones before gave no judged instance: tests (the programs the checkout's own tests, "
                        "head's and base's, apply the class to), kernels, npbench (the npbench target), "
                        "npbench-tests (the checkout's tests/npbench), generated (programs generated for the "
                        f"classes); default {','.join(ci.EXERCISE)}; '' for none")
    p.add_argument("--bound", type=float, default=1800.0, metavar="SECONDS",
                   help="no program source starts after this many seconds from the start (default 1800)")
    p.add_argument("--time", type=float, default=10.0, help="fuzzing seconds per instance (default 10)")
    p.add_argument("--budget", type=float, default=600.0,
                   help="per program: no instance starts after this many seconds (default 600)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="worker processes of each program's run (default: the cores)")
    p.add_argument("--audit-time", type=float, default=15.0, metavar="S",
                   help="each instance's whole-program audit, in seconds (default 15; fuzz's is 60)")
    p.add_argument("--params", default="default", metavar="MODE",
                   help="parameter variants per match, as for fuzz (default: default, the transformation as it is)")
    p.add_argument("--out", type=Path, default=Path(".harnessgen/ci"), help="where everything goes (default "
                                                                           ".harnessgen/ci)")
    p.add_argument("--junit", type=Path, help="JUnit XML (default <out>/junit.xml)")
    p.add_argument("--markdown", type=Path, help="the pull request's summary (default <out>/summary.md)")
    p.set_defaults(func=cmd_ci)


def _ci_programs(args) -> tuple:
    builtin = tuple(p.strip() for p in args.builtin.split(",") if p.strip())
    unknown = [p for p in builtin if p.split(":")[0] not in BUILTIN_TARGETS]
    if unknown:
        raise ConfigError(f"--builtin {','.join(unknown)}: not a built-in target (one of {', '.join(BUILTIN_TARGETS)})")
    return builtin + tuple(args.program)


def _ci_exercise(args) -> tuple:
    sources = tuple(s.strip() for s in args.exercise.split(",") if s.strip())
    unknown = [s for s in sources if s not in ci.SOURCES]
    if unknown:
        raise ConfigError(f"--exercise {','.join(unknown)}: not a program source (one of {', '.join(ci.SOURCES)})")
    if not sources and not _ci_programs(args):
        raise ConfigError("--exercise '' and no --program or --builtin: name at least one program to judge the "
                          "changes on")
    return sources


def cmd_ci(args) -> int:
    options = ci.CiOptions(repo=args.dace, base=args.base, head=args.head,
                           programs=_ci_programs(args), exercise=_ci_exercise(args), bound_s=args.bound,
                           time_s=args.time,
                           budget_s=args.budget, params=args.params, jobs=args.jobs,
                           audit_time_s=args.audit_time, out=args.out)
    console = render.console()
    result = ci.run_ci(options, say=lambda line: console.print(render.escape(line)))
    junit = args.junit or args.out / "junit.xml"
    summary = args.markdown or args.out / "summary.md"
    write_atomic(junit, ci.junit(result))
    write_atomic(summary, ci.markdown(result).encode())
    for bug in result.bugs:
        label = "[bold red]new[/]" if bug.new else "[yellow]pre-existing[/]"
        console.print(f"  {label} {bug.kind} of {render.escape(bug.transformation)} on "
                      f"{render.escape(bug.shown_by or bug.program)} "
                      f"(base: {bug.base_verdict}): python {render.escape(bug.reproducer)}/repro.py")
    for error in result.errors:
        label = "[bold red]new ERROR[/]" if error.new else "[yellow]ERROR at base too[/]"
        console.print(f"  {label} {render.escape(error.id)} not judged at head (base: {render.escape(error.base_verdict)})"
                      f": {render.escape(error.reason.splitlines()[0][:200] if error.reason else '')}")
    for missing in result.not_exercised:
        console.print(f"  [yellow]not exercised[/] {render.escape(missing.reason)}")
    console.print(f"{len(result.new)} new bug(s), {len(result.bugs) - len(result.new)} pre-existing, "
                  f"{len(result.new_errors)} new ERROR(s), in {result.seconds:g} s; {junit}, {summary}")
    return result.exit_code


# ------------------------------------------------------------------ instances
def _add_instances(sub) -> None:
    p = sub.add_parser("instances", help="list every instance with its cutout's input configuration size")
    p.add_argument("--program", required=True)
    p.add_argument("--transformation", help="as for fuzz (default: the target's default set)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="set a transformation property, VALUE as JSON")
    add_simplify_flag(p)
    add_params_flag(p)
    p.add_argument("--max-size", type=int, default=16, help="largest value of a size symbol (default 16)")
    p.add_argument("--prove", action="store_true",
                   help="prove each cutout pair too (nothing is built: a counterexample is shown, not replayed)")
    p.add_argument("--builds", action="store_true",
                   help="compile the pre of each pair that would be built (-fsyntax-only) and, where it fails, the "
                        "program it was cut from: a pre that fails where its program compiles is harnessgen's "
                        "defect (exit 1)")
    p.add_argument("--work-dir", type=Path, default=Path(".harnessgen"),
                   help="precompiled headers and the cause registry, for --builds (default .harnessgen)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_instances)


def cmd_instances(args) -> int:
    with render.stdout_kept_for_json() if args.json else contextlib.nullcontext():
        run_plan = plan(args.program, args.transformation, None, args.set, simplify=args.simplify,
                        params=ParamOptions(parse_mode(args.params), args.max_size))
        builds = args.work_dir if args.builds else None
        rows = [run_plan.subject.describe(spec, inst, prove_max_size=args.max_size if args.prove else None,
                                          builds=builds)
                for spec, inst in run_plan.planned]
    ours = [r for r in rows if r.get("builds", {}).get("pre") is False and not r["builds"]["dace_made"]]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 1 if ours else 0
    title = f"{args.transformation or 'default transformations'} in {args.program}: {len(rows)} instance(s)"
    out = render.stdout_console()
    out.print(render.instances_table(rows, title, args.prove))
    declined = [{"spec": spec, "class_name": run_plan.subject.transformation_name(spec),
                 "declined": run_plan.subject.declined(spec)} for spec in run_plan.specs]
    for line in render.declined_lines(declined):
        out.print(line)
    if builds is not None:
        for line in render.build_check_lines(rows):
            out.print(line)
    return 1 if ours else 0


# ------------------------------------------------------------------ replay
def _add_replay(sub) -> None:
    p = sub.add_parser("replay", help="replay a crash input through cffi and show the difference")
    p.add_argument("input", type=Path, help="a finding directory (runs its repro.py), a crash file "
                                            "(crashes/<target>/<instance>/raw/*.bin) or any input file")
    p.add_argument("--build", type=Path, help="build directory (default: the one recorded next to the crash)")
    add_tolerance_flags(p, default_from="the build's")
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
    tol = tolerance_from(args, HarnessBuild.open(build_dir).tolerance)
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
    add_tolerance_flags(p)
    p.add_argument("--max-replays", type=int, default=500, help="raw crashes triaged per instance")
    p.set_defaults(func=cmd_triage)


def cmd_triage(args) -> int:
    if not args.directory.is_dir():
        raise ConfigError(f"triage: no such directory {str(args.directory)!r}")
    options = TriageOptions(tolerance=tolerance_from(args), work_dir=args.work_dir,
                            max_raw=args.max_replays, command_line=" ".join(["harnessgen"] + sys.argv[1:]))
    console = render.console()
    results = triage_directory(args.directory, args.crashes_dir, options)
    for instance_id, result in results:
        for line in render.triage_lines(instance_id, result):
            console.print(line)
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
    console = render.console()
    verdicts = []
    for spec in specs:
        corpus = args.corpus_dir / target / spec.instance(target).id
        for v in barriers.analyse(spec, target, args.work_dir, corpus, args.inputs):
            verdicts.append(v)
            console.print(render.barrier_line(spec.source.name, v))
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
        try:
            target, _ = resolve(name)
        except ConfigError as exc:      # a target of others' programs without its checkout
            print(f"{name}: not available here ({exc})")
            continue
        defaults = ", ".join(target.default_transformations) or "all (every CPU built-in that matches)"
        print(f"{name}: default transformations {defaults}")
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
    add_tolerance_flags(p)
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
                          libfuzzer=args.libfuzzer, tolerance=tolerance_from(args),
                          shrink=not args.no_shrink, shrink_budget_s=args.shrink_time, fresh=args.fresh,
                          seed=args.seed)
    console = render.console()
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
    _add_recipe(sub)
    _add_campaign(sub)
    _add_report(sub)
    _add_bugs(sub)
    _add_rejudge(sub)
    _add_ci(sub)
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
        render.console().print(f"[bold red]error:[/] {render.escape(str(exc))}")
        return 2
    except Unsupported as exc:
        render.console().print(f"[bold yellow]unsupported:[/] {render.escape(str(exc))}")
        return 3
    except InternalError as exc:
        render.console().print(f"[bold red]internal error (a bug in harnessgen, please report):[/] "
                                 f"{render.escape(str(exc))}")
        return 70
    except HarnessgenError as exc:
        render.console().print(f"[bold red]error:[/] {render.escape(str(exc))}")
        return 1
    except KeyboardInterrupt:
        render.console().print("interrupted; AFL++ output and findings so far are kept")
        return 130


if __name__ == "__main__":
    sys.exit(main())
