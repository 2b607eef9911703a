"""Equivalent pairs judged once: the run directory's ``pairs/`` folder, one file per canonical
pair (``cutout.canonical.pair_key``) naming the instance that judges it for all.

The first instance to reach a pair claims it (an exclusive create: two workers cannot both
win); every later instance with the same pair is that one's follower: it is not built or
fuzzed, and takes the representative's verdict (``shared_result``) once there is one. A
representative's verdict that rests on its own place in the program (a whole-program audit
that ran, a larger cutout, its parameters) is not shared: its followers are judged alone.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Optional

from .files import write_atomic
from .records import AUDIT_DEFERRED, DEFERRED_AUDIT, audit_deferred

PAIRS_DIR = "pairs"
# a follower's result until its representative's verdict arrives (never written to results/)
PENDING = "SAME_PAIR_PENDING"
# verdicts that say something about the run rather than the pair: judged again, not shared
_NOT_SHARED_VERDICTS = ("ERROR", PENDING)
# what a shared result keeps of the representative's: the verdict and what it rests on
_SHARED_FIELDS = ("verdict", "evidence", "proof", "input_config_before", "input_config_after", "race_check",
                  "blocked_by", "notes")


class SamePair(Exception):
    """The instance's pair is one another instance judges (control flow, not an error)."""

    def __init__(self, representative: str, key: str):
        super().__init__(f"same pair as {representative}")
        self.representative, self.key = representative, key


def claim(out_dir: Path, key: str, instance_id: str) -> str:
    """The instance that judges the pair ``key``: ``instance_id`` where it is the first to
    claim it (or claimed it in an earlier run), else the one that did."""
    folder = Path(out_dir) / PAIRS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / key
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        owner = path.read_text().strip()
        return owner or instance_id      # a claim cut off while written: ours to judge
    with os.fdopen(fd, "w") as handle:
        handle.write(instance_id)
    return instance_id


def shareable(representative: Dict) -> bool:
    """Whether the representative's verdict is the pair's alone (not its place's)."""
    if representative.get("verdict") in _NOT_SHARED_VERDICTS or representative.get("same_pair_as"):
        return False
    if not representative.get("pair_key"):       # judged in a larger cutout than the pair claimed
        return False
    audit = representative.get("audit") or {}
    if audit.get("grown") or (audit and audit.get("verdict") not in ("SKIPPED", AUDIT_DEFERRED)):
        return False
    return not ((representative.get("params") or {}).get("simplest") or representative.get("bisect"))


def shared_result(follower: Dict, representative: Dict) -> Dict:
    """The follower's result: the representative's verdict, said to be its."""
    out = dict(follower)
    out.update({field: representative.get(field) for field in _SHARED_FIELDS if field in representative})
    rep = representative["id"]
    said = (representative.get("message") or "").strip()
    out["message"] = f"same pair as {rep} (equal up to names): its verdict {representative['verdict']}" + (
        f": {said}" if said else "")
    out["same_pair_as"] = rep
    out["findings"], out["crashes"] = [], []
    if audit_deferred(representative):     # each place is audited, the follower's too
        out["audit"] = dict(DEFERRED_AUDIT)
    return out


def is_pending(result: Optional[Dict]) -> bool:
    return bool(result) and result.get("verdict") == PENDING


# What preparing an instance in its smallest cutout gave: a static verdict (FAILED_TO_APPLY,
# INVALID_SDFG, BUILD_FAILURE...), BUILT or UNSUPPORTED. Deterministic for an instance (its
# program, match and parameters), so the parameter simplification of another variant of the
# match, which prepares the simpler variants again, reads it instead (CLOUDSC: a finding's
# variants prepared the same defaults again and again, a tenth of the run's time). Kept beside
# the claims, so a new campaign or --fresh forgets both.
PREPARED_PREFIX = "prepared."
BUILT = "BUILT"


def record_prepared(out_dir: Path, instance_id: str, outcome: str) -> None:
    write_atomic(_prepared_path(out_dir, instance_id), outcome.encode())


def prepared(out_dir: Path, instance_id: str) -> Optional[str]:
    """What preparing ``instance_id`` gave in this run; None where it was not prepared yet."""
    try:
        return _prepared_path(out_dir, instance_id).read_text().strip() or None
    except FileNotFoundError:
        return None


def _prepared_path(out_dir: Path, instance_id: str) -> Path:
    return Path(out_dir) / PAIRS_DIR / f"{PREPARED_PREFIX}{instance_id}"
