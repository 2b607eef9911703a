"""The compiler calls of a build: flags, precompiled headers, the object cache shared between
builds, and compile jobs run on all cores as soon as what they need is there.

``build`` decides what a build holds and writes its sources; this module compiles them. It
knows nothing of builds as records (``built.HarnessBuild``), so a build made without its
replay binary can have it compiled from its folder (``complete_replay``) by whoever asks.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .. import __version__
from ..core import envs
from ..core.errors import BuildError, ToolMissing
from ..core.files import write_atomic
from ..dacecompat import cpp_standard, dace_identity


CXX = envs.get("HARNESSGEN_CXX")


# Same flags for pre and post: a difference must come from the transformation, never
# from the compiler. No -ffast-math, no FMA contraction, no -march=native (reproducers
# run on other machines).
# -ftrivial-auto-var-init=pattern: an automatic variable read before it is written holds the
# same pattern on every run (NaN for floating point), never what an earlier run left there.
CXXFLAGS = [f"-std=c++{cpp_standard()}", "-O2", "-fPIC", "-fopenmp", "-ffp-contract=off", "-fno-fast-math", "-w",
            "-ftrivial-auto-var-init=pattern"]


# a harness that only replays (no afl-fuzz: a pair proven equal) compiles its own code, the
# decoder and the comparison, without optimisation: they run a few hundred times there, and
# -O2 was half of its compile (0.4 s of every such build). The sides keep CXXFLAGS: what is
# judged is compiled alike in every build.
REPLAY_ONLY_HARNESS_OPT = "-O0"


def dace_include() -> Path:
    import dace

    return Path(dace.__file__).resolve().parent / "runtime" / "include"


@functools.lru_cache(maxsize=None)
def tool_version(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        raise ToolMissing(f"{tool} is not installed: run `make setup` (installs clang and afl++)")
    out = subprocess.run([path, "--version"], capture_output=True, text=True, env={**os.environ, "AFL_QUIET": "1"})
    return (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else tool


def complete_replay(out: Path) -> None:
    """Compile the replay binary of the replay-only build in ``out``, made without it
    (``build(..., replay_binary=False)``), once: concurrent callers wait for the first, and
    the binary appears whole (written beside it, then renamed)."""
    binary = out / "harness_replay"
    if binary.is_file():
        return
    import fcntl

    with open(out / ".harness_replay.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.is_file():
            return
        partial = out / "harness_replay.partial"
        posts = tuple(p.name for p in sorted(out.glob("libpost*.so")))
        job = replay_only_job(out, out / "harness.cpp", replay_only_compile_flags(out, out / "harness.cpp"),
                               (str(out / "libpre.so"), *(str(out / p) for p in posts)), posts, partial)
        run_jobs({"harness_replay": dataclasses.replace(job, after=())})     # its libraries are built
        os.replace(partial, binary)


RPATH = "-Wl,-rpath,$ORIGIN"


# LLVM's linker where it is installed (`make setup` installs it): a third of GNU ld's time per
# link (0.03 s of 0.09 s), three links a build. afl-cc's links keep its own choice of linker.
LINKER = ["-fuse-ld=lld"] if shutil.which("ld.lld") else []


def compile_flags(out: Path, cxxflags: List[str] = CXXFLAGS) -> List[str]:
    return cxxflags + ["-I", str(dace_include()), "-I", str(out / "include")]


def work_dir_of(out: Path) -> Path:
    """Where the precompiled headers live: ``out`` is ``<work>/builds/<key>.tmp-...``. System
    headers are most of a file's compile time: each compiler parses them once."""
    return Path(out).parent.parent


def replay_only_compile_flags(out: Path, harness_cpp: Path) -> List[str]:
    """How a replay-only harness compiles: its own code at ``REPLAY_ONLY_HARNESS_OPT``, with
    its precompiled headers."""
    harness_opt = replay_only_cxxflags(CXXFLAGS)
    return [*compile_flags(out, harness_opt), *header_pch(work_dir_of(out), CXX, harness_cpp, None, cxxflags=harness_opt)]


def replay_only_job(out: Path, harness_cpp: Path, compile_flags: List[str], sides: Tuple[str, ...],
                     post_libraries: Tuple[str, ...], output: Optional[Path] = None) -> Job:
    """The replay binary of a build that is never fuzzed, compiled and linked in one call (a
    separate object and link were a third of its harness's time), into ``output`` (default
    ``harness_replay``). It is kept by its source: it names its libraries by soname and the
    three entry points each exports (the export maps, among its inputs), so the same harness
    over other sides is the same binary."""
    output = output or out / "harness_replay"
    return Job([CXX, *compile_flags, *LINKER, str(harness_cpp), *sides, RPATH,
                "-o", str(output)], "harness", after=("libpre.so", *post_libraries),
               reuse=reusable_compile(out, output, harness_cpp, *sorted(out.glob("exports_*.map"))))


def replay_only_cxxflags(cxxflags: List[str]) -> List[str]:
    return [REPLAY_ONLY_HARNESS_OPT if flag.startswith("-O") else flag for flag in cxxflags]


# The templates DaCe's runtime headers instantiate themselves are instantiated once, in the PCH,
# instead of at the end of every file that includes it: loading DaCe's PCH then takes 0.03 s
# instead of 0.14 s, half of a generated side's compile (0.26 s -> 0.13 s with its link). Those
# instantiations see the headers' declarations only, never the generated code's (which declares
# nothing in DaCe's or the library's namespaces); the objects are the same bytes (checked on
# 240 generated sides of CLOUDSC; tests/integration/test_build.py on a kernel).
PCH_INSTANTIATE = ["-fpch-instantiate-templates"]


def header_pch(work_dir: Path, compiler: str, source: Path, env: Optional[Dict[str, str]] = None,
               cxxflags: Optional[List[str]] = None) -> List[str]:
    """Flags that use a precompiled header of the ``#include <...>`` lines of ``source``
    (DaCe's runtime for generated code, the C++ library for the harness), built once per
    compiler, flags and header text under ``<work>/pch/``; no flags when it cannot be built.
    A PCH only saves time (about 1.2 s of 1.5 s per generated file, 0.6 s of 1.1 s for the
    harness); it never changes what is compiled."""

    cxxflags = list(CXXFLAGS if cxxflags is None else cxxflags)
    extra = dict(env or {})
    includes = "".join(line for line in Path(source).read_text().splitlines(keepends=True)
                       if line.startswith("#include <"))
    if not includes:
        return []
    try:
        version = tool_version(compiler)
    except ToolMissing:
        return []
    # a PCH names its header by absolute path: the real folder is part of the key, so a work
    # directory reached through a link, or moved, gets PCHs of its own instead of broken ones
    root = (Path(work_dir) / "pch").resolve()
    key = hashlib.sha256(json.dumps([compiler, version, cxxflags, PCH_INSTANTIATE, dace_identity(),
                                     str(dace_include()), extra, includes, str(root)]).encode()).hexdigest()[:16]
    folder = root / key
    pch = folder / "headers.h.pch"
    if not pch.is_file():
        header = folder / "headers.h"
        if not header.is_file():   # rewriting it would give other builders' PCHs a newer input file
            write_atomic(header, includes.encode())
        tmp = folder / f".headers.h.pch.tmp-{os.getpid()}"
        for early in (PCH_INSTANTIATE, []):      # a compiler without the flag still gets a PCH
            proc = subprocess.run([compiler, *cxxflags, *early, "-I", str(dace_include()), "-c", "-x", "c++-header",
                                   str(header), "-o", str(tmp)], capture_output=True, text=True,
                                  env={**os.environ, "AFL_QUIET": "1", **extra})
            if proc.returncode == 0:
                break
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            return []
        os.replace(tmp, pch)     # concurrent builders each produce the same file; the last rename wins
    return ["-include-pch", str(pch)]


@dataclasses.dataclass
class Job:
    """One compiler call: its command, the side a failure is blamed on, extra environment,
    and the jobs whose outputs it needs. ``reuse``: a compile whose output depends on nothing
    but its command and these files (``ObjectCache``)."""

    cmd: List[str]
    side: str
    env: Dict[str, str] = dataclasses.field(default_factory=dict)
    after: Tuple[str, ...] = ()
    reuse: Optional["Reusable"] = None


@dataclasses.dataclass(frozen=True)
class Reusable:
    """What a compile's output is made from: the build folder (its path is not part of what is
    compiled), the output file, and every file of the build folder it reads."""

    out: Path
    output: Path
    inputs: Tuple[Path, ...]


class ObjectCache:
    """Compiled outputs shared between builds (``<work>/objects/``), keyed by the command (the
    build folder's path left out), its environment, the compiler's version, DaCe's version and
    the content of every input. Builds of one program repeat most of their compiles: the
    parameter variants of a match share pre and the harness, and transformations that match
    the same place cut out the same pre (CLOUDSC: 264 distinct pre libraries and 284 distinct
    harness objects in 574 builds). A source file's first line, the comment that names the
    instance it was generated for, is left out of its content."""

    def __init__(self, work_dir: Path):
        self.root = Path(work_dir) / "objects"

    def path(self, job: Job) -> Path:
        """Where the output of ``job`` is kept."""

        out = str(job.reuse.out)
        digest = hashlib.sha256(json.dumps([
            [part.replace(out, "<out>") for part in job.cmd],
            sorted((k, v.replace(out, "<out>")) for k, v in job.env.items()),
            tool_version(job.cmd[0]), dace_identity(), __version__,
        ]).encode())
        for path in sorted(job.reuse.inputs):
            digest.update(str(path).replace(out, "<out>").encode() + b"\0")
            digest.update(hashlib.sha256(_without_first_comment(path.read_bytes())).digest())
        return self.root / f"{digest.hexdigest()[:24]}-{job.reuse.output.name}"

    def run(self, name: str, job: Job):
        """The compile's output copied from the cache, or compiled and then kept (written
        atomically: another builder may read it meanwhile)."""
        cached = self.path(job)
        if cached.is_file():
            shutil.copy2(cached, job.reuse.output)
            return name, subprocess.CompletedProcess(job.cmd, 0, "", "")
        name, proc = _compile(name, job)
        if proc.returncode == 0:
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_name(f".{cached.name}.tmp-{os.getpid()}-{id(job)}")
            shutil.copy2(job.reuse.output, tmp)
            os.replace(tmp, cached)
        return name, proc


def _without_first_comment(text: bytes) -> bytes:
    """A source's content less its first line where that is a ``//`` comment (kept as an empty
    line, so every line keeps its number)."""
    if not text.startswith(b"//"):
        return text
    newline = text.find(b"\n")
    return b"\n" + text[newline + 1:] if newline >= 0 else b""


def reusable_compile(out: Path, output: Path, *sources: Path) -> Reusable:
    """A compile of ``sources`` (with their own headers beside them and the build's ``include/``)
    into ``output``."""
    found = set((out / "include").glob("*"))
    for source in sources:
        found |= set(source.parent.glob(f"{source.stem}.h*"))
    return Reusable(out, output, tuple(sorted(set(sources) | {p for p in found if p.is_file()})))


# longest first: the harness and the generated sources, then the links
def _priority(item) -> tuple:
    name, job = item
    return (len(job.after) > 0, not name.startswith("harness"), name)


def _pch_refused(stderr: str) -> bool:
    """clang did not load the precompiled header: corrupt ("AST file", "PCH"), or its header was
    written again by a concurrent builder ("has been modified since the precompiled header")."""
    return any(sign in stderr for sign in ("AST file", "PCH", "precompiled header"))


def run_job(name: str, job: "Job"):
    if job.reuse is not None:
        return ObjectCache(work_dir_of(job.reuse.out)).run(name, job)
    return _compile(name, job)


def _compile(name: str, job: "Job"):
    env = {**os.environ, "AFL_QUIET": "1", **job.env}
    proc = subprocess.run(job.cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0 and "-include-pch" in job.cmd and _pch_refused(proc.stderr):
        # a precompiled header that no longer loads only costs time: never blame the code for it
        at = job.cmd.index("-include-pch")
        proc = subprocess.run(job.cmd[:at] + job.cmd[at + 2:], capture_output=True, text=True, env=env)
    return name, proc


# characters of a failed compile's output kept: its head (the first error, which names the
# cause) and its tail (the last line, the summary)
LOG_HEAD, LOG_TAIL = 6000, 2000


def compiler_log(output: str) -> str:
    """A failed compile's output, shortened where long: a long diagnostic (an overload
    resolution lists every candidate) would push the first error out of a tail alone."""
    if len(output) <= LOG_HEAD + LOG_TAIL:
        return output
    return f"{output[:LOG_HEAD]}\n[... {len(output) - LOG_HEAD - LOG_TAIL} characters left out ...]\n{output[-LOG_TAIL:]}"


def run_jobs(jobs: Dict[str, Job], running: Optional[Dict[str, cf.Future]] = None) -> None:
    """Run compiler calls on all cores, each as soon as the jobs it needs are done (``running``:
    jobs already started elsewhere, futures of ``(name, process)``); the first failure raises
    BuildError naming its side (pre's first: when the cutout itself does not build, post's
    failure says nothing of the transformation)."""
    running = dict(running or {})
    waiting = dict(sorted(((n, j) for n, j in jobs.items() if n not in running), key=_priority))
    results: Dict[str, subprocess.CompletedProcess] = {}
    pending = set(running.values())
    with cf.ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
        while waiting or pending:
            for name in [n for n, job in waiting.items() if all(d in results for d in job.after)]:
                del waiting[name]
                if all(results[d].returncode == 0 for d in jobs[name].after):
                    pending.add(pool.submit(run_job, name, jobs[name]))
            if not pending:
                break
            done, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for future in done:
                name, proc = future.result()
                results[name] = proc
    for name, proc in sorted(results.items(), key=lambda r: (jobs[r[0]].side != "hg_pre", r[0])):
        if proc.returncode != 0:
            log = compiler_log(proc.stderr or proc.stdout)
            why = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else \
                (log.strip().splitlines()[-1] if log.strip() else f"exit {proc.returncode}, no output")
            raise BuildError(f"building {name} failed ({jobs[name].side}): {why}",
                             side=jobs[name].side, log=" ".join(jobs[name].cmd) + "\n" + log)
