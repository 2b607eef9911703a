"""Build a CUDA kernel's harness: the kernel (post) and its reference (pre) behind DaCe's entry
points, compiled by nvcc, with the harness of cutouts. Cached by content hash like cutout
builds, in the same shape (``libpre.so``, ``libpost.so``, ``harness_afl``, ``harness_replay``,
``layout.json``, ``manifest.json``), so engines, triage and replay take either.

The kernel's device code has no AFL++ coverage (afl-cc instruments host code); the harness
object is instrumented instead, so afl-fuzz sees which decoder paths (sizes, block shapes) an
input takes. The search over launch geometry comes from the manifest's symbols.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Dict, Optional

from .. import __version__
from ..core.files import write_json
from ..core.runtime import Tolerance
from ..cuda import toolkit
from ..harness.build import AFL_CXX, AFL_ENV, compiler_versions, publish_dir, reusable
from ..harness.compiler import CXX, CXXFLAGS, RPATH, Job, run_jobs
from ..harness.built import HarnessBuild
from ..harness.emit import SideSource, render_harness, template_sources
from .spec import KernelSpec, layout as kernel_layout, render_side, side_signature

# post's launches per input while fuzzing (HARNESSGEN_REPEAT overrides): a race that changes
# the outputs of one launch in ten is still seen on most inputs that can show it
KERNEL_RUNS = 4


def cache_key(spec: KernelSpec, tolerance: Tolerance, afl: bool) -> str:
    blob = json.dumps({
        "harnessgen": __version__, "kernel": spec.digest(), "manifest": spec.manifest_text(),
        "templates": hashlib.sha256(template_sources().encode()).hexdigest(), "oracle": tolerance.to_json(),
        "nvcc": toolkit.find().version, "nvcc_flags": toolkit.nvcc_flags(), "flags": CXXFLAGS,
        "compilers": compiler_versions(afl), "afl": afl,
    }, sort_keys=True)
    return "k" + hashlib.sha256(blob.encode()).hexdigest()[:19]


def build_kernel(spec: KernelSpec, target: str, work_dir: Path, tolerance: Optional[Tolerance] = None,
                 afl: bool = True) -> HarnessBuild:
    """Build (or reuse) a kernel's harness; BuildError names the side that failed."""
    tolerance = tolerance or Tolerance()
    key = cache_key(spec, tolerance, afl)
    final = Path(work_dir) / "builds" / key
    needed = ["manifest.json", "layout.json", "libpre.so", "libpost.so", "harness_replay",
              *(["harness_afl"] if afl else [])]
    if not reusable(final, needed):
        final.parent.mkdir(parents=True, exist_ok=True)
        publish_dir(final, lambda tmp: _build_into(tmp, key, spec, target, tolerance, afl))
    return HarnessBuild.open(final)


def _build_into(out: Path, key: str, spec: KernelSpec, target: str, tolerance: Tolerance, afl: bool) -> None:
    started = time.perf_counter()
    tk = toolkit.find()
    layout = kernel_layout(spec)
    layout.save(out / "layout.json")
    instance = spec.instance(target)
    write_json(out / "instance.json", instance.to_json())
    write_json(out / "transformation.json", instance.match)
    kernel_dir = out / "kernel"
    shutil.copytree(spec.source.parent, kernel_dir, ignore=shutil.ignore_patterns("*.json"))
    write_json(kernel_dir / spec.manifest.name, instance.match)
    shutil.copy2(tk.cudart, out / tk.cudart.name)
    init_args, program_args = side_signature(spec)
    sides = {}
    for role in ("pre", "post"):
        name = f"hg_{role}"
        source = out / f"{name}.cu"
        source.write_text(render_side(spec, role))
        (out / f"exports_{name}.map").write_text(
            "{\n  global:\n" + "".join(f"    {f}_{name};\n" for f in ("__dace_init", "__dace_exit", "__program"))
            + "  local: *;\n};\n")
        sides[role] = SideSource(name=name, cpp=source, init_args=init_args, program_args=program_args, cuda=[source])
    (out / "harness.cpp").write_text(render_harness(instance.id, layout, sides["pre"], sides["post"], tolerance,
                                                    repeat=KERNEL_RUNS))
    run_jobs(_jobs(out, tk, afl))
    for obj in out.glob("*.o"):
        obj.unlink()
    manifest = {
        "key": key, "subject": "kernel", "instance": instance.id, "harnessgen": __version__,
        "compilers": compiler_versions(afl),
        "flags": CXXFLAGS, "oracle": tolerance.to_json(), "afl": afl, "cmplog": False,
        "build_seconds": round(time.perf_counter() - started, 3),
        "pre": {"name": "hg_pre", "init_args": init_args, "program_args": program_args, "gpu": "kernel" in spec.reference},
        "post": {"name": "hg_post", "init_args": init_args, "program_args": program_args, "gpu": True},
        "cuda": {"nvcc": tk.version, "flags": toolkit.nvcc_flags(), "runtime": tk.cudart.name},
        "kernel": {"name": spec.name, "kernel": spec.kernel, "source": spec.source.name,
                   "manifest": spec.manifest.name, "reference": spec.reference, "expect": spec.expect},
        "input_config": [a.name for a in spec.arrays if a.role != "out"],
        "output_config": [a.name for a in spec.arrays if a.role != "in"],
    }
    write_json(out / "manifest.json", manifest)


def _jobs(out: Path, tk: toolkit.Toolkit, afl: bool) -> Dict[str, Job]:
    cudart = str(out / tk.cudart.name)
    jobs: Dict[str, Job] = {}
    for name in ("hg_pre", "hg_post"):
        soname = "libpre.so" if name == "hg_pre" else "libpost.so"
        jobs[f"{name}.o"] = Job([str(tk.nvcc), *toolkit.nvcc_flags(), "-I", str(out / "kernel"), "-c",
                                 str(out / f"{name}.cu"), "-o", str(out / f"{name}.o")], name)
        jobs[soname] = Job([CXX, "-shared", str(out / f"{name}.o"), cudart,
                            f"-Wl,--version-script={out / f'exports_{name}.map'}", f"-Wl,-soname,{soname}", RPATH,
                            "-o", str(out / soname)], name, after=(f"{name}.o",))
    harness_cxx, env = (AFL_CXX, AFL_ENV) if afl else (CXX, {})
    jobs["harness.o"] = Job([harness_cxx, *CXXFLAGS, "-DHG_CUDA", "-isystem", str(tk.include), "-c",
                             str(out / "harness.cpp"), "-o", str(out / "harness.o")], "harness", env)
    binaries = ["harness_replay"] + (["harness_afl"] if afl else [])
    for binary in binaries:
        jobs[binary] = Job([harness_cxx, "-fopenmp", str(out / "harness.o"), str(out / "libpre.so"),
                            str(out / "libpost.so"), cudart, RPATH, "-o", str(out / binary)], "harness", env,
                           after=("harness.o", "libpre.so", "libpost.so"))
    return jobs
