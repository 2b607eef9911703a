"""Files other stages and users rely on are written atomically: a reader (or a run killed
half-way) never sees half a file."""
from __future__ import annotations

import json
import os
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_json(path: Path, obj) -> None:
    write_atomic(path, (json.dumps(obj, indent=1, default=str) + "\n").encode())


def clear_stale_omp_registrations(shm: Path = Path("/dev/shm")) -> int:
    """Remove the registration files LLVM's OpenMP runtime left behind for processes that are
    gone (``__KMP_REGISTERED_LIB_<pid>_*``; one per process, left by every abort, crash or
    kill, as replays of findings do). A new process whose pid names an empty one of them dies
    of SIGBUS when it loads libomp: a false crash. Returns how many were removed."""
    removed = 0
    for path in shm.glob("__KMP_REGISTERED_LIB_*"):
        pid = path.name[len("__KMP_REGISTERED_LIB_"):].split("_")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            try:
                path.unlink()
                removed += 1
            except OSError:       # another process cleared it, or it is not ours to remove
                pass
    return removed
