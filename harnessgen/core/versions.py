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


EXPORTED_REVISION = ".revision"     # in a DaCe tree exported from git: which commit of which checkout


def source_version(tree) -> str:
    """The version a DaCe source tree's ``dace/version.py`` declares ('' where it declares none),
    read without importing it."""
    import re
    from pathlib import Path

    try:
        text = (Path(tree) / "dace" / "version.py").read_text()
    except OSError:
        return ""
    found = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", text)
    return found.group(1) if found else ""


@functools.lru_cache(maxsize=1)
def dace_source() -> str:
    """Where the DaCe in use comes from when it is a source tree rather than a release (`make
    setup-dace DACE=/path/to/checkout`): its folder and, in a git checkout, its revision (with
    "+changes" where the work tree has uncommitted ones); '' for an installed release. Found
    without importing DaCe."""
    import importlib.util
    import subprocess
    from pathlib import Path

    spec = importlib.util.find_spec("dace")
    if spec is None or not spec.origin:
        return ""
    tree = Path(spec.origin).resolve().parent.parent
    if tree.name in ("site-packages", "dist-packages"):
        return ""

    def git(*args: str) -> str:
        try:
            # a tree unpacked from an archive belongs to another user: read it all the same (it
            # is the DaCe this process runs anyway)
            proc = subprocess.run(["git", "-c", f"safe.directory={tree}", "-C", str(tree), *args],
                                  capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return proc.stdout.strip() if proc.returncode == 0 else ""

    revision = git("rev-parse", "--short=12", "HEAD")
    exported = tree / EXPORTED_REVISION
    if not revision and exported.is_file():
        return f"{exported.read_text().strip()} (exported to {tree})"
    if not revision:
        return f"source tree {tree} (not a git checkout)"
    changed = "+changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    return f"checkout {tree} at {revision}{changed}"
