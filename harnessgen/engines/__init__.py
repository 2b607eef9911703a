"""Stage 6: fuzzing engines behind one small interface.

An engine takes a built harness and a directory of seeds, fuzzes for a
budget and reports raw crashes, hangs and statistics. Engines are found by
name in ``ENGINES`` (module, class) and imported only when used; adding one
touches this table and its own module.
"""
from __future__ import annotations

import abc
import dataclasses
import importlib
from pathlib import Path
from typing import Callable, Dict, List, Optional

from ..core.errors import ConfigError

ENGINES: Dict[str, tuple] = {
    "afl": (".afl", "AflEngine"),
    "atheris": (".atheris", "AtherisEngine"),
}


@dataclasses.dataclass
class FuzzJob:
    build: "object"                       # harnessgen.harness.build.HarnessBuild
    seeds_dir: Path
    out_dir: Path                         # engine's own output directory
    time_s: float
    options: List[str] = dataclasses.field(default_factory=list)   # extra engine command-line options
    dict_file: Optional[Path] = None
    until_crash: bool = False
    resume: bool = True
    seed: int = 0                         # the engine's own RNG seed
    race_threads: int = 0                 # > 1: also fuzz in race mode (post on this many threads)
    race_repeat: int = 2                  # race mode: post runs per input
    parallel: int = 1                     # > 1: one -M and parallel-1 -S instances on one sync directory
    max_execs: Optional[int] = None       # stop after this many executions (all instances together)
    # the engine's time limit for one execution (None: its own default), from measured runs
    exec_timeout_ms: Optional[int] = None
    progress: Optional[Callable[[Dict[str, float]], None]] = None


@dataclasses.dataclass
class RawCrash:
    path: Path
    seconds: Optional[float]              # since the engine was started, when known
    kind: str = "crash"                   # "crash", "hang", "seed", or "race" (found in race mode)
    execs: Optional[int] = None           # the engine's exec count when it saved the input


@dataclasses.dataclass
class EngineResult:
    execs: int
    execs_per_sec: float
    wall_s: float
    crashes: List[RawCrash]
    stats: Dict[str, str]
    command: List[str]
    queue: List[Path] = dataclasses.field(default_factory=list)   # the inputs the engine kept (its corpus)


class Engine(abc.ABC):
    name = "engine"

    @abc.abstractmethod
    def run(self, job: FuzzJob) -> EngineResult:
        """Fuzz ``job.build`` for ``job.time_s`` seconds (and at most ``job.max_execs``
        executions). With ``job.resume`` and an earlier session in ``job.out_dir``, continue it
        for the time that session left over."""


def get_engine(name: str) -> Engine:
    if name not in ENGINES:
        raise ConfigError(f"--engine {name!r} is unknown; choose one of {', '.join(sorted(ENGINES))}")
    module_name, cls_name = ENGINES[name]
    module = importlib.import_module(module_name, __name__)
    return getattr(module, cls_name)()


__all__ = ["ENGINES", "Engine", "EngineResult", "FuzzJob", "RawCrash", "get_engine"]
