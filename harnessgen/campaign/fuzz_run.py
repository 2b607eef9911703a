"""The ``harnessgen fuzz`` command, on the campaign's machinery (one driver for every run).

Every selected instance of a subject goes through the runner (runner.py), round-robin over
transformations, ``jobs`` at a time: in this process for one job (live afl-fuzz statistics),
forked local workers for more, or any other executor (Dask, Slurm). The state is the run
directory's ``campaign.db``: the same command again continues with the instances not yet
done. ``summary.json`` (the contract scripts rely on, ``records.run_summary``) is rewritten
as instances finish (``SummaryWriter``) and at the end, with ``report.html`` and ``report.md``.
"""
from __future__ import annotations

import dataclasses
import json
import time
from typing import Callable, Dict, List, Optional

from .. import campaign
from ..core import runlog
from ..core.records import FuzzOptions, InstanceResult, engine_dir
from ..engines.afl import lead_stats
from ..plan.instances import Instance
from . import run_report as report
from .executors import ExecutorSpec
from .planning import PlanProgress


def fuzz(program_spec: str, xform_spec: Optional[str], instance_ids: Optional[List[str]], options: FuzzOptions,
         progress: Optional[Callable] = None, on_result: Optional[Callable] = None,
         settings: Optional[List[str]] = None, jobs: int = 1,
         on_plan: Optional[Callable[[int, int], None]] = None,
         executor: Optional[ExecutorSpec] = None, plan_progress: Optional[PlanProgress] = None,
         on_more: Optional[Callable[[Dict, float, int], None]] = None,
         on_audit: Optional[Callable[[InstanceResult], None]] = None,
         on_checks: Optional[Callable[[List[Dict]], None]] = None) -> List[InstanceResult]:
    """Fuzz every selected instance of every selected transformation and return the results of
    those done (this run's and earlier runs' into the same directory). With one instance and
    several jobs the cores go to afl-fuzz instances on it. ``progress(inst, stats)``: live
    engine statistics (one job in this process only); ``on_result(result)`` after each
    instance; ``on_plan(planned, already_done, reference_checks, transformations still being enumerated)`` once planned;
    ``plan_progress``: each planning step as it happens; ``on_more(row, seconds, count)``: a
    transformation enumerated beside the run added ``count`` instances; ``on_audit(result)``: a
    finished instance's deferred whole-program audit is done (a bounded run); ``on_checks(records)``:
    the reference checks, which run beside the instances, are done. With
    ``options.budget_s`` no instance starts after the budget (``options.resume``: the same
    command continues)."""
    began = time.monotonic()      # the bound (options.budget_s) counts planning in
    if instance_ids:      # the instances asked for are each judged, never taken as another's equal
        options = dataclasses.replace(options, share_pairs=False)
    config = campaign.CampaignConfig(
        program=program_spec, transformations=xform_spec or "", directory=options.out_dir,
        budget=campaign.Budget(options.time_s, options.max_execs), options=options, fresh=False,
        # a harnessgen error is always worth another try; other verdicts when asked (--redo)
        redo=tuple(options.redo) + ("ERROR",), instance_ids=instance_ids, settings=settings,
        run_budget_s=options.budget_s, replan=True, strict_plan=True, summary="run", began=began)
    if not options.resume:
        campaign.start_over(options.out_dir)
    # DaCe's warnings while parsing and enumerating go to the run's log too
    with runlog.captured_warnings(options.out_dir, echo=options.verbose):
        planned = campaign.plan(config, plan_progress, defer=True)
    if len(planned.rows) == 1 and not planned.deferred and jobs > 1 and executor is None:
        options = dataclasses.replace(options, afl_jobs=jobs)
        jobs = 1
    # one job too runs in a worker process of its own: an instance that kills its process (a crash
    # in DaCe, a compiler, the OOM killer) is that instance's ERROR, never the end of the run
    executor = executor or ExecutorSpec("local", workers=max(1, jobs))
    config = dataclasses.replace(config, options=options, planned=planned, run_settings={
        "program": program_spec, "transformation": planned.label,
        "time_per_instance_s": options.time_s, "tolerance": options.tolerance.to_json(), "jobs": jobs,
        "afl_jobs": options.afl_jobs, "budget_s": options.budget_s, "executor": executor.kind})
    hooks = _RunHooks(progress, on_result, on_plan, on_more, on_audit, on_checks)
    campaign.run_campaign(config, executor, progress=hooks, on_planned=hooks.planned)
    return hooks.results


class SummaryWriter:
    """Rewrites summary.json as instances finish, for scripts that watch a run. Each rewrite
    reads every result so far (0.7 s at 1,200 results, 2 s at 4,000, in the driver, on a core
    the workers need): a rewrite waits until the driver has spent at most ``share`` of its time
    on them (at 10 %, CLOUDSC's run gave a twentieth of the machine's two cores to rewrites; at
    2 %, a watcher's summary is at most about two minutes old at 4,000 results). Nothing is
    lost meanwhile: each result is in campaign.db and results/ as it comes, and the summary is
    written whole when the run ends."""

    def __init__(self, share: float = 0.02, clock: Callable[[], float] = time.monotonic):
        self.share = share
        self.clock = clock
        self.next_at = float("-inf")
        self.dirty = False

    def changed(self, write: Callable[[], None]) -> None:
        self.dirty = True
        if self.clock() >= self.next_at:
            self.flush(write)

    def flush(self, write: Callable[[], None]) -> None:
        if not self.dirty:
            return
        began = self.clock()
        write()
        ended = self.clock()
        self.dirty = False
        self.next_at = ended + (ended - began) * (1 - self.share) / self.share


class _RunHooks:
    """The driver's progress interface, for the fuzz command: summary.json as instances
    finish, the caller's callbacks, live statistics where the instance runs in this process."""

    def __init__(self, live: Optional[Callable], on_result: Optional[Callable], on_plan: Optional[Callable],
                 on_more: Optional[Callable] = None, on_audit: Optional[Callable] = None,
                 on_checks: Optional[Callable] = None):
        self.live_stats = live
        self.on_result = on_result
        self.on_audit = on_audit
        self.on_checks = on_checks
        self.on_plan = on_plan
        self.on_more = on_more
        self.state = None
        self.directory = None
        self.results: List[InstanceResult] = []
        self.summary = SummaryWriter()

    def planned(self, state, selection: Optional[List[str]]) -> None:
        rows = state.instances(selection)
        self.results = [InstanceResult.from_json(r["result"]) for r in rows if r["state"] == "done" and r["result"]]
        if self.on_plan:
            self.on_plan(len(rows), len(self.results), state.reference_checks(),
                         json.loads(state.meta().get("not_enumerated", "[]")))

    def start(self, state, executor) -> None:
        self.state, self.directory = state, state.path.parent
        report.write_summary(self.directory, state)

    def describe(self, description: str) -> None:
        pass

    def update(self, running) -> None:
        """afl-fuzz's statistics of the instances in flight in worker processes, read from their
        afl-fuzz folders (an instance run in this process reports its own)."""
        if self.live_stats is None:
            return
        for task in running:
            stats = lead_stats(engine_dir(task.options.out_dir, task.instance["id"]))
            if stats:
                self.live_stats(Instance.from_json(task.instance), stats)

    def finished(self, entry) -> None:
        result = InstanceResult.from_json(entry)
        self.results.append(result)
        self.summary.changed(self._write_summary)
        if self.on_result:
            self.on_result(result)

    def checked(self, records: List[Dict]) -> None:
        if self.on_checks:
            self.on_checks(records)

    def audited(self, entry) -> None:
        """A finished instance's deferred audit is done: its result replaces the earlier one."""
        result = InstanceResult.from_json(entry)
        self.results = [result if r.id == result.id else r for r in self.results]
        self.summary.changed(self._write_summary)
        if self.on_audit:
            self.on_audit(result)

    def planned_more(self, row: Dict, seconds: float, count: int) -> None:
        if self.on_more:
            self.on_more(row, seconds, count)

    def stop(self) -> None:
        if self.state is not None:
            self.summary.flush(self._write_summary)

    def _write_summary(self) -> None:
        report.write_summary(self.directory, self.state)

