"""NPBench's whole plan in one bound: the figures of a ``make fuzz TARGET=npbench`` run.

``make bench-npbench`` runs ``make fuzz TARGET=npbench FUZZ_ARGS=--fresh`` (the default bound,
1,800 s) and then this script on its run directory; ``python bench/npbench_plan.py <run dir>``
reads any run. It prints, as a Markdown table: the matches and parameter variants planned and
judged, the distinct pairs, the seconds from the run's start to its first verdict and to the
last match's, the verdicts, where the workers' time went (``time_by_phase``), the audits done
and left, the distinct bugs and how many DaCe alone shows (CONFIRMED), and the ratio to
FuzzyFlow's published 43 s per instance. ``--json`` writes the same figures as JSON.
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, List

# FuzzyFlow (SC'23): 3,280 NPBench instances, 43 s each on its machine
FUZZYFLOW_SECONDS_PER_INSTANCE = 43.0


def figures(run: Path) -> Dict:
    summary = json.loads((run / "summary.json").read_text())
    rows = _instances(run / "campaign.db")
    started = _run_started(run / "campaign.db")
    results = [r["result"] for r in rows if r["result"]]
    matches = [r for r in rows if not r["instance"].get("params")]
    judged_matches = [r for r in matches if r["result"]]
    finished = sorted(r["finished_at"] for r in results if r.get("finished_at"))
    match_finished = sorted(r["result"]["finished_at"] for r in judged_matches if r["result"].get("finished_at"))
    bugs = _bugs(run / "bugs.json")
    judged = len(results)
    return {
        "planned_matches": len(matches), "planned_variants": len(rows) - len(matches),
        "judged_matches": len(judged_matches), "judged_variants": judged - len(judged_matches),
        "distinct_pairs": summary.get("distinct_pairs"),
        "same_pair": sum(1 for r in results if r.get("same_pair_as")),
        "first_verdict_s": round(finished[0] - started, 1) if finished and started else None,
        "last_match_verdict_s": round(match_finished[-1] - started, 1)
        if match_finished and started and len(judged_matches) == len(matches) else None,
        "verdicts": dict(Counter(r["verdict"] for r in results).most_common()),
        "evidence": dict(Counter((r.get("evidence") or {}).get("kind") or "none" for r in results
                                 if r["verdict"] == "PASS").most_common()),
        "time_by_phase": summary.get("time_by_phase", {}),
        "audits_done": sum(1 for r in results if (r.get("audit") or {}).get("verdict") not in (None, "SKIPPED",
                                                                                              "DEFERRED")),
        "audits_left": sum(1 for r in results if (r.get("audit") or {}).get("verdict") == "DEFERRED"),
        "cutout_missed": sum(1 for r in results if (r.get("audit") or {}).get("classification") == "CUTOUT_MISSED"),
        "distinct_bugs": len(bugs), "confirmed": sum(1 for b in bugs if b.get("dace_alone") == "CONFIRMED"),
        "bugs_by_status": dict(Counter(b.get("dace_alone") or "not judged" for b in bugs).most_common()),
        "seconds_per_judged_instance": None,
    }


def with_ratio(found: Dict, wall_s: float, workers: int) -> Dict:
    judged = found["judged_matches"] + found["judged_variants"]
    if judged and wall_s:
        per = wall_s * workers / judged
        found["seconds_per_judged_instance"] = round(per, 3)
        found["fuzzyflow_ratio"] = round(FUZZYFLOW_SECONDS_PER_INSTANCE / per, 1)
    found["wall_s"], found["workers"] = wall_s, workers
    return found


def _instances(db: Path) -> List[Dict]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    out = []
    for row in con.execute("SELECT instance, result FROM instances ORDER BY position"):
        out.append({"instance": json.loads(row["instance"]), "result": json.loads(row["result"]) if row["result"]
                    else None})
    con.close()
    return out


def _run_started(db: Path) -> float:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    row = con.execute("SELECT started_at FROM runs ORDER BY run DESC LIMIT 1").fetchone()
    con.close()
    return float(row[0]) if row and row[0] else 0.0


def _bugs(path: Path) -> List[Dict]:
    try:
        return json.loads(path.read_text()).get("bugs", [])
    except (OSError, json.JSONDecodeError):
        return []


def markdown(found: Dict) -> str:
    phases = ", ".join(f"{name} {seconds:.0f}" for name, seconds in
                       sorted(found["time_by_phase"].items(), key=lambda kv: -kv[1])[:8])
    lines = [
        "| | |", "|---|---|",
        f"| matches planned / judged | {found['planned_matches']:,} / {found['judged_matches']:,} |",
        f"| parameter variants planned / judged | {found['planned_variants']:,} / {found['judged_variants']:,} |",
        f"| distinct pairs judged; instances that took an equal pair's verdict | {found['distinct_pairs']:,}; "
        f"{found['same_pair']:,} |",
        f"| first verdict; last match's verdict (s after the run's start) | {found['first_verdict_s']}; "
        f"{found['last_match_verdict_s'] if found['last_match_verdict_s'] is not None else 'not every match judged'} |",
        f"| verdicts | {', '.join(f'{n:,} {v}' for v, n in found['verdicts'].items())} |",
        f"| PASS rests on | {', '.join(f'{n:,} {k}' for k, n in found['evidence'].items())} |",
        f"| whole-program audits done / left for the next run; CUTOUT_MISSED | {found['audits_done']:,} / "
        f"{found['audits_left']:,}; {found['cutout_missed']} |",
        f"| where the workers' time went (s) | {phases} |",
        f"| distinct bugs; CONFIRMED by DaCe alone | {found['distinct_bugs']}; {found['confirmed']} "
        f"({', '.join(f'{n} {k}' for k, n in found['bugs_by_status'].items())}) |",
    ]
    if found.get("seconds_per_judged_instance"):
        lines.append(f"| worker-seconds per judged instance; against FuzzyFlow's 43 s | "
                     f"{found['seconds_per_judged_instance']} s; {found['fuzzyflow_ratio']}x |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the run directory (make fuzz TARGET=npbench: "
                                               ".harnessgen/runs/npbench-defaults)")
    parser.add_argument("--wall", type=float, default=0.0, help="the run's wall seconds (for the ratio)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if not (args.run / "summary.json").is_file():
        print(f"{args.run}: no summary.json (give the run directory of make fuzz TARGET=npbench)", file=sys.stderr)
        return 2
    found = with_ratio(figures(args.run), args.wall, args.workers)
    print(markdown(found))
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
