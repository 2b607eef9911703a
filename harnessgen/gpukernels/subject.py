"""The kernel subject: each hand-written CUDA kernel of a manifest directory is one instance,
fuzzed against its reference (pre) with its own harness; compute-sanitizer looks at a few of
the inputs the harness passed, and triage adds the synchronization oracle."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

from ..core.errors import BuildError, ConfigError
from ..core.outcome import Outcome
from ..cuda import sanitizer
from ..subjects import Subject
from ..targets import Target, with_afl_configs
from .kernel_build import build_kernel
from .kernel_triage import KernelTriage
from .spec import KERNEL, is_kernel_spec, resolve


class KernelSubject(Subject):
    kind = "kernel"

    @classmethod
    def claims(cls, program_spec: str) -> bool:
        return is_kernel_spec(program_spec)

    def __init__(self, program_spec: str, simplify: Optional[bool] = None):
        super().__init__(program_spec, simplify)
        name, specs = resolve(program_spec)
        self.target = with_afl_configs(Target(name=name, programs={}))
        self.kernels = {spec.name: spec for spec in specs}

    def transformation_specs(self, xform_spec: Optional[str]) -> List[str]:
        if xform_spec:
            raise ConfigError(f"--program {self.program_spec} is a CUDA kernel target: each kernel is tested against "
                              f"its reference, so leave out --transformation")
        return [KERNEL]

    def instances(self, spec: str, settings: Optional[List[str]] = None, params=None) -> list:
        if settings or (params is not None and params.mode != "default"):
            raise ConfigError("--set and --params are about a transformation's properties; a CUDA kernel target "
                              "has none")
        return [self.kernels[name].instance(self.target.name) for name in sorted(self.kernels)]

    def names(self, inst) -> List[str]:
        return [inst.id, inst.program]            # a kernel's name names its one instance too

    def prepare(self, spec: str, inst, options, result, started: float, past: int = 0, claim=None):
        try:
            return build_kernel(self.kernels[inst.program], inst.target, options.work_dir, options.tolerance,
                                afl=options.engine == "afl")
        except BuildError as exc:
            if exc.side == "harness":
                raise
            # the user's kernel (post) or reference (pre) does not compile: nothing to fuzz
            result.verdict = Outcome.BUILD_FAILURE.name
            result.message = (f"{exc} (the {'kernel' if exc.side == 'hg_post' else 'reference'}; log:\n"
                              f"{exc.log[-2000:]})")
            return None

    def passing_checks(self, harness, passing: List[Path]) -> List[Path]:
        """What only compute-sanitizer sees, on a few passing seeds."""
        return sanitizer.sweep(harness.harness_replay, passing)

    def describe(self, spec: str, inst, prove_max_size: Optional[int] = None, builds=None) -> Dict:
        kernel = self.kernels[inst.program]       # no cutout: its arrays are its inputs
        return {"id": inst.id, "transformation": spec, "program": inst.program, "match": inst.description,
                "status": "KERNEL", "inputs": [a.name for a in kernel.arrays if a.role != "out"],
                "outputs": [a.name for a in kernel.arrays if a.role != "in"], "expect": kernel.expect}

    @classmethod
    def triage_class(cls) -> type:
        return KernelTriage
