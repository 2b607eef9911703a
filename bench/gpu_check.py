#!/usr/bin/env python3
"""The GPU check, in one command for a machine with a CUDA GPU (``make gpu-check``):

1. ``pytest -m gpu tests/gpu`` (the planted kernel bugs found and replayed, the correct
   kernels and GPUOffloadMap silent, the barrier analysis);
2. ``harnessgen fuzz`` of ``kernels`` with every GPU transformation, and of ``gpukernels``;
3. one file of figures, ``<out>/gpu-check.json`` and ``gpu-check.md``: the tests' outcome, per
   instance its verdict, what a PASS rests on, afl-fuzz's executions per second and the
   measured first execution (a process's start-up with the CUDA context) against the time
   limit afl-fuzz was given.

Without a GPU it says why and exits 2 (nothing is measured). ``--quick`` shortens every
fuzzing time, for a lent machine's few minutes.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parents[1]


def gpu_reason() -> str:
    """Why no GPU can run here ('' when one can)."""
    sys.path.insert(0, str(REPO))
    from harnessgen.cuda import toolkit

    if not toolkit.available():
        return "no CUDA toolchain (make setup-cuda)"
    return toolkit.gpu_unavailable() or ""


def run(cmd: List[str], timeout: float, env: Dict = None) -> subprocess.CompletedProcess:
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def gpu_tests(workers: int, timeout: float) -> Dict:
    started = time.monotonic()
    proc = run([sys.executable, "-m", "pytest", "-m", "gpu", "tests/gpu", "-q", "-rA", "-n", str(workers),
                "-p", "no:cacheprovider"], timeout)
    lines = proc.stdout.splitlines()
    passed = [l.split(" ", 1)[1] for l in lines if l.startswith("PASSED ")]
    failed = [l.split(" ", 1)[1] for l in lines if l.startswith(("FAILED ", "ERROR "))]
    return {"returncode": proc.returncode, "passed": len(passed), "failed": failed,
            "seconds": round(time.monotonic() - started, 1), "tail": "\n".join(lines[-15:])}


def fuzz(program: str, transformation: str, seconds: float, jobs: int, out: Path, timeout: float) -> Dict:
    started = time.monotonic()
    args = [sys.executable, "-m", "harnessgen", "fuzz", "--program", program, "--time", str(seconds),
            "--jobs", str(jobs), "--out", str(out / "run"), "--corpus-dir", str(out / "corpus"),
            "--crashes-dir", str(out / "crashes"), "--no-progress", "--fresh", "--reduce-time", "0"]
    if transformation:
        args += ["--transformation", transformation]
    proc = run(args, timeout)
    summary_file = out / "run" / "summary.json"
    if not summary_file.is_file():
        return {"program": program, "returncode": proc.returncode, "error": proc.stderr[-2000:]}
    summary = json.loads(summary_file.read_text())
    rows = []
    for entry in summary["instances"]:
        timing, evidence = entry.get("exec_timing") or {}, entry.get("evidence") or {}
        rows.append({"instance": f"{entry['program']}/{entry['id']}", "transformation": entry["transformation"],
                     "verdict": entry["verdict"], "rests_on": evidence.get("kind", ""),
                     "execs_per_sec": entry.get("execs_per_sec", 0.0), "execs": entry.get("execs", 0),
                     "slowest_run_ms": timing.get("slowest_run_ms"), "median_run_ms": timing.get("median_run_ms"),
                     "afl_timeout_ms": timing.get("afl_timeout_ms"), "audit": (entry.get("audit") or {}).get(
                         "classification"), "message": (entry.get("message") or "").splitlines()[0][:200]
                     if entry.get("message") else ""})
    return {"program": program, "transformation": transformation or "default", "returncode": proc.returncode,
            "seconds": round(time.monotonic() - started, 1), "instances": rows}


def markdown(report: Dict) -> str:
    lines = [f"# GPU check ({report['when']})", "", f"- machine: {report['machine']}",
             f"- GPU: {report['gpu']}", ""]
    tests = report.get("tests")
    if tests:
        lines += [f"## tests/gpu: {tests['passed']} passed, {len(tests['failed'])} failed ({tests['seconds']} s)", ""]
        lines += [f"- FAILED {name}" for name in tests["failed"]] + [""]
    for run_ in report.get("fuzz", []):
        lines += [f"## fuzz {run_['program']} x {run_.get('transformation', '')} ({run_.get('seconds', '?')} s)", ""]
        if "error" in run_:
            lines += ["```", run_["error"], "```", ""]
            continue
        lines += ["| instance | verdict | rests on | execs/s | slowest run ms | median run ms | afl -t ms | audit |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in run_["instances"]:
            lines.append(f"| {r['instance']} | {r['verdict']} | {r['rests_on']} | {r['execs_per_sec']:,.0f} | "
                         f"{r['slowest_run_ms']} | {r['median_run_ms']} | {r['afl_timeout_ms'] or 'default'} | "
                         f"{r['audit'] or '-'} |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / ".harnessgen" / "gpu-check")
    parser.add_argument("--workers", type=int, default=max(1, min(10, os.cpu_count() or 1)),
                        help="pytest workers for tests/gpu (default: the cores, at most 10)")
    parser.add_argument("--time", type=float, default=30.0, help="seconds per fuzzed instance (default 30)")
    parser.add_argument("--quick", action="store_true", help="10 s per instance")
    parser.add_argument("--skip-tests", action="store_true", help="only the fuzzing figures")
    args = parser.parse_args()
    seconds = 10.0 if args.quick else args.time
    args.out.mkdir(parents=True, exist_ok=True)
    reason = gpu_reason()
    report = {"when": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{platform.node()} {platform.machine()}",
              "gpu": reason or _gpu_name(), "python": platform.python_version()}
    if reason:
        report["skipped"] = f"no GPU here: {reason}"
        print(report["skipped"])
        _write(args.out, report)
        return 2
    if not args.skip_tests:
        report["tests"] = gpu_tests(args.workers, 600 * 3)
    jobs = max(1, min(4, (os.cpu_count() or 2) // 2))
    report["fuzz"] = [fuzz("kernels", "gpu", seconds, jobs, args.out / "kernels", 1800),
                      fuzz("gpukernels", "", seconds, jobs, args.out / "gpukernels", 1800)]
    _write(args.out, report)
    failed = report.get("tests", {}).get("failed") or any(r.get("returncode") for r in report["fuzz"])
    return 1 if failed else 0


def _gpu_name() -> str:
    try:
        proc = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
        return proc.stdout.strip() or "a CUDA GPU"
    except (OSError, subprocess.TimeoutExpired):
        return "a CUDA GPU"


def _write(out: Path, report: Dict) -> None:
    (out / "gpu-check.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "gpu-check.md").write_text(markdown(report) + "\n")
    print(markdown(report))
    print(f"figures: {out / 'gpu-check.md'} and {out / 'gpu-check.json'}")


if __name__ == "__main__":
    sys.exit(main())
