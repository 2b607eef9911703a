"""Findings of one or several runs -> bugs.json, reduced programs and BUG.md per bug."""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Callable, ContextManager, Dict, List, Optional, Sequence

from ..checks import confirm
from ..core.files import write_json
from ..core.names import JUDGED_FILE
from .bug_report import BUGS_DIR, write_bug_reports
from .cluster import Bug, collect, load_json, write_bugs
from .reduce import ReduceOptions, cached_reduction, reduce_bug
from .version_verdicts import STILL_PRESENT, newest_showing, version_key
from .versions import load_kept_versions, rejudge_bugs

# a reduction given less than this is not started (its bug waits for the next analysis)
MIN_REDUCE_SECONDS = 10.0
# outcomes that are a wrong result: reduced first, and always, with a bug's whole reduction time
# even where the analysis's own time is spent (what silently corrupts a run is filed first)
WRONG_RESULTS = ("MISMATCH", "RACE", "OOB_WRITE")


def analyse(run_dirs: Sequence[Path], out_dir: Optional[Path] = None,
            reduce: Optional[ReduceOptions] = ReduceOptions(), seconds: Optional[float] = None,
            step: Callable[[str], ContextManager] = lambda label: contextlib.nullcontext(),
            on_dace: Sequence[str] = (), hard: bool = False) -> List[Bug]:
    """Cluster the findings of ``run_dirs`` (with those an earlier analysis into ``out_dir``
    kept), reduce each bug's program (``reduce``; None: not), and write ``bugs.json`` and
    ``bugs/<id>/BUG.md`` there (default: the first run). ``seconds`` bounds the reductions
    together, in ``reduction_order`` (wrong results first, and always reduced unless ``hard``:
    a run's bound, which the analysis must not overrun: then the confirmations, whether DaCe
    alone shows each bug, come first and the reductions get what they leave; another bug
    left over says so and is reduced by the next analysis, which keeps what this one reduced);
    ``step(label)`` is told of every step, for a progress display. ``on_dace``: DaCe versions each bug is judged on again
    (``versions``), in their own environments; the verdicts of earlier judgements are kept."""
    run_dirs = [Path(r) for r in run_dirs]
    out_dir = Path(out_dir) if out_dir is not None else run_dirs[0]
    started = time.monotonic()
    with step("clustering the findings into distinct bugs"):
        bugs = collect(run_dirs, out_dir)
    clustered = time.monotonic()
    load_kept_versions(bugs, out_dir)
    deadline = None if seconds is None else started + seconds
    reduce_seconds = seconds
    if hard:
        # a bound's rest goes first to whether DaCe alone shows each bug (a script run each, seconds),
        # which decides what may be filed; the reductions get what is left
        confirm_bugs(bugs, out_dir, deadline, step)
        reduce_seconds = max(0.0, deadline - time.monotonic()) if deadline is not None else None
    _reduce_bugs(bugs, out_dir, reduce, reduce_seconds, hard, step)
    reduced = time.monotonic()
    if on_dace:
        work_dir = reduce.judge.work_dir if reduce is not None else Path(".harnessgen")
        rejudge_bugs(bugs, out_dir, on_dace, work_dir, Path.cwd(), step=step)
    if not hard:
        confirm_bugs(bugs, out_dir, deadline, step)
    dropped = [bug for bug in bugs if not replays(bug, out_dir, deadline, step)]
    bugs = confirmed_first([bug for bug in bugs if bug not in dropped])
    write_bug_reports(bugs, out_dir)
    write_bugs(bugs, run_dirs, out_dir, seconds=clustered - started, reduce_seconds=reduced - clustered,
               not_replaying=dropped)
    return bugs


def _reduce_bugs(bugs: Sequence[Bug], out_dir: Path, reduce: Optional[ReduceOptions], seconds: Optional[float],
                 hard: bool, step) -> None:
    """Reduce each bug's program in ``reduction_order`` within ``seconds`` together (None: each
    its own limit); a wrong result always with its whole time unless ``hard``."""
    if reduce is None or reduce.seconds <= 0:
        return
    deadline = None if seconds is None else time.monotonic() + seconds
    ordered = reduction_order(bugs)
    for number, bug in enumerate(ordered, 1):
        left = reduce.seconds if deadline is None else min(reduce.seconds, deadline - time.monotonic())
        if bug.signature.kind in WRONG_RESULTS and not hard:
            left = reduce.seconds      # always reduced, with its whole time: what is filed first
        cached = cached_reduction(bug, out_dir)
        if cached is not None or left < MIN_REDUCE_SECONDS:
            bug.reduction = cached.to_json() if cached is not None else _not_reduced(bug, seconds)
            continue
        with step(f"reducing bug {number}/{len(ordered)} ({bug.signature.transformation} {bug.signature.kind}, "
                  f"{len(bug.findings)} finding(s))"):
            bug.reduction = _reduced(bug, out_dir, dataclasses.replace(reduce, seconds=left))


def confirmed_first(bugs: Sequence[Bug]) -> List[Bug]:
    """Bugs DaCe alone shows on the whole program first, each group in its order."""
    return sorted(bugs, key=lambda bug: not bug.confirmed)


def confirm_bugs(bugs: Sequence[Bug], out_dir: Path, deadline: Optional[float],
                 step: Callable[[str], ContextManager] = lambda label: contextlib.nullcontext()) -> None:
    """Whether DaCe alone shows each bug on the whole program: the ``confirm.py`` one of its
    findings keeps (``checks.confirm``), copied into ``bugs/<id>/`` and run there once per
    content (its record kept beside it); wrong results first. A bug none of whose findings the
    whole program showed is CUTOUT ONLY, with the reason its representative's audit gives, where
    the audit judged the whole program; NOT JUDGED where it did not, or where the analysis's
    time was up before the bug's turn."""
    for number, bug in enumerate(reduction_order(bugs), 1):
        source = next((confirm.kept(f.path) for f in sorted(bug.findings, key=lambda f: f.rank)
                       if confirm.kept(f.path) is not None), None)
        if source is None:
            bug.confirmation = _without_confirm_script(bug).to_json()
            continue
        target = Path(out_dir) / BUGS_DIR / bug.id / confirm.CONFIRM_DIR
        key = confirm.content_key(source)
        kept = load_json(target / "confirmation.json") or {}
        # a confirmation is kept, but for one whose script could not judge (exit 2 and the like:
        # harnessgen's own failure, never a verdict on the bug), which is tried again
        if kept.get("key") == key and kept["confirmation"].get("exit") in (None, 0, 1):
            bug.confirmation = kept["confirmation"]
            continue
        if deadline is not None and time.monotonic() > deadline:
            bug.confirmation = confirm.Confirmation(confirm.NOT_JUDGED, "the analysis's time went to the bugs before "
                                                    "it (`harnessgen bugs` on the run judges it)").to_json()
            continue
        with step(f"confirming bug {number}/{len(bugs)} with DaCe alone ({bug.signature.transformation} "
                  f"{bug.signature.kind})"):
            confirm.copy(source, target)
            bug.confirmation = confirm.run(target).to_json()
        write_json(target / "confirmation.json", {"key": key, "confirmation": bug.confirmation})


# how many of a bug's findings are replayed before it is called one whose reproducers do not replay
REPLAYED_MEMBERS = 3
REPLAY_TIMEOUT_S = 300.0


def replays(bug: Bug, out_dir: Path, deadline: Optional[float],
            step: Callable[[str], ContextManager] = lambda label: contextlib.nullcontext()) -> bool:
    """Whether a bug DaCe alone does not show is one at all: one of its first findings'
    ``repro.py`` exits 1 (once per content; the record in ``bugs/<id>/replay.json``). A bug none
    of whose reproducers replays (the finding rested on bytes no run holds again, a larger
    cutout's shape the reproducer does not make) is no bug: it is left out of the bugs, and
    bugs.json's ``not_replaying`` lists it with what its reproducers said. A CONFIRMED bug, one
    without reproducers, and one left once the analysis's time is spent are kept as they are."""
    members = [f.path for f in sorted(bug.findings, key=lambda f: f.rank)
               if (f.path / "repro.py").is_file()][:REPLAYED_MEMBERS]
    if bug.confirmed or not members:
        return True
    record_file = Path(out_dir) / BUGS_DIR / bug.id / "replay.json"
    key = hashlib.sha256(b"".join((m / "repro.py").read_bytes() for m in members)).hexdigest()[:24]
    kept = load_json(record_file) or {}
    if kept.get("key") != key:
        if deadline is not None and time.monotonic() > deadline:
            return True
        with step(f"replaying bug {bug.id}'s reproducers"):
            kept = {"key": key, "said": [_replayed(m) for m in members]}
        kept["replays"] = any(said.startswith("exit 1") for said in kept["said"])
        write_json(record_file, kept)
    if not kept["replays"]:
        bug.confirmation = {**bug.confirmation, "not_replaying": kept["said"]}
    return kept["replays"]


def _replayed(folder: Path) -> str:
    """``exit N: last line`` of one run of a finding's reproducer."""
    try:
        proc = subprocess.run([sys.executable, "repro.py"], cwd=folder, capture_output=True, text=True,
                              timeout=REPLAY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"timeout after {REPLAY_TIMEOUT_S:g} s"
    last = (proc.stdout.strip().splitlines() or proc.stderr.strip().splitlines() or [""])[-1]
    return f"exit {proc.returncode}: {last[:300]}"


def _without_confirm_script(bug: Bug) -> confirm.Confirmation:
    """Why no finding of ``bug`` has a confirm.py: what its representative's audit said."""
    meta = load_json(bug.representative.path / "meta.json") or load_json(bug.representative.path / JUDGED_FILE) or {}
    audit = meta.get("audit") or {}
    whole = audit.get("whole_program") or {}
    if audit.get("classification") == "latent":
        return confirm.Confirmation(confirm.CUTOUT_ONLY, (
            f"the whole program does not show it: DaCe alone agrees on the audit's {whole.get('inputs', 0)} "
            "input(s); only the cutout's inputs (values the program may never hold there) show it"))
    if audit.get("classification") == "cutout-only":
        return confirm.Confirmation(confirm.CUTOUT_ONLY, (
            "DaCe applies the same change to the whole program, which validates"
            + (" and builds" if bug.signature.kind == "BUILD_FAILURE" else "")
            + ": the failure shows only in a cutout, whose shape harnessgen made"))
    reason = whole.get("reason") or audit.get("reason") or ""
    return confirm.Confirmation(confirm.NOT_JUDGED, ("the whole program was not judged"
                                                     + (f" ({reason})" if reason else ""))[:400])


def reduction_order(bugs: Sequence[Bug]) -> List[Bug]:
    """The order a DaCe developer looks at bugs in, which the reductions follow: wrong results
    (what silently corrupts a run) before crashes, build failures and exceptions; within each,
    bugs present on the newest DaCe known (found there, or judged there again) before the
    others; then as clustered (the most instances first)."""
    known = [(bug, _versions_known(bug)) for bug in bugs]
    every = [version for _, versions in known for version in versions]
    newest = max(every, key=version_key) if every else None
    ranked = sorted(known, key=lambda entry: (entry[0].signature.kind not in WRONG_RESULTS,
                                              newest is None or newest_showing(entry[1]) != newest))
    return [bug for bug, _ in ranked]


def _versions_known(bug: Bug) -> Dict[str, Dict]:
    """Each DaCe version a bug is known on: those its findings were made on (present there),
    and those it was judged on again (their verdicts)."""
    known = {f.dace: {"verdict": STILL_PRESENT} for f in bug.findings if f.dace}
    known.update(bug.versions)
    return known


def _not_reduced(bug: Bug, seconds: float) -> Dict:
    return _unreduced(bug, f"not reduced: the analysis's {seconds:.0f} s went to the bugs before it (the same "
                           "command again, or harnessgen bugs on the run, reduces it)")


def _reduced(bug: Bug, out_dir: Path, options: ReduceOptions) -> Dict:
    """The bug's reduction record; an error while reducing (harnessgen's defect) is recorded as
    the reason, and the other bugs and the run's report go on."""
    try:
        return reduce_bug(bug, out_dir, options).to_json()
    except Exception as exc:  # noqa: BLE001 -- one bug's reduction must not cost the run its report
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return _unreduced(bug, f"reduction stopped on an error (a harnessgen defect, please report it): {detail}")


def _unreduced(bug: Bug, reason: str) -> Dict:
    """A reduction record that kept the representative as it is, saying why."""
    rep = bug.representative
    return {"bug": bug.id, "kind": bug.signature.kind, "representative": str(rep.path), "before": list(rep.size),
            "after": list(rep.size), "seconds": 0.0, "candidates": 0, "kept": 0, "folder": None, "reason": reason}
