"""Triage of what a run left behind (``harnessgen triage``): a ``harnessgen fuzz --out``
directory (its summary.json updated) or an AFL++ sync directory of a harnessgen harness, each
build's raw crashes triaged by its subject's triage."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from ..core.errors import ConfigError
from ..core.files import write_json
from ..core.records import engine_dir
from ..engines import RawCrash, afl as afl_layout
from ..plan.instances import Instance
from ..subjects import triage_build
from ..triage.classify import TriageOptions, TriageResult
from . import DB_NAME
from .run_report import write_summary
from .state import CampaignState


def _afl_crashes(afl_root: Path) -> List[RawCrash]:
    """Raw crashes of every afl-fuzz instance under a sync directory (race: found in race mode)."""
    return [RawCrash(path, None, kind) for path, kind in afl_layout.crash_files(afl_root)]


def _afl_build_dir(afl_out: Path) -> Optional[Path]:
    """The build a default/ AFL++ output directory fuzzed (from its cmdline file)."""
    cmdline = afl_out / "cmdline"
    if not cmdline.is_file():
        return None
    harness = Path(cmdline.read_text().splitlines()[0])
    return harness.parent if (harness.parent / "manifest.json").is_file() else None


def triage_directory(path: Path, crashes_root: Path, options: TriageOptions) -> List[Tuple[str, TriageResult]]:
    """Triage a ``harnessgen fuzz --out`` directory (updating its summary.json) or one AFL++ output
    directory (``.../default`` or its parent)."""
    path = Path(path)
    summary_path = path / "summary.json"
    if summary_path.is_file():
        return _triage_run(path, summary_path, crashes_root, options)
    root = afl_layout.sync_dir(path)
    build_dir = next((b for b in map(_afl_build_dir, afl_layout.instance_dirs(root)) if b is not None), None)
    if build_dir is None:
        raise ConfigError(f"triage: {path} is neither a harnessgen run directory (with summary.json) nor an "
                          "AFL++ output directory of a harnessgen harness (with default/cmdline)")
    instance = json.loads((build_dir / "instance.json").read_text())
    keep = crashes_root / (instance["target"] or instance["program"]) / instance["id"]
    result = triage_build(build_dir, _afl_crashes(root), dataclasses.replace(options, keep_root=keep))
    return [(instance["id"], result)]


def _planned(run: Path) -> Dict[str, Instance]:
    """The run's instances as planned (its state), by id: a build shared by several instances
    (parameter variants whose posts are the same) names only the first in its instance.json."""
    if not (run / DB_NAME).is_file():
        return {}
    state = CampaignState(run / DB_NAME)
    try:
        return {row["id"]: Instance.from_json(row["instance"]) for row in state.instances()
                if "transformation_spec" in row["instance"]}
    finally:
        state.close()


def _triage_run(run: Path, summary_path: Path, crashes_root: Path, options: TriageOptions):
    summary = json.loads(summary_path.read_text())
    planned = _planned(run)
    done = []
    for entry in summary["instances"]:
        build_dir = entry.get("build_dir")
        if not build_dir or not Path(build_dir, "manifest.json").is_file():
            continue
        raw = [RawCrash(Path(p), None, Path(p).name.split("-")[0]) for p in entry.get("crashes", [])
               if Path(p).is_file() and Path(p).parent.name == "raw"]
        known = {hashlib.sha1(c.path.read_bytes()).hexdigest() for c in raw}
        for crash in _afl_crashes(engine_dir(run, entry["id"])):
            if hashlib.sha1(crash.path.read_bytes()).hexdigest() not in known:
                raw.append(crash)
        if not raw:
            continue
        keep = (raw[0].path.parent.parent if raw[0].path.parent.name == "raw"
                else crashes_root / (entry.get("target") or entry["program"]) / entry["id"])
        result = triage_build(Path(build_dir), raw, dataclasses.replace(options, keep_root=keep,
                                                                         instance=planned.get(entry["id"])))
        entry["verdict"] = result.verdict.name
        entry["findings"] = [f.to_json() for f in result.findings]
        entry["triage"] = {"raw": result.raw_total, "findings": len(result.findings),
                           "invalid_inputs": len(result.invalid), "flaky": len(result.flaky),
                           "seconds": result.seconds}
        done.append((entry["id"], result))
    _record(run, summary_path, summary, {instance_id for instance_id, _ in done})
    return done


def _record(run: Path, summary_path: Path, summary: Dict, changed: Set[str]) -> None:
    """The new verdicts go where the run keeps its results: its state, from which summary.json
    and the report are written (a later `harnessgen report` keeps them), else summary.json."""
    if not (run / DB_NAME).is_file():
        write_json(summary_path, summary)
        return
    state = CampaignState(run / DB_NAME)
    try:
        recorded = {row["id"]: row["result"] for row in state.instances() if row["result"]}
        for entry in summary["instances"]:
            if entry["id"] in changed and entry["id"] in recorded:
                state.finish(entry["id"], {**recorded[entry["id"]], **{k: entry[k] for k in
                                                                       ("verdict", "findings", "triage")}})
        write_summary(run, state)
    finally:
        state.close()

