"""Findings -> distinct bugs: every finding of one or several runs, clustered by signature.

The findings come from the runs' ``summary.json`` (what each instance ended with and where
its reproducers are) and from an earlier ``bugs.json`` of the same output (so re-clustering
after a change to the signatures, or a run that resumed, keeps every finding it had). Each
cluster is one bug: its signature, every finding with it, when it was first seen and its
smallest representative (fewest nodes in the cutout, then the shortest input).
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import os
import re
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from ..core import shared_pairs
from ..core.errors import ConfigError
from ..core.files import write_json
from ..core.outcome import STATIC_OUTCOMES
from . import signature as sig
from ..triage.stack import post_stack
from .version_verdicts import newest_showing, versions_line

BUGS_FILE = "bugs.json"
# a program DaCe cannot build before any change (codegen_causes): a bug of DaCe's code generator
CODEGEN_FAILURE = "CODEGEN_FAILURE"
CODE_GENERATOR = "DaCe code generator"
BLOCKED = "BLOCKED"
# verdicts whose finding folder has no input: the cutout the transformation failed on
STATIC_VERDICTS = STATIC_OUTCOMES


@dataclasses.dataclass
class FindingRecord:
    path: Path
    outcome: str
    transformation: str
    instance: str
    program: str
    target: str
    seen_at: float                      # when its folder was written (seconds since the epoch)
    input_bytes: Optional[int]          # None for a finding without an input
    size: Tuple[int, int]               # (states, nodes) of the cutout before the transformation
    signature: sig.Signature
    params: Dict = dataclasses.field(default_factory=dict)   # a parameter variant's non-default values
    dace: str = ""                      # the DaCe version it was found on ('' where its folder does not say)

    @property
    def rank(self) -> Tuple:
        """Smaller is a better representative: fewer and smaller non-default transformation
        parameters, then a smaller program, then a shorter input."""
        return (len(self.params), _magnitude(self.params), self.size[1], self.size[0], self.input_bytes or 0,
                str(self.path))

    @property
    def size_text(self) -> str:
        if self.target == "pyfuzz":
            return f"{self.size[1]} statement(s)"
        return f"{self.size[0]} state(s), {self.size[1]} node(s)" + (
            f", {self.input_bytes} input bytes" if self.input_bytes is not None else "")

    def to_json(self) -> Dict:
        return {"path": str(self.path), "outcome": self.outcome, "instance": self.instance, "program": self.program,
                "target": self.target, "seen_at": _iso(self.seen_at), "input_bytes": self.input_bytes,
                "states": self.size[0], "nodes": self.size[1], "size": self.size_text, "params": self.params}


def _magnitude(params: Dict) -> float:
    """How large a variant's numeric parameters are, together (booleans and names count 1)."""
    total = 0.0
    for value in params.values():
        for item in (value if isinstance(value, list) else [value]):
            total += abs(item) if isinstance(item, (int, float)) and not isinstance(item, bool) else 1
    return total


@dataclasses.dataclass
class Bug:
    signature: sig.Signature
    findings: List[FindingRecord]
    reduction: Optional[Dict] = None    # reduce.Reduction's record, once reduced
    # DaCe version -> versions.VersionVerdict's record, once judged on other DaCe versions
    versions: Dict[str, Dict] = dataclasses.field(default_factory=dict)
    # instances that took a member instance's verdict: their pair is the same up to names
    same_pair: List[str] = dataclasses.field(default_factory=list)
    # whether DaCe alone shows it on the whole program (``checks.confirm.Confirmation``'s record)
    confirmation: Dict = dataclasses.field(default_factory=dict)

    @property
    def confirmed(self) -> bool:
        return self.confirmation.get("verdict") == "CONFIRMED"

    @property
    def id(self) -> str:
        return self.signature.key

    @property
    def representative(self) -> FindingRecord:
        return min(self.findings, key=lambda f: f.rank)

    @property
    def first(self) -> FindingRecord:
        return min(self.findings, key=lambda f: (f.seen_at, str(f.path)))

    @property
    def instances(self) -> List[str]:
        """Every instance that shows the bug: those with a finding of it, and their equals."""
        return sorted({f.instance for f in self.findings} | set(self.same_pair))

    def to_json(self) -> Dict:
        rep, first = self.representative, self.first
        return {"id": self.id, "kind": self.signature.kind, "transformation": self.signature.transformation,
                "signature": list(self.signature.parts), "description": self.signature.describe(),
                "instances": len(self.instances), "same_pair_instances": len(self.same_pair),
                "findings": len(self.findings),
                "programs": sorted({f.program for f in self.findings}),
                "first_seen": {"at": _iso(first.seen_at), "instance": first.instance, "path": str(first.path)},
                "representative": rep.to_json(), "reduction": self.reduction, "versions": self.versions,
                "shows_on_newest": newest_showing(self.versions), "confirmation": self.confirmation,
                "dace_alone": self.confirmation.get("verdict", "NOT JUDGED"),
                "members": [f.to_json() for f in sorted(self.findings, key=lambda f: f.rank)]}


def _iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds).astimezone().isoformat(timespec="seconds")


# ------------------------------------------------------------------ where the findings are
def finding_paths(run_dir: Path) -> List[Tuple[Path, str]]:
    """(folder, verdict) of every finding a run's summary.json lists (``harnessgen fuzz``'s
    and ``harnessgen campaign``'s summaries both list them per instance)."""
    run_dir = Path(run_dir)
    summary_file = run_dir / "summary.json"
    if not summary_file.is_file():
        raise ConfigError(f"{run_dir}: no summary.json; pass the directory of a fuzz or campaign run (--out)")
    summary = json.loads(summary_file.read_text())
    out = []
    for finding in summary.get("findings", []):      # pyfuzz: one folder per distinct finding
        if finding.get("directory"):
            out.append((Path(finding["directory"]), finding.get("outcome", "")))
    for entry in summary.get("instances", []):
        listed = [f["path"] for f in entry.get("findings", []) if f.get("path")]
        if not listed and entry.get("verdict") in STATIC_VERDICTS + (BLOCKED,) and entry.get("crashes"):
            listed = entry["crashes"][:1]
        for path in listed:
            folder = Path(path) if os.path.isabs(path) else (run_dir / path)
            out.append((Path(os.path.normpath(folder)), entry.get("verdict", "")))
    return out


def judged_instances(run_dirs: List[Path]) -> set:
    """The instances the runs' summaries give a verdict of any kind."""
    judged = set()
    for run_dir in run_dirs:
        summary_file = Path(run_dir) / "summary.json"
        if summary_file.is_file():
            judged |= {e.get("id", "") for e in json.loads(summary_file.read_text()).get("instances", [])
                       if e.get("verdict") and e.get("verdict") != shared_pairs.PENDING}
    return judged


def _judged_as(instance: str) -> str:
    """The instance a finding's instance is judged as (a larger cutout's, ``<id>-grown<n>``)."""
    return re.sub(r"-grown\d+$", "", instance)


def earlier_members(bugs_file: Path) -> List[Tuple[Path, str]]:
    """The finding folders an earlier bugs.json clustered (those still there)."""
    if not bugs_file.is_file():
        return []
    out = []
    for bug in json.loads(bugs_file.read_text()).get("bugs", []):
        for member in bug.get("members", []):
            if Path(member["path"]).is_dir():
                out.append((Path(member["path"]), member.get("outcome", "")))
    return out


# ------------------------------------------------------------------ one finding
def load_json(path: Path) -> Optional[Dict]:
    """A finding's JSON file; None when it is missing or not JSON."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def sdfg_size(sdfg_json: Optional[Dict]) -> Tuple[int, int]:
    """(states, nodes) of an SDFG's JSON, nested SDFGs counted in."""
    states = nodes = 0
    for block in (sdfg_json or {}).get("nodes", []):
        if block.get("type") == "SDFGState":
            states += 1
            for node in block.get("nodes", []):
                nodes += 1
                inner = node.get("attributes", {}).get("sdfg")
                if isinstance(inner, dict):
                    s, n = sdfg_size(inner)
                    states, nodes = states + s, nodes + n
        elif isinstance(block, dict) and "nodes" in block:       # a control-flow region
            s, n = sdfg_size(block)
            states, nodes = states + s, nodes + n
    return states, nodes


def read_finding(folder: Path, verdict: str = "") -> Optional[FindingRecord]:
    """A finding folder as a record with its signature; None when it is not one."""
    folder = Path(folder)
    meta = load_json(folder / "meta.json")
    pre = load_json(folder / "pre.sdfg")
    names = sig.program_names(pre)
    if meta and "compiler" in meta and "signature" in meta:       # a Python-level compiler's (pyfuzz)
        return _pyfuzz_finding(folder, meta)
    if meta and meta.get("outcome") == CODEGEN_FAILURE:
        return _codegen_finding(folder, meta)
    if meta and "outcome" in meta:
        outcome, transformation = meta["outcome"], meta.get("transformation", "?")
        instance, program, target = meta.get("instance", ""), meta.get("program", ""), meta.get("target", "")
        signature = _dynamic_signature(folder, meta, pre, transformation)
        params = meta.get("params") or {}
        input_file = folder / "input.bin"
        input_bytes = input_file.stat().st_size if input_file.is_file() else None
    elif (folder / "error.txt").is_file():
        info = load_json(folder / "instance.json") or {}
        outcome = (verdict if verdict in STATIC_VERDICTS else folder.name.upper())
        transformation = info.get("transformation", "?")
        instance, program, target = info.get("id", ""), info.get("program", ""), info.get("target", "")
        signature = static_signature(outcome, transformation, (folder / "error.txt").read_text(), names)
        params = info.get("params") or {}
        input_bytes = None
    else:
        return None
    stamp = folder / ("meta.json" if (folder / "meta.json").is_file() else "error.txt")
    return FindingRecord(path=folder, outcome=outcome, transformation=transformation, instance=instance,
                         program=program, target=target, seen_at=stamp.stat().st_mtime, input_bytes=input_bytes,
                         size=sdfg_size(pre), signature=signature, params=params,
                         dace=str(((meta or {}).get("versions") or {}).get("dace") or ""))


def _pyfuzz_finding(folder: Path, meta: Dict) -> FindingRecord:
    """pyfuzz already keys its findings by compiler, symptom and the error's type and place (or
    the modes that disagree); across runs the same key, normalised, is the same bug. Its size
    is the minimized program's statement count."""
    program = load_json(folder / "program.json") or {}
    compiler = meta["compiler"] + "".join(f" + {p}" for p in meta.get("passes") or [])
    parts = tuple(sig.normalise(str(p)) for p in meta["signature"][2:])
    return FindingRecord(path=folder, outcome=meta["outcome"], transformation=compiler, instance=folder.name,
                         program="generated", target="pyfuzz", seen_at=(folder / "meta.json").stat().st_mtime,
                         input_bytes=None, size=(0, len(program.get("stmts", []))),
                         signature=sig.Signature(meta["outcome"], compiler, parts))


def _codegen_finding(folder: Path, meta: Dict) -> FindingRecord:
    """A program DaCe's code generator cannot build (codegen_causes): its cause is the bug."""
    program = load_json(folder / "program.sdfg")
    return FindingRecord(path=folder, outcome=CODEGEN_FAILURE, transformation=CODE_GENERATOR,
                         instance=meta.get("instance", ""), program=(program or {}).get("attributes", {}).get(
                             "name", ""), target=meta.get("target", ""), seen_at=(folder / "meta.json").stat().st_mtime,
                         input_bytes=None, size=sdfg_size(program),
                         signature=sig.Signature(CODEGEN_FAILURE, CODE_GENERATOR,
                                                 (sig.normalise(meta["message"]), sig.normalise(meta["line"]))))


def static_signature(outcome: str, transformation: str, message: str, names) -> sig.Signature:
    if outcome == "BUILD_FAILURE":
        return sig.build_signature(transformation, message, names)
    return sig.exception_signature(outcome, transformation, message, names)


def _dynamic_signature(folder: Path, meta: Dict, pre: Optional[Dict], transformation: str) -> sig.Signature:
    outcome = meta["outcome"]
    if outcome == "POST_CRASH":
        build = meta.get("build_dir")
        stack = post_stack(folder, Path(build) / "harness_replay" if build else None)
        signal = (meta.get("region") or [""])[0]
        return sig.crash_signature(transformation, signal, stack)
    post = load_json(folder / "post.sdfg")
    return sig.divergence_signature(outcome, transformation, pre, post, meta.get("container"), meta.get("divergence"),
                                    meta.get("region") or ())


# ------------------------------------------------------------------ clustering
def cluster(records: Iterable[FindingRecord]) -> List[Bug]:
    """One bug per signature; the most frequent first, then by kind and id (deterministic)."""
    groups: Dict[str, Bug] = {}
    for record in records:
        bug = groups.setdefault(record.signature.key, Bug(record.signature, []))
        if all(f.path != record.path for f in bug.findings):
            bug.findings.append(record)
    return sorted(groups.values(), key=lambda b: (-len(b.instances), b.signature.kind, b.id))


def collect(run_dirs: List[Path], out_dir: Optional[Path] = None) -> List[Bug]:
    """The bugs of ``run_dirs`` (and of the bugs.json already in ``out_dir``)."""
    sources: List[Tuple[Path, str]] = []
    for run_dir in run_dirs:
        sources += finding_paths(run_dir)
    current = len(sources)
    if out_dir is not None:
        sources += earlier_members(Path(out_dir) / BUGS_FILE)
    # an instance the runs judge again has their verdict alone: an earlier finding of it that
    # its new judgement no longer lists (a larger cutout, a fixed defect) is no bug
    judged = judged_instances(run_dirs)
    seen, records = set(), []
    for position, (folder, verdict) in enumerate(sources):
        if folder in seen or not folder.is_dir():
            continue
        seen.add(folder)
        record = read_finding(folder, verdict)
        if record is not None and (position < current or _judged_as(record.instance) not in judged):
            records.append(record)
    bugs = cluster(records)
    followers = same_pair_followers(run_dirs)
    for bug in bugs:
        own = {f.instance for f in bug.findings}
        bug.same_pair = sorted({follower for instance in own for follower in followers.get(instance, ())} - own)
    return sorted(bugs, key=lambda b: (-len(b.instances), b.signature.kind, b.id))


def same_pair_followers(run_dirs: List[Path]) -> Dict[str, List[str]]:
    """Representative instance -> the instances that took its verdict (summary.json's)."""
    out: Dict[str, List[str]] = {}
    for run_dir in run_dirs:
        summary_file = Path(run_dir) / "summary.json"
        if not summary_file.is_file():
            continue
        for entry in json.loads(summary_file.read_text()).get("instances", []):
            if entry.get("same_pair_as"):
                out.setdefault(entry["same_pair_as"], []).append(entry["id"])
    return out


def bugs_document(bugs: List[Bug], run_dirs: List[Path], seconds: float = 0.0, reduce_seconds: float = 0.0,
                  not_replaying: Iterable[Bug] = ()) -> Dict:
    findings = sum(len(b.findings) for b in bugs)
    return {"runs": [str(r) for r in run_dirs], "findings": findings, "distinct_bugs": len(bugs),
            "cluster_seconds": round(seconds, 2), "reduce_seconds": round(reduce_seconds, 2),
            "bugs": [b.to_json() for b in bugs],
            # clusters none of whose reproducers replayed: no bug, listed with what they said
            "not_replaying": [{"id": b.id, "kind": b.signature.kind, "transformation": b.signature.transformation,
                               "findings": len(b.findings), "representative": str(b.representative.path),
                               "said": b.confirmation.get("not_replaying", [])} for b in not_replaying]}


def write_bugs(bugs: List[Bug], run_dirs: List[Path], out_dir: Path, seconds: float = 0.0,
               reduce_seconds: float = 0.0, not_replaying: Iterable[Bug] = ()) -> Path:
    path = Path(out_dir) / BUGS_FILE
    write_json(path, bugs_document(bugs, run_dirs, seconds, reduce_seconds, not_replaying))
    return path


def bug_rows(out_dir: Path) -> List[Dict]:
    """The "Distinct bugs" table of a run from its bugs.json: one row per bug (none before the
    run's first analysis); paths relative to ``out_dir``."""
    path = Path(out_dir) / BUGS_FILE
    if not path.is_file():
        return []
    rows = []
    for bug in json.loads(path.read_text()).get("bugs", []):
        rep, reduced = bug["representative"], bug.get("reduction") or {}
        rows.append({"id": bug["id"], "kind": bug["kind"], "transformation": bug["transformation"],
                     "description": " | ".join(p for p in bug["signature"] if p), "instances": bug["instances"],
                     "findings": bug["findings"], "first_seen": bug["first_seen"]["at"],
                     "representative": os.path.relpath(rep["path"], str(out_dir)), "size": rep.get("size", ""),
                     "states": rep["states"],
                     "nodes": rep["nodes"], "input_bytes": rep["input_bytes"],
                     "report": str(Path("bugs") / bug["id"] / "BUG.md"),
                     "reduced": (os.path.relpath(reduced["folder"], str(out_dir)) if reduced.get("folder") else None),
                     "reduced_states": reduced.get("after", [None, None])[0] if reduced.get("folder") else None,
                     "reduced_nodes": reduced.get("after", [None, None])[1] if reduced.get("folder") else None,
                     "versions": versions_line(bug.get("versions") or {}),
                     "shows_on_newest": bug.get("shows_on_newest"),
                     "dace_alone": bug.get("dace_alone", "NOT JUDGED"), "programs": bug.get("programs", []),
                     "dace_alone_reason": (bug.get("confirmation") or {}).get("reason", "")})
    return rows
