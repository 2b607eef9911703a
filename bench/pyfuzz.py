"""Measure pyfuzz without the fuzzer: generator validity, guided vs unguided coverage, and
the compiler's cost per program with the oracle's verdicts.

    python bench/pyfuzz.py [--compiler dace|torch|tvm] [--programs 30] [--coverage 300]
                           [--modes m1,m2] [--out bench/results/pyfuzz-<compiler>.json]

The programs come from seeded random bytes through the fuzzing session's own
path (generation, mutations, the oracle over every compile mode of the
compiler; ``inductor-cuda`` is among torch's modes where a GPU is present), so
the figures are what one fuzzing process spends per program minus libFuzzer.
Prints Markdown and writes JSON.
"""
from __future__ import annotations

import argparse
import collections
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnessgen.pyfuzz.choices import ByteChoices
from harnessgen.pyfuzz.compilers import get_compiler
from harnessgen.pyfuzz.generator import Coverage, GenOptions, generate
from harnessgen.pyfuzz.oracle import all_finite, judge
from harnessgen.pyfuzz.session import SessionOptions, build_program


def byte_strings(count: int, seed: int, length: int = 256):
    rng = random.Random(seed)
    return [bytes(rng.randrange(256) for _ in range(length)) for _ in range(count)]


def generator_figures(compiler: str, count: int, seed: int):
    """Strict validity (finite reference) and coverage, guided vs unguided, on ``count`` byte strings."""
    reference = get_compiler(compiler, Path(tempfile.mkdtemp(prefix="pyfuzz-bench-")))
    figures = {}
    for guided in (True, False):
        coverage, valid, made = Coverage(), 0, 0
        for data in byte_strings(count, seed):
            program = generate(ByteChoices(data), GenOptions(compiler=compiler, guided=guided), coverage)
            if program is None:
                continue
            if not guided:
                coverage.record(program)
            made += 1
            try:
                valid += all_finite(reference.reference(program, program.make_inputs()))
            except Exception:
                pass
        figures["guided" if guided else "unguided"] = {"programs": made, "valid": valid, **coverage.summary()}
    return figures


def judge_figures(compiler_name: str, count: int, seed: int, modes):
    compiler = get_compiler(compiler_name, Path(tempfile.mkdtemp(prefix="pyfuzz-bench-")))
    started = time.time()
    compiler.warm_up()
    warm_up_s = time.time() - started
    options = SessionOptions(generation=GenOptions(compiler=compiler_name))
    coverage = Coverage()
    outcomes, seconds, findings = collections.Counter(), [], []
    for data in byte_strings(count, seed + 1):
        program, inputs = build_program(data, options, coverage)
        if program is None:
            continue
        started = time.time()
        verdict = judge(compiler, program, inputs, options.tolerance, modes)
        seconds.append(time.time() - started)
        outcomes[verdict.outcome.name] += 1
        if verdict.is_finding:
            findings.append({"signature": list(verdict.signature(compiler_name)), "detail": verdict.detail,
                             "source": program.source()})
    seconds.sort()
    return {"modes": modes or compiler.modes(), "versions": compiler.versions(), "warm_up_s": round(warm_up_s, 1),
            "programs": len(seconds), "programs_per_s": round(len(seconds) / sum(seconds), 3) if seconds else 0,
            "median_s": round(seconds[len(seconds) // 2], 2) if seconds else None,
            "outcomes": dict(outcomes), "findings": findings}


def markdown(compiler: str, gen, run) -> str:
    g, u = gen["guided"], gen["unguided"]
    lines = [f"### pyfuzz on {compiler} ({', '.join(f'{k} {v}' for k, v in run['versions'].items())})", "",
             "| | guided | unguided |", "|---|---|---|"]
    for key in ("programs", "valid", "op_dtype", "op_shape", "edges"):
        lines.append(f"| {key} | {g[key]} | {u[key]} |")
    lines += ["", f"modes {', '.join(run['modes'])}: {run['programs']} programs, {run['programs_per_s']}/s "
                  f"(median {run['median_s']} s), warm-up {run['warm_up_s']} s; outcomes {run['outcomes']}"]
    for finding in run["findings"]:
        lines.append(f"- {' / '.join(finding['signature'])}: {finding['detail']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compiler", default="dace")
    parser.add_argument("--programs", type=int, default=30, help="programs judged by the compiler")
    parser.add_argument("--coverage", type=int, default=300, help="programs generated for validity and coverage")
    parser.add_argument("--modes", default="", help="comma-separated compile modes (default: all of them)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m] or None
    gen = generator_figures(args.compiler, args.coverage, args.seed)
    run = judge_figures(args.compiler, args.programs, args.seed, modes)
    print(markdown(args.compiler, gen, run))
    out = args.out or REPO / "bench" / "results" / f"pyfuzz-{args.compiler}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"compiler": args.compiler, "machine": platform.machine(),
                               "generator": gen, "judged": run}, indent=1))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
