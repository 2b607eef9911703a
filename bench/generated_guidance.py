"""What guiding a stream of generated programs by the matches buys, against the same seeds
unguided.

    python bench/generated_guidance.py [--programs 30] [--first 0] [--out bench/results/generated_guidance.json]

Both streams generate one program per seed; the guided one asks each program to hold first
the block kind with the largest expected gain for the transformations matched least so far
(``progen.guide``). Every CPU built-in is matched on every program. Figures per stream: the
transformations matched at least once, the transformation x scope kind pairs, the matches
of the rarest half of the transformations, the least-matched transformation's count, and
the transformations matched by neither stream. Prints a Markdown table, writes JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnessgen.plan.instances import cpu_builtin_transformations, match_scopes
from harnessgen.progen.guide import stream
from harnessgen.progen.target import make_program


def measure(first: int, count: int, guided: bool, names) -> dict:
    started = time.monotonic()
    programs, coverage = stream(first, count, names, lambda p: match_scopes(make_program(p.name).build(), names),
                                guided=guided)
    counts = sorted(coverage.matches[t] for t in names)
    matched = [c for c in counts if c]
    return {"programs": len(programs), "rejected": dict(coverage.rejected),
            "transformations_matched": len(matched), "transformation_x_scope": len(coverage.scopes),
            "rarest_half_matches": sum(matched[: len(matched) // 2]), "least_matched": matched[0] if matched else 0,
            "never_matched": coverage.never_matched(), "matches": dict(sorted(coverage.matches.items())),
            "seconds": round(time.monotonic() - started, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=30)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "generated_guidance.json")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    names = cpu_builtin_transformations()
    results = {mode: measure(args.first, args.programs, mode == "guided", names) for mode in ("guided", "unguided")}
    print("| stream | programs | transformations matched | transformation x scope kinds | matches of the rarest "
          "half | least matched | seconds |")
    print("|---|---|---|---|---|---|---|")
    for mode, r in results.items():
        print(f"| {mode} | {r['programs']} | {r['transformations_matched']} of {len(names)} | "
              f"{r['transformation_x_scope']} | {r['rarest_half_matches']} | {r['least_matched']} | {r['seconds']} |")
    never = sorted(set(results["guided"]["never_matched"]) & set(results["unguided"]["never_matched"]))
    print(f"matched by neither: {', '.join(never)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"first_seed": args.first, "programs": args.programs, **results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
