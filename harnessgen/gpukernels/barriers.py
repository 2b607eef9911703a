"""Redundant barriers: a performance finding of the synchronization oracle.

For every ``__syncthreads()`` in a kernel's body, a variant of the kernel without it is built
and tested against the kernel's reference on the same inputs as fuzzing uses (the seeds, the
corpus): post runs several times per input, and compute-sanitizer's racecheck and synccheck
run on the largest inputs. A barrier whose removal changes neither the outputs nor the
sanitizer's reports orders nothing the kernel depends on: ``REDUNDANT_BARRIER`` at its line.
Evidence on the inputs tried, not a proof; a removal that changes anything proves the
barrier needed. Without a GPU the variants are only built (verdict ``BUILT``).
"""
from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

from ..core import protocol
from ..core.errors import BuildError, ConfigError
from ..core.protocol import HarnessEnv
from ..cuda import sanitizer
from ..inputs import seeds as seedlib
from .kernel_build import build_kernel
from .spec import KernelSpec, layout

BARRIER = "__syncthreads()"
REPEAT = 10


@dataclasses.dataclass
class BarrierVerdict:
    kernel: str
    line: int
    verdict: str                 # REDUNDANT_BARRIER | NEEDED | BUILT | BUILD_FAILURE
    evidence: str

    def to_json(self) -> Dict:
        return dataclasses.asdict(self)


def kernel_body(text: str, kernel: str) -> tuple:
    """(start, end) offsets of the kernel function's body, braces matched."""
    match = re.search(r"__global__\s+void\s+" + re.escape(kernel) + r"\s*\(", text)
    if not match:
        raise ConfigError(f"no __global__ void {kernel}(...) in the kernel's source")
    start = text.index("{", match.end())
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return start, i + 1
    raise ConfigError(f"the body of {kernel} has unbalanced braces")


def barrier_sites(text: str, kernel: str) -> List[int]:
    """Offsets of the barriers in the kernel's own body (not in the other kernels of the file)."""
    start, end = kernel_body(text, kernel)
    return [start + m.start() for m in re.finditer(re.escape(BARRIER), text[start:end])]


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def variant(spec: KernelSpec, offset: int, folder: Path) -> KernelSpec:
    """The kernel's folder copied into ``folder`` with the barrier at ``offset`` removed."""
    shutil.copytree(spec.source.parent, folder, dirs_exist_ok=True)
    text = spec.source.read_text()
    line = _line(text, offset)
    edited = text[:offset] + "/* barrier removed by harnessgen barriers */" + text[offset + len(BARRIER):]
    (folder / spec.source.name).write_text(edited)
    manifest = folder / spec.manifest.name
    return dataclasses.replace(spec, name=f"{spec.name}-without-barrier-L{line}", source=folder / spec.source.name,
                               manifest=manifest if manifest.is_file() else spec.manifest)


def _inputs(spec: KernelSpec, corpus: Optional[Path], count: int, folder: Path) -> List[Path]:
    """The seeds (written into ``folder``) and the kernel's corpus: every variant runs on these."""
    paths = seedlib.write(seedlib.sample(layout(spec), count, 0), folder)
    if corpus and corpus.is_dir():
        paths += sorted(p for p in corpus.iterdir() if p.is_file() and not p.name.startswith("."))
    return paths


def judge(build, inputs: List[Path]) -> tuple:
    """('NEEDED', why) when the variant differs from the reference or the sanitizer objects."""
    for path in inputs:
        run = protocol.run_native(build.harness_replay, path, HarnessEnv(repeat=REPEAT), timeout_s=300)
        if not run.judged_fine:
            return "NEEDED", f"without it the outputs differ from the reference on {path.name}"
    if sanitizer.find() is None:
        return "REDUNDANT_BARRIER", (f"outputs agreed on {len(inputs)} inputs x {REPEAT} runs "
                                     "(compute-sanitizer not found: not checked for hazards)")
    for path in sorted(inputs, key=lambda p: -p.stat().st_size)[:3]:
        verdict = sanitizer.classify(sanitizer.check(build.harness_replay, path))
        if verdict:
            return "NEEDED", f"without it compute-sanitizer reports {verdict.name} on {path.name}"
    return "REDUNDANT_BARRIER", f"outputs agreed on {len(inputs)} inputs x {REPEAT} runs; racecheck and synccheck clean"


def analyse(spec: KernelSpec, target: str, work_dir: Path, corpus: Optional[Path] = None,
            count: int = 24) -> List[BarrierVerdict]:
    text = spec.source.read_text()
    results = []
    with tempfile.TemporaryDirectory(prefix="barrier-inputs-") as inputs_dir:
        inputs: List[Path] = []
        for offset in barrier_sites(text, spec.kernel):
            line = _line(text, offset)
            with tempfile.TemporaryDirectory(prefix="barrier-variant-") as tmp:
                try:
                    build = build_kernel(variant(spec, offset, Path(tmp)), target, work_dir)
                except BuildError as exc:
                    results.append(BarrierVerdict(spec.kernel, line, "BUILD_FAILURE", str(exc)))
                    continue
            missing = build.gpu_missing()
            if missing:
                results.append(BarrierVerdict(spec.kernel, line, "BUILT", f"not judged: {missing}; built in {build.dir}"))
                continue
            inputs = inputs or _inputs(spec, corpus, count, Path(inputs_dir))
            verdict, why = judge(build, inputs)
            results.append(BarrierVerdict(spec.kernel, line, verdict, why))
    return results
