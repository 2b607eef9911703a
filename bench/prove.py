"""Proof coverage over a whole target: how many instances the prover settles, and how fast.

    python bench/prove.py [--program kernels] [--transformation all] [--jobs 2] [--budget SECONDS]
                          [--out bench/results/prove-<program>.json]

Runs ``harnessgen fuzz --prove only`` (each pair proved, counterexamples replayed natively,
nothing fuzzed) and counts the proof verdicts: PROVEN (bit for bit, or over the reals only),
DISPROVEN (a counterexample failed natively: a finding), UNKNOWN with its reasons, and the
instances no proof was asked of (a static verdict such as FAILED_TO_APPLY, or UNSUPPORTED).
Prints the shares, the top UNKNOWN reasons and the seconds per proof; writes them as JSON.
With ``--budget`` no instance starts after that many seconds; the run takes the
transformations in turn, so a cut-short run samples every one of them.
"""
from __future__ import annotations

import argparse
import collections
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def run(program: str, transformation: str, jobs: int, work: Path, budget: float = 0) -> dict:
    out = work / "run"
    cmd = [sys.executable, "-m", "harnessgen", "fuzz", "--program", program, "--prove", "only", "--time", "1",
           "--no-audit", "--no-reference-check", "--reduce-time", "0", "--jobs", str(jobs), "--no-progress",
           "--out", str(out), "--corpus-dir", str(work / "corpus"), "--crashes-dir", str(work / "crashes")]
    if transformation:
        cmd += ["--transformation", transformation]
    if budget:
        cmd += ["--budget", str(budget)]
    subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    return json.loads((out / "summary.json").read_text())


def tally(summary: dict) -> dict:
    from harnessgen.prove import IEEE, Proof

    verdicts, reasons, seconds = collections.Counter(), collections.Counter(), []
    examples = {}
    for entry in summary["instances"]:
        if not entry.get("proof"):
            verdicts[f"no proof ({entry['verdict']})"] += 1
            continue
        proof = Proof.from_json(entry["proof"])
        seconds.append(proof.seconds)
        if proof.verdict == "PROVEN":
            verdicts["PROVEN (IEEE)" if proof.arithmetic == IEEE else "PROVEN (reals only)"] += 1
        elif proof.verdict == "DISPROVEN":
            verdicts[f"DISPROVEN ({entry['verdict']})"] += 1
        else:
            verdicts["UNKNOWN"] += 1
            reasons[proof.reason_kind] += 1
            examples.setdefault(proof.reason_kind, f"{entry['id']}: {proof.reason[:200]}")
    seconds.sort()
    proved = len(seconds)
    return {
        "instances": len(summary["instances"]), "proved": proved,
        "verdicts": dict(verdicts.most_common()),
        "shares_of_proved": {k: round(v / proved, 3) for k, v in verdicts.most_common() if not k.startswith("no proof")},
        "unknown_reasons": dict(reasons.most_common()), "reason_examples": examples,
        "seconds_per_proof": {"median": statistics.median(seconds) if seconds else None,
                              "p90": seconds[int(0.9 * (proved - 1))] if seconds else None,
                              "max": seconds[-1] if seconds else None, "total": round(sum(seconds), 2)},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--program", default="kernels")
    ap.add_argument("--transformation", default="all", help="default: all CPU built-ins ('' for the target's own)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--budget", type=float, default=0, help="seconds after which no instance starts (0: all)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hg-bench-prove-") as tmp:
        summary = run(args.program, args.transformation, args.jobs, Path(tmp), args.budget)
    result = {"program": args.program, "transformation": args.transformation or "(target defaults)",
              "planned": summary.get("planned"), "budget_s": args.budget or None, **tally(summary)}
    out = args.out or REPO / "bench" / "results" / f"prove-{args.program.split(':')[0]}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{args.program} x {result['transformation']}: {result['instances']} of {result['planned']} instances "
          f"judged, {result['proved']} proved")
    for verdict, n in result["verdicts"].items():
        print(f"  {verdict:<32} {n:5d}")
    print("UNKNOWN reasons:")
    for reason, n in result["unknown_reasons"].items():
        print(f"  {n:5d}  {reason}  (e.g. {result['reason_examples'][reason][:120]})")
    s = result["seconds_per_proof"]
    print(f"seconds per proof: median {s['median']}, p90 {s['p90']}, max {s['max']}, total {s['total']}")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
