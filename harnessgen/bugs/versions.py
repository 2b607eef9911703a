"""A bug judged again on other installed DaCe versions: still present, fixed, or not judgeable
there (its program does not load, its transformation does not exist or does not match).

A bug found with one DaCe may be history on another: a developer needs to know whether the
DaCe they work on still has it. For each version, the bug's smallest program (its reduced one,
else its representative's cutout) is loaded by that DaCe in its own environment, the bug's
change is made there by that DaCe's transformation (wherever it applies in the program,
``Change.variants``), and the pair is judged as the reducer judges it: the finding's input and
boundary seeds, built and run, for a dynamic bug; the exception, invalid SDFG or compiler error
for a static one; DaCe's code generator for a program it cannot build. The bug's kind with
its error again (``signature.version_stable``: not DaCe's frames, which move between versions)
means *still present*; its kind with another error, *fails otherwise*; none, *fixed*.

``rejudge_here`` runs inside the DaCe being judged (``harnessgen rejudge FOLDER``, which
prints one JSON line); ``rejudge_bugs`` runs it in each version's environment and keeps the
verdicts in ``bugs/<id>/versions.json`` (a later analysis of the same bug reuses them).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..core.errors import ConfigError, HarnessgenError, Unsupported
from ..core.files import write_json
from ..cutout.changes import load_change
from ..dacecompat import dace_version, raise_control_flow, settled
from ..harness.build import compile_errors
from ..harness.judge import JudgeOptions
from .cluster import CODEGEN_FAILURE, STATIC_VERDICTS, Bug, load_json, read_finding
from .reduce import DYNAMIC_KINDS, DynamicJudge, ReduceOptions, StaticJudge, finding_instance
from .signature import first_compiler_error, normalise
from .version_verdicts import CANNOT_APPLY, FAILS_OTHERWISE, FIXED, STILL_PRESENT, version_key

VERSIONS_FILE = "versions.json"
# where ``make setup-dace DACE=<version>`` puts a DaCe's environment, under the work directory
DACE_ENVS = "daceenvs"


@dataclasses.dataclass
class VersionVerdict:
    dace: str
    verdict: str                 # STILL_PRESENT, FIXED, FAILS_OTHERWISE, CANNOT_APPLY
    reason: str = ""             # what was seen (the outcome and its message), or why it could not be judged
    folder: str = ""             # the finding judged
    seconds: float = 0.0

    def to_json(self) -> Dict:
        return dataclasses.asdict(self)


# ------------------------------------------------------------------ in the DaCe being judged
def rejudge_here(folder: Path, options: JudgeOptions, seeds: int = 12) -> VersionVerdict:
    """The finding in ``folder`` judged with the DaCe of this process."""
    started = time.monotonic()
    record = VersionVerdict(dace=dace_version(), verdict=CANNOT_APPLY, folder=str(folder))
    try:
        record.verdict, record.reason = _judged(Path(folder), options, seeds)
    except (HarnessgenError, Unsupported) as exc:
        record.reason = f"{type(exc).__name__}: {str(exc)[:400]}"
    record.seconds = round(time.monotonic() - started, 2)
    return record


def _judged(folder: Path, options: JudgeOptions, seeds: int):
    import dace

    finding = read_finding(folder)
    meta = load_json(folder / "meta.json") or {}
    if finding is None:
        raise Unsupported(f"{folder} holds no finding harnessgen can read")
    kind = finding.signature.kind
    if kind == CODEGEN_FAILURE:
        return _codegen_verdict(finding.signature, compile_errors(_load(dace, folder / "program.sdfg")[0]))
    program, written_by = _load(dace, folder / "pre.sdfg")
    # the instance as the finding recorded it, its match relative to the program judged (pre)
    instance = finding_instance({"build_dir": str(folder)} if (folder / "instance.json").is_file() else meta)
    if (folder / "transformation.json").is_file():
        instance = dataclasses.replace(instance, match=json.loads((folder / "transformation.json").read_text()))
    # its settings are read as the DaCe that wrote them wrote them
    instance = dataclasses.replace(instance, match={**instance.match, "dace_version": written_by})
    try:
        change = load_change(instance.transformation_spec)
    except Exception as exc:  # noqa: BLE001 -- this DaCe has no such transformation or pass
        raise Unsupported(f"{instance.transformation_spec} does not load here: {type(exc).__name__}: {exc}") from exc
    bug = Bug(finding.signature, [finding])
    if kind in STATIC_VERDICTS:
        judge = StaticJudge(bug, change, instance, same_signature=False)
    elif kind in DYNAMIC_KINDS:
        judge = DynamicJudge(bug, change, instance, meta, ReduceOptions(judge=options, seeds=seeds),
                             same_signature=False)
    else:
        raise Unsupported(f"{kind} findings are not judged again")
    found = judge(program)
    if found is not None:
        return STILL_PRESENT, _evidence(kind, found)
    if judge.otherwise:
        return FAILS_OTHERWISE, f"{kind} with another error: {_first_line(judge.otherwise)}"
    if judge.tried == 0:
        raise Unsupported(f"{instance.transformation_spec} does not apply to the program here")
    return FIXED, f"no {kind} at the {judge.tried} place(s) {instance.transformation_spec} applies to the program"


def _codegen_verdict(signature, message: Optional[str]):
    """A program DaCe could not build: the same compiler error again, another, or none."""
    if not message:
        return FIXED, "DaCe builds the program"
    error = first_compiler_error(message) or _first_line(message)
    if signature.parts and normalise(error) == signature.parts[0]:
        return STILL_PRESENT, error
    return FAILS_OTHERWISE, f"another error: {_first_line(error)}"


def _load(dace, path: Path):
    """The program as this DaCe reads it, in the form its transformations meet, and the DaCe
    that wrote it: a program another DaCe wrote is checked to be valid here, and its loops and
    branches raised into regions where this DaCe keeps them so."""
    try:
        program = settled(dace.SDFG.from_file(str(path)))
    except Exception as exc:  # noqa: BLE001 -- another DaCe wrote it
        raise Unsupported(f"the program does not load here ({path.name}: {_error_line(exc)})") from exc
    written_by = str((load_json(path) or {}).get("dace_version", "")) or dace_version()
    if written_by != dace_version():
        try:
            program.validate()              # first as written: raising a large program's loops takes minutes
            raise_control_flow(program)
            program.validate()
        except Exception as exc:  # noqa: BLE001 -- what DaCe 1.0.2 wrote need not hold in 2.0
            raise Unsupported(f"the program DaCe {written_by} wrote is not a valid program here "
                              f"({path.name}: {_error_line(exc)})") from exc
    return program, written_by


def _error_line(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def _evidence(kind: str, found) -> str:
    """What the judge found: a static bug's message, a dynamic one's replay message."""
    message = _first_line(found[-1]) if isinstance(found[-1], str) else ""
    return message if message.startswith(kind) else f"{kind}" + (f": {message}" if message else "")


def _first_line(text: str) -> str:
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")[:300]


# ------------------------------------------------------------------ from the analysing process
def dace_python(version: str, work_dir: Path, repo: Path) -> Path:
    """The interpreter of an environment whose DaCe is ``version``: this one, the checkout's
    default environment, or ``make setup-dace``'s; an error names the command that makes it."""
    candidates = [Path(sys.executable), Path(work_dir) / DACE_ENVS / f"dace-{version}" / "bin" / "python",
                  Path(repo) / ".venv" / "bin" / "python"]
    for python in candidates:
        if python.is_file() and _version_of(python) == version:
            return python
    raise ConfigError(f"no environment with DaCe {version}: `make setup-dace DACE={version}` makes one "
                      f"(looked at {', '.join(str(c) for c in candidates)})")


def _version_of(python: Path) -> Optional[str]:
    if Path(python).absolute() == Path(sys.executable).absolute():    # a venv's python links to its base: not resolved
        return dace_version()
    try:
        proc = subprocess.run([str(python), "-c", "from importlib.metadata import version; print(version('dace'))"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def judged_folder(bug: Bug) -> Path:
    """What is judged again: the bug's reduced finding where there is one, else its representative."""
    reduced = (bug.reduction or {}).get("folder")
    return Path(reduced) if reduced and Path(reduced).is_dir() else bug.representative.path


def rejudge_bugs(bugs: Sequence[Bug], out_dir: Path, versions: Sequence[str], work_dir: Path, repo: Path,
                 timeout_s: float = 600.0, step=None) -> None:
    """Each bug judged on each DaCe version (in that version's environment), the verdicts kept
    on the bug (``Bug.versions``) and in ``bugs/<id>/versions.json``."""
    pythons = {version: dace_python(version, work_dir, repo) for version in versions}
    for number, bug in enumerate(bugs, 1):
        folder = judged_folder(bug)
        kept = _kept(out_dir, bug, folder)
        for version, python in pythons.items():
            if version in kept:
                continue
            label = f"judging bug {number}/{len(bugs)} ({bug.id}) on DaCe {version}"
            with (step(label) if step else contextlib.nullcontext()):
                kept[version] = rejudge_in(python, folder, work_dir, timeout_s, version).to_json()
        bug.versions = {v: kept[v] for v in sorted(kept, key=version_key)}
        write_json(Path(out_dir) / "bugs" / bug.id / VERSIONS_FILE, {"folder": str(folder), "versions": bug.versions})


def load_kept_versions(bugs: Sequence[Bug], out_dir: Path) -> None:
    """Verdicts an earlier ``rejudge_bugs`` kept, for the same judged finding."""
    for bug in bugs:
        bug.versions = _kept(out_dir, bug, judged_folder(bug))


def _kept(out_dir: Path, bug: Bug, folder: Path) -> Dict[str, Dict]:
    data = load_json(Path(out_dir) / "bugs" / bug.id / VERSIONS_FILE) or {}
    return dict(data.get("versions", {})) if data.get("folder") == str(folder) else {}


def rejudge_in(python: Path, folder: Path, work_dir: Path, timeout_s: float, version: str,
               env: Optional[Dict[str, str]] = None) -> VersionVerdict:
    """The finding in ``folder`` judged by ``harnessgen rejudge`` run with ``python`` (and
    ``env`` besides this process's: a ``PYTHONPATH`` that puts another DaCe first)."""
    cmd = [str(python), "-m", "harnessgen", "rejudge", str(folder), "--work-dir", str(work_dir)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return VersionVerdict(version, CANNOT_APPLY, f"judging took longer than {timeout_s:.0f} s", str(folder))
    line = next((l for l in reversed(proc.stdout.splitlines()) if l.startswith("{")), None)
    if proc.returncode != 0 or line is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return VersionVerdict(version, CANNOT_APPLY, f"harnessgen rejudge failed there: {tail[0][:300]}", str(folder))
    return VersionVerdict(**json.loads(line))


def requested_versions(text: str) -> List[str]:
    versions = [v.strip() for v in text.split(",") if v.strip()]
    if not versions:
        raise ConfigError("--on-dace: name at least one DaCe version (e.g. --on-dace 1.0.2,2.0.0b1)")
    return versions
