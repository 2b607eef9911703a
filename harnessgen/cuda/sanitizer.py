"""The synchronization oracle's second witness: NVIDIA compute-sanitizer.

A race in a kernel rarely changes the outputs of one run, so the differential oracle alone
misses most of them. On a replay (and on the screened seeds before fuzzing) the harness runs
under ``compute-sanitizer --tool racecheck`` (shared-memory hazards) and ``--tool synccheck``
(barriers that not every thread of a block reaches); their reports classify a finding:

* ``BARRIER_DIVERGENCE``  synccheck reports a barrier error (divergent threads at a barrier)
* ``RACE``                racecheck reports a hazard, or post's outputs differ between
                          repeated runs on the same input while pre's do not

Which tool ran, with which exit status and which source lines, goes into the finding.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional

from ..core import envs
from ..core.outcome import Outcome
from . import toolkit

TOOLS = ("racecheck", "synccheck")
TIMEOUT_S = 600.0

_RACE = re.compile(r"Race reported between (\w+) access at \S+ in (?P<where>\S+?:\d+)")
_RACE_ALSO = re.compile(r"and (\w+) access at \S+ in (?P<where>\S+?:\d+)")
_HAZARDS = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
_BARRIER = re.compile(r"Barrier error detected|Divergent thread\(s\) in (block|warp)|[Ii]nvalid.*barrier")
_AT = re.compile(r"at (?:0x[0-9a-f]+ )?in (?P<where>\S+?:\d+)")
_ERRORS = re.compile(r"ERROR SUMMARY: (\d+) errors?")


@dataclasses.dataclass
class SanitizerReport:
    tool: str
    returncode: int
    errors: int                          # what the tool counted
    locations: List[str]                 # file:line of the accesses or barriers it names
    lines: List[str]                     # its report, ``=========`` lines only (bounded)

    @property
    def verdict(self) -> Optional[Outcome]:
        if self.tool == "synccheck" and self.errors:
            return Outcome.BARRIER_DIVERGENCE
        if self.tool == "racecheck" and self.errors:
            return Outcome.RACE
        return None

    def to_json(self) -> Dict:
        return dataclasses.asdict(self) | {"verdict": self.verdict.name if self.verdict else None}


def parse(tool: str, output: str, returncode: int = 0) -> SanitizerReport:
    """Read one tool's report from its combined output."""
    lines = [l.rstrip() for l in output.splitlines() if l.startswith("=========")]
    locations: List[str] = []

    def add(where: str) -> None:
        where = os.path.basename(where.split(":", 1)[0]) + ":" + where.rsplit(":", 1)[-1]
        if where not in locations:
            locations.append(where)

    errors = 0
    if tool == "racecheck":
        for line in lines:
            match = _RACE.search(line) or _RACE_ALSO.search(line)
            if match:
                add(match.group("where"))
                errors += line.count("Race reported")
        summary = _HAZARDS.search(output)
        if summary:
            errors = max(errors, int(summary.group(2)))
    else:
        for line in lines:
            if _BARRIER.search(line):
                errors += 1
                found = _AT.search(line)
                if found:
                    add(found.group("where"))
            elif errors and _AT.search(line) and "Barrier" not in line:
                add(_AT.search(line).group("where"))
        summary = _ERRORS.search(output)
        if summary and not errors:
            errors = int(summary.group(1))
    return SanitizerReport(tool=tool, returncode=returncode, errors=errors, locations=locations[:20],
                           lines=lines[:60])


def find() -> Optional[Path]:
    """compute-sanitizer: HARNESSGEN_COMPUTE_SANITIZER, else on PATH, else in the toolkit."""
    configured = envs.get("HARNESSGEN_COMPUTE_SANITIZER")
    if configured:
        return Path(configured)
    on_path = shutil.which("compute-sanitizer")
    if on_path:
        return Path(on_path)

    try:
        root = toolkit.find().root
    except Exception:   # noqa: BLE001 -- no toolkit: no sanitizer either
        return None
    for candidate in (root / "bin" / "compute-sanitizer", root / "compute-sanitizer" / "compute-sanitizer"):
        if candidate.is_file():
            return candidate
    return None


def run(harness: Path, input_path: Path, tool: str, timeout_s: float = TIMEOUT_S) -> SanitizerReport:
    """The replay binary on one input under one tool (racecheck with its analysis report, so
    each hazard is named by the two source lines involved)."""
    exe = find()
    if exe is None:
        raise FileNotFoundError("compute-sanitizer not found: set HARNESSGEN_COMPUTE_SANITIZER")
    extra = ["--racecheck-report", "analysis"] if tool == "racecheck" else []
    proc = subprocess.run([str(exe), "--tool", tool, *extra, "--print-limit", "50", str(harness), str(input_path)],
                          capture_output=True, text=True, timeout=timeout_s)
    return parse(tool, proc.stdout + proc.stderr, proc.returncode)


def classify(reports: List[SanitizerReport]) -> Optional[Outcome]:
    """The strongest verdict the reports support: a divergent barrier before a race (a barrier
    not every thread reaches also leaves the accesses around it unordered)."""
    verdicts = [r.verdict for r in reports if r.verdict]
    if Outcome.BARRIER_DIVERGENCE in verdicts:
        return Outcome.BARRIER_DIVERGENCE
    return Outcome.RACE if Outcome.RACE in verdicts else None


def check(harness: Path, input_path: Path, tools=TOOLS) -> List[SanitizerReport]:
    return [run(harness, input_path, tool) for tool in tools]


def check_if_installed(harness: Path, input_path: Path) -> List[SanitizerReport]:
    """``check``, or no reports where compute-sanitizer is not installed or could not run."""
    if find() is None:
        return []
    try:
        return check(harness, input_path)
    except (OSError, subprocess.TimeoutExpired):
        return []


def sweep(harness: Path, passing: List[Path], limit: int = 6) -> List[Path]:
    """Passing inputs on which racecheck or synccheck reports an error (the ``limit`` largest:
    more threads per block, more room for a race); none where the sanitizer is not installed."""
    if find() is None:
        return []
    largest = sorted(passing, key=lambda p: (-p.stat().st_size, p.name))[:limit]
    return [path for path in largest if classify(check_if_installed(harness, path))]
