"""Race mode: what it costs the ordinary fuzzer, and how reliably a race reproducer shows its race.

    python bench/race.py [--time 60] [--reruns 30]

1. Throughput: the same instance fuzzed for the budget without and with ``--race``;
   the single-thread instance's execs/s in both, and the race instance's.
2. Reproduction rate: the planted race (ParallelizeCarriedLoop on prefix_sum) is
   found and triaged; its repro.py, copied alone, is run ``--reruns`` times. Each run
   executes post 100 times on 4 threads; reported are the runs that exit 1 and the
   share of post executions that differ.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnessgen.campaign.fuzz_run import fuzz
from harnessgen.core.records import FuzzOptions
from harnessgen.plan.instances import enumerate_instances, load_transformation, parse_settings
from harnessgen.targets import resolve


def options(tmp: Path, time_s: float, **kw) -> FuzzOptions:
    return FuzzOptions(time_s=time_s, out_dir=tmp / "out", work_dir=REPO / ".harnessgen", corpus_root=tmp / "corpus",
                       crashes_root=tmp / "crashes", show_progress=False, reduce_seconds=0.0, **kw)


def throughput(time_s: float):
    target, _ = resolve("kernels")
    cls = load_transformation("MapTiling")
    insts = enumerate_instances(target, [target.programs["gemm"]], cls, "MapTiling",
                                settings=parse_settings(["tile_sizes=[4,3,5]"], cls))
    inst = next(i for i in insts if "gemm_map" in i.description)
    rows = {}
    for race in (0, 4):
        with tempfile.TemporaryDirectory() as tmp:
            [r] = fuzz("kernels:gemm", "MapTiling", [inst.id], options(Path(tmp), time_s, race_threads=race),
                       settings=["tile_sizes=[4,3,5]"])
        rows["race" if race else "plain"] = {"main_execs_per_sec": r.execs_per_sec,
                                             "race_execs_per_sec": r.race_execs_per_sec, "verdict": r.verdict}
    return rows


def reproduction(reruns: int):
    spec = "harnessgen.zoo.planted:ParallelizeCarriedLoop"
    with tempfile.TemporaryDirectory() as tmp:
        [r] = fuzz("kernels:prefix_sum", spec, None, options(Path(tmp), 60, race_threads=4, until_crash=True))
        folder = Path(r.findings[0]["path"])
        meta = json.loads((folder / "meta.json").read_text())
        where = Path(tmp) / "alone"
        where.mkdir()
        shutil.copy(folder / "repro.py", where)
        subprocess.run([sys.executable, "repro.py"], cwd=where, capture_output=True)      # build once
        exits, shares, seconds = [], [], []
        for _ in range(reruns):
            started = time.monotonic()
            proc = subprocess.run([sys.executable, "repro.py"], cwd=where, capture_output=True, text=True)
            seconds.append(time.monotonic() - started)
            exits.append(proc.returncode)
            match = re.search(r"in (\d+) of (\d+) runs", proc.stdout)
            shares.append(int(match.group(1)) / int(match.group(2)) if match else 0.0)
    return {"symbols": meta["symbols"], "found_after_s": r.seconds_to_first_finding,
            "reruns": reruns, "exit_1": sum(1 for e in exits if e == 1),
            "share_of_post_runs_differing": {"min": min(shares), "median": sorted(shares)[len(shares) // 2],
                                             "max": max(shares)},
            "seconds_per_rerun": round(sorted(seconds)[len(seconds) // 2], 2)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--time", type=float, default=60.0)
    parser.add_argument("--reruns", type=int, default=30)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "race.json")
    args = parser.parse_args()
    report = {"date": time.strftime("%Y-%m-%d"), "throughput": throughput(args.time),
              "reproduction": reproduction(args.reruns)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    t, rep = report["throughput"], report["reproduction"]
    print(f"single-thread instance: {t['plain']['main_execs_per_sec']:,.0f} execs/s alone, "
          f"{t['race']['main_execs_per_sec']:,.0f} execs/s beside the race instance "
          f"({t['race']['race_execs_per_sec']:,.0f} execs/s in race mode)")
    print(f"race reproducer ({rep['symbols']}): exit 1 in {rep['exit_1']} of {rep['reruns']} runs; share of post "
          f"executions that differ: {rep['share_of_post_runs_differing']}; {rep['seconds_per_rerun']} s per run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
