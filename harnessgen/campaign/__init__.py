"""The driver of every run, ``harnessgen fuzz`` and ``harnessgen campaign`` alike: every
planned instance goes through the runner (prepare -> fuzz -> triage) with a per-instance
budget, through an executor (``executors``: in this process, forked local workers, Dask,
Slurm), with its state in SQLite (``state``) so that the same command continues a killed run,
and a report (``report``) at the end.

Run directory::

    campaign.db                      state: plan, instance states and results, runs
    results/<id>.json                each finished instance's result, written by its worker
    afl/<id>/                        the instance's afl-fuzz sync directory
    errors/<id>.txt, warnings.log    harnessgen's own errors; library warnings
    report.html, report.md, report/  the report (plots as PNG files for the Markdown one)
    summary.json                     per transformation and per instance, for scripts

Findings go to ``crashes/<target>/<instance>/`` and builds are shared through the build cache
(``.harnessgen/builds``): instances with identical cutouts build once.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import re
import shutil
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

from ..bugs.reduce import ReduceOptions
from ..checks.reference_check import not_finished
from ..core import runlog, shared_pairs
from ..core.errors import ConfigError
from ..core.files import clear_stale_omp_registrations, write_json
from ..core.records import audit_deferred
from ..dacecompat import dace_version
from ..harness.judge import JudgeOptions
from . import planning, run_report as report
from .executors import ExecutorSpec, open_executor
from .planning import AUDITS, MAIN, VARIANTS, WHOLE, BackgroundChecks, DeferredPlanner, Plan, PlanProgress
from .schedule import FINDING_AUDIT_SHARE, Scheduler, median_walls
from .state import CampaignState
from .worker import RESULTS_DIR, Task, error_result, remember, result_file, run_task, worker_subject

DB_NAME = "campaign.db"
# a worker that dies this many times on one instance while judging it alone (a crash in DaCe or
# the compiler, a kill) ends it as ERROR
MAX_DEATHS = 2

_BUDGET_PART = re.compile(r"^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*(s|m|h|x|execs)?\s*$", re.IGNORECASE)


@dataclasses.dataclass
class Budget:
    """Per instance: seconds (seed screening plus fuzzing) and, optionally, executions."""

    seconds: float
    execs: Optional[int] = None

    @classmethod
    def parse(cls, text: str, cap_seconds: float = 3600.0) -> "Budget":
        """``30`` or ``30s``, ``5m``, ``2h``; ``200000x`` or ``2e5execs``; both: ``60s,2e5x``.
        An executions-only budget keeps ``cap_seconds`` as its time limit."""
        seconds, execs = None, None
        for part in str(text).split(","):
            match = _BUDGET_PART.match(part)
            if not match:
                raise ConfigError(f"--budget {text!r}: expected seconds (30, 30s, 5m, 2h) and/or executions "
                                  "(200000x, 2e5execs), comma-separated")
            value, unit = float(match.group(1)), (match.group(2) or "s").lower()
            if unit in ("x", "execs"):
                execs = int(value)
            else:
                seconds = value * {"s": 1, "m": 60, "h": 3600}[unit]
        if (seconds is not None and seconds < 1) or (execs is not None and execs < 1):
            raise ConfigError(f"--budget {text!r}: at least 1 s and 1 execution")
        return cls(seconds if seconds is not None else cap_seconds, execs)

    def describe(self) -> str:
        return f"{self.seconds:g} s" + (f" or {self.execs:,} execs" if self.execs else "")


@dataclasses.dataclass
class CampaignConfig:
    program: str                          # --program
    transformations: str                  # "all", "" (the target's default set), or comma-separated specs
    directory: Path
    budget: Budget                        # per instance
    options: object                       # harnessgen.core.records.FuzzOptions: oracle, seeds, work/corpus/crashes dirs
    fresh: bool = False
    redo: tuple = ()                      # finished instances with these verdicts or transformations run again
    instance_ids: Optional[List[str]] = None   # --instance: only these
    settings: Optional[List[str]] = None       # --set: properties of the one transformation
    run_budget_s: Optional[float] = None       # no instance starts after this many seconds of the run
    # plan on every run and run that plan only, starting the state over when the program or the
    # transformations differ from the directory's (fuzz: its default --out serves every command);
    # else plan once and continue that plan, refusing a directory that holds another campaign
    replan: bool = False
    # a transformation that cannot be enumerated ends the command; else it is recorded and skipped
    strict_plan: bool = False
    planned: Optional[Plan] = None        # what plan() returned, where the caller has planned already
    summary: str = "campaign"             # which summary.json it writes (report.SUMMARIES)
    run_settings: Dict = dataclasses.field(default_factory=dict)   # what a "run" summary records of it
    # time.monotonic() when the command began (the bound counts from there: planning is in it);
    # None: when run_campaign is called
    began: Optional[float] = None

    @property
    def identity(self) -> Dict[str, str]:
        identity = {"program": self.program, "transformations": self.transformations or "default",
                    "simplify": "no" if getattr(self.options, "simplify", None) is False else "yes",
                    # results of one DaCe never stand for another's (run directories from before
                    # this key are taken as the DaCe they were made with)
                    "dace": dace_version()}
        params = getattr(self.options, "params", "default")
        if params != "default":          # run directories from before --params keep their identity
            identity["params"] = params
        content = program_content(self.program)
        if content:                      # an edited program is another campaign: its verdicts are not the old ones'
            identity["program content"] = content
        return identity


def program_content(spec: str) -> str:
    """What the programs a ``--program`` value names are made of, as a key ("" where a program's
    content is unknown, or the value is not a target's)."""
    from ..targets import resolve
    from ..targets.loaders import content_identity

    try:
        target, name = resolve(spec)
        identities = [program.identity for program in target.select(name)]
    except Exception:  # noqa: BLE001 -- a subject other than a target's (a kernel file): its own checks
        return ""
    if not identities or not all(identities):
        return ""
    return content_identity(*(i.encode() for i in identities))


@dataclasses.dataclass
class CampaignOutcome:
    directory: Path
    planned: int
    done: int                             # finished instances (this run and earlier ones)
    ran: int                              # finished by this run
    recovered: Dict[str, int]
    wall_seconds: float
    executor: str
    report: Optional[Path] = None


def plan(config: CampaignConfig, progress: Optional[PlanProgress] = None, defer: bool = False) -> Plan:
    """Every instance of the run (``planning.plan``): with ``defer``, transformations that work
    on whole programs are left to be enumerated beside the run (``Plan.deferred``)."""
    return planning.plan(config, progress, defer=defer)


def _instance_options(config: CampaignConfig):
    """Absolute paths: a Dask worker may run anywhere the run directory is mounted."""
    opts = config.options
    return dataclasses.replace(
        opts, out_dir=Path(config.directory).resolve(), time_s=config.budget.seconds,
        max_execs=config.budget.execs, budget_s=None, resume=True, show_progress=False,
        work_dir=Path(opts.work_dir).resolve(), corpus_root=Path(opts.corpus_root).resolve(),
        crashes_root=Path(opts.crashes_root).resolve(),
        constraints=Path(opts.constraints).resolve() if opts.constraints else None,
        # a bound judges every match before it audits any: the audits wait in their own queue
        defer_audits=opts.defer_audits or config.run_budget_s is not None)


class _BrokenExecutor(Exception):
    """The local pool lost a worker; the instances it held are back in the queue."""


def run_campaign(config: CampaignConfig, executor: ExecutorSpec, progress=None,
                 on_planned: Optional[Callable[[CampaignState, Optional[List[str]]], None]] = None,
                 plan_progress: Optional[PlanProgress] = None) -> CampaignOutcome:
    """Plan (or continue) the run in ``config.directory`` and run every pending instance of the
    plan. ``progress`` receives ``start(state, executor)``, ``update(running)``,
    ``finished(result)`` and ``stop()`` (see ``progress.LiveProgress``); ``on_planned(state,
    selection)`` the state once planned and the ids this run is about (None: all)."""
    started = config.began if config.began is not None else time.monotonic()
    clear_stale_omp_registrations()
    directory = Path(config.directory)
    if config.fresh:
        start_over(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with runlog.captured_warnings(directory, echo=config.options.verbose):
        state = _open_state(config, directory)
        try:
            return _run_planned(config, executor, state, directory, started, progress, on_planned, plan_progress)
        finally:
            state.close()


def start_over(directory: Path) -> None:
    """--fresh: the state, every result, afl-fuzz's folders and the warnings go; findings stay."""
    (directory / DB_NAME).unlink(missing_ok=True)
    (directory / runlog.LOG_NAME).unlink(missing_ok=True)
    for folder in (RESULTS_DIR, "afl", "instances", shared_pairs.PAIRS_DIR):
        shutil.rmtree(directory / folder, ignore_errors=True)


def _open_state(config: CampaignConfig, directory: Path) -> CampaignState:
    state = CampaignState(directory / DB_NAME)
    if config.replan and not state.is_same(config.identity):
        state.close()
        (directory / DB_NAME).unlink()
        # another campaign's claims: its representatives' verdicts are not this one's
        shutil.rmtree(directory / shared_pairs.PAIRS_DIR, ignore_errors=True)
        state = CampaignState(directory / DB_NAME)
    state.check_same(config.identity)
    return state


def _run_planned(config: CampaignConfig, executor: ExecutorSpec, state: CampaignState, directory: Path,
                 started: float, progress, on_planned, plan_progress: Optional[PlanProgress] = None) -> CampaignOutcome:
    selection = None
    planner = None
    checks = None
    config = _with_target_constraints(config)
    if config.replan or not state.is_planned():
        planned = config.planned or plan(config, plan_progress, defer=True)
        state.record_plan(config.identity, planned.xform_rows, planned.rows)
        remember(config.program, planned.subject)
        selection = [row["id"] for row in planned.rows] if config.replan else None
        if planned.deferred:
            planner = DeferredPlanner(planned, config, first_position=len(planned.rows))
        # the reference checks run beside the instances (none waits on them); their records
        # come when done (``_Feed.poll``)
        checks = BackgroundChecks(config.program, config.options) if config.options.reference_check else None
        state.set_meta({"reference_checks": "[]"})
    state.set_meta({"summary": config.summary, "run_settings": json.dumps(config.run_settings),
                    "selection": json.dumps(selection), "not_enumerated": json.dumps(
                        planner.pending_specs() if planner else [])})
    recovered = state.recover(lambda instance_id: result_file(directory, instance_id))
    recovered["redo"] = state.redo(config.redo)
    if on_planned:
        on_planned(state, selection)
    run = state.start_run(executor.kind, executor.workers, config.options.command_line)
    feed = _Feed(config, state, selection, planner, progress, checks)
    ran = 0
    try:
        ran = _run_pending(config, executor, state, run, progress, feed, started)
        feed.finish_checks(None if config.run_budget_s is None else
                           max(0.0, config.run_budget_s - (time.monotonic() - started)))
    finally:
        feed.close()
        state.finish_run(run, ran)
    counts = state.counts(feed.selection)
    outcome = CampaignOutcome(directory, sum(counts.values()), counts["done"], ran, recovered,
                              round(time.monotonic() - started, 2), executor.kind)
    options = config.options
    failed = report.analyse_findings(directory, state, ReduceOptions(
        seconds=options.reduce_seconds, max_candidates=options.reduce_candidates,
        judge=JudgeOptions(work_dir=options.work_dir)),
        seconds=analysis_seconds(config.run_budget_s, time.monotonic() - started), hard=config.run_budget_s is not None,
        step=plan_progress.step if plan_progress else None)
    outcome.report = report.write(directory, state, bugs_error=failed, plots=options.plots)
    return outcome


# a run with a budget reduces the bugs it found in what is left of the bound when judging ends,
# at least ANALYSIS_MIN_SECONDS (about one instance's time); what is left is reduced by the next run
ANALYSIS_MIN_SECONDS = 15.0


def analysis_seconds(run_budget_s: Optional[float], elapsed: float = 0.0) -> Optional[float]:
    """How long the reductions after a run may take together (None: each bug its own limit):
    the bound's rest, so that the run ends within about an instance's time of it."""
    return None if run_budget_s is None else max(ANALYSIS_MIN_SECONDS, run_budget_s - elapsed)


class _Feed:
    """Where the driver takes the next instance from: the scheduler's queues (each with its
    share of the workers' time), topped up by the deferred planner as its enumerations end."""

    def __init__(self, config: CampaignConfig, state: CampaignState, selection: Optional[List[str]],
                 planner: Optional[DeferredPlanner], progress, checks: Optional[BackgroundChecks] = None):
        subject = worker_subject(config.program)
        self.state, self.selection, self.planner, self.progress = state, selection, planner, progress
        self.checks = checks
        done = [row for row in state.instances() if row["state"] == "done"]
        self.scheduler = Scheduler(lambda row: _queue_of(subject, row), config.options.whole_share,
                                   config.options.variant_share, expected=median_walls(done))
        self.scheduler.add(state.pending(selection))
        wanted = None if selection is None else set(selection)
        self._queue_audits([(row, row["result"]) for row in done if wanted is None or row["id"] in wanted])
        self.pairs = _Followers()
        # what the finished instances cost (``costs``): their count, the seconds besides their
        # seeds and fuzzing, and how many fuzzed or were meant to
        self.finished, self.overhead_seconds, self.fuzzing = 0, 0.0, 0
        # instances in flight when a local worker died: each runs alone until it finishes or
        # dies alone (only then is the death its own), so one that kills its worker never
        # costs the instances that ran beside it their verdicts
        self.suspects: Dict[str, int] = {}        # id -> deaths while it ran alone

    @property
    def planning(self) -> bool:
        return self.planner is not None and self.planner.busy

    def costs(self) -> tuple:
        """(what judging an instance of this run cost besides its seeds and fuzzing, mean
        seconds; the part of its instances that fuzz or were meant to): (0, 1) until
        ``MEASURED_AFTER`` finished."""
        if self.finished < MEASURED_AFTER:
            return 0.0, 1.0
        return self.overhead_seconds / self.finished, max(self.fuzzing / self.finished, 0.01)

    def measured(self, results: List[Dict]) -> None:
        for r in results:
            self.finished += 1
            self.overhead_seconds += max(0.0, (r.get("wall_seconds") or 0.0) - (r.get("fuzz_seconds") or 0.0))
            evidence = r.get("evidence") or {}
            # (a follower took its representative's evidence: it never fuzzes itself)
            self.fuzzing += not r.get("same_pair_as") and (evidence.get("kind") == "FUZZED"
                                                           or bool(evidence.get("meant_to_fuzz")))

    def audit_later(self, results: List[Dict]) -> None:
        """Queue the deferred whole-program audits of these finished results."""
        self._queue_audits([(self.state.row(r["id"]), r) for r in results if audit_deferred(r)])

    def _queue_audits(self, entries: List[tuple]) -> None:
        """(instance row, its result) each: the deferred audits among them, a finding's in front
        (it says whether DaCe alone shows the bug, and may run beside the matches), then the
        PASS verdicts'."""
        for finding in (True, False):
            self.scheduler.add([audit_row(row) for row, result in entries
                                if row is not None and audit_deferred(result)
                                and (result.get("verdict") != "PASS") == finding], front=finding)

    def finish_checks(self, timeout: Optional[float]) -> None:
        """The reference checks' records, waited for at most ``timeout`` seconds (None: until
        done); not done by then, they are stopped and said to be unfinished."""
        if self.checks is not None and self.checks.busy:
            self._checked(self.checks.ready(timeout=timeout))

    def _checked(self, records: Optional[List[Dict]]) -> None:
        if records is None:
            return
        self.state.set_meta({"reference_checks": json.dumps(records)})
        if getattr(self.progress, "checked", None):
            self.progress.checked(records)

    def poll(self) -> None:
        """Add what the planner finished to the state, the selection and the queues; the
        reference checks' records once they are done."""
        if self.checks is not None and self.checks.busy:
            self._checked(self.checks.ready())
        if self.planner is None:
            return
        for xform_row, rows, seconds in self.planner.ready():
            self.state.add_to_plan([xform_row], rows)
            if self.selection is not None:
                self.selection += [row["id"] for row in rows]
            self.state.set_meta({"selection": json.dumps(self.selection),
                                 "not_enumerated": json.dumps(self.planner.pending_specs())})
            self.scheduler.add(self.state.pending([row["id"] for row in rows]))
            if self.progress is not None:
                self.progress.planned_more(xform_row, seconds, len(rows))
        self.scheduler.matches_coming = self.planner.busy

    def wait_for_planner(self, timeout: float) -> None:
        if self.planning:
            cf.wait(list(self.planner.futures), timeout=timeout, return_when=cf.FIRST_COMPLETED)

    def close(self) -> None:
        if self.checks is not None and self.checks.busy:
            self.checks.close()
            self._checked([not_finished()])
        if self.planner is not None:
            self.poll()
            self.planner.close()
            self.scheduler.matches_coming = False


class _Followers:
    """Instances whose pair is one another instance judges, waiting for its verdict
    (``core.shared_pairs``)."""

    def __init__(self):
        # representative's id -> its followers, each with its worker's pending result
        self.waiting: Dict[str, List[tuple]] = {}

    def settled(self, task: Task, result: Dict, state: CampaignState, scheduler: Scheduler) -> List[Dict]:
        """The finished results a worker's ``result`` makes: none while it is a follower whose
        representative has no verdict yet; else its own and those of its followers."""
        if shared_pairs.is_pending(result):
            owner = result["same_pair_as"]
            if state.status(owner) is None:       # a claim this campaign does not know: judged alone
                return self._alone(task, state, scheduler)
            representative = state.result(owner)
            if representative is None:
                self.waiting.setdefault(owner, []).append((task, result))
                return []
            return self._take(task, result, representative, state, scheduler)
        state.finish(task.instance["id"], result)
        done = [result]
        for follower, pending in self.waiting.pop(result["id"], []):
            done += self._take(follower, pending, result, state, scheduler)
        return done

    @staticmethod
    def _take(task: Task, pending: Dict, representative: Dict, state: CampaignState,
              scheduler: Scheduler) -> List[Dict]:
        if not shared_pairs.shareable(representative):
            return _Followers._alone(task, state, scheduler)
        result = {**shared_pairs.shared_result(pending, representative), "finished_at": time.time()}
        write_json(result_file(task.options.out_dir, task.instance["id"]), result)
        state.finish(task.instance["id"], result)
        return [result]

    @staticmethod
    def _alone(task: Task, state: CampaignState, scheduler: Scheduler) -> List[Dict]:
        """Back to the front of the queue, to be judged itself (its representative's verdict
        was its place's, or about the run)."""
        state.requeue(task.instance["id"])
        scheduler.add([_row(task, alone=True)], front=True)
        return []

    def release(self, state: CampaignState, scheduler: Scheduler) -> None:
        """Followers whose representative did not finish here: pending again, judged later."""
        for followers in self.waiting.values():
            for task, _ in followers:
                state.requeue(task.instance["id"])
                scheduler.add([_row(task)])
        self.waiting.clear()


def _row(task: Task, **extra) -> Dict:
    """The scheduler's row of a task handed back to the queue."""
    return {"id": task.instance["id"], "spec": task.spec, "instance": task.instance, "attempts": task.attempt,
            **extra}


def audit_row(row: Dict) -> Dict:
    """The scheduler's row of a finished instance's deferred whole-program audit."""
    return {"id": row["id"], "spec": row["spec"], "instance": row["instance"], "attempts": row.get("attempts", 1),
            "audit": True}


def _queue_of(subject, row: Dict) -> str:
    """Which queue an instance row is judged from (schedule.Scheduler)."""
    if row.get("audit"):
        return AUDITS
    if subject.whole_program(row["spec"]):
        return WHOLE
    return VARIANTS if row["instance"].get("params") else MAIN


def _with_target_constraints(config: CampaignConfig) -> CampaignConfig:
    """The target's own constraints file (afl_configs/<target>.constraints.json) unless one is given."""
    options = config.options
    target = worker_subject(config.program).target
    if options.constraints is None and target.constraints_file is not None:
        options = dataclasses.replace(options, constraints=target.constraints_file)
    return dataclasses.replace(config, options=options)


def _warm(config: CampaignConfig, feed: "_Feed") -> None:
    """Load the transformations, and the programs the main queue's instances lie in, once,
    before local workers fork (instances on whole programs load theirs where they run)."""
    subject = worker_subject(config.program)
    queues = feed.scheduler.queues
    for spec in sorted({row["spec"] for queue in queues.values() for row in queue}):
        subject.transformation_name(spec)
    for row in queues[MAIN] or queues[WHOLE][:1]:
        subject.warm(row["instance"])


def _run_pending(config: CampaignConfig, executor: ExecutorSpec, state: CampaignState, run: int, progress,
                 feed: "_Feed", started: float) -> int:
    if executor.kind in ("local", "inline") and feed.scheduler:
        _warm(config, feed)
    ran = 0
    if progress:
        progress.start(state, executor)
    try:
        while feed.scheduler or (feed.planning and _may_start(config, started)):
            try:
                with open_executor(executor) as opened:
                    if progress:
                        progress.describe(opened.description)
                    ran += _drive(config, opened, state, run, feed, progress, started)
            except _BrokenExecutor:
                continue           # a fresh pool for what is left
    finally:
        if progress:
            progress.stop()
    return ran


# finished instances before their costs say how an instance's time is shared
MEASURED_AFTER = 20
# of what remains of the bound, the part never given to fuzzing nor to findings' audits beside
# the matches: the costs are means over the instances judged so far, and those still queued may
# cost more (NPBench's second run: 58 matches unjudged at the bound, while afl-fuzz and the
# audits had had 760 worker-seconds; its crashing vadv instances came late)
BOUND_RESERVE = 0.1


def _within_bound(options, config: CampaignConfig, feed: "_Feed", started: float, workers: int):
    """An instance's seconds for seeds and fuzzing in a bounded run: the per-instance budget, or
    less where the bound cannot give that much to every instance still queued in its phase (the
    matches, then the variants) that would fuzz: what remains of the bound, less what judging
    the queued ones costs besides their fuzzing and ``BOUND_RESERVE``, shared among the part of
    them that fuzzes (both measured in this run: most pairs are proven, static or equal to a
    judged one and never fuzz). A share below ``MIN_ENGINE_S`` judges the instance on its seeds alone."""
    if config.run_budget_s is None:
        return options
    queued = feed.scheduler.queued_in_phase() + 1
    left = config.run_budget_s - (time.monotonic() - started)
    overhead, fuzzing = feed.costs()
    share = (left * (1.0 - BOUND_RESERVE) * workers - queued * overhead) / max(1.0, queued * fuzzing)
    options = dataclasses.replace(options, run_ends_at=time.time() + max(0.0, left))
    if share >= options.time_s:
        return options
    return dataclasses.replace(options, time_s=round(max(0.0, share), 2), time_cut_by_bound=True)


def _matches_tight(config: CampaignConfig, feed: "_Feed", started: float, workers: int) -> bool:
    """Whether judging the queued matches at their measured cost besides fuzzing would take
    what the bound leaves the matches beside the findings' audits: then the audits wait for the
    matches (every match's verdict comes first; ``harnessgen bugs`` confirms afterwards)."""
    overhead, _ = feed.costs()
    if config.run_budget_s is None or overhead <= 0:
        return False
    left = config.run_budget_s - (time.monotonic() - started)
    room = left * workers * (1.0 - FINDING_AUDIT_SHARE) * (1.0 - BOUND_RESERVE)
    return feed.scheduler.queued_matches() * overhead > room


def _may_start(config: CampaignConfig, started: float) -> bool:
    return config.run_budget_s is None or time.monotonic() - started < config.run_budget_s


def _drive(config: CampaignConfig, opened, state: CampaignState, run: int, feed: "_Feed", progress,
           started: float) -> int:
    """Keep ``opened.capacity`` instances in flight until nothing is pending or being planned
    (or the run's budget allows no more to start: they stay pending for the next run)."""
    inflight: Dict[cf.Future, Task] = {}
    ran = 0
    broken = False
    live = getattr(progress, "live_stats", None) if opened.in_process else None
    scheduler = feed.scheduler

    def fill() -> None:
        nonlocal broken
        scheduler.audits_wait = _matches_tight(config, feed, started, opened.capacity)
        while scheduler.startable() and not broken and len(inflight) < opened.capacity and _may_start(config, started):
            if any(task.instance["id"] in feed.suspects for task in inflight.values()):
                return                 # a suspect runs alone
            row = scheduler.next(opened.capacity)
            if row["id"] in feed.suspects and inflight:
                scheduler.add([row], front=True)
                return
            # an audit leaves its instance done: killed meanwhile, the next run audits it again
            attempt = row.get("attempts", 1) if row.get("audit") else state.start(row["id"], run)
            options = _instance_options(config)
            if not row.get("audit"):
                options = _within_bound(options, config, feed, started, opened.capacity)
            if row.get("alone"):     # its representative's verdict was its place's: judged itself
                options = dataclasses.replace(options, share_pairs=False)
            task = Task(config.program, row["spec"], row["instance"], options, attempt, audit=bool(row.get("audit")))
            try:
                inflight[opened.executor.submit(run_task, task, live)] = task
            except cf.process.BrokenProcessPool:
                # a worker died before its future said so: this one waits for the next pool
                broken = True
                state.requeue(row["id"])
                scheduler.add([{**row, "attempts": attempt}], front=True)
                return

    audited: List[Dict] = []
    while ((scheduler or feed.planning) and not broken and _may_start(config, started)) or inflight:
        feed.poll()
        fill()
        if not inflight:
            feed.wait_for_planner(timeout=1.0)
            continue
        done, _ = cf.wait(list(inflight), timeout=1.0, return_when=cf.FIRST_COMPLETED)
        results = []
        alone = len(inflight) == 1
        for future in done:
            task = inflight.pop(future)
            scheduler.finished(task.instance["id"])
            result = _result_of(future, task, state, scheduler, feed.suspects, alone)
            if result is None:
                broken = True
                continue
            if task.audit:
                state.finish(task.instance["id"], result)
                audited.append(result)
                continue
            results += feed.pairs.settled(task, result, state, scheduler)
        feed.audit_later(results)
        feed.measured(results)
        # the idle workers get their next instance before the terminal and summary.json are
        # brought up to date: that bookkeeping grows with the run (0.7 s at 1,200 results)
        if not opened.in_process:
            fill()
        ran += len(results)
        for result in results:
            if progress:
                progress.finished(result)
        for result in audited:
            if getattr(progress, "audited", None):
                progress.audited(result)
        audited.clear()
        if progress:
            progress.update(list(inflight.values()))
    feed.pairs.release(state, scheduler)
    if broken:
        raise _BrokenExecutor()
    if not _may_start(config, started):
        scheduler.clear()           # what the budget did not start stays pending in the state
    return ran


def _result_of(future: cf.Future, task: Task, state: CampaignState, scheduler: Scheduler, suspects: Dict[str, int],
               alone: bool) -> Optional[Dict]:
    """The task's result; None when its local worker died and it went back into the queue (to
    run alone: ``suspects``). Its death counts only where it ran alone; at ``MAX_DEATHS`` it is
    ERROR. Whatever else fails is its ERROR: no instance ends the run."""
    instance_id = task.instance["id"]
    deaths = suspects.pop(instance_id, 0)
    try:
        return future.result()
    except cf.process.BrokenProcessPool as exc:
        deaths += 1 if alone else 0
        if deaths >= MAX_DEATHS:
            return error_result(task, f"its worker process died each of the {deaths} times it was judged alone "
                                      f"({exc}): something in judging it (DaCe, a compiler, the transformation) "
                                      "kills the process")
        suspects[instance_id] = deaths
        state.requeue(instance_id)
        scheduler.add([_row(task)], front=True)
        return None
    except Exception as exc:                # noqa: BLE001 -- Dask: KilledWorker, a lost connection, ...
        return error_result(task, f"the worker failed: {type(exc).__name__}: {exc}")


__all__ = ["Budget", "CampaignConfig", "CampaignOutcome", "ExecutorSpec", "run_campaign", "plan", "result_file"]
