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
