"""Triage aid: a ThreadSanitizer build of post, to confirm a race and say where it is.

A value race (post's outputs differ between runs on several threads) shows *that* post
races; ThreadSanitizer shows *which statements* race, deterministically, even on runs
whose values happened to come out right. OpenMP needs LLVM's Archer tool for TSan to
understand its barriers and task joins; without it every parallel region would be reported.

Only post is instrumented: pre, the reference, stays the plain ``libpre.so`` and TSan is
told to ignore what it did not instrument. The build lives in ``<build>/tsan/`` and is
made once per harness build.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..core import envs, protocol
from ..core.errors import BuildError, ToolMissing
from ..harness.build import publish_dir, reusable
from ..harness.compiler import CXX, CXXFLAGS, Job, dace_include, run_jobs
from ..harness.built import HarnessBuild

TSAN_FLAGS = [f for f in CXXFLAGS if f != "-O2"] + ["-O1", "-g", "-fsanitize=thread"]
_ACCESS = re.compile(r"^  (?P<access>(?:Previous )?(?:[Aa]tomic )?(?:[Rr]ead|[Ww]rite)) of size (?P<size>\d+)")
_FRAME = re.compile(r"^    #\d+ (?P<func>.+?) (?P<file>[^\s:]+):(?P<line>\d+)(?::\d+)? ")


@dataclasses.dataclass
class TsanReport:
    reports: int                    # data-race reports in post
    locations: List[Dict]           # distinct racing accesses in post's source: access, file, line, code

    def to_json(self) -> Dict:
        return dataclasses.asdict(self)


def archer_library() -> Path:
    """LLVM's OpenMP TSan tool, next to the compiler that builds post (HARNESSGEN_ARCHER overrides)."""
    given = envs.get("HARNESSGEN_ARCHER")
    if given:
        path = Path(given)
    else:
        compiler = shutil.which(CXX)
        if not compiler:
            raise ToolMissing(f"{CXX} is not installed: run `make setup`")
        path = Path(compiler).resolve().parent.parent / "lib" / "libarcher.so"
    if not path.exists():
        raise ToolMissing(f"libarcher.so not found at {path}: install libomp-dev (`make setup`) "
                          "or point HARNESSGEN_ARCHER at it")
    return path


_PROBE = "int main() { return 0; }\n"
_MISSING_RUNTIME = re.compile(r"libclang_rt\.tsan[\w.-]*\.a")


@functools.lru_cache(maxsize=None)
def check_sanitizer_runtime(compiler: str = CXX, extra_flags: Tuple[str, ...] = ()) -> None:
    """Link an empty program with ``-fsanitize=thread`` once per process: a compiler without
    its ThreadSanitizer runtime is a named, actionable ToolMissing (Debian ships the runtime
    apart from clang, in libclang-rt-<major>-dev), not a link failure deep in triage."""
    path = shutil.which(compiler)
    if not path:
        raise ToolMissing(f"{compiler} is not installed: run `make setup` (or set HARNESSGEN_CXX)")
    with tempfile.TemporaryDirectory(prefix="hg-tsan-probe-") as tmp:
        source = Path(tmp) / "probe.cpp"
        source.write_text(_PROBE)
        proc = subprocess.run([path, "-fsanitize=thread", *extra_flags, str(source), "-o", str(Path(tmp) / "probe")],
                              capture_output=True, text=True)
    if proc.returncode == 0:
        return
    log = (proc.stderr or proc.stdout).strip()
    if _MISSING_RUNTIME.search(log):
        raise ToolMissing(f"the ThreadSanitizer runtime of {compiler} is not installed: install "
                          f"{runtime_package(path)} (`make setup` does) or point HARNESSGEN_CXX at a clang that has it")
    raise BuildError(f"{compiler} -fsanitize=thread cannot link an empty program: "
                     f"{log.splitlines()[-1] if log else proc.returncode}", side="hg_post", log=log)


def runtime_package(compiler_path: str) -> str:
    """The Debian package holding clang's sanitizer runtimes for this compiler's major version."""
    out = subprocess.run([compiler_path, "--version"], capture_output=True, text=True).stdout
    major = re.search(r"clang version (\d+)", out)
    return f"libclang-rt-{major[1]}-dev" if major else "libclang-rt-<version>-dev"


def build_tsan(build: HarnessBuild) -> Path:
    """The TSan replay binary of this build (made once, published atomically)."""
    final = build.dir / "tsan"
    if not reusable(final, ["harness_tsan"]):
        check_sanitizer_runtime()
        publish_dir(final, lambda tmp: _compile_tsan(build, tmp))
    return final / "harness_tsan"


def _compile_tsan(build: HarnessBuild, out: Path) -> None:
    post_cpp = build.dir / "src" / "cpu" / f"{build.manifest['post']['name']}.cpp"
    flags = TSAN_FLAGS + ["-I", str(dace_include()), "-I", str(build.dir / "include")]
    run_jobs({
        "libpost_tsan.so": Job([CXX, *flags, str(post_cpp), "-shared",
                                f"-Wl,--version-script={build.dir / 'exports_hg_post.map'}",
                                "-Wl,-soname,libpost_tsan.so", "-o", str(out / "libpost_tsan.so")], "hg_post"),
        # $ORIGIN/.. finds the plain libpre.so of the build
        "harness_tsan": Job([CXX, *flags, str(build.dir / "harness.cpp"), str(build.libpre),
                             str(out / "libpost_tsan.so"), "-Wl,-rpath,$ORIGIN:$ORIGIN/..",
                             "-o", str(out / "harness_tsan")], "harness", after=("libpost_tsan.so",)),
    })


def run_tsan(build: HarnessBuild, data: bytes, threads: int, timeout_s: float = 120.0) -> TsanReport:
    """Run post on ``threads`` OpenMP threads under TSan and collect the racing statements."""
    binary = build_tsan(build)
    run = protocol.run_native(binary, data, protocol.HarnessEnv(threads=threads), timeout_s, extra_env={
        "OMP_TOOL_LIBRARIES": str(archer_library()),
        "TSAN_OPTIONS": "ignore_noninstrumented_modules=1 halt_on_error=0 exitcode=0 symbolize=1"})
    if run.timed_out:
        raise subprocess.TimeoutExpired([str(binary), "-"], timeout_s)
    log = run.stderr
    if "ThreadSanitizer" in log and "failed to" in log and "data race" not in log:
        raise BuildError(f"ThreadSanitizer did not start: {log.strip().splitlines()[-1]}", side="hg_post", log=log)
    post_cpp = f"{build.manifest['post']['name']}.cpp"
    return TsanReport(reports=log.count("WARNING: ThreadSanitizer: data race"), locations=_locations(log, post_cpp))


def _locations(log: str, post_cpp: str) -> List[Dict]:
    """Each access of each report, placed at its innermost frame inside post's generated source
    (inlined DaCe runtime copies are attributed to the statement that called them)."""
    seen, found = set(), []
    access = None
    for line in log.splitlines():
        head = _ACCESS.match(line)
        if head:
            access = head["access"].lower().replace("previous ", "")
            continue
        frame = _FRAME.match(line)
        if access is None or not frame or Path(frame["file"]).name != post_cpp:
            if not line.startswith("    #"):
                access = None
            continue
        where = (access, int(frame["line"]))
        access = None
        if where not in seen:
            seen.add(where)
            found.append({"access": where[0], "file": post_cpp, "line": where[1],
                          "code": _source_line(Path(frame["file"]), where[1])})
    return sorted(found, key=lambda f: (f["line"], f["access"]))


def _source_line(path: Path, line: int) -> Optional[str]:
    try:
        return path.read_text().splitlines()[line - 1].strip()
    except (OSError, IndexError):
        return None
