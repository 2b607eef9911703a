"""Findings of one or several runs -> bugs.json, reduced programs and BUG.md per bug."""
from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .bug_report import write_bug_reports
from .cluster import Bug, collect, write_bugs
from .reduce import ReduceOptions, reduce_bug


def analyse(run_dirs: Sequence[Path], out_dir: Optional[Path] = None,
            reduce: Optional[ReduceOptions] = ReduceOptions()) -> List[Bug]:
    """Cluster the findings of ``run_dirs`` (with those an earlier analysis into ``out_dir``
    kept), reduce each bug's program (``reduce``; None: not), and write ``bugs.json`` and
    ``bugs/<id>/BUG.md`` there (default: the first run)."""
    run_dirs = [Path(r) for r in run_dirs]
    out_dir = Path(out_dir) if out_dir is not None else run_dirs[0]
    started = time.monotonic()
    bugs = collect(run_dirs, out_dir)
    clustered = time.monotonic()
    if reduce is not None and reduce.seconds > 0:
        for bug in bugs:
            bug.reduction = _reduced(bug, out_dir, reduce)
    write_bug_reports(bugs, out_dir)
    write_bugs(bugs, run_dirs, out_dir, seconds=clustered - started, reduce_seconds=time.monotonic() - clustered)
    return bugs


def _reduced(bug: Bug, out_dir: Path, options: ReduceOptions) -> Dict:
    """The bug's reduction record; an error while reducing (harnessgen's defect) is recorded as
    the reason, and the other bugs and the run's report go on."""
    try:
        return reduce_bug(bug, out_dir, options).to_json()
    except Exception as exc:  # noqa: BLE001 -- one bug's reduction must not cost the run its report
        rep = bug.representative
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return {"bug": bug.id, "kind": bug.signature.kind, "representative": str(rep.path), "before": list(rep.size),
                "after": list(rep.size), "seconds": 0.0, "candidates": 0, "kept": 0, "folder": None,
                "reason": f"reduction stopped on an error (a harnessgen defect, please report it): {detail}"}
