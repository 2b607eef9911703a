"""Stage 8: campaigns. Every instance of every selected transformation goes through build ->
fuzz -> triage with a per-instance budget, through an executor (``executors``), with its
state in SQLite (``state``) so that the same command continues a killed campaign, and a
report (``report``) at the end.

Campaign directory::

    campaign.db                      state: plan, instance states and results, runs
    instances/<id>/                  one per instance: result.json, afl/<id>/ (afl-fuzz), errors/
    report.html, report.md, report/  the report (plots as PNG files for the Markdown one)
    summary.json                     per transformation and per instance, for scripts

Findings go where ``harnessgen fuzz`` puts them (``crashes/<target>/<instance>/``) and builds
are shared through the build cache (``.harnessgen/builds``): instances with identical
cutouts build once.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import re
import shutil
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

from ..errors import ConfigError, HarnessgenError, Unsupported
from .. import runlog
from ..files import clear_stale_omp_registrations
from .executors import ExecutorSpec, open_executor
from .state import CampaignState
from .worker import RESULT_FILE, Task, error_result, remember, result_path, run_task

DB_NAME = "campaign.db"
ALL = "all"
# a worker that dies this many times on one instance (a crash in DaCe or the compiler) ends it as ERROR
MAX_ATTEMPTS = 3

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
    program: str                          # target spec, as for fuzz --program
    transformations: str                  # "all", "" (the target's default set), or comma-separated specs
    directory: Path
    budget: Budget
    options: object                       # harnessgen.fuzz.FuzzOptions: oracle, seeds, work/corpus/crashes dirs
    fresh: bool = False
    redo: tuple = ()

    @property
    def identity(self) -> Dict[str, str]:
        return {"program": self.program, "transformations": self.transformations or "default"}


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


def campaign_specs(target, transformations: str) -> List[str]:
    """``all``: every DaCe built-in that makes CPU code plus the target's own (``module:Class``)
    transformations; empty: the target's default set; else the comma-separated list."""
    from ..fuzz import transformation_specs
    from ..instances import cpu_builtin_transformations

    if transformations.strip().lower() != ALL:
        return transformation_specs(target, transformations)
    custom = [spec for spec in target.default_transformations if ":" in spec]
    return cpu_builtin_transformations() + custom


def plan(config: CampaignConfig):
    """Enumerate every instance: (target, SDFGs, classes, transformation rows, instance rows).
    A transformation DaCe cannot match is recorded with its reason, not fatal."""
    from ..fuzz import interleave
    from ..instances import enumerate_instances, load_transformation
    from ..targets import resolve

    target, program = resolve(config.program)
    specs = campaign_specs(target, config.transformations)
    programs = target.select(program)
    sdfgs = {p.name: p.build() for p in programs}
    classes, xform_rows, planned = {}, [], []
    for position, spec in enumerate(specs):
        row = {"spec": spec, "position": position, "class_name": None, "instances": 0, "status": "ok", "message": ""}
        try:
            classes[spec] = cls = load_transformation(spec)
            row["class_name"] = cls.__name__
            found = enumerate_instances(target, programs, cls, spec, sdfgs)
            row["instances"] = len(found)
            planned += [(spec, inst) for inst in found]
        except Unsupported as exc:
            row.update(status="UNSUPPORTED", message=str(exc))
        except ConfigError:
            raise                      # a misspelt --transformation: the user must act
        except Exception as exc:       # DaCe failed while matching: recorded, the campaign goes on
            row.update(status="ERROR", message=f"matching failed: {type(exc).__name__}: {exc}")
        xform_rows.append(row)
    rows = [{"id": inst.id, "position": i, "spec": spec, "transformation": inst.transformation,
             "program": inst.program, "instance": inst.to_json()}
            for i, (spec, inst) in enumerate(interleave(planned))]
    return target, sdfgs, classes, xform_rows, rows


def _instance_options(config: CampaignConfig, instance_id: str):
    """Absolute paths: a Dask worker may run anywhere the campaign directory is mounted."""
    opts = config.options
    return dataclasses.replace(
        opts, out_dir=instance_dir(config.directory, instance_id).resolve(), time_s=config.budget.seconds,
        max_execs=config.budget.execs, budget_s=None, resume=True, show_progress=False,
        work_dir=Path(opts.work_dir).resolve(), corpus_root=Path(opts.corpus_root).resolve(),
        crashes_root=Path(opts.crashes_root).resolve(),
        constraints=Path(opts.constraints).resolve() if opts.constraints else None)


def instance_dir(directory: Path, instance_id: str) -> Path:
    return Path(directory) / "instances" / instance_id


class _BrokenExecutor(Exception):
    """The local pool lost a worker; the instances it held are back in the queue."""


def run_campaign(config: CampaignConfig, executor: ExecutorSpec, progress=None,
                 on_planned: Optional[Callable[[CampaignState], None]] = None) -> CampaignOutcome:
    """Plan (or continue) the campaign in ``config.directory`` and run every pending instance.
    ``progress`` receives ``start(state, executor)``, ``update(running)``, ``finished(result)``
    and ``stop()`` (see ``progress.LiveProgress``)."""
    started = time.monotonic()
    clear_stale_omp_registrations()
    directory = Path(config.directory)
    if config.fresh:
        (directory / DB_NAME).unlink(missing_ok=True)
        shutil.rmtree(directory / "instances", ignore_errors=True)
    state = CampaignState(directory / DB_NAME)
    try:
        with runlog.captured_warnings(directory, echo=config.options.verbose):
            return _run_planned_campaign(config, executor, state, directory, started, progress, on_planned)
    finally:
        state.close()


def _run_planned_campaign(config: CampaignConfig, executor: ExecutorSpec, state: CampaignState, directory: Path,
                          started: float, progress, on_planned) -> CampaignOutcome:
    from . import report

    state.check_same(config.identity)
    config = _with_target_constraints(config)
    if not state.is_planned():
        target, sdfgs, classes, xform_rows, rows = plan(config)
        state.record_plan(config.identity, xform_rows, rows)
        remember(config.program, target, sdfgs, classes)
    recovered = state.recover(lambda instance_id: instance_dir(directory, instance_id) / RESULT_FILE)
    recovered["redo"] = state.redo(config.redo)
    if on_planned:
        on_planned(state)
    run = state.start_run(executor.kind, executor.workers, config.options.command_line)
    ran = 0
    try:
        ran = _run_pending(config, executor, state, run, progress)
    finally:
        state.finish_run(run, ran)
    counts = state.counts()
    outcome = CampaignOutcome(directory, sum(counts.values()), counts["done"], ran, recovered,
                              round(time.monotonic() - started, 2), executor.kind)
    outcome.report = report.write(directory, state)
    return outcome


def _with_target_constraints(config: CampaignConfig) -> CampaignConfig:
    from ..fuzz import with_target_constraints
    from ..targets import resolve

    target, _ = resolve(config.program)
    return dataclasses.replace(config, options=with_target_constraints(config.options, target))


def _warm(config: CampaignConfig, pending: List[Dict]) -> None:
    """Parse the programs and load the transformations once, before local workers fork."""
    from .worker import program, transformation

    for spec in sorted({row["spec"] for row in pending}):
        transformation(spec)
    for name in sorted({row["instance"]["program"] for row in pending}):
        program(config.program, name)


def _run_pending(config: CampaignConfig, executor: ExecutorSpec, state: CampaignState, run: int, progress) -> int:
    pending = state.pending()
    if executor.kind == "local" and pending:
        _warm(config, pending)
    ran = 0
    if progress:
        progress.start(state, executor)
    try:
        while pending:
            try:
                with open_executor(executor) as opened:
                    if progress:
                        progress.describe(opened.description)
                    ran += _drive(config, opened, state, run, pending, progress)
            except _BrokenExecutor:
                continue           # a fresh pool for what is left
    finally:
        if progress:
            progress.stop()
    return ran


def _drive(config: CampaignConfig, opened, state: CampaignState, run: int, pending: List[Dict], progress) -> int:
    """Keep ``opened.capacity`` instances in flight until ``pending`` is empty."""
    inflight: Dict[cf.Future, Task] = {}
    ran = 0
    broken = False
    while (pending and not broken) or inflight:
        while pending and not broken and len(inflight) < opened.capacity:
            row = pending.pop(0)
            attempt = state.start(row["id"], run)
            task = Task(config.program, row["spec"], row["instance"], _instance_options(config, row["id"]), attempt)
            inflight[opened.executor.submit(run_task, task)] = task
        done, _ = cf.wait(list(inflight), timeout=1.0, return_when=cf.FIRST_COMPLETED)
        for future in done:
            task = inflight.pop(future)
            result = _result_of(future, task, state, pending)
            if result is None:
                broken = True
                continue
            state.finish(task.instance["id"], result)
            ran += 1
            if progress:
                progress.finished(result)
        if progress:
            progress.update(list(inflight.values()))
    if broken:
        raise _BrokenExecutor()
    return ran


def _result_of(future: cf.Future, task: Task, state: CampaignState, pending: List[Dict]) -> Optional[Dict]:
    """The task's result; None when its local worker died and it went back into the queue."""
    try:
        return future.result()
    except HarnessgenError:                 # ConfigError and the like: the same for every instance
        raise
    except cf.process.BrokenProcessPool as exc:
        if task.attempt >= MAX_ATTEMPTS:
            return error_result(task, f"its worker process died {task.attempt} times ({exc})")
        state.requeue(task.instance["id"])
        pending.insert(0, {"id": task.instance["id"], "spec": task.spec, "instance": task.instance,
                           "attempts": task.attempt})
        return None
    except Exception as exc:                # Dask: KilledWorker, a lost connection, ...
        return error_result(task, f"the worker failed: {type(exc).__name__}: {exc}")


__all__ = ["Budget", "CampaignConfig", "CampaignOutcome", "ExecutorSpec", "run_campaign", "plan", "campaign_specs",
           "instance_dir", "result_path"]
