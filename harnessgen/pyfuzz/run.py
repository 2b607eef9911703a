"""``harnessgen pyfuzz``: fuzz a Python-level compiler, then triage what was found.

The run directory (``--out``) keeps the corpus, the fuzzer's artifacts, the raw
findings and ``summary.json``; the same command again continues the corpus
(``--fresh`` starts over). Findings go to ``crashes/pyfuzz/<compiler>/``.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Dict, List, Optional

from ..core.files import write_json
from ..core.runtime import Tolerance
from ..engines import FuzzJob, get_engine
from ..engines.atheris import PyFuzzTarget
from .findings import PyTriageOptions, triage_run
from .judge_server import CompilerSpec


@dataclasses.dataclass
class PyFuzzConfig:
    compiler: str
    out_dir: Path
    crashes_dir: Path
    time_s: float = 120.0
    target_args: List[str] = dataclasses.field(default_factory=list)   # mode, dims, mutations, instrument
    passes: List[str] = dataclasses.field(default_factory=list)      # --dace-pass / --torch-pass
    modes: List[str] = dataclasses.field(default_factory=list)       # --compile-modes (empty: all)
    python: Optional[str] = None                                      # --python / --torch
    libfuzzer: List[str] = dataclasses.field(default_factory=list)
    tolerance: Tolerance = Tolerance()
    shrink: bool = True
    shrink_budget_s: float = 300.0
    fresh: bool = False
    seed: int = 0


def run_pyfuzz(config: PyFuzzConfig) -> Dict:
    out = Path(config.out_dir)
    if config.fresh and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    arguments = ["--compiler", config.compiler, "--rtol", repr(config.tolerance.rtol),
                 "--atol", repr(config.tolerance.atol), *config.target_args]
    for spec in config.passes:
        arguments += ["--pass", spec]
    if config.modes:
        arguments += ["--compile-modes", ",".join(config.modes)]
    job = FuzzJob(build=PyFuzzTarget(arguments, config.python), seeds_dir=None, out_dir=out, time_s=config.time_s,
                  options=config.libfuzzer, seed=config.seed)
    result = get_engine("atheris").run(job)
    started = time.time()
    spec = CompilerSpec(config.compiler, out / "work", tuple(config.passes), tuple(config.modes), config.python)
    findings = triage_run(out, config.crashes_dir, spec,
                          PyTriageOptions(tolerance=config.tolerance, shrink=config.shrink,
                                          shrink_budget_s=config.shrink_budget_s))
    sessions = [json.loads(p.read_text()) for p in sorted((out / "stats").glob("*.json"))]
    summary = {
        "compiler": config.compiler, "passes": config.passes, "seconds": round(result.wall_s, 1),
        "execs": result.execs, "execs_per_sec": round(result.execs_per_sec, 3),
        "outcomes": _sum_outcomes(sessions), "coverage": sessions[-1]["coverage"] if sessions else {},
        "fuzzer_crashes": len(result.crashes), "triage_seconds": round(time.time() - started, 1),
        "command": result.command,
        "findings": [{"outcome": f.verdict.outcome.name, "signature": list(f.signature), "detail": f.verdict.detail,
                      "directory": str(f.directory), "seconds_to_find": f.seconds, "duplicates": f.duplicates}
                     for f in findings],
    }
    write_json(out / "summary.json", summary)
    # across runs the same finding is one bug: bugs.json and BUG.md (pyfuzz minimized the programs)
    from ..bugs.analysis import analyse
    from ..bugs.cluster import bug_rows

    analyse([out], out, reduce=None)
    summary["distinct_bugs"] = bug_rows(out)
    write_json(out / "summary.json", summary)
    return summary


def _sum_outcomes(sessions: List[Dict]) -> Dict[str, int]:
    total: Dict[str, int] = {}
    for stats in sessions:
        for name, count in stats.get("outcomes", {}).items():
            total[name] = total.get(name, 0) + count
    return total
