"""Where the CUDA compiler is, and the flags every GPU build uses.

``make setup-cuda`` installs a complete CUDA 13 toolchain from PyPI wheels into the venv
(nvcc, cicc, ptxas, the runtime and CCCL, under ``site-packages/nvidia/cu13``): no GPU,
driver or system package is needed to compile. ``HARNESSGEN_CUDA_HOME`` points at another
toolkit instead (``/usr/local/cuda`` on a GPU machine); it is never picked up silently.

DaCe 1.0.2's GPU code needs three things from us with CUDA 13: C++17 (CCCL 3 refuses
C++14), a compute capability CUDA 13 still targets (its default ``compute_60`` is gone),
and ``cccl3_compat.h`` for the CUB names its runtime headers still use.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib.util
import subprocess
from pathlib import Path
from typing import List, Optional

from ..core import envs
from ..core.errors import ConfigError, ToolMissing
from ..dacecompat import cpp_standard, node_schedule

COMPAT_HEADER = Path(__file__).resolve().parent / "cccl3_compat.h"
SETUP_HINT = "run `make setup-cuda` (CUDA 13 compiler from PyPI) or set HARNESSGEN_CUDA_HOME to a CUDA toolkit"


@dataclasses.dataclass(frozen=True)
class Toolkit:
    root: Path

    @property
    def nvcc(self) -> Path:
        return self.root / "bin" / "nvcc"

    @property
    def include(self) -> Path:
        return self.root / "include"

    @property
    def cudart(self) -> Path:
        """The runtime library a build links and ships beside its libraries (so a build
        directory runs on another machine with only a driver)."""
        for folder in ("lib", "lib64", "targets/x86_64-linux/lib"):
            hits = sorted((self.root / folder).glob("libcudart.so.[0-9]*"), key=lambda p: len(p.name))
            if hits:
                return hits[0]
        raise ToolMissing(f"no libcudart.so.* under {self.root}: {SETUP_HINT}")

    @functools.cached_property
    def version(self) -> str:
        out = subprocess.run([str(self.nvcc), "--version"], capture_output=True, text=True)
        lines = [l for l in out.stdout.splitlines() if "release" in l]
        return lines[-1].strip() if lines else "nvcc (unknown version)"


def _wheel_root() -> Optional[Path]:
    spec = importlib.util.find_spec("nvidia")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        root = Path(folder) / "cu13"
        if (root / "bin" / "nvcc").is_file():
            return root
    return None


@functools.lru_cache(maxsize=None)
def find(home: Optional[str] = None) -> Toolkit:
    """The toolkit to build with; ToolMissing says how to get one."""
    home = home if home is not None else envs.get("HARNESSGEN_CUDA_HOME")
    if home:
        root = Path(home)
        if not (root / "bin" / "nvcc").is_file():
            raise ConfigError(f"HARNESSGEN_CUDA_HOME={home} holds no bin/nvcc: point it at a CUDA toolkit")
        return Toolkit(root)
    root = _wheel_root()
    if root is None:
        raise ToolMissing(f"no CUDA compiler: {SETUP_HINT}")
    return Toolkit(root)


def available() -> bool:
    try:
        find()
    except ConfigError:
        return False
    return True


def arch_flags() -> List[str]:
    """``HARNESSGEN_CUDA_ARCH`` (default 90: SASS for Hopper plus its PTX, which newer GPUs
    JIT-compile); several as ``75,90``."""
    archs = [a.strip() for a in envs.get("HARNESSGEN_CUDA_ARCH").split(",") if a.strip()]
    for arch in archs:
        if not arch.isdigit() or int(arch) < 75:
            raise ConfigError(f"HARNESSGEN_CUDA_ARCH={envs.get('HARNESSGEN_CUDA_ARCH')}: give compute capabilities "
                              f"as numbers of at least 75 (CUDA 13's oldest), e.g. 90 or 80,90")
    if len(archs) == 1:
        return [f"-arch=sm_{archs[0]}"]
    return [f for a in archs for f in ("-gencode", f"arch=compute_{a},code=[sm_{a},compute_{a}]")]


def nvcc_flags() -> List[str]:
    """The same numerics as the C++ side (no fast math, no FMA contraction): pre runs on the
    CPU, post on the GPU, and a difference must come from the transformation."""
    return [f"-std=c++{cpp_standard()}", "-O2", "-Xcompiler", "-fPIC", "--fmad=false", "-prec-div=true", "-prec-sqrt=true",
            "-ftz=false", "-w", "-Xcudafe", "--diag_suppress=20012", *arch_flags()]


def dace_nvcc_flags() -> List[str]:
    """For the CUDA files DaCe generates."""
    return [*dace_nvcc_base_flags(), "-include", str(COMPAT_HEADER)]


def dace_nvcc_base_flags() -> List[str]:
    """``dace_nvcc_flags`` less the compat header, whose path differs between checkouts: a
    build's cache key names the header by content, a reproducer embeds it."""
    return [*nvcc_flags(), "-DWITH_CUDA"]


def dace_host_flags() -> List[str]:
    """For DaCe's C++ frame code of a GPU program (it includes the CUDA runtime headers)."""
    return ["-DWITH_CUDA", "-isystem", str(find().include)]


def uses_gpu(sdfg) -> bool:
    """Whether DaCe will generate CUDA code for the SDFG: a GPU schedule or GPU storage anywhere."""
    from dace import dtypes, nodes

    for node, _ in sdfg.all_nodes_recursive():
        if isinstance(node, nodes.EntryNode) and node.schedule in dtypes.GPU_SCHEDULES:
            return True
        if isinstance(node, nodes.NestedSDFG) and node_schedule(node) in dtypes.GPU_SCHEDULES:
            return True
    return any(desc.storage in dtypes.GPU_STORAGES for _, _, desc in sdfg.arrays_recursive())


PROBE = r"""
#include <cub/block/block_reduce.cuh>
__global__ void hg_probe(const double *x, double *out) {
    using Reduce = cub::BlockReduce<double, 32>;
    __shared__ typename Reduce::TempStorage tmp;
    double s = Reduce(tmp).Sum(x[threadIdx.x]);
    if (threadIdx.x == 0) *out = s;
}
"""


def self_check(folder: Path) -> str:
    """Compile a CUB kernel with the flags GPU builds use; the toolkit's one-line description."""
    toolkit = find()
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "probe.cu"
    source.write_text(PROBE)
    proc = subprocess.run([str(toolkit.nvcc), *dace_nvcc_flags(), "-c", str(source), "-o", str(folder / "probe.o")],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise ToolMissing(f"{toolkit.nvcc} cannot compile a CUDA file:\n{proc.stderr[-2000:]}")
    return f"{toolkit.version} at {toolkit.root}; builds for {' '.join(arch_flags())}; runtime {toolkit.cudart.name}"


def gpu_unavailable() -> Optional[str]:
    """Why no CUDA device can run code here (None when one can): the runtime's own answer."""
    import ctypes

    try:
        runtime = ctypes.CDLL(str(find().cudart))
    except (OSError, ConfigError) as exc:
        return f"no CUDA runtime ({exc})"
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no CUDA driver (libcuda.so.1 is not installed)"
    count = ctypes.c_int(0)
    status = runtime.cudaGetDeviceCount(ctypes.byref(count))
    if status != 0:
        runtime.cudaGetErrorString.restype = ctypes.c_char_p
        return runtime.cudaGetErrorString(status).decode()
    return None if count.value > 0 else "no CUDA device"


def gpu_check_blocker() -> Optional[str]:
    """Why ``make gpu-check`` cannot run here, in one line (None where it can): it needs a CUDA
    device with its driver and a CUDA toolkit (pycuda builds against both)."""
    if not available():
        return f"make gpu-check needs a CUDA toolkit and there is none ({SETUP_HINT}): nothing was run"
    reason = gpu_unavailable()
    if reason:
        return (f"make gpu-check needs an NVIDIA GPU with its driver and this machine has none ({reason}): nothing "
                "was run (make test runs the CUDA checks that need no GPU)")
    return None


if __name__ == "__main__":   # make setup-cuda: prove the toolchain compiles; make setup-gpu: --need-gpu first
    import sys
    import tempfile

    if "--need-gpu" in sys.argv[1:]:
        blocker = gpu_check_blocker()
        sys.exit(f"harnessgen: {blocker}" if blocker else 0)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            print("CUDA toolchain:", self_check(Path(tmp)))
    except ConfigError as exc:
        sys.exit(f"harnessgen: {exc}")
