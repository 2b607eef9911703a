"""What a campaign worker runs: one instance, build -> fuzz -> triage, given a picklable
``Task``. Workers may be forked local processes (they inherit the parsed programs) or Dask
workers anywhere (they parse each program once per process and keep it)."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Dict, Tuple

from .. import runlog
from ..files import write_json

RESULT_FILE = "result.json"


@dataclasses.dataclass
class Task:
    program_spec: str
    spec: str                       # transformation spec, as planned
    instance: Dict                  # Instance JSON
    options: object                 # harnessgen.fuzz.FuzzOptions (out_dir: the instance's directory)
    attempt: int


# (program spec) -> (target, {program name: SDFG}); (spec) -> class. Filled by the first task a
# process runs, or by the campaign process before it forks its local workers.
_TARGETS: Dict[str, Tuple[object, Dict[str, object]]] = {}
_CLASSES: Dict[str, type] = {}


def program(program_spec: str, name: str):
    from ..targets import resolve

    if program_spec not in _TARGETS:
        target, _ = resolve(program_spec)
        _TARGETS[program_spec] = (target, {})
    target, sdfgs = _TARGETS[program_spec]
    if name not in sdfgs:
        sdfgs[name] = target.programs[name].build()
    return target, sdfgs[name]


def transformation(spec: str) -> type:
    from ..instances import load_transformation

    if spec not in _CLASSES:
        _CLASSES[spec] = load_transformation(spec)
    return _CLASSES[spec]


def remember(program_spec: str, target, sdfgs: Dict[str, object], classes: Dict[str, type]) -> None:
    """Seed the caches with what the campaign process has already parsed."""
    _TARGETS[program_spec] = (target, dict(sdfgs))
    _CLASSES.update(classes)


def result_path(options) -> Path:
    return Path(options.out_dir) / RESULT_FILE


def run_task(task: Task) -> Dict:
    """Run one instance; its result goes to ``<instance dir>/result.json`` (atomically) before
    it is returned, so a campaign process killed meanwhile still finds it."""
    from ..fuzz import InstanceRunner
    from ..instances import Instance

    inst = Instance.from_json(task.instance)
    started = time.monotonic()
    target, sdfg = program(task.program_spec, inst.program)
    runner = InstanceRunner(target, sdfg, transformation(task.spec), task.options)
    with runlog.captured_warnings(task.options.out_dir, echo=task.options.verbose):
        result = runner.run(inst)
    result.wall_seconds = round(time.monotonic() - started, 3)
    entry = result.to_json()
    entry.update(attempt=task.attempt, spec=task.spec, finished_at=time.time(),
                 warnings=runlog.count(task.options.out_dir))
    write_json(result_path(task.options), entry)
    return entry


def error_result(task: Task, message: str) -> Dict:
    """The result of a task whose worker died or could not run it (a harnessgen error)."""
    inst = task.instance
    return {"id": inst["id"], "transformation": inst["transformation"], "program": inst["program"],
            "target": inst["target"], "verdict": "ERROR", "message": message, "attempt": task.attempt,
            "spec": task.spec, "execs": 0, "execs_per_sec": 0.0, "findings": [], "crashes": [],
            "seconds_to_first_finding": None, "wall_seconds": 0.0, "verdict_seconds": 0.0,
            "finished_at": time.time()}
