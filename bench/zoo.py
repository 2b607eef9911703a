"""Measure the zoo: how fast each planted bug is found, how long correct ones stay silent.

    python bench/zoo.py [--time 60] [--out bench/results/zoo.json]

For every planted bug: time to the first confirmed finding (a) with the
boundary-aware seeds and (b) starting afl-fuzz from one passing input
(size 4, zero data) so that AFL++'s mutations must reach the bug. For every
correct transformation: execs and execs/s over the whole budget.
Prints a Markdown table and writes the figures as JSON.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnessgen.campaign.fuzz_run import fuzz
from harnessgen.core.records import FuzzOptions
from harnessgen.cutout.extract import extract
from harnessgen.inputs.constraints import derive
from harnessgen.inputs.layout import build_layout
from harnessgen.plan.instances import enumerate_instances, load_transformation
from harnessgen.targets import resolve
from harnessgen.zoo import PLANTED

CORRECT = [
    ("MapTiling tiles 4x3x5", "gemm", "MapTiling", ["tile_sizes=[4,3,5]"], "gemm_map"),
    ("MapInterchange", "transpose_scale", "MapInterchange", [], ""),
    ("MapFusion", "elementwise_chain", "MapFusion", [], ""),
    ("ReciprocalDivision (x/y -> x*(1/y))", "elementwise_chain", "harnessgen.zoo.correct:ReciprocalDivision", [], ""),
]


def options(tmp: Path, time_s: float, **kw) -> FuzzOptions:
    return FuzzOptions(time_s=time_s, out_dir=tmp / "out", work_dir=REPO / ".harnessgen", corpus_root=tmp / "corpus",
                       crashes_root=tmp / "crashes", show_progress=False, reduce_seconds=0.0, **kw)


def passing_input(program: str, spec: str, inst):
    """Size 4 for every symbol (clamped into its range), all data zero."""
    target, _ = resolve("kernels")
    sdfg = target.programs[program].build()
    pair = extract(sdfg, inst, load_transformation(spec))
    layout = build_layout(pair, derive(pair))
    import numpy as np

    from harnessgen.core import expr as ex

    env = {}
    for slot in layout.symbols:
        env[slot.name] = max(ex.evaluate(slot.lo, env), min(4, ex.evaluate(slot.hi, env)))
    arrays = {c.name: np.zeros(layout.counts(env)[c.name], dtype=c.dtype) for c in layout.containers}
    return layout.encode(env, arrays)


def planted_row(name: str, time_s: float):
    program, race = PLANTED[name].program, PLANTED[name].race
    spec = f"harnessgen.zoo.planted:{name}"
    row = {"bug": name, "program": program}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        results = fuzz(f"kernels:{program}", spec, None, options(Path(tmp), time_s, until_crash=True,
                                                                         race_threads=4 if race else 0))
        found = [r for r in results if r.findings]
        row["instances"] = len(results)
        row["found"] = f"{len(found)}/{len(results)}"
        row["verdict"] = found[0].verdict if found else "PASS"
        row["boundary_seconds"] = found[0].seconds_to_first_finding if found else None
        row["boundary_execs"] = found[0].findings[0]["execs"] if found else None
        row["boundary_by"] = found[0].findings[0]["kind"] if found else None
        row["boundary_total_seconds"] = round(time.monotonic() - started, 1)
    target, _ = resolve("kernels")
    cls = load_transformation(spec)
    inst = enumerate_instances(target, [target.programs[program]], cls, spec)[0]
    data = passing_input(program, spec, inst)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus" / "kernels" / inst.id
        corpus.mkdir(parents=True)
        (corpus / "passing.bin").write_bytes(data)
        [r] = fuzz(f"kernels:{program}", spec, [inst.id],
                   options(Path(tmp), time_s, until_crash=True, seed_mode="none",
                                   race_threads=4 if race else 0))
        afl_found = [f for f in r.findings if f["kind"] == "crash"]
        seed_found = [f for f in r.findings if f["kind"] == "seed"]
        row["afl_from_passing"] = ("start input already fails" if seed_found else
                                   afl_found[0]["seconds"] if afl_found else f"not found in {time_s:g} s")
        row["afl_execs"] = afl_found[0]["execs"] if afl_found else r.execs
        row["afl_execs_per_sec"] = r.execs_per_sec
    return row


def triage_row(name: str, time_s: float):
    """Fuzz one instance for the whole budget (no early stop), then read what triage made of it."""
    program, race = PLANTED[name].program, PLANTED[name].race
    spec = f"harnessgen.zoo.planted:{name}"
    target, _ = resolve("kernels")
    cls = load_transformation(spec)
    inst = enumerate_instances(target, [target.programs[program]], cls, spec)[0]
    with tempfile.TemporaryDirectory() as tmp:
        [r] = fuzz(f"kernels:{program}", spec, [inst.id], options(Path(tmp), time_s, race_threads=4 if race else 0))
        metas = [json.loads((Path(f["path"]) / "meta.json").read_text()) for f in r.findings]
    return {"bug": name, "raw_crashes": r.triage.get("raw", 0), "findings": len(metas),
            "raw_bytes": [m["raw_bytes"] for m in metas], "minimized_bytes": [m["minimized_bytes"] for m in metas],
            "triage_seconds_per_finding": [m["triage_seconds"] for m in metas],
            "triage_seconds_total": r.triage.get("seconds"), "symbols": [m["symbols"] for m in metas]}


def correct_row(label, program, spec, settings, match, time_s: float):
    target, _ = resolve("kernels")
    cls = load_transformation(spec)
    from harnessgen.plan.instances import parse_settings

    insts = enumerate_instances(target, [target.programs[program]], cls, spec,
                                settings=parse_settings(settings, cls))
    inst = next(i for i in insts if match in i.description)
    with tempfile.TemporaryDirectory() as tmp:
        [r] = fuzz(f"kernels:{program}", spec, [inst.id], options(Path(tmp), time_s), settings=settings)
    return {"transformation": label, "program": program, "instance": inst.id, "verdict": r.verdict,
            "silent_seconds": r.fuzz_seconds, "execs": r.execs, "execs_per_sec": r.execs_per_sec,
            "build_seconds": r.setup_seconds}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--time", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "zoo.json")
    parser.add_argument("--planted-only", action="store_true", help="skip the 60 s silence runs")
    parser.add_argument("--triage-only", action="store_true", help="only the triage figures")
    args = parser.parse_args()
    if args.triage_only:
        rows = [triage_row(name, args.time) for name in sorted(PLANTED)]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "time_per_instance_s": args.time,
                                        "triage": rows}, indent=1) + "\n")
        print("| planted bug | raw crashes | findings | bytes raw -> minimized | triage s / finding | minimized symbols |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            sizes = ", ".join(f"{a} -> {b}" for a, b in zip(r["raw_bytes"], r["minimized_bytes"]))
            print(f"| {r['bug']} | {r['raw_crashes']} | {r['findings']} | {sizes} | "
                  f"{', '.join(str(t) for t in r['triage_seconds_per_finding'])} | "
                  f"{'; '.join(str(s) for s in r['symbols'])} |")
        return 0
    planted = [planted_row(name, args.time) for name in sorted(PLANTED)]
    correct = [] if args.planted_only else [correct_row(*c, args.time) for c in CORRECT]
    report = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {platform.processor() or ''}"
              f" {__import__('os').cpu_count()} cores", "time_per_instance_s": args.time,
              "planted": planted, "correct": correct}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print("| planted bug | kernel | verdict | found (instances) | first finding, boundary seeds | "
          "AFL++ from one passing input | execs/s |")
    print("|---|---|---|---|---|---|---|")
    for r in planted:
        afl = r["afl_from_passing"]
        afl = f"{afl:.2f} s ({r['afl_execs']:,} execs)" if isinstance(afl, float) else afl
        how = (f"seed {r['boundary_execs']}" if r["boundary_by"] == "seed"
               else f"AFL++, exec {r['boundary_execs']:,}")
        print(f"| {r['bug']} | {r['program']} | {r['verdict']} | {r['found']} | {r['boundary_seconds']:.2f} s "
              f"({how}) | {afl} | "
              f"{r['afl_execs_per_sec']:,.0f} |")
    print()
    print("| correct transformation | kernel | verdict | silent for | execs | execs/s | build |")
    print("|---|---|---|---|---|---|---|")
    for r in correct:
        print(f"| {r['transformation']} | {r['program']} | {r['verdict']} | {r['silent_seconds']:.0f} s | "
              f"{r['execs']:,} | {r['execs_per_sec']:,.0f} | {r['build_seconds']:.1f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
