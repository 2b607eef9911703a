"""Stage 4 of pyfuzz: confirm, de-duplicate, minimize and write every finding of a run.

Raw findings come from two places: ``raw/*.json`` (the session judged the
program and recorded it) and the fuzzer's ``crash-*`` / ``timeout-*`` artifacts,
whose programs the session left in ``inflight/``. Each is judged again in a
child process; one that does not fail again is reported as FLAKY and not
written. Findings with the same signature (compiler, symptom, error type and
place, or the modes that disagree) are one finding; the first is minimized by
delta debugging (``shrink``) and written to
``crashes/pyfuzz/<compiler>/<outcome>-<signature hash>/``:

    repro.py       self-contained: exits 1 while the compiler still fails
    program.py     the minimized generated program
    inputs.npz     its inputs
    program.json   the Program record (pyfuzz can judge it again)
    meta.json      verdict, signature, versions, shrink statistics, the fuzzer's bytes
    README.md
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from .. import __version__
from ..core.outcome import Outcome
from ..core.runtime import Tolerance
from ..triage.reproducer import module_source, publish, repro_environment, runtime_source
from .judge_server import CompilerSpec, describe, judge_isolated
from .minimize import Shrinker
from .oracle import FLOAT32_TOLERANCE, ROUNDING_FACTOR, Verdict
from .program_record import Program


@dataclasses.dataclass
class RawFinding:
    program: Program
    inputs: Dict[str, np.ndarray]
    data: bytes
    seconds: Optional[float]
    source: str                      # the file it came from


@dataclasses.dataclass
class PyFinding:
    signature: tuple
    verdict: Verdict
    directory: Path
    seconds: Optional[float]
    duplicates: int = 0


@dataclasses.dataclass(frozen=True)
class PyTriageOptions:
    tolerance: Tolerance = Tolerance()
    shrink: bool = True
    shrink_budget_s: float = 300.0
    timeout_s: float = 300.0


def collect(out_dir: Path) -> List[RawFinding]:
    out_dir = Path(out_dir)
    found: List[RawFinding] = []
    for path in sorted((out_dir / "raw").glob("*.json")):
        record = json.loads(path.read_text())
        program = Program.from_json(record["program"])
        found.append(RawFinding(program, program.make_inputs(), bytes.fromhex(record["data"]),
                                record.get("seconds"), str(path)))
    for artifact in sorted((out_dir / "artifacts").glob("*-*")):
        pending = out_dir / "inflight" / f"{artifact.name.split('-', 1)[1]}.json"
        if not pending.is_file():
            continue
        record = json.loads(pending.read_text())
        program = Program.from_json(record["program"])
        found.append(RawFinding(program, program.make_inputs(), artifact.read_bytes(), None, str(artifact)))
    found.sort(key=lambda r: (r.seconds is None, r.seconds or 0))
    return found


def triage_run(out_dir: Path, crashes_root: Path, spec: CompilerSpec,
               options: PyTriageOptions = PyTriageOptions()) -> List[PyFinding]:
    findings: Dict[tuple, PyFinding] = {}
    for raw in collect(out_dir):
        verdict = judge_isolated(spec, raw.program, raw.inputs, options.tolerance, timeout_s=options.timeout_s)
        if not verdict.is_finding:
            continue
        signature = verdict.signature(spec.name)
        if signature in findings:
            findings[signature].duplicates += 1
            continue
        program, inputs, stats = raw.program, raw.inputs, None
        if options.shrink:
            program, inputs, verdict, stats = minimize(spec, raw.program, raw.inputs, verdict, options)
        folder = Path(crashes_root) / "pyfuzz" / spec.name / finding_name(verdict.outcome, signature)
        write_finding(folder, spec, program, inputs, verdict, signature, raw, stats, options.tolerance)
        findings[signature] = PyFinding(signature, verdict, folder, raw.seconds)
    return list(findings.values())


def minimize(spec: CompilerSpec, program: Program, inputs, verdict: Verdict, options: PyTriageOptions):
    signature = verdict.signature(spec.name)
    modes = _modes_needed(spec, verdict)
    last = {"verdict": verdict}

    def still_fails(candidate: Program, candidate_inputs) -> bool:
        got = judge_isolated(spec, candidate, candidate_inputs, options.tolerance, modes, options.timeout_s)
        if got.signature(spec.name) == signature:
            last["verdict"] = got
            return True
        return False

    shrinker = Shrinker(still_fails, options.shrink_budget_s)
    small, small_inputs = shrinker.shrink(program, inputs, verdict.output)
    if small is not program:
        # the verdict of the smallest program, with every mode (the signature of a mismatch names them all)
        last["verdict"] = judge_isolated(spec, small, small_inputs, options.tolerance, timeout_s=options.timeout_s)
        if last["verdict"].signature(spec.name) != signature:
            return program, inputs, verdict, dataclasses.asdict(shrinker.stats)
    return small, small_inputs, last["verdict"], dataclasses.asdict(shrinker.stats)


def _modes_needed(spec: CompilerSpec, verdict: Verdict) -> Optional[List[str]]:
    """A mismatch's signature names every failing mode: all modes must run. A crash needs
    its own mode and the modes before it (they run first)."""
    if verdict.outcome == Outcome.MISMATCH or verdict.mode is None:
        return None
    modes = describe(spec)["modes"]
    return modes[:modes.index(verdict.mode) + 1] if verdict.mode in modes else None


def finding_name(outcome: Outcome, signature: tuple) -> str:
    digest = hashlib.sha1(json.dumps(list(signature)).encode()).hexdigest()[:10]
    return f"{outcome.name.lower()}-{digest}"


def _npz(inputs: Dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **inputs)
    return buffer.getvalue()


def write_finding(folder: Path, spec: CompilerSpec, program: Program, inputs, verdict: Verdict, signature: tuple,
                  raw: RawFinding, stats: Optional[Dict], tolerance: Tolerance) -> Path:
    compiler = describe(spec)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    source = program.source()
    (tmp / "program.py").write_text(source)
    (tmp / "program.json").write_text(json.dumps(program.to_json(), indent=1) + "\n")
    (tmp / "inputs.npz").write_bytes(_npz(inputs))
    calls = ["inputs.npz"]
    if verdict.call:                                   # the second call is the one that fails
        (tmp / "inputs2.npz").write_bytes(_npz(program.make_inputs(call=1)))
        calls.append("inputs2.npz")
    if program.has_float32:                            # tells rounding from error
        (tmp / "program64.py").write_text(program.widened().source())
    if spec.name == "tvm":                             # what TVM compiled, in its own language
        from .relax import to_relax

        (tmp / "relax_module.py").write_text(to_relax(program).script())
    summary = verdict.detail or verdict.outcome.name
    meta = {"tool": f"harnessgen {__version__}", "compiler": spec.name, "passes": list(spec.passes),
            "outcome": verdict.outcome.name, "verdict": verdict.to_json(), "signature": list(signature),
            "versions": compiler["versions"], "seconds_to_find": raw.seconds, "found_in": raw.source,
            "fuzzer_bytes": raw.data.hex(), "shrink": stats, "tolerance": dataclasses.asdict(tolerance),
            "mutations": sorted({m.kind for m in program.mutations}), "python": spec.python}
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    modes = _modes_needed(spec, verdict) or compiler["modes"]
    repro = tmp / "repro.py"
    repro.write_text(repro_environment().get_template("pyrepro.py.j2").render(
        outcome=verdict.outcome.name, compiler=spec.name, summary=summary, stmts=len(program.stmts),
        mutations=", ".join(m.kind for m in program.mutations), modes=modes, passes=list(spec.passes),
        input_names=list(inputs), rtol=float(tolerance.rtol), atol=float(tolerance.atol), exact=tolerance.exact,
        rtol32=FLOAT32_TOLERANCE.rtol, atol32=FLOAT32_TOLERANCE.atol, output_count=len(program.outputs),
        calls=calls, second_call=len(calls) > 1, rounding_factor=ROUNDING_FACTOR, python=spec.python or "",
        versions=", ".join(f"{k} {v}" for k, v in compiler["versions"].items() if k != "numpy"),
        harnessgen_version=__version__, runtime_source=runtime_source(), pipelines_source=_pipelines_source()))
    repro.chmod(0o755)
    (tmp / "README.md").write_text(_readme(spec, verdict, program, source, stats, modes))
    publish(tmp, folder)
    return folder


def _pipelines_source() -> str:
    from . import relax_pipelines

    return module_source(Path(relax_pipelines.__file__))


def _readme(spec: CompilerSpec, verdict: Verdict, program: Program, source: str, stats, modes) -> str:
    lines = [f"# {verdict.outcome.name} in {spec.name}", "", verdict.detail or "", ""]
    if spec.passes:
        where = "after auto_optimize" if spec.name == "dace" else "on Dynamo's graph before the backend"
        lines += [f"Extra passes {where}: {', '.join(spec.passes)}", ""]
    if spec.python:
        lines += [f"The compiler ran in {spec.python}; run the reproducer with that interpreter.", ""]
    if verdict.difference:
        lines += ["First difference:", "", "```", json.dumps(verdict.difference, indent=1, default=str), "```", ""]
    if stats:
        lines += [f"Minimized from {stats['stmts_before']} to {stats['stmts_after']} statement(s) and from "
                  f"{stats['mutations_before']} to {stats['mutations_after']} mutation(s) in {stats['checks']} "
                  f"checks ({stats['seconds']} s).", ""]
    lines += ["```python", source.rstrip(), "```", "", f"Run `python repro.py` (modes: {', '.join(modes)}); "
              "it exits 1 while the compiler still fails.", ""]
    return "\n".join(lines)

