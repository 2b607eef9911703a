"""Two ways to fuzz a match's parameter variants (--params), measured against each other.

    python bench/params_modes.py [--time 2] [--out bench/results/params_modes.json]

``enumerate`` (what ``--params`` does): every variant is an instance of its own, with its
own build (cached by content: a variant whose post equals another's builds once), its own
afl-fuzz session of ``--time`` seconds and its own triage.

``one harness``: one build holding pre once and every variant's post
(``build.build_variants``); an input's first byte picks the post. One afl-fuzz session of
``variants x --time`` seconds (the same fuzzing per variant); a variant whose post fails to
apply or to build is left out of the harness, as ``enumerate`` gives it a static verdict;
every crash is mapped back to its variant, whose own build is then made (lazily) and
triages the crash, so that both modes end in the same findings and reproducers.

For each case (a transformation at the first match in a kernel, every boundary variant): the
wall time to judge every variant, which variants were found failing, and when the first was.
Neither mode runs the whole-program audit or the reference check (the audit has no
one-harness counterpart). Prints a Markdown table and writes the figures as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnessgen import subjects
from harnessgen.campaign.fuzz_run import fuzz
from harnessgen.core.errors import BuildError
from harnessgen.core.records import FuzzOptions, InstanceResult
from harnessgen.engines import FuzzJob, RawCrash, get_engine
from harnessgen.engines.afl import read_options
from harnessgen.harness.build import build_variants
from harnessgen.inputs import seeds as seedlib
from harnessgen.inputs.constraints import derive
from harnessgen.inputs.layout import build_layout
from harnessgen.plan.params import ParamOptions
from harnessgen.triage.classify import TriageOptions

CASES = [
    ("harnessgen.zoo.planted:TileCountFloors", "elementwise_chain"),
    ("harnessgen.zoo.correct:TileCountCeils", "elementwise_chain"),
    ("MapTiling", "jacobi2d"),
    ("StripMining", "elementwise_chain"),
    ("Vectorization", "elementwise_chain"),
]
SEEDS = 12


def options(tmp: Path, time_s: float) -> FuzzOptions:
    return FuzzOptions(time_s=time_s, out_dir=tmp / "out", work_dir=tmp / "work", corpus_root=tmp / "corpus",
                       crashes_root=tmp / "crashes", show_progress=False, reduce_seconds=0.0, audit=False,
                       reference_check=False, params="boundary", params_shrink_s=0.0)


def variants_of(spec: str, program: str):
    found = subjects.load(f"kernels:{program}").instances(spec, None, ParamOptions("boundary"))
    return [i for i in found if i.match_id == found[0].match_id]


def enumerate_mode(spec: str, program: str, variants, time_s: float, tmp: Path) -> dict:
    started = time.monotonic()
    results = fuzz(f"kernels:{program}", spec, [v.id for v in variants], options(tmp, time_s))
    wall = time.monotonic() - started
    by_id = {r.id: r for r in results}
    failing, clock, first = [], 0.0, None
    for v in variants:           # in run order: when the first failing variant was known
        r = by_id[v.id]
        if r.verdict not in ("PASS", "UNSUPPORTED", "ERROR"):
            failing.append(v.id)
            first = first if first is not None else clock + r.verdict_seconds
        clock += r.wall_seconds
    return {"wall_s": round(wall, 1), "failing": failing, "first_finding_s": None if first is None else round(first, 1),
            "execs": sum(r.execs for r in results), "builds": len({r.build_dir for r in results if r.build_dir})}


def one_harness_mode(spec: str, program: str, variants, time_s: float, tmp: Path) -> dict:
    started = time.monotonic()
    opts = options(tmp, time_s)
    subject = subjects.load(f"kernels:{program}")
    change = subject.change(spec)
    sdfg = subject.program_of(variants[0])
    pairs, failing, layout = [], [], None
    for v in variants:
        pair = change.extract(sdfg, v, 0)
        if not pair.ok:                              # a static verdict, as the other mode gives it
            failing.append(v.id)
            continue
        mine = build_layout(pair, derive(pair, max_size=opts.max_size))
        layout = layout or mine
        if mine.to_json() != layout.to_json():
            raise SystemExit(f"{v.id}: its layout differs from the first variant's: one harness cannot hold it")
        pairs.append(pair)
    first = time.monotonic() - started if failing else None
    build, rebuilds = None, 0
    while build is None:
        try:
            build = build_variants(pairs, layout, opts.work_dir, opts.tolerance)
        except BuildError as exc:      # one post that does not build: left out (a BUILD_FAILURE), built again
            broken = re.search(r"hg_post(\d+)", str(exc))
            if not broken:
                raise
            failing.append(pairs.pop(int(broken.group(1))).instance.id)
            first = first if first is not None else time.monotonic() - started
            rebuilds += 1
    built_s = time.monotonic() - started
    seeds_dir = tmp / "one-harness-seeds"
    seeds_dir.mkdir(parents=True)
    for i, (_, data) in enumerate(seedlib.sample(layout, SEEDS, 0)):
        for k in range(len(pairs)):
            (seeds_dir / f"seed-{k}-{i}").write_bytes(bytes([k]) + data)
    job = FuzzJob(build=build, seeds_dir=seeds_dir, out_dir=tmp / "one-harness-afl",
                  time_s=time_s * len(variants) - (time.monotonic() - started - built_s),
                  options=read_options(subject.target.options_file), dict_file=subject.target.dict_file)
    engine = get_engine("afl").run(job)
    found_at = {}
    for crash in sorted(engine.crashes, key=lambda c: c.seconds or 0.0):
        data = crash.path.read_bytes()
        if data:
            found_at.setdefault(data[0] % len(pairs), (crash, data[1:]))
    fuzz_end = time.monotonic() - started
    for k, (crash, rest) in sorted(found_at.items()):          # each failing variant's own build triages it
        inst = pairs[k].instance
        result = InstanceResult(id=inst.id, transformation=inst.transformation, program=inst.program,
                                target=inst.target, verdict="PASS")
        own = subject.prepare(spec, inst, opts, result, time.monotonic())
        stripped = tmp / f"input-{k}.bin"
        stripped.write_bytes(rest)
        triaged = subject.triage_class()(own.dir, TriageOptions.for_instance(opts, inst)).run(
            [RawCrash(stripped, None, "crash")])
        if triaged.findings:
            failing.append(inst.id)
            at = built_s + (crash.seconds or 0.0)
            first = at if first is None else min(first, at)
    return {"wall_s": round(time.monotonic() - started, 1), "failing": failing,
            "first_finding_s": None if first is None else round(first, 1), "execs": engine.execs,
            "build_s": round(built_s, 1), "fuzz_end_s": round(fuzz_end, 1), "posts": len(pairs),
            "rebuilds_for_posts_that_do_not_build": rebuilds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", type=float, default=2.0, help="fuzzing per variant (seconds, default 2)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "params_modes.json")
    parser.add_argument("--cases", help="only these transformations (comma-separated names, as in the table)")
    args = parser.parse_args()
    wanted = set(args.cases.split(",")) if args.cases else None
    rows = []
    for spec, program in CASES:
        if wanted and spec.rpartition(":")[2] not in wanted:
            continue
        variants = variants_of(spec, program)
        row = {"transformation": spec.rpartition(":")[2], "program": program, "variants": len(variants)}
        for mode, run in (("enumerate", enumerate_mode), ("one_harness", one_harness_mode)):
            tmp = Path(tempfile.mkdtemp(prefix=f"hg-params-{mode}-"))
            try:
                row[mode] = run(spec, program, variants, args.time, tmp)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\n| transformation | kernel | variants | mode | wall s | failing variants | first finding s | execs |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    for row in rows:
        for mode in ("enumerate", "one_harness"):
            m = row[mode]
            print(f"| {row['transformation']} | {row['program']} | {row['variants']} | {mode.replace('_', ' ')} | "
                  f"{m['wall_s']} | {len(m['failing'])} | {m['first_finding_s'] if m['first_finding_s'] is not None else '-'} "
                  f"| {m['execs']:,} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"cpus": os.cpu_count(), "python": platform.python_version(),
                                    "time_per_variant_s": args.time, "cases": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
