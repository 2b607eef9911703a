"""The Python-level compilers under test, behind one small registry.

A ``Compiler`` loads a generated program's source, runs it as written (the
reference: NumPy for DaCe, eager torch) and runs it compiled in each of its
modes. Adding one touches ``COMPILERS`` and its class. The modules it imports
lazily, so that ``pyfuzz --compiler dace`` never imports torch.

=========  ======================  ================================================
compiler   reference               modes
=========  ======================  ================================================
dace       the Python function     ``simplify`` (frontend + simplify), ``auto_optimize``
           under NumPy             (+ the ``--dace-pass`` transformations after it)
torch      eager                   ``aot_eager``, ``inductor``, ``inductor-dynamic``
                                   (dynamic shapes), ``inductor-cuda`` with a GPU
=========  ======================  ================================================
"""
from __future__ import annotations

import importlib
import itertools
import linecache
import os
import shutil
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..core.errors import ConfigError
from .program_record import FUNCTION, Program

_serial = itertools.count()


def load_module(source: str, tag: str) -> Dict[str, object]:
    """Execute ``source`` as a module whose text ``inspect`` can find (DaCe's frontend
    reads a program's source)."""
    filename = f"<pyfuzz-{os.getpid()}-{tag}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: Dict[str, object] = {"__name__": f"pyfuzz_{tag}"}
    # dont_inherit: this module's `from __future__ import annotations` would turn the
    # program's type annotations into strings, which DaCe reads as string arguments
    exec(compile(source, filename, "exec", dont_inherit=True), namespace)
    return namespace


def as_outputs(result, arguments: Optional[Dict] = None) -> List[np.ndarray]:
    """The returned values, then the final state of every argument (a program may write its
    inputs: a compiler must too)."""
    items = list(result) if isinstance(result, (tuple, list)) else [result]
    items += list((arguments or {}).values())
    out = []
    for item in items:
        if hasattr(item, "detach"):              # torch tensor
            item = item.detach().cpu().numpy()
        out.append(np.array(item, copy=True))
    return out


class Compiler:
    name = "compiler"
    # exception types that are a compiler's clear rejection of an invalid program
    clear_errors: Tuple[type, ...] = (SyntaxError, TypeError, ValueError, NotImplementedError)
    # internal errors of the compiler that may subclass a clear type (never a clear rejection)
    unclear: Tuple[type, ...] = ()

    def __init__(self, work_dir: Path, extra_passes: Sequence[str] = (), modes: Sequence[str] = ()):
        self.work_dir = Path(work_dir)
        self.extra_passes = list(extra_passes)
        self.only_modes = list(modes)

    def all_modes(self) -> List[str]:
        raise NotImplementedError

    def modes(self) -> List[str]:
        """The modes judged: all of them, or those ``--compile-modes`` names."""
        every = self.all_modes()
        unknown = [m for m in self.only_modes if m not in every]
        if unknown:
            raise ConfigError(f"--compile-modes {','.join(unknown)}: {self.name} has the modes {', '.join(every)}")
        return [m for m in every if m in self.only_modes] if self.only_modes else every

    def reference(self, program: Program, inputs: Dict[str, np.ndarray]) -> List[np.ndarray]:
        raise NotImplementedError

    def run(self, program: Program, mode: str, inputs: Dict[str, np.ndarray]) -> List[np.ndarray]:
        raise NotImplementedError

    # the compiled program is kept and called again with other values of the same shapes
    # (torch: its guards decide whether the graph fits them)
    reuses_compiled = False

    def run_calls(self, program: Program, mode: str, calls: Sequence[Dict[str, np.ndarray]]) -> List:
        """The outputs of one compile called with each of ``calls`` in turn; the first call's
        exception propagates, a later call's is returned in its place."""
        return [self.run(program, mode, inputs) for inputs in calls]

    def is_clear_error(self, error: BaseException) -> bool:
        return not isinstance(error, self.unclear) and isinstance(error, self.clear_errors)

    # the reference is the same library run eagerly (torch): a clear rejection must raise the
    # reference's own error type. DaCe's reference is NumPy, whose errors are its own
    same_errors_as_reference = False

    def root_error(self, error: BaseException) -> BaseException:
        """The error a compiler's wrappers carry (the one to compare with the reference's)."""
        return error

    def versions(self) -> Dict[str, str]:
        return {}

    def instrument_prefixes(self) -> List[str]:
        """Modules whose functions Atheris instruments by default: the compiler's own
        passes, not the whole package (instrumenting torch whole takes minutes)."""
        return []

    def warm_up(self) -> None:
        """Import what a first compile imports lazily, so that instrumentation sees it."""


class DaceCompiler(Compiler):
    name = "dace"

    def __init__(self, work_dir: Path, extra_passes: Sequence[str] = (), modes: Sequence[str] = ()):
        super().__init__(work_dir, extra_passes, modes)
        import dace

        self.dace = dace
        self.build_root = self.work_dir / "dacecache"
        self.build_root.mkdir(parents=True, exist_ok=True)
        dace.config.Config.set("default_build_folder", value=str(self.build_root.resolve()))
        self.passes = [_load_object(spec, "--dace-pass") for spec in self.extra_passes]
        from dace.frontend.python.common import DaceSyntaxError

        self.clear_errors = Compiler.clear_errors + (DaceSyntaxError,)

    def all_modes(self) -> List[str]:
        return ["simplify", "auto_optimize"]

    def versions(self) -> Dict[str, str]:
        return {"dace": self.dace.__version__, "numpy": np.__version__}

    def instrument_prefixes(self) -> List[str]:
        return ["dace.frontend.python", "dace.transformation.auto", "dace.transformation.passes",
                "dace.transformation.dataflow", "dace.transformation.interstate"]

    def _program(self, program: Program, tag: str):
        return load_module(program.source(), tag)[FUNCTION]

    def reference(self, program: Program, inputs: Dict[str, np.ndarray]) -> List[np.ndarray]:
        function = self._program(program, f"ref{next(_serial)}")
        arguments = {k: v.copy() for k, v in inputs.items()}
        return as_outputs(function.f(**arguments), arguments)

    def sdfg(self, program: Program, mode: str):
        from dace.transformation.auto.auto_optimize import auto_optimize

        tag = f"{mode}{next(_serial)}"
        sdfg = self._program(program, tag).to_sdfg(simplify=True)
        sdfg.name = f"hgpy_{os.getpid()}_{tag}"
        if mode == "auto_optimize":
            auto_optimize(sdfg, self.dace.DeviceType.CPU)
            for xform in self.passes:
                apply_at_every_match(sdfg, xform)
        elif mode != "simplify":
            raise ConfigError(f"DaCe has no mode {mode!r}; choose one of {', '.join(self.all_modes())}")
        return sdfg

    def run(self, program: Program, mode: str, inputs: Dict[str, np.ndarray]) -> List[np.ndarray]:
        sdfg = self.sdfg(program, mode)
        folder = Path(sdfg.build_folder)
        try:
            compiled = sdfg.compile()
            arguments = {k: v.copy() for k, v in inputs.items()}
            return as_outputs(compiled(**arguments), arguments)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


class TorchCompiler(Compiler):
    name = "torch"

    def __init__(self, work_dir: Path, extra_passes: Sequence[str] = (), modes: Sequence[str] = ()):
        super().__init__(work_dir, extra_passes, modes)
        try:
            import torch
        except ImportError as error:
            raise ConfigError("pyfuzz --compiler torch needs PyTorch: run `make setup-torch`") from error
        self.torch = torch
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str((self.work_dir / "inductor").resolve()))
        import torch._dynamo.exc as exc

        # Dynamo reports an invalid program as a TorchRuntimeError wrapping torch's own error;
        # a backend's crash or an internal error is not a clear rejection
        self.unclear = (exc.BackendCompilerFailed, exc.InternalTorchDynamoError)
        self.clear_errors = Compiler.clear_errors + (RuntimeError, IndexError)
        # --torch-pass: functions (graph, example inputs) -> graph, run on Dynamo's graph before the backend
        self.passes = [_load_object(spec, "--torch-pass") for spec in self.extra_passes]

    def all_modes(self) -> List[str]:
        modes = ["aot_eager", "inductor", "inductor-dynamic"]
        if self.torch.cuda.is_available():
            modes.append("inductor-cuda")
        return modes

    def versions(self) -> Dict[str, str]:
        return {"torch": self.torch.__version__, "numpy": np.__version__}

    def instrument_prefixes(self) -> List[str]:
        return ["torch._inductor.fx_passes", "torch._inductor.lowering", "torch._inductor.decomposition",
                "torch._dynamo.variables.torch", "torch._dynamo.variables.tensor"]

    def warm_up(self) -> None:
        compiled = self.torch.compile(lambda x: self.torch.relu(x) + 1, backend="inductor")
        compiled(self.torch.ones(2))
        self.torch._dynamo.reset()

    def root_error(self, error: BaseException) -> BaseException:
        # Dynamo re-raises torch's own error inside its wrappers (TorchRuntimeError, ...)
        while type(error).__module__.startswith("torch._dynamo") and error.__cause__ is not None:
            error = error.__cause__
        return error

    def _tensors(self, inputs: Dict[str, np.ndarray], device: str = "cpu"):
        return {k: self.torch.from_numpy(v.copy()).to(device) for k, v in inputs.items()}

    def reference(self, program: Program, inputs: Dict[str, np.ndarray]) -> List[np.ndarray]:
        function = load_module(program.source(), f"ref{next(_serial)}")[FUNCTION]
        arguments = self._tensors(inputs)
        with self.torch.no_grad():
            return as_outputs(function(**arguments), arguments)

    reuses_compiled = True
    same_errors_as_reference = True

    def run(self, program: Program, mode: str, inputs: Dict[str, np.ndarray]) -> List[np.ndarray]:
        return self.run_calls(program, mode, [inputs])[0]

    def run_calls(self, program: Program, mode: str, calls: Sequence[Dict[str, np.ndarray]]) -> List:
        compiled, device = self.compile(program, mode)
        results: List = []
        for number, inputs in enumerate(calls):
            arguments = self._tensors(inputs, device)
            try:
                with self.torch.no_grad():
                    results.append(as_outputs(compiled(**arguments), arguments))
            except Exception as error:
                if number == 0:
                    raise
                results.append(error)
        return results

    def compile(self, program: Program, mode: str):
        """(the compiled function, its device)."""
        if mode not in self.modes():
            raise ConfigError(f"torch has no mode {mode!r} here; choose one of {', '.join(self.modes())}")
        function = load_module(program.source(), f"{mode}{next(_serial)}")[FUNCTION]
        backend = "aot_eager" if mode == "aot_eager" else "inductor"
        device = "cuda" if mode.endswith("cuda") else "cpu"
        self.torch._dynamo.reset()
        compiled = self.torch.compile(function, backend=self._backend(backend),
                                      dynamic=True if mode == "inductor-dynamic" else False)
        return compiled, device

    def _backend(self, name: str):
        """The backend by name, or with ``--torch-pass`` a backend that runs the passes first."""
        if not self.passes:
            return name
        from torch._dynamo.backends.registry import lookup_backend

        compile_graph = lookup_backend(name)

        def with_passes(gm, example_inputs):
            for graph_pass in self.passes:
                gm = graph_pass(gm, example_inputs)
            return compile_graph(gm, example_inputs)

        return with_passes


class TvmCompiler(Compiler):
    """TVM's Relax: the program record built as an IRModule (``relax``), compiled for llvm by
    each pipeline of ``relax_pipelines.PIPELINES``; the reference is the program's NumPy source."""

    name = "tvm"

    def __init__(self, work_dir: Path, extra_passes: Sequence[str] = (), modes: Sequence[str] = ()):
        super().__init__(work_dir, extra_passes, modes)
        if extra_passes:
            raise ConfigError("--compiler tvm takes no extra passes; choose pipelines with --compile-modes")
        try:
            import tvm
        except ImportError as error:
            raise ConfigError("pyfuzz --compiler tvm needs apache-tvm: run `make setup-tvm`") from error
        self.tvm = tvm
        # a rejection says what is wrong with the program; tvm.error.InternalError is a failed check of its own
        self.clear_errors = Compiler.clear_errors + (tvm.error.DiagnosticError, tvm.error.OpError)
        self.unclear = (tvm.error.InternalError,)

    def all_modes(self) -> List[str]:
        from .relax_pipelines import PIPELINES

        return list(PIPELINES)

    def versions(self) -> Dict[str, str]:
        return {"tvm": self.tvm.__version__, "numpy": np.__version__}

    def instrument_prefixes(self) -> List[str]:
        return ["tvm.relax.transform", "tvm.relax.op", "tvm.relax.block_builder", "tvm.relax.backend",
                "tvm.driver", "tvm.ir.transform"]

    def warm_up(self) -> None:
        from .program_record import Value

        program = Program("tvm", [Value("a0", (2,), "float32")], [], ["a0"], 0)
        self.run(program, "default", {"a0": np.ones(2, np.float32)})

    def reference(self, program: Program, inputs: Dict[str, np.ndarray]) -> List[np.ndarray]:
        function = load_module(program.source(), f"ref{next(_serial)}")[FUNCTION]
        arguments = {k: v.copy() for k, v in inputs.items()}
        return as_outputs(function(**arguments), arguments)

    def run(self, program: Program, mode: str, inputs: Dict[str, np.ndarray]) -> List[np.ndarray]:
        from .relax import to_relax
        from .relax_pipelines import build

        if mode not in self.all_modes():
            raise ConfigError(f"tvm has no mode {mode!r}; choose one of {', '.join(self.all_modes())}")
        relax = self.tvm.relax
        executable = build(to_relax(program), mode)
        machine = relax.VirtualMachine(executable, self.tvm.cpu())
        arguments = {k: v.copy() for k, v in inputs.items()}
        result = machine["main"](*[self.tvm.runtime.tensor(arguments[v.name]) for v in program.inputs])
        items = [result[i].numpy() for i in range(len(result))] if len(program.outputs) else []
        return as_outputs(items, arguments)


COMPILERS = {"dace": DaceCompiler, "torch": TorchCompiler, "tvm": TvmCompiler}


def get_compiler(name: str, work_dir: Path, extra_passes: Sequence[str] = (), modes: Sequence[str] = ()) -> Compiler:
    if name not in COMPILERS:
        raise ConfigError(f"--compiler {name!r} is unknown; choose one of {', '.join(sorted(COMPILERS))}")
    return COMPILERS[name](work_dir, extra_passes, modes)


def torch_available() -> Optional[str]:
    """None when torch imports, else why not."""
    try:
        importlib.import_module("torch")
    except ImportError as error:
        return f"torch is not installed ({error}); `make setup-torch` installs it"
    return None


def apply_at_every_match(sdfg, xform) -> int:
    """Apply ``xform`` once at each place it matched before the first application (applying
    until nothing matches never ends for a transformation that matches its own result, as
    tiling does). Each match is asked again before it is applied, as DaCe does: an earlier
    application may have changed or removed what it matched, and what ``can_be_applied``
    computes is what ``apply`` uses."""
    from dace.transformation.passes.pattern_matching import match_patterns

    from ..cutout.extract import can_apply

    applied = 0
    for match in list(match_patterns(sdfg, [xform])):
        if can_apply(match, sdfg):
            match.apply_pattern(append=False)
            applied += 1
    return applied


def _load_object(spec: str, flag: str):
    module_name, _, name = spec.partition(":")
    if not name:
        raise ConfigError(f"{flag} {spec!r}: write it as module:name")
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"{flag} {spec!r}: {error}") from error
