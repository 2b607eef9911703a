"""What harnessgen's own results depend on besides their inputs: the code that made them."""
from __future__ import annotations

import functools
import hashlib

from .procs import package_root


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """A hash of harnessgen's code and data (its matchers, loaders, prover, planted and correct
    transformations): what is cached from their results is keyed by it, so a change to any of
    them computes afresh."""
    root = package_root() / "harnessgen"
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".json") and p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()
