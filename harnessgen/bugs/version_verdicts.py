"""What a bug is on each DaCe version it was judged on (``versions``): the verdicts, and how
they read."""
from __future__ import annotations

from typing import Dict, Optional

from packaging.version import InvalidVersion, Version

STILL_PRESENT, FIXED, CANNOT_APPLY = "STILL_PRESENT", "FIXED", "CANNOT_APPLY"
# the transformation still fails on the program, with another error than the bug's
FAILS_OTHERWISE = "FAILS_OTHERWISE"


def version_key(version: str):
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def newest_showing(versions: Dict[str, Dict]) -> Optional[str]:
    """The newest DaCe version judged, where the bug is still present there; else None."""
    if not versions:
        return None
    newest = max(versions, key=version_key)
    return newest if versions[newest].get("verdict") == STILL_PRESENT else None


def versions_line(versions: Dict[str, Dict]) -> str:
    """``1.0.2 still present, 2.0.0b1 fixed``."""
    words = {STILL_PRESENT: "still present", FIXED: "fixed", CANNOT_APPLY: "cannot apply",
             FAILS_OTHERWISE: "fails otherwise"}
    return ", ".join(f"{v} {words.get(r.get('verdict'), r.get('verdict'))}"
                     for v, r in sorted(versions.items(), key=lambda kv: version_key(kv[0])))
