"""harnessgen's performance figures, side by side with their physical limit and a FuzzyFlow-style loop.

    python bench/perf.py [--quick] [--parts overhead,baseline,builds,verdicts,campaign]
                         [--out bench/results/perf.json] [--doc docs/performance.md]

1. overhead   execs/s under afl-fuzz (fuzzer_stats) versus the bare cost of pre and
              post on the same decoded inputs (afl-fuzz's queue) in a tight native loop
              (``harness_replay --bench``), for a tiny, a mid-size and a CLOUDSC cutout
              whose sizes are fixed, so that every input costs the same;
2. baseline   a FuzzyFlow-style loop on the same cutouts: inputs sampled in Python, pre
              and post each in a fresh process, outputs compared with NumPy;
3. builds     extraction and build time per instance, cold (empty build cache, shared
              precompiled headers), cached, and the very first build on a machine;
4. verdicts   time to the first verdict on every planted bug and on CLOUDSC instances
              with findings, over several seeds, with and without boundary-aware seeds;
5. campaign   instances per minute of `harnessgen campaign` over kernels x 14 built-ins, 1 and 2 workers.

Every figure is reported as min / median / max over its repetitions. One table is
printed; the figures are written as JSON and between the markers of docs/performance.md.
No figure is asserted anywhere: the goals are printed beside them.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnessgen.campaign.runner import InstanceRunner
from harnessgen.core.records import FuzzOptions
from harnessgen.core.runtime import Tolerance, compare
from harnessgen.cutout.extract import extract
from harnessgen.harness.build import build
from harnessgen.harness.built import HarnessBuild
from harnessgen.inputs.constraints import derive
from harnessgen.inputs.layout import build_layout
from harnessgen.subjects import plan
from harnessgen.zoo import PLANTED

WORK = REPO / ".harnessgen"
PARTS = ("overhead", "baseline", "builds", "verdicts", "campaign")


@dataclasses.dataclass(frozen=True)
class Subject:
    """One cutout to measure: an instance of a transformation, its sizes fixed."""

    key: str
    label: str
    program: str
    transformation: str
    match: str                      # a substring of the instance's description, or FIRST_LOOP
    sizes: Dict[str, int]
    settings: tuple = ()


# the loop of the lowest source line among the matches: the same loop on every DaCe, whatever its
# frontend calls it (1.0.2: a guard state ``for_169_guard``; 2.0: a loop region ``for_213``)
FIRST_LOOP = "<first loop>"


SUBJECTS = (
    Subject("tiny", "elementwise chain, MapFusion, N=16", "kernels:elementwise_chain", "MapFusion", "", {"N": 16}),
    Subject("gemm", "gemm, MapTiling 4x3x5, 48^3", "kernels:gemm", "MapTiling", "gemm_map",
            {"NI": 48, "NJ": 48, "NK": 48}, ("tile_sizes=[4,3,5]",)),
    Subject("cloudsc", "CLOUDSC's first loop LoopToMap applies to, LoopToMap, 32x32", "cloudsc", "LoopToMap",
            FIRST_LOOP, {"KLON": 32, "KLEV": 32}),
)

# CLOUDSC instances whose verdict is a finding on some DaCe (dynamic ones first), from the default
# campaigns on 2.0 and 1.0.2; each is measured where this DaCe plans it (an id names its match)
CLOUDSC_FINDINGS = {
    "Vectorization": ["Vectorization-1a1b4971", "Vectorization-039cc6b4", "Vectorization-cd727853",
                      "Vectorization-0b3a3f83", "Vectorization-c241a629", "Vectorization-0eece7d8",
                      "Vectorization-be3a06af"],
    "harnessgen.targets.cloudsc_xforms:OffloadMap": ["OffloadMap-459c3346"],
    "LoopUnroll": ["LoopUnroll-e911eca2"],
    "LoopToMap": ["LoopToMap-d080ec9c"],
}

# ------------------------------------------------------------------ helpers
def spread(values: List[float]) -> Optional[Dict[str, float]]:
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"min": min(values), "median": statistics.median(values), "max": max(values), "n": len(values)}


def fresh_work(root: Path) -> Path:
    """An empty build cache that shares the machine's precompiled headers (built once per machine)."""
    work = Path(tempfile.mkdtemp(prefix="work-", dir=root))
    (WORK / "pch").mkdir(parents=True, exist_ok=True)
    os.symlink((WORK / "pch").resolve(), work / "pch")
    return work


def options(root: Path, time_s: float, **kw) -> FuzzOptions:
    run = Path(tempfile.mkdtemp(prefix="run-", dir=root))
    kw.setdefault("work_dir", WORK)
    return FuzzOptions(time_s=time_s, out_dir=run / "out", corpus_root=run / "corpus", crashes_root=run / "crashes",
                       show_progress=False, reduce_seconds=0.0, **kw)      # detection is measured, not reduction


@dataclasses.dataclass
class Prepared:
    subject: Subject
    source: object                  # harnessgen.subjects.sdfg.SdfgSubject: the program and transformation
    instance: object
    constraints: Path

    @property
    def target(self):
        return self.source.target

    @property
    def sdfg(self):
        return self.source.program_of(self.instance)

    @property
    def cls(self) -> type:
        return self.source.change(self.subject.transformation).cls

    def runner(self, opts: FuzzOptions) -> InstanceRunner:
        return InstanceRunner(self.source, opts)


def prepare(subject: Subject, root: Path) -> Prepared:
    """The subject's instance, and a constraints file: the target's ranges with the sizes fixed."""
    run_plan = plan(subject.program, subject.transformation, None, list(subject.settings) or None)
    instances = [i for _, i in run_plan.planned]
    if subject.match == FIRST_LOOP:
        lines = {i.id: re.search(r"for_(\d+)", i.description) for i in instances}
        inst = min((i for i in instances if lines[i.id]), key=lambda i: int(lines[i.id].group(1)))
    else:
        inst = next(i for i in instances if subject.match in i.description)
    target = run_plan.subject.target
    ranges = json.loads(target.constraints_file.read_text()) if target.constraints_file else {}
    ranges.update({name: [str(v), str(v)] for name, v in subject.sizes.items()})
    path = root / f"{subject.key}.constraints.json"
    path.write_text(json.dumps(ranges, indent=1))
    return Prepared(subject, run_plan.subject, inst, path)


def build_of(prep: Prepared, work: Path):
    """Extraction, constraints, layout and build of the subject: (build, seconds per stage)."""
    started = time.perf_counter()
    pair = extract(prep.sdfg, prep.instance, prep.cls)
    extracted = time.perf_counter()
    layout = build_layout(pair, derive(pair, user_file=prep.constraints, strict_names=len(prep.target.programs) == 1))
    derived = time.perf_counter()
    harness = build(pair, layout, work)
    built = time.perf_counter()
    return harness, {"extract": extracted - started, "derive": derived - extracted, "build": built - derived}


# ------------------------------------------------------------------ 1. overhead
def native_costs(harness, inputs: List[Path], seconds_per_input: float) -> Dict[str, float]:
    """Mean seconds per execution over ``inputs``: bare, with DaCe's lifecycle, the harness's whole path."""
    proc = subprocess.run([str(harness.harness_replay), "--bench", str(seconds_per_input), *map(str, inputs)],
                          capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, check=True)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    rows = [r for r in rows if r["status"] == 0]
    return {k: statistics.mean(r[f"{k}_s"] for r in rows) for k in ("bare", "lifecycle", "harness")} | {
        "inputs": len(rows)}


def overhead(prep: Prepared, root: Path, time_s: float, reps: int) -> Dict:
    runs = []
    for rep in range(reps):
        # fuzzed whatever a proof would settle: afl-fuzz's rate is what is measured
        opts = options(root, time_s, seed=rep, constraints=prep.constraints, prove="off")
        result = prep.runner(opts).run(prep.subject.transformation, prep.instance)
        if result.verdict != "PASS":
            raise SystemExit(f"{prep.subject.label}: expected PASS, got {result.verdict}: {result.message}")
        harness = HarnessBuild.open(Path(result.build_dir))
        queue = sorted((opts.out_dir / "afl" / prep.instance.id / "default" / "queue").glob("id:*"))[:40]
        costs = native_costs(harness, queue, 0.05)
        runs.append({"afl_execs_per_sec": result.execs_per_sec, "afl_seconds": result.fuzz_seconds,
                     "queue_inputs": costs["inputs"], "bare_s": costs["bare"], "lifecycle_s": costs["lifecycle"],
                     "harness_s": costs["harness"],
                     "ratio": (1.0 / result.execs_per_sec) / costs["bare"] if result.execs_per_sec else None,
                     "build_dir": result.build_dir})
    return {"subject": prep.subject.key, "label": prep.subject.label, "instance": prep.instance.id, "runs": runs,
            "afl_execs_per_sec": spread([r["afl_execs_per_sec"] for r in runs]),
            "bare_execs_per_sec": spread([1.0 / r["bare_s"] for r in runs]),
            "lifecycle_execs_per_sec": spread([1.0 / r["lifecycle_s"] for r in runs]),
            "harness_execs_per_sec": spread([1.0 / r["harness_s"] for r in runs]),
            "bare_us": spread([r["bare_s"] * 1e6 for r in runs]),
            "ratio": spread([r["ratio"] for r in runs])}


# ------------------------------------------------------------------ 2. FuzzyFlow-style baseline
def fuzzyflow_trials(build_dir: Path, time_s: float, min_trials: int = 5, seed: int = 0) -> Dict:
    """Trials per second of a per-trial loop: sample in Python, pre and post in fresh processes, NumPy compare."""
    harness = HarnessBuild.open(build_dir)
    layout = harness.layout
    zeros = layout.decode(b"")
    length = len(layout.encode(zeros.symbols, zeros.arrays))
    rng = np.random.default_rng(seed)
    worker = [sys.executable, str(REPO / "bench" / "fuzzyflow_side.py"), str(build_dir)]
    trials, differing, died = 0, 0, []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        started = time.perf_counter()
        while trials < min_trials or time.perf_counter() - started < time_s:
            decoded = layout.decode(rng.bytes(length))
            decoded.to_npz(tmp / "in.npz")
            codes = [subprocess.run(worker + [side, str(tmp / "in.npz"), str(tmp / f"{side}.npz")]).returncode
                     for side in ("pre", "post")]
            if any(codes):      # a side that dies is a trial's verdict too, as in the prototype
                died.append({"trial": trials, "pre": codes[0], "post": codes[1]})
            else:
                with np.load(tmp / "pre.npz") as pre, np.load(tmp / "post.npz") as post:
                    differing += any(compare(n, pre[n], post[n], Tolerance()) is not None for n in pre.files)
            trials += 1
        elapsed = time.perf_counter() - started
    return {"trials": trials, "seconds": elapsed, "trials_per_sec": trials / elapsed, "differing": differing,
            "died": died}


# ------------------------------------------------------------------ 3. builds
def builds(prep: Prepared, root: Path, reps: int) -> Dict:
    cold, cached, stages, codegen = [], [], [], []
    for _ in range(reps):
        work = fresh_work(root)
        harness, seconds = build_of(prep, work)
        _, again = build_of(prep, work)          # the same instance again: the build comes from the cache
        cold.append(seconds["build"])
        cached.append(again["build"])
        stages.append(seconds)
        codegen.append(harness.manifest["codegen_seconds"])
        shutil.rmtree(work, ignore_errors=True)
    return {"subject": prep.subject.key, "cold_s": spread(cold), "cached_s": spread(cached),
            "extract_s": spread([s["extract"] for s in stages]), "derive_s": spread([s["derive"] for s in stages]),
            "codegen_s": spread(codegen)}


def first_build_on_machine(prep: Prepared, root: Path) -> float:
    """A build with no precompiled headers yet (they are built, once per machine and compiler)."""
    work = Path(tempfile.mkdtemp(prefix="bare-", dir=root))
    _, seconds = build_of(prep, work)
    return seconds["build"]


# ------------------------------------------------------------------ 4. time to first verdict
def first_verdicts(label: str, source, spec: str, inst, root: Path, seeds: int, time_s: float, race: bool) -> Dict:
    """Per seed mode, over ``seeds`` seeds: extraction + build (empty cache) + fuzzing until the
    first crash (``to_crash``) and until its finding is triaged (``to_finding``)."""
    out = {"subject": label, "instance": inst.id}
    for mode in ("boundary", "random"):
        runs = []
        for seed in range(seeds):
            opts = options(root, time_s, seed=seed, seed_mode=mode, until_crash=True, work_dir=fresh_work(root),
                           race_threads=4 if race else 0, constraints=source.target.constraints_file)
            started = time.perf_counter()
            result = InstanceRunner(source, opts).run(spec, inst)
            wall = time.perf_counter() - started
            first = result.findings[0] if result.findings else {}
            found = bool(result.findings) or (bool(result.crashes) and not result.build_dir)
            # confirmed: the first raw crash replayed with the same signature each time (triage
            # starts when afl-fuzz stops at it); static verdicts need no confirmation
            confirmed = result.triage.get("confirmed_seconds")
            to_confirmed = (wall - result.triage["seconds"] + confirmed) if confirmed is not None else \
                (result.verdict_seconds if found and not result.build_dir else None)
            runs.append({"seed": seed, "verdict": result.verdict, "found": found, "message": result.message[:300],
                         "to_crash_s": result.verdict_seconds if found else None, "to_confirmed_s": to_confirmed,
                         "to_finding_s": wall if found else None,
                         "execs": first.get("execs"), "by": first.get("kind")})
            shutil.rmtree(opts.work_dir, ignore_errors=True)
        out[mode] = {"runs": runs, "found": sum(r["found"] for r in runs), "verdicts": sorted({r["verdict"] for r in runs}),
                     "to_crash_s": spread([r["to_crash_s"] for r in runs]),
                     "to_confirmed_s": spread([r.get("to_confirmed_s") for r in runs]),
                     "to_finding_s": spread([r["to_finding_s"] for r in runs]),
                     "execs": spread([r["execs"] for r in runs])}
    return out


def planted_verdicts(root: Path, seeds: int, time_s: float, names: List[str]) -> List[Dict]:
    rows = []
    for name in names:
        bug = PLANTED[name]
        spec = f"harnessgen.zoo.planted:{name}"
        run_plan = plan(f"kernels:{bug.program}", spec, None)
        inst = run_plan.planned[0][1]
        row = first_verdicts(name, run_plan.subject, spec, inst, root, seeds, time_s, bug.race)
        row["size_dependent"] = bug.size_dependent
        rows.append(row)
        print(f"  {name}: {row['boundary']['to_finding_s']}", flush=True)
    return rows


def cloudsc_verdicts(root: Path, seeds: int, time_s: float, quick: bool) -> List[Dict]:
    rows = []
    for spec, ids in CLOUDSC_FINDINGS.items():
        run_plan = plan("cloudsc", spec, None)
        planned = [inst for _, inst in run_plan.planned if inst.id in ids]
        if not planned:
            print(f"  {spec}: none of {', '.join(ids)} is planned on this DaCe", flush=True)
        for inst in planned[:1] if quick else planned:
            row = first_verdicts(inst.id, run_plan.subject, spec, inst, root, seeds, time_s, False)
            rows.append(row)
            print(f"  {inst.id}: {row['boundary']['to_finding_s']}", flush=True)
    return rows


# ------------------------------------------------------------------ 5. campaign
# at least ten DaCe built-ins that apply to the kernels suite (89 matches on DaCe 2.0.0b1 as on 1.0.2;
# 189 instances with their parameter variants)
CAMPAIGN_XFORMS = ("MapFusion,TaskletFusion,MapExpansion,MapInterchange,LoopToMap,MapFission,StateFusion,"
                   "WCRToAugAssign,AugAssignToWCR,TrivialTaskletElimination,MapCollapse,InLocalStorage,"
                   "OutLocalStorage,StartStateElimination")


def campaign(root: Path, budget: str, transformations: str) -> List[Dict]:
    """`harnessgen campaign` over kernels with 1 and 2 local workers, each from an empty build cache."""
    from harnessgen.campaign import Budget, CampaignConfig, run_campaign
    from harnessgen.campaign.executors import ExecutorSpec
    from harnessgen.campaign.run_report import collect
    from harnessgen.campaign.state import CampaignState

    rows = []
    for jobs in (1, 2):
        opts = options(root, 0, work_dir=fresh_work(root))
        directory = opts.out_dir.parent / "campaign"
        config = CampaignConfig("kernels", transformations, directory, Budget.parse(budget), opts)
        started = time.perf_counter()
        outcome = run_campaign(config, ExecutorSpec("local", workers=jobs))
        wall = time.perf_counter() - started
        state = CampaignState(directory / "campaign.db", readonly=True)
        data = collect(directory, state)
        state.close()
        rows.append({"jobs": jobs, "instances": outcome.done, "seconds": wall, "budget": budget,
                     "transformations": len(data.transformations),
                     "applying": sum(1 for t in data.transformations if t["instances"]),
                     "instances_per_min": 60.0 * outcome.done / wall, "verdicts": dict(sorted(data.verdicts.items())),
                     "findings": {t["name"]: t["findings"] for t in data.transformations if t["findings"]}})
        shutil.rmtree(opts.work_dir, ignore_errors=True)
    return rows


# ------------------------------------------------------------------ report
def machine() -> str:
    model = ""
    try:
        model = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = ""
    try:
        kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal")))
        mem = f", {kb / 2**20:.0f} GiB"
    except (OSError, StopIteration):
        pass
    return f"{model or platform.processor() or platform.machine()}, {os.cpu_count()} cores{mem}"


def fmt(s: Optional[Dict], digits: int = 2, scale: float = 1.0) -> str:
    if not s:
        return "–"

    def one(v):
        v = v * scale
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.{digits}g}" if abs(v) < 1 else f"{v:.{digits}f}".rstrip("0").rstrip(".")
    return f"{one(s['min'])} / **{one(s['median'])}** / {one(s['max'])}"


def goal(ok: Optional[bool], text: str) -> str:
    return f"{text} {'✓' if ok else '✗'}" if ok is not None else text


def table(report: Dict) -> str:
    rows = [("measure", "subject", "min / **median** / max", "goal")]
    for o in report.get("overhead", []):
        rows.append(("execs/s under afl-fuzz", o["label"], fmt(o["afl_execs_per_sec"]),
                     goal(o["afl_execs_per_sec"]["median"] >= 20000, "≥ 20,000") if o["subject"] == "tiny" else ""))
        rows.append(("pre+post, bare native loop (µs per input)", o["label"], fmt(o["bare_us"]), ""))
        rows.append(("execs/s: bare / DaCe init+exit / whole harness, in process", o["label"],
                     f"{o['bare_execs_per_sec']['median']:,.0f} / {o['lifecycle_execs_per_sec']['median']:,.0f} / "
                     f"{o['harness_execs_per_sec']['median']:,.0f}", ""))
        heavy = o["bare_us"]["median"] >= 100
        rows.append(("afl-fuzz time per exec ÷ bare", o["label"], fmt(o["ratio"], 3),
                     goal(o["ratio"]["median"] <= 1.15, "≤ 1.15") if heavy else "(bare < 100 µs: no goal)"))
    afl = {o["subject"]: o["afl_execs_per_sec"]["median"] for o in report.get("overhead", [])}
    for b in report.get("baseline", []):
        rows.append(("FuzzyFlow-style loop, trials/s", b["label"], f"{b['trials_per_sec']:.2f} ({b['trials']} trials)", ""))
        if b["subject"] in afl:      # against the latest afl-fuzz figure of the same cutout
            rows.append(("speed-up of afl-fuzz over it", b["label"], f"{afl[b['subject']] / b['trials_per_sec']:,.0f}×", ""))
    for b in report.get("builds", {}).get("subjects", []):
        rows.append(("cold build, s (empty cache)", b["subject"], fmt(b["cold_s"]),
                     goal(b["cold_s"]["median"] <= 2.5, "≤ 2.5")))
        rows.append(("cached build, s", b["subject"], fmt(b["cached_s"], 2), "~0"))
        rows.append(("extraction + constraints, s", b["subject"], fmt({k: b["extract_s"][k] + b["derive_s"][k]
                                                                      for k in ("min", "median", "max")}), ""))
    if report.get("builds", {}).get("first_on_machine_s") is not None:
        rows.append(("first build on a machine (headers precompiled), s", report["builds"]["first_subject"],
                     f"{report['builds']['first_on_machine_s']:.2f}", "once"))
    for group, label in (("planted", "planted"), ("cloudsc", "CLOUDSC")):
        for v in report.get("verdicts", {}).get(group, []):
            for mode in ("boundary", "random"):
                m = v[mode]
                what = f"{label} {v['subject']}, {'boundary seeds' if mode == 'boundary' else 'no boundary seeds'}"
                g = ""
                confirmed = m.get("to_confirmed_s")
                if group == "cloudsc" and mode == "boundary" and confirmed:
                    g = goal(confirmed["median"] <= 8, "≤ 8 s confirmed")
                if group == "planted" and v.get("size_dependent") and mode == "boundary":
                    g = goal(m["execs"] is not None and m["execs"]["median"] <= 2, "≤ 2 execs")
                rows.append(("s to first crash; confirmed; triaged (found/runs; execs)", what,
                             f"{fmt(m['to_crash_s'])}; {fmt(confirmed)}; {fmt(m['to_finding_s'])} "
                             f"({m['found']}/{len(m['runs'])}; {fmt(m['execs'])})", g))
    for c in report.get("campaign", []):
        rows.append(("campaign instances/min", f"kernels x {c.get('transformations', '?')} transformations, "
                     f"{c['instances']} instances, {c.get('budget', '?')} each, {c['jobs']} worker(s)",
                     f"{c['instances_per_min']:.1f} ({c['seconds']:.0f} s)", ""))
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def portable(obj):
    """The report without this machine's paths: paths in the checkout relative to it, messages
    cut to their first line (tracebacks name files of the interpreter and the packages)."""
    if isinstance(obj, dict):
        return {k: (v.splitlines()[0] if k == "message" and isinstance(v, str) and v else portable(v))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [portable(v) for v in obj]
    if isinstance(obj, str):
        return obj.replace(str(REPO) + os.sep, "")
    return obj


def update_readme(readme: Path, report: Dict, text: str) -> None:
    begin, end = "<!-- perf:begin -->", "<!-- perf:end -->"
    later = {p: d for p, d in report.get("part_dates", {}).items() if d != report["date"]}
    again = "".join(f", part {p} again on {d}" for p, d in sorted(later.items()))
    dace = f", DaCe {report['dace']}" if report.get("dace") else ""
    section = (f"{begin}\n_Measured {report['date']}{again} on {report['machine']}{dace} by `make bench` "
               f"({'quick' if report['quick'] else 'full'} run, {report['seconds'] / 60:.0f} min; "
               f"figures in `bench/results/perf.json`)._\n\n{text}\n{end}")
    body = readme.read_text()
    if begin in body and end in body:
        body = body[:body.index(begin)] + section + body[body.index(end) + len(end):]
    else:
        body = body.rstrip("\n") + "\n\n## Performance\n\n" + section + "\n"
    readme.write_text(body)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one repetition, short budgets (a smoke run)")
    parser.add_argument("--render", type=Path, metavar="JSON",
                        help="measure nothing: print the table of an earlier run's JSON (and rewrite the doc)")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "perf.json")
    parser.add_argument("--doc", dest="readme", default=str(REPO / "docs" / "performance.md"),
                        help="the document whose generated figures (between its perf markers) are rewritten ('' for "
                             "none; never after --quick)")
    args = parser.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"--parts: unknown {', '.join(sorted(unknown))}; choose from {', '.join(PARTS)}")
    if args.render:
        report = json.loads(args.render.read_text())
        text = table(report)
        print(text)
        if args.readme and not report["quick"]:
            update_readme(Path(args.readme), report, text)
        return 0
    q = args.quick
    started = time.perf_counter()
    today = time.strftime("%Y-%m-%d")
    from harnessgen.dacecompat import dace_version

    report: Dict = {"date": today, "machine": machine(), "dace": dace_version(), "quick": q,
                    "part_dates": {p: today for p in parts}}
    root = Path(tempfile.mkdtemp(prefix="harnessgen-bench-"))
    try:
        prepared = []
        if {"overhead", "baseline", "builds"} & set(parts):
            prepared = [prepare(s, root) for s in SUBJECTS]
        if "overhead" in parts:
            print("overhead: afl-fuzz versus the bare native loop", flush=True)
            report["overhead"] = [overhead(p, root, 5 if q else 20, 1 if q else 3) for p in prepared]
        if "baseline" in parts:
            print("baseline: FuzzyFlow-style per-trial loop", flush=True)
            report["baseline"] = []
            for p in prepared:
                harness, _ = build_of(p, WORK)
                row = {"subject": p.subject.key, "label": p.subject.label, **fuzzyflow_trials(harness.dir, 3 if q else 10)}
                afl = next((o["afl_execs_per_sec"]["median"] for o in report.get("overhead", [])
                            if o["subject"] == p.subject.key), None)
                row["speedup"] = afl / row["trials_per_sec"] if afl else float("nan")
                report["baseline"].append(row)
        if "builds" in parts:
            print("builds: cold and cached", flush=True)
            report["builds"] = {"subjects": [builds(p, root, 1 if q else 5) for p in prepared],
                                "first_on_machine_s": None if q else first_build_on_machine(prepared[0], root),
                                "first_subject": prepared[0].subject.key}
        if "verdicts" in parts:
            print("verdicts: time to the first verdict", flush=True)
            names = ["OffByOneTiling", "FastExpBand"] if q else sorted(PLANTED)
            report["verdicts"] = {"planted": planted_verdicts(root, 2 if q else 5, 20 if q else 30, names),
                                  "cloudsc": cloudsc_verdicts(root, 2 if q else 5, 20 if q else 30, q)}
        if "campaign" in parts:
            print("campaign: throughput with 1 and 2 workers", flush=True)
            report["campaign"] = campaign(root, "2s" if q else "3s", "MapFusion,TaskletFusion" if q else CAMPAIGN_XFORMS)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report["seconds"] = time.perf_counter() - started
    if set(parts) != set(PARTS) and args.out.is_file():
        # a subset measured again: the other parts keep their earlier figures
        earlier = json.loads(args.out.read_text())
        if earlier.get("quick") == q:
            dates = {**{p: earlier.get("date") for p in PARTS}, **earlier.get("part_dates", {}), **report["part_dates"]}
            report = {**earlier, **{k: v for k, v in report.items() if k != "seconds"},
                      "seconds": earlier.get("seconds", 0.0), "date": earlier.get("date"), "part_dates": dates}
    text = table(report)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(portable(report), indent=1, default=str) + "\n")
    if args.readme and not q:
        update_readme(Path(args.readme), report, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
