"""Stage 7: raw crashes -> classified, de-duplicated, minimal, localized findings.

1. **Classify** every raw crash by replaying it three times through cffi (a child
   process: ``ReplayWorker``); disagreeing replays are ``FLAKY``, a crash that
   passes on replay too; ``INVALID_INPUT`` (pre itself failed) is recorded as a
   missing constraint, never as a finding. A crash found in race mode is replayed
   on several thread counts (4, 2, 3 by default).
2. **Group** by (outcome, container, region of the difference); a race's region
   changes from run to run, so races group by container alone.
3. **Minimize** the earliest crash of each group while it keeps its outcome and
   container (``shrink.py``; the predicate runs the native replay binary, and the
   result is confirmed through cffi).
4. **Merge** groups whose minimized inputs have the same key: one finding per
   distinct (instance, outcome, container, region).
5. **Localize** where pre and post first diverge (``localize.py``) and **write**
   the reproducer directory (``reproducer.py``). A race is also run under a
   ThreadSanitizer build of post (``tsan.py``), which names the racing statements.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from .. import __version__
from ..core import protocol
from ..core.errors import HarnessgenError
from ..core.files import clear_stale_omp_registrations
from ..core.outcome import Outcome
from ..core.protocol import Exit, HarnessEnv, Marker
from ..core.runtime import Tolerance
from ..cutout.extract import CutoutPair
from ..engines import RawCrash
from ..harness.build import pair_of
from ..harness.compiler import CXX, CXXFLAGS
from ..harness.built import HarnessBuild
from ..harness.replay import ReplayResult, ReplayWorker
from ..inputs.layout import InputLayout
from ..plan.instances import MATCH_PLACE_KEYS, Instance, match_settings
from ..plan.params import describe as describe_params
from .localize import Divergence, localize
from .reproducer import sdfg_diff, write_finding
from .shrink import Shrinker, ShrinkStats
from .stack import post_stack
from .tsan import run_tsan

Key = Tuple[str, Optional[str], Tuple[str, ...]]
HANG_TIMEOUT_S = 5.0


# a bounded run's triage: replays start until this long past the bound's end, and for at least
# this long from the instance's triage on (one instance's time, the bound's promise)
TRIAGE_PAST_BOUND_S = 10.0
TRIAGE_MIN_S = 5.0


@dataclasses.dataclass
class TriageOptions:
    tolerance: Tolerance = Tolerance()
    keep_root: Path = Path("crashes")          # crashes/<target>/<instance>
    work_dir: Path = Path(".harnessgen")       # capture builds for localization
    replays: int = 3
    max_raw: int = 2000
    shrink_budget: int = 3000
    shrink_seconds: float = 120.0
    localize: bool = True
    command_line: str = ""
    race_threads: int = 4         # race-mode replays: post on this many OpenMP threads ...
    race_repeat: int = 20         # ... this many times
    # a crash found in race mode gets this many such replays (one race among them confirms it):
    # on 2 loaded cores a race that raced under the fuzzer failed 3 replays of 20 runs in 4 of 15
    race_replays: int = 6
    race_repro_runs: int = 100    # post runs in a race reproducer
    tsan: bool = True             # races: also run a ThreadSanitizer build of post
    # time.monotonic() after which no further raw crash is replayed (the rest are reported as not
    # judged in time): a check with a time of its own, such as the whole-program audit
    deadline: Optional[float] = None
    # the instance judged: a build is shared by every instance whose pre and post are the same
    # (parameter variants that change nothing, identical cutouts); its instance.json is the first's
    instance: Optional[Instance] = None

    @classmethod
    def for_instance(cls, run, inst: Instance) -> "TriageOptions":
        """How a run (``records.FuzzOptions``) triages one instance's crashes, into its folder.
        In a bounded run no raw crash is replayed, and no input shrunk, past the bound's end and
        ``TRIAGE_PAST_BOUND_S`` (at least ``TRIAGE_MIN_S`` from now): two NPBench instances that
        started at the bound spent 120 s each on race-mode crashes that did not confirm."""
        deadline = None
        if run.run_ends_at is not None:
            deadline = time.monotonic() + max(TRIAGE_MIN_S, run.run_ends_at + TRIAGE_PAST_BOUND_S - time.time())
        return cls(tolerance=run.tolerance, keep_root=run.keep_dir(inst), work_dir=run.work_dir,
                   max_raw=run.max_replays, command_line=run.command_line,
                   race_threads=max(run.race_threads, 2) if run.race_threads else 4, instance=inst,
                   deadline=deadline)


@dataclasses.dataclass
class Finding:
    key: Key
    outcome: Outcome
    container: Optional[str]
    folder: Path
    raw: List[str]
    meta: Dict

    def to_json(self) -> Dict:
        return {"path": str(self.folder), "outcome": self.outcome.name, "container": self.container,
                "region": list(self.key[2]), "raw_crashes": len(self.raw), "summary": self.meta.get("summary", "")}


@dataclasses.dataclass
class TriageResult:
    findings: List[Finding]
    invalid: List[Dict]            # pre itself failed: constraints to add
    flaky: List[str]
    raw_total: int
    seconds: float
    confirmed_seconds: Optional[float] = None   # into triage, when the first finding was confirmed
    errors: List[Dict] = dataclasses.field(default_factory=list)   # raw crashes the replay could not judge

    @property
    def verdict(self) -> Outcome:
        """The most severe confirmed finding; REPLAY_ERROR where none was confirmed and the replay
        could not judge some raw crash; PASS when every one was INVALID_INPUT or FLAKY."""
        if not self.findings and self.errors:
            return Outcome.REPLAY_ERROR
        return max((f.outcome for f in self.findings), default=Outcome.PASS)


# ---------------------------------------------------------------- keys
def region(result: ReplayResult, layout: InputLayout) -> Tuple[str, ...]:
    """Where the difference is, coarsely: per dimension first / inner / last element, or the side of
    the buffer an out-of-bounds write hit, or the signal that killed post."""
    if result.outcome == Outcome.RACE:
        return ()      # which elements a race corrupts changes from run to run: one race, one finding
    if result.outcome == Outcome.MISMATCH:
        shape = layout.shape(result.container, result.symbols) if result.symbols else ()
        index = result.detail.get("multi_index", [])
        if len(shape) != len(index):
            return ("flat",)
        return tuple("first" if i == 0 else "last" if i == n - 1 else "inner" for i, n in zip(index, shape))
    if result.outcome == Outcome.OOB_WRITE:
        return ("below",) if result.detail.get("offset", 0) < 0 else ("above",)
    if result.outcome == Outcome.POST_CRASH:
        return (result.message.split("(")[-1].rstrip(")"),) if "(" in result.message else ("crash",)
    return ()


def race_thread_counts(preferred: int) -> List[int]:
    """The thread counts race replays cycle through: the configured one first, then 2 to 4."""
    return [preferred] + [t for t in (2, 3, 4) if t != preferred]


def signature(result: ReplayResult) -> Tuple[str, Optional[str]]:
    return result.outcome.name, result.container


def native_signature(build: HarnessBuild, data: bytes, tol: Tolerance, timeout_s: float = HANG_TIMEOUT_S,
                     threads: int = 1, repeat: int = 1) -> Tuple[str, Optional[str]]:
    """(outcome, container) from the native replay binary: the shrinker's fast predicate."""
    run = protocol.run_native(build.harness_replay, data, HarnessEnv(tol, threads, repeat, stages=True), timeout_s)
    pre_done = run.reported(Marker.PRE_DONE)
    if run.timed_out:
        return (Outcome.POST_HANG.name if pre_done else Outcome.INVALID_INPUT.name), None
    if run.exit in (Exit.PASS, Exit.UNSATISFIABLE):
        return Outcome.PASS.name, None
    if run.exit == Exit.INVALID_INPUT:
        return Outcome.INVALID_INPUT.name, None
    for marker in (Marker.MISMATCH, Marker.OOB_WRITE):
        fields = run.fields(marker)
        if fields and "container" in fields:
            return marker.value, fields["container"]
    if pre_done:
        return Outcome.POST_CRASH.name, None
    return Outcome.INVALID_INPUT.name, None


# ---------------------------------------------------------------- triage
class Triage:
    def __init__(self, build_dir: Path, options: TriageOptions):
        self.build = HarnessBuild.open(build_dir)
        self.layout = self.build.layout
        self.options = options
        self.instance = options.instance or Instance.from_json(
            json.loads((self.build.dir / "instance.json").read_text()))

    def run(self, raw: List[RawCrash]) -> TriageResult:
        started = time.monotonic()
        clear_stale_omp_registrations()       # a replay must never die of another process's leftovers
        opts = self.options
        invalid: List[Dict] = []
        flaky: List[str] = []
        errors: List[Dict] = []
        groups: Dict[Key, List[Tuple[RawCrash, bytes, ReplayResult]]] = {}
        confirmed: Optional[float] = None
        with ReplayWorker(self.build.dir) as worker:
            for crash in raw[:opts.max_raw]:
                if opts.deadline is not None and time.monotonic() > opts.deadline:
                    errors.append({"input": str(crash.path), "message": "not replayed: the check's time was up"})
                    continue
                data = crash.path.read_bytes()
                result = self._classify(worker, data, crash.kind, lambda r: self._key(r) in groups)
                if result is None:
                    flaky.append(str(crash.path))
                elif result.outcome == Outcome.INVALID_INPUT:
                    invalid.append({"input": str(crash.path), "container": result.container,
                                    "message": result.message, "symbols": result.symbols})
                elif result.outcome == Outcome.REPLAY_ERROR:
                    errors.append({"input": str(crash.path), "message": result.message})
                elif result.outcome.is_finding:
                    if confirmed is None:          # replayed, same signature each time: the verdict stands
                        confirmed = round(time.monotonic() - started, 3)
                    groups.setdefault(self._key(result), []).append((crash, data, result))
                else:
                    flaky.append(str(crash.path))     # crashed under the engine, passes on replay
            merged: Dict[Key, Dict] = {}
            for key, members in groups.items():
                if not self._shown_natively(members[0]):
                    flaky += [str(m[0].path) for m in members]
                    continue
                self._minimize_group(worker, key, members, merged)
        findings = [self._write(key, entry) for key, entry in sorted(merged.items(), key=lambda kv: kv[1]["first"])]
        self._write_notes(invalid, flaky)
        return TriageResult(findings=findings, invalid=invalid, flaky=flaky, raw_total=len(raw),
                            seconds=round(time.monotonic() - started, 3), confirmed_seconds=confirmed, errors=errors)

    def _key(self, result: ReplayResult) -> Key:
        return (result.outcome.name, result.container, region(result, self.layout))

    def _classify(self, worker: ReplayWorker, data: bytes, kind: str,
                  confirmed: Callable[[ReplayResult], bool]) -> Optional[ReplayResult]:
        """Replay up to three times; None when the replays disagree (FLAKY). An input whose first
        replay fails as a finding already confirmed by its own replays did (``confirmed``) joins
        it after that one replay: a post that crashes restarts the replay worker every time,
        and the finding stands either way. A crash found in race
        mode is replayed in race mode, each replay on another thread count, until it raced and
        three replays ran, at most ``race_replays`` times: one RACE among them makes it a race."""
        tol = self.options.tolerance
        if kind == "race":
            counts = race_thread_counts(self.options.race_threads)
            results = []
            for i in range(max(self.options.replays, self.options.race_replays)):
                results.append(worker.run(data, tol, counts[i % len(counts)], self.options.race_repeat))
                if results[-1].outcome == Outcome.RACE and len(results) >= self.options.replays:
                    break
            races = [r for r in results if r.outcome == Outcome.RACE]
            if races:
                races[0].detail["raced_on"] = sorted({r.detail["threads"] for r in races})
                return races[0]
            if len({signature(r) for r in results}) > 1:
                return None
            return results[0]
        if kind == "hang":
            worker.timeout_s = HANG_TIMEOUT_S
        try:
            results = [worker.run(data, tol)]
            if results[0].outcome.is_finding and confirmed(results[0]):
                return results[0]
            if not results[0].outcome.is_finding:
                # no finding either way: more replays could only call it flaky instead of
                # passing or invalid, at a full timeout each where pre runs too long
                return results[0] if results[0].outcome != Outcome.PASS else None
            for _ in range(self.options.replays - 1):
                results.append(worker.run(data, tol))
                if signature(results[-1]) != signature(results[0]):
                    return None
        finally:
            worker.timeout_s = 20.0
        return results[0]

    def _shrink_seconds(self) -> float:
        """The shrinker's time: its own, or what the triage's deadline leaves (the input as
        found is the reproducer where nothing is left)."""
        if self.options.deadline is None:
            return self.options.shrink_seconds
        return max(0.0, min(self.options.shrink_seconds, self.options.deadline - time.monotonic()))

    # post's runs per native confirmation (a kind whose replays run post several times says so)
    native_repeat = 1

    def _shown_natively(self, member) -> bool:
        """Whether the native harness, in a process of its own, shows the finding the replays
        showed: what the reproducer and afl-fuzz run. The replays run each input in a child
        forked from a server that loaded the build, whose heap is laid out as no fresh process
        lays it out; a post (or pre) reaching outside its buffers can differ there alone, and a
        finding only that shows is not one anybody can reproduce (resnet's StripMining filed
        such a MISMATCH)."""
        _crash, data, result = member
        if self._confirmed_otherwise(result):
            return True
        return native_signature(self.build, data, self.options.tolerance,
                                repeat=self.native_repeat) == signature(result)

    def _confirmed_otherwise(self, result: ReplayResult) -> bool:
        """Findings the native run does not confirm: a race shows on some runs only and has its
        own confirmation; a hang would cost a full timeout again."""
        return result.outcome in (Outcome.RACE, Outcome.POST_HANG)

    def _minimize_group(self, worker: ReplayWorker, key: Key, members, merged: Dict[Key, Dict]) -> None:
        crash, data, result = members[0]
        target = signature(result)
        tol = self.options.tolerance
        started = time.monotonic()
        stats = ShrinkStats(bytes_before=len(data), bytes_after=len(data))
        minimized, final = data, result
        race = result.outcome == Outcome.RACE
        # a race is shrunk and confirmed on the thread count it showed on first
        threads, repeat = (result.detail["threads"], self.options.race_repeat) if race else (1, 1)
        if result.outcome != Outcome.POST_HANG:   # every hang candidate would cost a full timeout
            shrinker = Shrinker(self.layout, self._predicate(target, threads if race else 0), budget=self.options.shrink_budget,
                                deadline_s=self._shrink_seconds())
            candidate, stats = shrinker.shrink(data, harness_afl=None if race else self.build.harness_afl)
            # two replays more than for classification: a finding must be beyond doubt
            confirmed = [worker.run(candidate, tol, threads, repeat) for _ in range(self.options.replays + 2)]
            if race:
                # a race reproducer must show the race reliably, not just once
                races = [r for r in confirmed if r.outcome == Outcome.RACE]
                if len(races) >= len(confirmed) - 1 and all(r.outcome in (Outcome.RACE, Outcome.PASS)
                                                            for r in confirmed):
                    minimized, final = candidate, races[0]
                    final.detail["raced_on"] = result.detail.get("raced_on", [threads])
            elif all(signature(r) == target for r in confirmed):
                minimized, final = candidate, confirmed[0]
        final_key = (final.outcome.name, final.container, region(final, self.layout))
        entry = merged.setdefault(final_key, {"raw": [], "first": float("inf")})
        entry["raw"] += [str(m[0].path) for m in members]
        first = min((m[0].seconds for m in members if m[0].seconds is not None), default=float("inf"))
        entry["first"] = min(entry["first"], first)
        if "data" not in entry or len(minimized) < len(entry["data"]):
            entry.update(data=minimized, result=final, stats=stats, raw_bytes=len(data),
                         seconds=round(time.monotonic() - started, 3))

    def _predicate(self, target: Tuple[str, Optional[str]], race_threads: int):
        tol = self.options.tolerance
        if not race_threads:
            return lambda d: native_signature(self.build, d, tol) == target
        threads, repeat = race_threads, self.options.race_repeat
        wrong = (Outcome.MISMATCH.name, target[1])

        # still racing, reliably: wrong on several threads in each of three invocations (of `repeat`
        # runs each), right on one thread -- the smallest input that races only now and then would
        # make a poor reproducer
        def racing(d: bytes) -> bool:
            if native_signature(self.build, d, tol) != (Outcome.PASS.name, None):
                return False
            return all(native_signature(self.build, d, tol, threads=threads, repeat=repeat) == wrong
                       for _ in range(3))

        return racing

    # ------------------------------------------------------------ output
    def _pair(self) -> CutoutPair:
        return pair_of(self.build, self.instance)

    def _write(self, key: Key, entry: Dict) -> Finding:
        started = time.monotonic()
        data, result, stats = entry["data"], entry["result"], entry["stats"]
        decoded = self.layout.decode(data)
        divergence: Optional[Divergence] = None
        pair = self._pair()
        if self.options.localize and result.outcome in (Outcome.MISMATCH, Outcome.OOB_WRITE, Outcome.RACE):
            try:
                race = result.outcome == Outcome.RACE
                divergence = localize(pair, self.layout, data, self.options.work_dir, self.options.tolerance,
                                      threads=result.detail["threads"] if race else 1, attempts=20 if race else 1)
            except Exception as exc:  # localization is a diagnosis aid: report why it is missing
                divergence = None
                entry["localize_error"] = f"{type(exc).__name__}: {exc}"
        digest = hashlib.sha1(json.dumps(key, default=str).encode()).hexdigest()[:8]
        name = "-".join(part for part in (key[0].lower(), key[1] or "", digest) if part)
        folder = self.options.keep_root / name
        meta = self._meta(key, entry, result, stats, decoded, divergence)
        if result.outcome == Outcome.RACE and self.options.tsan:
            meta.update(self._tsan(data, result.detail["threads"]))
        diff_lines = sdfg_diff(pair.pre, pair.post)
        summary = result.describe()
        meta["summary"] = summary
        meta["triage_seconds"] = round(entry["seconds"] + time.monotonic() - started, 3)
        dtypes = {s.name: s.dtype for s in self.layout.symbols}
        dtypes.update({c.name: c.dtype for c in self.layout.containers})
        readme = _readme(meta, summary, divergence, diff_lines)
        write_finding(folder, meta, self.build.dir, data, decoded, dtypes, CXX, CXXFLAGS, summary, readme)
        if result.outcome == Outcome.POST_CRASH:
            # taken here, by the worker that triaged it and within the run's bound, rather than
            # by clustering after the run, which took 40 s of gdb for NPBench's 270 crashes
            post_stack(folder, self.build.harness_replay)
        return Finding(key=key, outcome=result.outcome, container=result.container, folder=folder,
                       raw=entry["raw"], meta=meta)

    def _tsan(self, data: bytes, threads: int) -> Dict:
        """ThreadSanitizer's view of the race: the racing statements in post's source."""
        try:
            return {"tsan": run_tsan(self.build, data, threads).to_json()}
        except (HarnessgenError, subprocess.TimeoutExpired) as exc:   # evidence, not the verdict
            return {"tsan_error": f"{type(exc).__name__}: {exc}"}

    def _meta(self, key: Key, entry: Dict, result: ReplayResult, stats: ShrinkStats, decoded,
              divergence: Optional[Divergence]) -> Dict:
        import dace

        detail = result.detail
        return {
            "target": self.instance.target, "instance": self.instance.id, "program": self.instance.program,
            "transformation": self.instance.transformation, "transformation_spec": self.instance.transformation_spec,
            "transformation_json": self._transformation_json(),
            "params": self.instance.params,
            "outcome": result.outcome.name, "stage": "post", "container": result.container,
            "region": list(key[2]), "index": detail.get("multi_index"), "flat_index": detail.get("index"),
            "pre_value": detail.get("pre"), "post_value": detail.get("post"),
            "differing": detail.get("differing"), "total": detail.get("total"),
            "max_abs_diff": detail.get("max_abs_diff"), "max_index": detail.get("max_multi_index"),
            "threads": detail.get("threads", 1), "runs": detail.get("runs", 1),
            "differing_runs": detail.get("differing_runs"), "raced_on_threads": detail.get("raced_on"),
            "repro_runs": self.options.race_repro_runs if result.outcome == Outcome.RACE else 1,
            "message": result.message,
            "tolerance": self.options.tolerance.to_json(),
            "symbols": {k: int(v) for k, v in decoded.symbols.items()},
            # nested-SDFG connectors that are one container in the program, kept one in the cutout
            "aliases": self.build.manifest.get("aliases", []),
            "cutout_grown_for": self.build.manifest.get("grown_for", ""),
            "divergence": divergence.to_json() if divergence else None,
            "localize_error": entry.get("localize_error"),
            "raw_crashes": entry["raw"], "raw_bytes": entry["raw_bytes"],
            "minimized_bytes": len(entry["data"]), "shrink": dataclasses.asdict(stats),
            "versions": {"harnessgen": __version__, "dace": dace.__version__,
                         "compilers": self.build.manifest.get("compilers", {}),
                         "cuda": self.build.manifest.get("cuda")},
            "build_dir": str(self.build.dir), "command_line": self.options.command_line or " ".join(sys.argv),
        }

    def _transformation_json(self) -> Dict:
        """The match relative to pre: where it lies from the build (the same for every instance
        sharing it), how it is set from the instance judged."""
        built = json.loads((self.build.dir / "transformation.json").read_text())
        if self.options.instance is None:
            return built
        return {**{k: v for k, v in built.items() if k in MATCH_PLACE_KEYS}, **match_settings(self.instance.match)}

    def _write_notes(self, invalid: List[Dict], flaky: List[str]) -> None:
        if not invalid and not flaky:
            return
        notes = {"invalid_inputs": invalid, "flaky": flaky,
                 "hint": "INVALID_INPUT means pre itself failed on a decoded input: a constraint is missing "
                         "(add it to the constraints file); FLAKY inputs did not replay the same way three times"}
        path = self.options.keep_root / "notes.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".notes.json.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(notes, indent=1, default=str) + "\n")
        os.replace(tmp, path)


def _readme(meta: Dict, summary: str, divergence: Optional[Divergence], diff_lines: List[str]) -> str:
    symbols = ", ".join(f"{k}={v}" for k, v in meta["symbols"].items()) or "none"
    lines = [f"# {meta['outcome']}: {meta['transformation']} on {meta['target']}/{meta['program']}", "",
             f"Instance `{meta['instance']}`. Run `python repro.py`: it exits 1 while the bug is present.", "",
             *([f"Parameters: {describe_params(meta['params'])} (the others at their defaults).", ""]
               if meta.get("params") else []),
             "## What differs", "", f"    {summary}", "", f"Symbols: {symbols}. Input: {meta['minimized_bytes']} bytes "
             f"(minimized from {meta['raw_bytes']}; {len(meta['raw_crashes'])} raw crash(es) collapse into this finding).",
             ""]
    lines += ["## Where it diverges first", ""]
    if divergence:
        lines += [f"    {divergence.describe()}", ""]
    else:
        lines += ["    (not localized: " + (meta.get("localize_error") or "post crashed or hung, or only the outputs "
                                            "differ") + ")", ""]
    lines += _tsan_lines(meta)
    lines += ["## What the transformation changed", "", "```"] + (diff_lines[:40] or ["(no structural change)"])
    lines += ["```", "", "Files: `input.bin` (fuzzer bytes), `inputs.npz` (decoded), `pre.sdfg`, `post.sdfg`, "
              "`transformation.json`, `meta.json`.", ""]
    return "\n".join(lines)


def _tsan_lines(meta: Dict) -> List[str]:
    if meta["outcome"] != "RACE":
        return []
    if "tsan" not in meta:
        return [f"    ThreadSanitizer: {meta.get('tsan_error', 'not run')}", ""]
    report = meta["tsan"]
    lines = [f"    ThreadSanitizer ({meta['threads']} threads): {report['reports']} data-race report(s) in post"]
    lines += [f"      {loc['access']:<5} {loc['file']}:{loc['line']}  {loc['code']}" for loc in report["locations"]]
    return lines + [""]
