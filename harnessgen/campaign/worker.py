"""What a worker runs: one instance through the runner, given a picklable ``Task``. Workers
may be this process (``inline``), forked local processes (they inherit the loaded subject) or
Dask workers anywhere (they load each subject once per process and keep it)."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Callable, Dict, Optional

from .. import subjects
from ..core import runlog, shared_pairs
from ..core.files import write_atomic, write_json
from ..plan.instances import Instance
from .runner import InstanceRunner
from .state import read_result

RESULTS_DIR = "results"


@dataclasses.dataclass
class Task:
    program_spec: str
    spec: str                       # transformation spec, as planned
    instance: Dict                  # Instance JSON
    options: object                 # harnessgen.core.records.FuzzOptions (out_dir: the run directory)
    attempt: int
    audit: bool = False             # the finished instance's deferred whole-program audit, not its judgement


# --program value -> its loaded subject (programs parsed, transformations loaded as asked for).
# Filled by the first task a process runs, or by the driver before it forks its local workers.
_SUBJECTS: Dict[str, subjects.Subject] = {}


def worker_subject(program_spec: str) -> subjects.Subject:
    if program_spec not in _SUBJECTS:
        _SUBJECTS[program_spec] = subjects.load(program_spec)
    return _SUBJECTS[program_spec]


def remember(program_spec: str, subject: subjects.Subject) -> None:
    """Keep what the driver has already loaded (forked workers inherit it)."""
    _SUBJECTS[program_spec] = subject


def result_file(directory: Path, instance_id: str) -> Path:
    return Path(directory) / RESULTS_DIR / f"{instance_id}.json"


def run_task(task: Task, live: Optional[Callable] = None) -> Dict:
    """Run one instance; its result goes to ``results/<id>.json`` (atomically) before it is
    returned, so a driver killed meanwhile still finds it. ``live(inst, stats)``: the engine's
    statistics as they come (a worker in the driver's own process only)."""
    inst = Instance.from_json(task.instance)
    options = task.options
    with runlog.captured_warnings(options.out_dir, echo=options.verbose):
        runner = InstanceRunner(worker_subject(task.program_spec), options, live)
        if task.audit:
            earlier = read_result(result_file(options.out_dir, inst.id))
            if earlier is None:
                return error_result(task, f"its deferred audit found no result in {result_file(options.out_dir, inst.id)}")
            entry = {**earlier, **runner.audit_later(task.spec, inst, earlier).to_json()}
        else:
            entry = runner.run(task.spec, inst).to_json()
    entry.update(attempt=task.attempt, spec=task.spec, finished_at=time.time())
    if not shared_pairs.is_pending(entry):     # a follower's is the driver's to finish (``_Followers``)
        write_json(result_file(options.out_dir, inst.id), entry)
    return entry


def error_result(task: Task, message: str) -> Dict:
    """The result of a task whose worker died or could not run it: its ERROR, with the reason
    kept in the run's ``errors/<id>.txt``."""
    inst = task.instance
    where = Path(task.options.out_dir) / "errors" / f"{inst['id']}.txt"
    write_atomic(where, f"{message}\n".encode())
    return {"id": inst["id"], "transformation": inst["transformation"], "program": inst["program"],
            "target": inst["target"], "verdict": "ERROR", "message": f"{message} (log: {where})",
            "error": {"stage": "worker", "reason": message, "log": str(where)}, "attempt": task.attempt,
            "spec": task.spec, "execs": 0, "execs_per_sec": 0.0, "findings": [], "crashes": [],
            "seconds_to_first_finding": None, "wall_seconds": 0.0, "verdict_seconds": 0.0,
            "finished_at": time.time()}
