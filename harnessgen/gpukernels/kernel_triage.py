"""Triage of CUDA kernel findings: the cutout triage (replay through cffi, group, shrink) plus
the synchronization oracle, and a reproducer that replays through pycuda.

* A raw crash from the sanitizer sweep (kind ``sanitizer``: outputs agreed, compute-sanitizer
  did not) is replayed under the sanitizer instead of being called FLAKY.
* Every finding is replayed ``SYNC_RUNS`` times: post disagreeing with itself on one input
  while pre does not is a RACE; compute-sanitizer's racecheck and synccheck (where installed)
  name the racing accesses or the divergent barrier and settle the verdict
  (``sanitizer.classify``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Optional

from .. import __version__
from ..core.outcome import Outcome
from ..cuda import sanitizer
from ..harness.replay import ReplayResult, ReplayWorker, execute
from ..triage.classify import Finding, Key, Triage
from ..triage.shrink import ShrinkStats
from .kernel_reproducer import launch_geometry, write_kernel_finding

SYNC_RUNS = 20


class KernelTriage(Triage):
    """Triage for builds of the kernel subject (gpukernels/build.py)."""

    def _classify(self, worker: ReplayWorker, data: bytes, kind: str,
                  confirmed: Callable[[ReplayResult], bool]) -> Optional[ReplayResult]:
        result = self._replay(worker, data) if kind != "hang" else super()._classify(worker, data, kind, confirmed)
        if kind != "sanitizer" or (result is not None and result.outcome.is_finding):
            return result
        reports = self._sanitize(data)
        verdict = sanitizer.classify(reports)
        if verdict is None:
            return result            # the sweep's report did not come back: FLAKY, as any other
        symbols = result.symbols if result else {}
        return ReplayResult(verdict, symbols=symbols, detail={"sanitizer": [r.to_json() for r in reports]},
                            message=f"outputs agree; compute-sanitizer reports {verdict.name}")

    def _replay(self, worker: ReplayWorker, data: bytes) -> ReplayResult:
        """Each replay launches the kernel SYNC_RUNS times: a race changes some launches only, so
        one wrong launch in any replay is the finding (the synchronization evidence, gathered
        when it is written, tells a RACE from a plain MISMATCH)."""
        results = []
        for _ in range(self.options.replays):
            results.append(worker.run(data, self.options.tolerance, 1, SYNC_RUNS))
            if results[-1].outcome.is_finding:
                return results[-1]
        return results[0]

    # the native confirmation launches post as often as a replay does (a race changes some
    # launches only)
    native_repeat = SYNC_RUNS

    def _confirmed_otherwise(self, result: ReplayResult) -> bool:
        """A finding only compute-sanitizer sees has outputs that agree anyway."""
        return "sanitizer" in result.detail or super()._confirmed_otherwise(result)

    def _minimize_group(self, worker: ReplayWorker, key: Key, members, merged: Dict[Key, Dict]) -> None:
        crash, data, result = members[0]
        if "sanitizer" not in result.detail:
            return super()._minimize_group(worker, key, members, merged)
        # only the sanitizer sees it: kept as found (each shrink step would cost a sanitizer run)

        entry = merged.setdefault(key, {"raw": [], "first": float("inf")})
        entry["raw"] += [str(m[0].path) for m in members]
        first = min((m[0].seconds for m in members if m[0].seconds is not None), default=float("inf"))
        entry["first"] = min(entry["first"], first)
        entry.update(data=data, result=result, stats=ShrinkStats(bytes_before=len(data), bytes_after=len(data)),
                     raw_bytes=len(data), seconds=0.0)

    def _sanitize(self, data: bytes) -> List[sanitizer.SanitizerReport]:
        with tempfile.NamedTemporaryFile(suffix=".bin") as tmp:
            tmp.write(data)
            tmp.flush()
            return sanitizer.check_if_installed(self.build.harness_replay, Path(tmp.name))

    def _synchronization(self, data: bytes, result: ReplayResult) -> Dict:
        """Repeated runs and the sanitizer on the minimized input: the evidence and its verdict."""
        evidence: Dict = {}
        with ReplayWorker(self.build.dir) as worker:
            repeated = worker.run(data, self.options.tolerance, 1, SYNC_RUNS)
        differing = repeated.detail.get("differing_runs")
        if differing is None:
            differing = SYNC_RUNS if repeated.outcome.is_finding else 0
        evidence["repeated_runs"] = {"runs": SYNC_RUNS, "differing": differing}
        reports = ([sanitizer.SanitizerReport(**{k: v for k, v in r.items() if k != "verdict"})
                    for r in result.detail["sanitizer"]] if "sanitizer" in result.detail else self._sanitize(data))
        evidence["sanitizer"] = [r.to_json() for r in reports] if reports else None
        if not reports:
            evidence["sanitizer_missing"] = "compute-sanitizer not found or not runnable here"
        evidence["verdict"] = sync_verdict(result.outcome, reports, differing, SYNC_RUNS).name
        return evidence

    def _write(self, key: Key, entry: Dict) -> Finding:
        data, result = entry["data"], entry["result"]
        decoded = self.layout.decode(data)
        evidence = self._synchronization(data, result)
        outcome = Outcome[evidence["verdict"]]
        container = result.container
        digest = hashlib.sha1(json.dumps([outcome.name, container, key[2]], default=str).encode()).hexdigest()[:8]
        folder = self.options.keep_root / "-".join(p for p in (outcome.name.lower(), container or "", digest) if p)
        kernel = self.build.manifest["kernel"]
        summary = _summary(outcome, result, evidence)
        meta = {
            "target": self.instance.target, "instance": self.instance.id, "program": self.instance.program,
            "transformation": self.instance.transformation, "kernel": kernel, "outcome": outcome.name, "stage": "post",
            "container": container, "index": result.detail.get("multi_index"), "pre_value": result.detail.get("pre"),
            "post_value": result.detail.get("post"), "differing": result.detail.get("differing"),
            "total": result.detail.get("total"), "max_abs_diff": result.detail.get("max_abs_diff"),
            "message": result.message, "summary": summary, "synchronization": evidence,
            "tolerance": self.options.tolerance.to_json(),
            "symbols": {k: int(v) for k, v in decoded.symbols.items()},
            "launch": launch_geometry(self.build.dir, decoded.symbols),
            "raw_crashes": entry["raw"], "raw_bytes": entry["raw_bytes"], "minimized_bytes": len(data),
            "shrink": dataclasses.asdict(entry["stats"]),
            "versions": {"harnessgen": __version__, "cuda": self.build.manifest.get("cuda"),
                         "compilers": self.build.manifest.get("compilers", {})},
            "build_dir": str(self.build.dir), "command_line": self.options.command_line,
        }
        expected = execute(self.build.dir, decoded, side="pre")
        write_kernel_finding(folder, meta, self.build.dir, data, decoded, expected)
        return Finding(key=key, outcome=outcome, container=container, folder=folder, raw=entry["raw"], meta=meta)


def sync_verdict(outcome: Outcome, reports: List[sanitizer.SanitizerReport], differing: int, runs: int) -> Outcome:
    """The synchronization oracle's verdict on a finding: the sanitizer's when it has one; else
    RACE when post disagreed with itself (some of ``runs`` launches wrong, not all); else the
    replay's own outcome (a kernel wrong every time is a plain MISMATCH)."""
    verdict = sanitizer.classify(reports)
    if verdict is None and 0 < differing < runs:
        verdict = Outcome.RACE
    return verdict or outcome


def _summary(outcome: Outcome, result: ReplayResult, evidence: Dict) -> str:
    runs = evidence["repeated_runs"]
    where = ""
    for report in evidence.get("sanitizer") or []:
        if report["verdict"]:
            where = f"; {report['tool']}: {report['errors']} error(s) at {', '.join(report['locations'][:3]) or '?'}"
            break
    if outcome in (Outcome.RACE, Outcome.BARRIER_DIVERGENCE):
        return (f"{outcome.name}: the kernel's outputs differ from the reference in {runs['differing']} of "
                f"{runs['runs']} runs on this input{where}")
    return result.describe() + where

