"""Planning a run: every instance of every selected transformation, shown as it goes, paid for
once, and not waited for where it is slow.

* **Shown**: each step (loading the subject, making each program form, enumerating each
  transformation) is reported to a ``PlanProgress`` as it starts and ends, with its count.
* **Cached**: what one transformation enumerates in one program is a function of the
  program's content, the transformation's code, the installed DaCe, harnessgen's own code
  and the planning options. ``PlanCache`` keeps it under ``<work>/plans/<key>.json``; the
  same command again plans from there in a moment (``Subject.plan_identity`` says what the
  key is made of, or that a subject cannot be cached).
* **Not waited for**: a transformation not in the cache is *deferred*, but for the first
  pattern transformation where nothing cached gives the workers a start. The driver
  enumerates them in a background process while the other instances are judged (pattern
  transformations first, then those that work on whole programs, ``Subject.whole_program``:
  a pass applied to a copy of each program), and adds their instances to the run as each is
  done (``DeferredPlanner``).
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import hashlib
import json
import multiprocessing
import os
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from .. import subjects
from ..core.errors import ConfigError, Unsupported
from ..core.files import write_json
from ..core.procs import die_with_parent
from ..core.versions import source_digest
from ..plan.instances import Instance
from ..plan.params import ParamOptions
from .worker import worker_subject

PLANS_DIR = "plans"
# the queues a run's instances are judged from (campaign.schedule): instances judged on whole
# programs (passes), parameter variants of a match, every other instance, and the whole-program
# audits a bounded run leaves until every match has its verdict
WHOLE, VARIANTS, MAIN, AUDITS = "whole", "variants", "main", "audits"
QUEUES = (MAIN, VARIANTS, WHOLE, AUDITS)
MATCHES = (MAIN, WHOLE)


@dataclasses.dataclass
class Plan:
    """What ``plan`` found: the subject, a row per transformation, a row per instance (in run
    order), and the transformations still to enumerate beside the run."""

    subject: subjects.Subject
    xform_rows: List[Dict]
    rows: List[Dict]
    deferred: List[str] = dataclasses.field(default_factory=list)

    @property
    def label(self) -> str:
        return self.subject.label([row["spec"] for row in self.xform_rows])


class PlanProgress:
    """Told of every planning step; this base says nothing (a test, a script)."""

    @contextlib.contextmanager
    def step(self, label: str) -> Iterator[None]:
        yield

    def enumerated(self, row: Dict, seconds: float, cached: bool) -> None:
        """One transformation's row (spec, class_name, instances, status, message) is known."""

    def deferred(self, specs: List[str]) -> None:
        """These will be enumerated while the run judges the others."""

    def done(self, planned: "Plan") -> None:
        """Planning is over (the deferred transformations aside)."""


# ------------------------------------------------------------------ the cache
@dataclasses.dataclass(frozen=True)
class PlanRequest:
    """What an enumeration depends on besides the subject: the options planning reads."""

    program: str
    settings: Tuple[str, ...] = ()
    params: str = "default"
    max_size: int = 16
    seed: int = 0
    simplify: Optional[bool] = None

    @classmethod
    def of(cls, config) -> "PlanRequest":
        opts = config.options
        return cls(config.program, tuple(config.settings or ()), opts.params, opts.max_size, opts.seed,
                   opts.simplify)

    @property
    def param_options(self) -> ParamOptions:
        return ParamOptions(self.params, self.max_size, self.seed)


class PlanCache:
    """One JSON file per (subject content, transformation, options, versions)."""

    def __init__(self, work_dir: Path):
        self.root = Path(work_dir) / PLANS_DIR

    @staticmethod
    def key(identity: Dict, spec: str, request: PlanRequest) -> str:
        from ..dacecompat import dace_identity

        blob = json.dumps({"subject": identity, "spec": spec, "request": dataclasses.asdict(request),
                           "dace": dace_identity(), "harnessgen": source_digest()},
                          sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:24]

    def get(self, key: str) -> Optional[Dict]:
        path = self.root / f"{key}.json"
        try:
            return json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            return None

    def put(self, key: str, entry: Dict) -> None:
        write_json(self.root / f"{key}.json", entry)


# ------------------------------------------------------------------ one transformation
def enumerate_spec(subject: subjects.Subject, spec: str, position: int, request: PlanRequest,
                   cache: Optional[PlanCache], strict: bool) -> Tuple[Dict, List[Dict], bool]:
    """(the transformation's row, its instances as JSON, whether they came from the cache).
    A transformation that cannot be matched gets its reason in the row (``strict``: raises)."""
    identity = subject.plan_identity(spec)
    key = PlanCache.key(identity, spec, request) if cache is not None and identity is not None else None
    cached = cache.get(key) if key else None
    if cached is not None:
        return {**cached["row"], "position": position}, cached["instances"], True
    row = {"spec": spec, "position": position, "class_name": None, "instances": 0, "status": "ok", "message": ""}
    found: List[Dict] = []
    try:
        instances = subject.instances(spec, list(request.settings) or None, request.param_options)
        row.update(class_name=subject.transformation_name(spec), instances=len(instances))
        declined = subject.declined(spec)
        if declined:
            row["declined"] = declined
        if not instances:
            row["in_other_form"] = subject.matches_in_other_form(spec)
        found = [inst.to_json() for inst in instances]
    except ConfigError:
        raise                      # a misspelt --transformation: the user must act
    except Unsupported as exc:
        if strict:
            raise
        row.update(status="UNSUPPORTED", message=str(exc))
    except Exception as exc:       # DaCe failed while matching: recorded, the run goes on
        if strict:
            raise
        row.update(status="ERROR", message=f"matching failed: {type(exc).__name__}: {exc}")
    if key and row["status"] != "ERROR":     # an error may be this machine's: tried again next time
        cache.put(key, {"row": row, "instances": found})
    return row, found, False


def _instance_rows(subject: subjects.Subject, found: List[Tuple[str, Dict]], first_position: int) -> List[Dict]:
    planned = [(spec, Instance.from_json(inst)) for spec, inst in found]
    return [{"id": inst.id, "position": first_position + i, "spec": spec, "transformation": inst.transformation,
             "program": inst.program, "instance": inst.to_json()}
            for i, (spec, inst) in enumerate(subjects.interleave(planned))]


# ------------------------------------------------------------------ the plan
def plan(config, progress: Optional[PlanProgress] = None, defer: bool = True) -> Plan:
    """Every instance ``config`` selects, in run order. With ``defer``, transformations that
    work on whole programs and are not cached are left for a ``DeferredPlanner``
    (``Plan.deferred``); ``config.instance_ids`` (``--instance``) never defers."""
    progress = progress or PlanProgress()
    request = PlanRequest.of(config)
    with progress.step(f"loading {config.program}"):
        subject = subjects.load(config.program, config.options.simplify)
        specs = subject.transformation_specs(config.transformations or None)
    if config.settings and len(specs) != 1:
        raise ConfigError("--set applies to one transformation: pass exactly one --transformation")
    cache = PlanCache(config.options.work_dir)
    defer = defer and not config.instance_ids
    cached = {s for s in specs if _is_cached(subject, s, request, cache)}
    later = _deferred(subject, specs, cached) if defer else []
    now = [s for s in specs if s not in later]
    for label, load in subject.loading_steps([s for s in now if s not in cached]):
        with progress.step(label):
            load()
    xform_rows, found = [], []
    queue = list(now)
    while queue:
        spec = queue.pop(0)
        started = time.monotonic()
        with progress.step(f"enumerating {spec}"):
            row, instances, cached = enumerate_spec(subject, spec, specs.index(spec), request, cache,
                                                    config.strict_plan)
        progress.enumerated(row, time.monotonic() - started, cached)
        xform_rows.append(row)
        found += [(spec, inst) for inst in instances]
        if not queue and not found and later and not subject.whole_program(later[0]):
            # the workers' first instances: the next pattern transformation, where this one matched
            # nowhere (NPBench's first, AddThreadBlockMap, matches no CPU program)
            queue.append(later.pop(0))
    if later:
        progress.deferred(later)

    chosen = subjects.select(subject, [(s, Instance.from_json(i)) for s, i in found], config.instance_ids,
                             config.program, specs)
    rows = _instance_rows(subject, [(s, inst.to_json()) for s, inst in chosen], 0)
    planned = Plan(subject, xform_rows, rows, later)
    progress.done(planned)
    return planned


def _deferred(subject: subjects.Subject, specs: List[str], cached: set) -> List[str]:
    """The transformations left to the background planner: every one not cached, except the
    first pattern transformation where no cached one gives the workers something to start
    with (judging starts after one enumeration, not after all of them: CLOUDSC's eleven take
    8 s), one quick to judge where there is one (``Subject.quick_to_judge``: the first verdicts
    wait on its instances); the pattern transformations first, then those that work on whole
    programs."""
    patterns = [s for s in specs if not subject.whole_program(s)]
    uncached_patterns = [s for s in patterns if s not in cached]
    quick = [s for s in uncached_patterns if subject.quick_to_judge(s)]
    first = [] if any(s in cached for s in patterns) else (quick or uncached_patterns)[:1]
    uncached = [s for s in specs if s not in cached and s not in first]
    return [s for s in uncached if not subject.whole_program(s)] + [s for s in uncached if subject.whole_program(s)]


def _is_cached(subject, spec: str, request: PlanRequest, cache: PlanCache) -> bool:
    identity = subject.plan_identity(spec)
    return identity is not None and cache.get(PlanCache.key(identity, spec, request)) is not None


def _background() -> None:
    """The planner dies with the driver."""
    die_with_parent()


_YIELDED = False           # the planner process has lowered its priority


def _yield_cores() -> None:
    """From now on the planner runs on what the judging workers leave (its enumerations are
    paid once, then cached). Pattern transformations come first and are not niced: the workers
    wait for their instances (niced beside two workers on two cores, CLOUDSC's TaskletFusion
    took 40 s instead of 4 s)."""
    global _YIELDED
    if _YIELDED:
        return
    _YIELDED = True
    try:
        os.nice(10)
    except OSError:
        pass


def _enumerate_in_child(spec: str, position: int, request: PlanRequest, work_dir: str,
                        strict: bool) -> Tuple[Dict, List[Dict], float]:
    """In the background planner: the subject is the driver's (forked), loaded once."""
    subject = worker_subject(request.program)
    if subject.whole_program(spec):
        _yield_cores()
    started = time.monotonic()
    row, found, _ = enumerate_spec(subject, spec, position, request, PlanCache(Path(work_dir)), strict)
    return row, found, time.monotonic() - started


def _background_pool() -> cf.ProcessPoolExecutor:
    """One forked process beside the run (the driver's loaded subject inherited), dying with it."""
    return cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"),
                                  initializer=_background)


def _stop_pool(pool: cf.ProcessPoolExecutor) -> None:
    """Stop a background pool without waiting for the work under way (it is terminated)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        if process.is_alive():
            process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def _check_in_child(program_spec: str, options) -> List[Dict]:
    """In the background: each program against its reference (the subject is the driver's, forked)."""
    _yield_cores()
    return worker_subject(program_spec).check_programs(options)


class BackgroundChecks:
    """Each program checked against its reference (``Subject.check_programs``) in a forked
    process beside the run: the checks build and run whole programs (NPBench's 41: minutes on a
    machine with nothing cached), and no instance waits on them; ``ready()`` hands their
    records over once."""

    def __init__(self, program_spec: str, options):
        self.pool = _background_pool()
        self.future: Optional[cf.Future] = self.pool.submit(_check_in_child, program_spec, options)

    @property
    def busy(self) -> bool:
        return self.future is not None

    def ready(self, timeout: Optional[float] = 0.0) -> Optional[List[Dict]]:
        """The checks' records once done (within ``timeout`` seconds; None: wait), else None. A
        check that failed in the background raises as it would have in the driver."""
        if self.future is None:
            return None
        done, _ = cf.wait([self.future], timeout=timeout)
        if not done:
            return None
        future, self.future = self.future, None
        try:
            return future.result()
        finally:
            self.pool.shutdown(wait=False)

    def close(self) -> None:
        """Stop: checks not done are not waited for (the report says they did not finish)."""
        self.future = None
        _stop_pool(self.pool)


class DeferredPlanner:
    """Enumerates the deferred transformations one after another in a forked process while
    the driver judges the planned instances; ``ready()`` hands over what is done."""

    def __init__(self, plan_: Plan, config, first_position: int):
        self.subject = plan_.subject
        self.request = PlanRequest.of(config)
        self.position = first_position
        self.pool = _background_pool()
        specs = plan_.deferred
        positions = {spec: i for i, spec in enumerate(self.subject.transformation_specs(config.transformations or None))}
        self.futures = {self.pool.submit(_enumerate_in_child, spec, positions.get(spec, 0), self.request,
                                         str(config.options.work_dir), config.strict_plan): spec for spec in specs}
        self.started = time.monotonic()

    @property
    def busy(self) -> bool:
        return bool(self.futures)

    def ready(self) -> List[Tuple[Dict, List[Dict], float]]:
        """(transformation row, instance rows, seconds) of each enumeration finished since the
        last call; a failed one comes back as an ERROR row."""
        out = []
        for future in [f for f in self.futures if f.done()]:
            spec = self.futures.pop(future)
            try:
                row, found, seconds = future.result()
            except ConfigError:
                raise
            except Exception as exc:          # the planner process died, or DaCe did in it
                row = {"spec": spec, "position": 0, "class_name": spec, "instances": 0, "status": "ERROR",
                       "message": f"matching failed: {type(exc).__name__}: {exc}"}
                found, seconds = [], time.monotonic() - self.started
            rows = _instance_rows(self.subject, [(spec, inst) for inst in found], self.position)
            self.position += len(rows)
            out.append((row, rows, seconds))
        return out

    def pending_specs(self) -> List[str]:
        return sorted(self.futures.values())

    def close(self) -> None:
        """Stop: what is not enumerated yet stays unplanned (the next run enumerates it)."""
        for future in self.futures:
            future.cancel()
        _stop_pool(self.pool)       # an enumeration under way is not waited for
