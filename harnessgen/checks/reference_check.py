"""Stage: check each loaded program against its reference before any instance.

Each form of the program, as its frontend wrote it and simplified, is built whole and run on
the program's boundary seeds (one layout for both forms, so the same inputs judge each); its
containers are compared with what the reference (``reference.Reference``) computes from the
same input. A difference is a finding against the pipeline that made the first form that
differs: the frontend, or simplify. Each gets a reproducer that needs only DaCe.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import dace
import numpy as np
from dace import data as dt

from .. import __version__
from ..core.errors import BuildError, Unsupported
from ..core.files import write_json
from ..core.runtime import Tolerance, differing
from ..cutout.extract import whole_program_pair
from ..harness import judge
from ..harness.build import cache_key
from ..harness.judge import JudgeOptions
from ..harness.replay import execute
from ..inputs import seeds
from ..inputs.layout import InputLayout
from ..targets.reference import Reference, returned_containers
from ..triage.reproducer import publish, repro_environment

AGREES, DIFFERS, CRASHES, BUILD_FAILURE, SKIPPED = "AGREES", "DIFFERS", "CRASHES", "BUILD_FAILURE", "SKIPPED"
# a program of a suite (``Target.partial``) that could not be loaded or checked: left out of the run
NOT_LOADED = "NOT_LOADED"
NOT_FINISHED = "NOT_FINISHED"     # the run ended before the check, which runs beside it
FINDINGS = (DIFFERS, CRASHES, BUILD_FAILURE)
# the pipeline each form of a program comes out of: a difference in a form is a finding against
# the first pipeline whose form differs
FORMS = (("unsimplified", False, "the frontend"), ("simplified", True, "simplify"))


# the whole program runs: sizes stay small, as in the audit
CHECK_MAX_SIZE = 6


@dataclasses.dataclass
class CheckOptions:
    crashes_root: Path = Path("crashes")
    judge: JudgeOptions = JudgeOptions(max_size=CHECK_MAX_SIZE)
    inputs: int = 12                  # boundary seeds per form
    timeout_s: float = 60.0           # all inputs of one form


@dataclasses.dataclass
class FormCheck:
    """One form of the program (as the frontend wrote it, or simplified) against the reference."""

    form: str
    verdict: str                      # AGREES, DIFFERS, CRASHES, BUILD_FAILURE (with the error), SKIPPED
    inputs: int = 0
    differing: int = 0
    first: Dict = dataclasses.field(default_factory=dict)   # container, index, expected, actual, symbols
    finding: Optional[str] = None     # the reproducer folder
    reason: str = ""


@dataclasses.dataclass
class ReferenceCheck:
    """What the reference said of one loaded program: per form, and whom a difference blames."""

    program: str
    reference: str
    forms: List[FormCheck] = dataclasses.field(default_factory=list)
    blame: str = ""                   # the pipeline that made the first form that differs; "" if none
    seconds: float = 0.0

    @property
    def verdict(self) -> str:
        judged = [f.verdict for f in self.forms if f.verdict != SKIPPED]
        bad = [v for v in judged if v != AGREES]
        return bad[0] if bad else (AGREES if judged else SKIPPED)

    def to_json(self) -> Dict:
        """Plain JSON values (the decoded symbols and values of a difference are NumPy scalars)."""
        return json.loads(json.dumps({**dataclasses.asdict(self), "verdict": self.verdict}, default=_plain))

    def describe(self) -> str:
        parts = [f"{f.form} {f.verdict}" + (f" ({f.differing}/{f.inputs} inputs)" if f.verdict in (DIFFERS, CRASHES)
                                            else f" on {f.inputs} input(s)" if f.verdict == AGREES else
                                            f" ({f.reason})") for f in self.forms]
        blame = f": a finding against {self.blame}" if self.blame else ""
        return f"reference check of {self.program} against {self.reference}: {', '.join(parts)}{blame}"


def check_program(target_name: str, program, options: CheckOptions) -> Optional[ReferenceCheck]:
    """Check each form of ``program`` (a ``targets.Program``) against its reference on the
    whole program's boundary seeds; None where it has no reference."""
    if program.reference is None:
        return None
    started = time.monotonic()
    check = ReferenceCheck(program.name, program.reference.label)
    layout = _layout(program.sdfg(True), options)
    for form, simplified, pipeline in FORMS:
        if not simplified and program.build_unsimplified is None:
            check.forms.append(FormCheck(form, SKIPPED, reason="the loader keeps no unsimplified form"))
            continue
        keep = Path(options.crashes_root) / target_name / f"reference-{program.name}"
        result = _check_form(program.sdfg(simplified), form, program.reference, layout, keep, options,
                             program.own_inputs)
        check.forms.append(result)
        if result.verdict in FINDINGS and not check.blame:
            check.blame = pipeline
    if _reference_did_not_run(check) and program.build_unsimplified is not None:
        keep = Path(options.crashes_root) / target_name / f"reference-{program.name}"
        check.forms.append(_forms_against_each_other(program, layout, keep, options, check.forms[-1].reason))
        if check.forms[-1].verdict in FINDINGS:
            check.blame = "simplify"
    check.seconds = round(time.monotonic() - started, 3)
    return check


def _reference_did_not_run(check: ReferenceCheck) -> bool:
    """Every form was left unjudged because the reference itself could not run."""
    return bool(check.forms) and all(f.verdict == SKIPPED and "did not run" in f.reason for f in check.forms)


# the form judged against the program as its frontend wrote it, where the reference cannot run
AGAINST_FRONTEND = "simplified vs frontend"


def _forms_against_each_other(program, layout, keep: Path, options: CheckOptions, why: str) -> FormCheck:
    """Where the reference cannot run, the simplified form against the frontend's form, both
    built and run on the same inputs: a difference is a finding against simplify."""

    frontend, simplified = program.sdfg(False), program.sdfg(True)
    builds = []
    for sdfg, form in ((frontend, "unsimplified"), (simplified, "simplified")):
        pair = whole_program_pair(sdfg, f"reference-{sdfg.name}-{form}")
        if sorted(c.name for c in layout.containers) != pair.containers:
            return FormCheck(AGAINST_FRONTEND, SKIPPED, reason=f"the {form} form takes other containers")
        try:
            builds.append(judge.prepare(pair, options.judge, (None, layout)).harness)
        except BuildError as exc:
            return FormCheck(AGAINST_FRONTEND, SKIPPED, reason=f"the {form} form does not build: {exc.first_error}"[:300])
    inputs = seeds.sample(layout, options.inputs, options.judge.seed)
    expected_runs = run_inputs(builds[0].dir, inputs, options.timeout_s)
    got_runs = run_inputs(builds[1].dir, inputs, options.timeout_s)
    check = FormCheck(AGAINST_FRONTEND, AGREES, reason=f"judged against the frontend's form ({why[:200]})")
    frontend_reference = Reference(f"{program.name} as its frontend wrote it", lambda **kwargs: None)
    for (name, data), expected, got in zip(inputs, expected_runs, got_runs):
        if expected is None:            # the frontend's form crashes here: no answer to compare with
            continue
        check.inputs += 1
        decoded = layout.decode(data)
        difference = _first_difference(expected, got, layout, decoded.symbols, options.judge.tolerance)
        if difference is None:
            continue
        check.differing += 1
        if not check.first:
            shaped = {s.name: decoded.arrays[s.name].reshape(layout.shape(s.name, decoded.symbols))
                      for s in layout.containers}
            check.verdict = CRASHES if got is None else DIFFERS
            check.first = {**difference, "symbols": decoded.symbols, "input": name}
            check.finding = str(_write_finding(keep / f"simplified-vs-frontend-{difference['container']}", simplified,
                                               frontend_reference, data, decoded, shaped, expected, got, check))
    return check


def _plain(value):
    """A NumPy scalar as the Python number it holds (anything else as its text)."""
    return value.item() if isinstance(value, np.generic) else str(value)


def _layout(sdfg, options: CheckOptions):
    """One layout for every form: the same inputs judge each (its ranges come from the simplified
    program, where the constraints stage sees index containers best)."""

    pair = whole_program_pair(sdfg, f"reference-{sdfg.name}")
    return judge.constrain(pair, options.judge)[1]


def _check_form(sdfg, form: str, reference: Reference, layout, keep: Path, options: CheckOptions,
                own_inputs=None) -> FormCheck:
    """A form's record: read back where this program was checked against this reference already
    (a form that does not build included: its compiler is not called again)."""

    pair = whole_program_pair(sdfg, f"reference-{sdfg.name}-{form}")
    if sorted(c.name for c in layout.containers) != pair.containers:
        return FormCheck(form, SKIPPED, reason=f"its containers {pair.containers} are not the simplified form's")
    key = f"{cache_key(pair, layout, options.judge.tolerance, False, False)}-{_record_key(reference, form, options)}"
    cached = Path(options.judge.work_dir) / "reference-checks" / f"{key}.json"
    if cached.is_file():
        record = FormCheck(**json.loads(cached.read_text()))
        if record.finding is None or Path(record.finding).is_dir():
            return record
    try:
        harness = judge.prepare(pair, options.judge, (None, layout)).harness
    except BuildError as exc:
        if exc.missing_header:          # a library the machine lacks: nothing known of the form
            return FormCheck(form, SKIPPED, reason=f"this machine lacks {exc.missing_header}, which DaCe's code for "
                                                   "it includes (install the library that provides it)")
        if not exc.of_the_code:        # a compiler killed or silent: nothing known of the form, nothing kept
            return FormCheck(form, SKIPPED, reason=f"the build failed, saying nothing of the code: {exc}"[:400])
        # the program itself (not a transformation of it) does not compile: a finding against
        # the pipeline that made this form
        record = FormCheck(form, BUILD_FAILURE, reason=f"{exc}: {exc.first_error}"[:400])
    else:
        record = _run_check(sdfg, form, reference, layout, harness, keep, options, own_inputs)
    if record.verdict != SKIPPED:      # a check that did not run is tried again (a library installed since)
        write_json(cached, dataclasses.asdict(record))
    return record


def _record_key(reference: Reference, form: str, options: CheckOptions) -> str:
    """What a form's record depends on besides its build (whose folder is named by its content):
    the reference's code, and how it is judged."""
    import hashlib
    import inspect

    try:
        code = inspect.getsource(reference.function)
    except (OSError, TypeError):
        code = repr(reference.function)
    # how a reference's answer is taken (its return value included) is part of the record too
    taking = inspect.getsource(Reference.run) + inspect.getsource(returned_containers)
    blob = json.dumps([reference.label, code, reference.identity, reference.independent, taking, form, options.judge.tolerance.to_json(),
                       options.inputs, options.judge.seed, str(Path(options.crashes_root).resolve())], default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _run_check(sdfg, form: str, reference: Reference, layout, harness, keep: Path, options: CheckOptions,
               own_inputs=None) -> FormCheck:


    scalars = {n for n, d in sdfg.arrays.items() if isinstance(d, dt.Scalar) and not d.transient}
    why: List[str] = []
    inputs = _inputs(reference, own_inputs, layout, options, why)
    if not inputs:
        return FormCheck(form, SKIPPED, reason=f"{reference.label} is another implementation, judged on the program's "
                                               f"own inputs alone, and none fit its layout ({'; '.join(why)[:300]})")
    outputs = run_inputs(harness.dir, inputs, options.timeout_s)
    check = FormCheck(form, AGREES)
    for (name, data), got in zip(inputs, outputs):
        decoded = layout.decode(data)
        shaped = {s.name: decoded.arrays[s.name].reshape(layout.shape(s.name, decoded.symbols))
                  for s in layout.containers}
        try:
            expected = reference.run(shaped, decoded.symbols, scalars)
        except Unsupported as exc:
            return FormCheck(form, SKIPPED, inputs=check.inputs, reason=str(exc)[:300])
        check.inputs += 1
        difference = _first_difference(expected, got, layout, decoded.symbols, options.judge.tolerance)
        if difference is None:
            continue
        check.differing += 1
        if not check.first:
            check.verdict = CRASHES if got is None else DIFFERS
            check.first = {**difference, "symbols": decoded.symbols, "input": name}
            check.finding = str(_write_finding(keep / f"{form}-{difference['container']}", sdfg, reference, data,
                                               decoded, shaped, expected, got, check))
    return check


# the largest sizes of the program's own inputs (each a scaled-down copy of its smallest preset)
OWN_INPUT_SIZES = (CHECK_MAX_SIZE, 4)


def _inputs(reference: Reference, own_inputs, layout: InputLayout, options: CheckOptions,
            why: List[str]) -> List[Tuple[str, bytes]]:
    """What a form is judged on: the boundary seeds, or where the reference is another
    implementation (``Reference.independent``), the program's own inputs alone (``why``: why
    some did not fit)."""
    if not reference.independent:
        return seeds.sample(layout, options.inputs, options.judge.seed)
    if own_inputs is None:
        why.append("the program has no inputs of its own")
        return []
    return seeds.own_inputs(layout, own_inputs, OWN_INPUT_SIZES, why)


def _first_difference(expected: Dict, got: Optional[Dict], layout, symbols, tolerance: Tolerance) -> Optional[Dict]:
    """Where the program's containers first differ from the reference's (None: they agree).
    Where values cancel, NumPy's and the program's rounding differ by up to rtol times the
    container's largest value: that is the absolute tolerance of the comparison."""

    if got is None:
        return {"container": "(crash)", "index": None, "expected": None, "actual": "the program crashed"}
    for slot in layout.containers:
        want = np.asarray(expected[slot.name]).reshape(-1)
        have = got[slot.name].reshape(-1)[:want.size]
        finite = np.abs(want[np.isfinite(want)]) if want.dtype.kind == "f" else np.zeros(0)
        scale = float(finite.max()) if finite.size else 0.0
        tol = dataclasses.replace(tolerance, atol=max(tolerance.atol, tolerance.rtol * scale))
        mask = differing(want, have, tol)
        if mask.any():
            index = int(np.flatnonzero(mask)[0])
            return {"container": slot.name, "index": list(np.unravel_index(index, layout.shape(slot.name, symbols))),
                    "expected": repr(want[index].item()), "actual": repr(have[index].item()),
                    "elements": int(mask.sum())}
    return None


def run_inputs(build_dir: Path, inputs: List[Tuple[str, bytes]], timeout_s: float) -> List[Optional[Dict]]:
    """Pre's containers after each input, run in a child process (a crash takes only the child;
    the input it crashed on gets None and the rest run in a new child)."""
    with tempfile.TemporaryDirectory(prefix="hg-reference-") as tmp:
        tmp = Path(tmp)
        for i, (_, data) in enumerate(inputs):
            (tmp / f"{i:04d}.bin").write_bytes(data)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            missing = [i for i in range(len(inputs)) if not (tmp / f"{i:04d}.npz").exists()
                       and not (tmp / f"{i:04d}.started").exists()]
            if not missing:
                break
            subprocess.run([sys.executable, "-m", "harnessgen.checks.reference_check", str(build_dir), str(tmp)],
                           capture_output=True, timeout=max(1.0, deadline - time.monotonic()))
        out: List[Optional[Dict]] = []
        for i in range(len(inputs)):
            path = tmp / f"{i:04d}.npz"
            if path.exists():
                with np.load(path) as npz:
                    out.append({k: npz[k] for k in npz.files})
            else:
                out.append(None)
        return out


def _serve(build_dir: Path, folder: Path) -> int:
    """The child: run pre on every input of ``folder`` not yet run, writing its containers."""

    layout = InputLayout.load(build_dir / "layout.json")
    for path in sorted(folder.glob("*.bin")):
        npz, started = path.with_suffix(".npz"), path.with_suffix(".started")
        if npz.exists() or started.exists():
            continue
        started.touch()              # a crash below leaves it: the parent knows which input it was
        outputs = execute(build_dir, layout.decode(path.read_bytes()), "pre")
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, **outputs)
        tmp.replace(npz)
    return 0


def _write_finding(folder: Path, sdfg, reference: Reference, data: bytes, decoded, shaped: Dict, expected: Dict,
                   got: Optional[Dict], check: FormCheck) -> Path:
    """A reproducer of the difference: the program, the input, the reference's answer, and a
    repro.py that compiles the program with DaCe alone and compares (exit 1 while it differs)."""


    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    sdfg.save(str(tmp / "program.sdfg"))
    (tmp / "input.bin").write_bytes(data)
    np.savez(tmp / "inputs.npz", **shaped)
    np.savez(tmp / "expected.npz", **{k: np.asarray(v) for k, v in expected.items()})
    if got is not None:
        np.savez(tmp / "actual.npz", **got)
    meta = {"kind": "reference", "form": check.form, "reference": reference.label, "program": sdfg.name,
            "symbols": decoded.symbols, "first": check.first, "dace": dace.__version__, "harnessgen": __version__}
    write_json(tmp / "meta.json", meta)
    repro = tmp / "repro.py"
    repro.write_text(repro_environment().get_template("reference_repro.py.j2").render(
        form=check.form, reference=reference.label, program=sdfg.name, symbols=repr(decoded.symbols),
        first=check.first, dace_version=dace.__version__, harnessgen_version=__version__,
        rtol32=Tolerance.rtol32, atol32=Tolerance.atol32))
    repro.chmod(0o755)
    publish(tmp, folder)
    return folder


if __name__ == "__main__":
    sys.exit(_serve(Path(sys.argv[1]), Path(sys.argv[2])))


def not_loaded(program: str, reason: str, checked: bool = False) -> Dict:
    """The record of a program left out of the run: it could not be loaded (``checked``: it
    loaded, and the check of it could not even start)."""
    return {"program": program, "reference": "", "forms": [], "blame": "", "seconds": 0.0, "verdict": NOT_LOADED,
            "reason": f"{'could not be checked' if checked else 'not loaded'}, left out of the run: {reason}"}


def not_finished() -> Dict:
    """The record of reference checks the run ended before (they run beside the instances)."""
    return {"program": "(the programs not checked yet)", "reference": "", "forms": [], "blame": "", "seconds": 0.0,
            "verdict": NOT_FINISHED, "reason": "the run ended before the reference checks did (they run beside the "
                                                "instances): the same command again checks them"}


def describe_checks(checks: List[Dict]) -> List[str]:
    """Terminal lines for a run's reference checks (their JSON records): one per program left
    out of the run, one per program that does not agree, then a count."""
    lines = [f"{c['program']}: {c['reason']}" for c in checks if c["verdict"] in (NOT_LOADED, NOT_FINISHED)]
    checks = [c for c in checks if c["verdict"] not in (NOT_LOADED, NOT_FINISHED)]
    for c in checks:
        if c["verdict"] == AGREES:
            continue
        forms = ", ".join(f"{f['form']} {f['verdict']}" + (f" ({f['reason']})" if f["reason"] else "")
                          for f in c["forms"])
        blame = f": a finding against {c['blame']}" if c["blame"] else ""
        found = [f["finding"] for f in c["forms"] if f.get("finding")]
        lines.append(f"reference check {c['program']} ({c['reference']}): {forms}{blame}"
                     + (f" -> {found[0]}" if found else ""))
    agree = sum(1 for c in checks if c["verdict"] == AGREES)
    if checks:
        lines.append(f"reference check: {agree} of {len(checks)} program(s) agree with their references "
                     f"(as written and simplified, {sum(c['seconds'] for c in checks):.0f} s)")
    return lines
