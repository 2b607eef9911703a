"""A wrong step among a long recipe: how soon ``harnessgen recipe`` names it.

    python bench/recipe.py [--budget 840] [--time 2] [--out bench/results/recipe.json] [--fresh-recording]

Runs ``harnessgen recipe --program cloudsc --recipe bench/recipe_planted.py:optimize`` (the
CLOUDSC recipe with one zoo tiling among its steps) as ``make recipe`` runs it (TIME=2 per
step, every core, the bound) and reports: the steps recorded and the recording's time, where
the wrong step is, the seconds from the command's start to its first verdict and to the wrong
step's verdict (each result's file is written as its instance ends), whether it was named the
first wrong step, and how the steps were judged. The recording is kept between runs (as for a user running the command
again) unless ``--fresh-recording``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPE = f"{REPO / 'bench' / 'recipe_planted.py'}:optimize"
PLANTED = "TilingWithoutRemainder"


def run(args) -> dict:
    out = Path(args.work) / "run"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(Path(args.work) / "crashes", ignore_errors=True)
    if args.fresh_recording:
        shutil.rmtree(REPO / ".harnessgen" / "programs" / "recipes", ignore_errors=True)
    cmd = [str(Path(sys.executable).with_name("harnessgen")), "recipe", "--program", "cloudsc", "--recipe", RECIPE,
           "--budget", str(args.budget), "--time", str(args.time), "--jobs", str(os.cpu_count() or 1),
           "--out", str(out), "--crashes-dir", str(Path(args.work) / "crashes"),
           "--corpus-dir", str(Path(args.work) / "corpus"), "--no-progress", "--no-plots"]
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    ended = time.time()
    (Path(args.work) / "recipe.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not (out / "recipe.json").is_file():
        sys.exit(f"harnessgen recipe failed (exit {proc.returncode}); see {Path(args.work) / 'recipe.log'}")
    return figures(json.loads((out / "recipe.json").read_text()), json.loads((out / "summary.json").read_text()),
                   out, started, ended)


def figures(report: dict, summary: dict, out: Path, started: float, ended: float) -> dict:
    finished = {p.stem: p.stat().st_mtime - started for p in (out / "results").glob("*.json")}
    planted = next((s for s in report["steps"] if s["name"] == PLANTED), None)
    first = report["first_wrong"]
    return {
        "machine": platform.node(), "when": time.strftime("%Y-%m-%d %H:%M"),
        "steps": len(report["steps"]), "recorded_seconds": report["recorded_seconds"],
        "planted_step": planted["index"] if planted else None,
        "planted_verdict": planted["verdict"] if planted else None,
        "named_first": bool(first and planted and first["index"] == planted["index"]),
        "first_wrong": first and {k: first[k] for k in ("index", "name", "verdict", "where")},
        "seconds_to_first_verdict": round(min(finished.values()), 1) if finished else None,
        "seconds_to_planted_verdict": round(finished[planted["instance"]], 1)
        if planted and planted["instance"] in finished else None,
        "verdicts_before_planted": sum(t < finished.get(planted["instance"], 0) for t in finished.values())
        if planted else None,
        "counts": report["counts"], "whole_recipe": report["whole_recipe"].get("verdict"),
        "instances_judged": summary.get("finished"), "planned": summary.get("planned"),
        "time_by_phase": summary.get("time_by_phase"), "seconds": round(ended - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=840.0, help="the run's bound, as make fuzz's (default 840)")
    parser.add_argument("--time", type=float, default=2.0, help="per step, as make recipe's TIME (default 2)")
    parser.add_argument("--work", type=Path, default=REPO / ".harnessgen" / "bench-recipe")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "recipe.json")
    parser.add_argument("--fresh-recording", action="store_true", help="record the recipe again")
    args = parser.parse_args()
    result = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "time_by_phase"}, indent=1))


if __name__ == "__main__":
    main()
