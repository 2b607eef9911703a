"""Stage 5b: compile pre, post and the harness; cached by content hash.

Artifacts of one build directory (``<work>/builds/<key>/``):

* ``libpre.so`` / ``libpost.so``  plain shared libraries (cffi replay, replay binary);
  only the three DaCe entry points are exported, so pre and post never clash
* ``harness_afl``     persistent-mode AFL++ harness: only post instrumented (the
                      harness's and pre's coverage would only add noise), pre
                      linked from ``libpre.so``
* ``harness_cmplog``  the same built with AFL++'s CMPLOG instrumentation (optional)
* ``harness_replay``  the same harness object: runs the input files it is given
* ``layout.json``, ``pre.sdfg``, ``post.sdfg``, ``instance.json``, ``manifest.json``

Builds are written to a temporary directory and renamed into place, so
parallel builds of the same key never see half a build.
"""
from __future__ import annotations

import concurrent.futures as cf
import copy
import dataclasses
import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .. import __version__
from ..core import envs
from ..core.errors import BuildError, ToolMissing
from ..core.files import write_atomic, write_json
from ..core.runtime import Tolerance
from ..cuda import toolkit as cuda_toolkit
from ..cutout.extract import CutoutPair
from ..dacecompat import copy_sdfg, cpp_standard, sdfg_json, template_identity
from ..inputs.layout import InputLayout
from .built import HarnessBuild
from .codegen_causes import Cause, CauseRegistry, all_from_compiler_output
from .emit import FRESH_STATE_HEADER, SideSource, generate_side, render_harness, template_sources

CXX = envs.get("HARNESSGEN_CXX")
AFL_CXX = envs.get("HARNESSGEN_AFL_CXX")
# Same flags for pre and post: a difference must come from the transformation, never
# from the compiler. No -ffast-math, no FMA contraction, no -march=native (reproducers
# run on other machines).
# -ftrivial-auto-var-init=pattern: an automatic variable read before it is written holds the
# same pattern on every run (NaN for floating point), never what an earlier run left there.
CXXFLAGS = [f"-std=c++{cpp_standard()}", "-O2", "-fPIC", "-fopenmp", "-ffp-contract=off", "-fno-fast-math", "-w",
            "-ftrivial-auto-var-init=pattern"]
# The generated code of each side (pre and post) allocates from templates/fresh_state.h: every
# heap block starts as the same bytes, so a transient read before it is written is a
# deterministic difference, not whatever the other side left in the block it freed.
SIDE_FLAGS = ["-include", str(FRESH_STATE_HEADER)]
# a harness that only replays (no afl-fuzz: a pair proven equal) compiles its own code, the
# decoder and the comparison, without optimisation: they run a few hundred times there, and
# -O2 was half of its compile (0.4 s of every such build). The sides keep CXXFLAGS: what is
# judged is compiled alike in every build.
REPLAY_ONLY_HARNESS_OPT = "-O0"
# afl-cc adds -g and -funroll-loops unless told not to: our flags stay the only ones, so the
# instrumented post is compiled as libpost.so is (and without debug info, a third faster)
AFL_ENV = {"AFL_DONT_OPTIMIZE": "1"}


def dace_include() -> Path:
    import dace

    return Path(dace.__file__).resolve().parent / "runtime" / "include"


@functools.lru_cache(maxsize=None)
def _tool_version(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        raise ToolMissing(f"{tool} is not installed: run `make setup` (installs clang and afl++)")
    out = subprocess.run([path, "--version"], capture_output=True, text=True, env={**os.environ, "AFL_QUIET": "1"})
    return (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else tool


def compiler_versions(afl: bool) -> Dict[str, str]:
    versions = {"cxx": _tool_version(CXX)}
    if afl:
        versions["afl_cxx"] = _tool_version(AFL_CXX)
    return versions


def cache_key(pair: CutoutPair, layout: InputLayout, tolerance: Tolerance, afl: bool, cmplog: bool,
              saved: Optional["SavedSides"] = None) -> str:
    """Everything that decides what a build holds: the pair (its two programs, and what the
    instance reads and writes of them), the layout and oracle, the templates, compilers and
    flags, and its flavour (an AFL harness, a CMPLOG one, or a replay-only harness compiled at
    ``REPLAY_ONLY_HARNESS_OPT``). Two pairs with one key are bound to give the same build
    (``saved``: the pair's sides serialised already)."""
    import dace

    saved = saved or SavedSides.of(pair)

    blob = json.dumps({
        "harnessgen": __version__, "dace": dace.__version__, "pre": saved.pre_hash,
        "post": saved.post_hash, "configs": _pair_configs(pair), "layout": layout.to_json(),
        "oracle": tolerance.to_json(), "templates": hashlib.sha256(template_sources().encode()).hexdigest(),
        "flags": CXXFLAGS, "linker": LINKER, "compilers": compiler_versions(afl), "afl_env": AFL_ENV,
        "flavour": _flavour(afl, cmplog), "fresh_state": bool(SIDE_FLAGS), "cuda": _cuda_key(pair),
    }, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


@dataclasses.dataclass(frozen=True)
class SavedSides:
    """Pre and post as DaCe saves them, each with its hash among its attributes: one
    serialisation of each side serves the build's key, pre's failure record and the files the
    build keeps (each made one of its own, a tenth of a small pair's build)."""

    pre: Dict
    post: Dict

    @classmethod
    def of(cls, pair: CutoutPair) -> "SavedSides":
        return cls(pair.pre.to_json(hash=True), pair.post.to_json(hash=True))

    @property
    def pre_hash(self) -> str:
        return self.pre["attributes"]["hash"]

    @property
    def post_hash(self) -> str:
        return self.post["attributes"]["hash"]

    def write(self, out: Path) -> None:
        """``pre.sdfg`` and ``post.sdfg``, as ``SDFG.save`` writes them."""
        import dace

        for name, saved in (("pre.sdfg", self.pre), ("post.sdfg", self.post)):
            with open(out / name, "w") as fp:
                dace.serialize.dump(saved, fp)


def _pair_configs(pair: CutoutPair) -> Dict:
    """What a build's manifest records of its pair besides the two programs (what triage reads
    back from a build: the same programs with other configurations are another build)."""
    return {"input": sorted(pair.input_config), "output": sorted(pair.output_config), "aliases": pair.aliases}


def _flavour(afl: bool, cmplog: bool) -> Dict:
    """The binaries a build holds, and how its harness is compiled for them."""
    return {"afl": afl, "cmplog": cmplog,
            "harness_opt": None if afl or cmplog else REPLAY_ONLY_HARNESS_OPT}


def artifacts(afl: bool, cmplog: bool) -> List[str]:
    """What a finished build of that flavour holds: a cached build is used only when all of
    them are there. A replay-only build's binary may come later (``complete_replay``)."""
    fuzzing = afl or cmplog
    return ["manifest.json", "layout.json", "pre.sdfg", "post.sdfg", "libpre.so", "libpost.so",
            *(["harness_replay"] if fuzzing else []), *(["harness_afl"] if afl else []),
            *(["harness_cmplog"] if cmplog else [])]


def reusable(final: Path, needed: List[str]) -> bool:
    """Whether the cached build ``final`` holds every artifact in ``needed``. One that is there
    but incomplete (a file deleted, a disk cleaned) is put aside, to be built again: a missing
    artifact is built, never assumed."""
    if not final.is_dir():
        return False
    if all((final / name).is_file() for name in needed):
        return True
    aside = final.with_name(f"{final.name}.incomplete-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.rename(final, aside)
    except OSError:          # another process put it aside (or rebuilt it) first
        return all((final / name).is_file() for name in needed)
    shutil.rmtree(aside, ignore_errors=True)
    return False


def _cuda_key(pair: CutoutPair) -> Optional[List[str]]:
    if not (cuda_toolkit.uses_gpu(pair.pre) or cuda_toolkit.uses_gpu(pair.post)):
        return None
    # the compat header by content, not by path: a build cache is shared between checkouts
    return [cuda_toolkit.find().version, *cuda_toolkit.dace_nvcc_base_flags(), COMPAT_DIGEST]


COMPAT_DIGEST = hashlib.sha256(cuda_toolkit.COMPAT_HEADER.read_bytes()).hexdigest()[:12]


def build(pair: CutoutPair, layout: InputLayout, work_dir: Path, tolerance: Optional[Tolerance] = None,
          afl: bool = True, cmplog: bool = False, replay_binary: bool = True) -> HarnessBuild:
    """Build (or reuse) everything an instance needs; raises BuildError with the failing side.
    ``replay_binary=False`` (a replay-only build, its inputs screened through cffi first: a
    pair proven equal): the libraries without the replay binary, which ``complete_replay``
    compiles the first time it is asked for."""
    tolerance = tolerance or Tolerance()
    saved = SavedSides.of(pair)
    key = cache_key(pair, layout, tolerance, afl, cmplog, saved)
    final = Path(work_dir) / "builds" / key
    if not reusable(final, artifacts(afl, cmplog)):
        final.parent.mkdir(parents=True, exist_ok=True)
        failed = final.parent / f"pre-failed-{_pre_key(saved.pre_hash, layout, afl)}.json"
        if failed.is_file():           # this pre did not build before: every pair with it fails alike
            raise BuildError(**json.loads(failed.read_text()))
        try:
            publish_dir(final, lambda tmp: _build_into(tmp, key, pair, layout, tolerance, afl, cmplog, saved,
                                                       replay_binary))
        except BuildError as exc:
            # a compiler's diagnostic (not a killed compiler, nor a known cause matched without compiling)
            if exc.side == "hg_pre" and exc.first_error and not exc.cause:
                write_json(failed, {"message": str(exc), "side": exc.side, "log": exc.log})
            raise
    built = HarnessBuild.open(final)
    if replay_binary:
        complete_replay(built)
    return built


def complete_replay(built: HarnessBuild) -> None:
    """Compile the replay binary of a replay-only build made without it (``build(...,
    replay_binary=False)``), once: concurrent callers wait for the first, and the binary
    appears whole (written beside it, then renamed)."""
    out = built.dir
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
        job = _replay_only_job(out, out / "harness.cpp", _replay_only_flags(out, out / "harness.cpp"),
                               (str(out / "libpre.so"), *(str(out / p) for p in posts)), posts, partial)
        run_jobs({"harness_replay": dataclasses.replace(job, after=())})     # its libraries are built
        os.replace(partial, binary)


def pair_of(built: HarnessBuild, instance) -> CutoutPair:
    """The pair a build was made of, read back from its folder (``instance``: whose it is now:
    builds are shared by content)."""
    import dace

    manifest = built.manifest
    match = json.loads((built.dir / "transformation.json").read_text())
    return CutoutPair(instance=instance, pre=dace.SDFG.from_file(str(built.dir / "pre.sdfg")),
                      post=dace.SDFG.from_file(str(built.dir / "post.sdfg")), input_config=manifest["input_config"],
                      output_config=manifest["output_config"], program_sdfg=None, translated_match=match,
                      aliases=manifest.get("aliases", []), grown_for=manifest.get("grown_for", ""))


def with_afl(built: HarnessBuild, instance, work_dir: Path, cmplog: bool = False) -> HarnessBuild:
    """The build of the same pair that afl-fuzz can run: ``built`` where it has its AFL harness,
    else that pair built again with it (a pair built for replay only, because a proof was to
    settle it, that must be fuzzed after all). What the folder kept besides the build (its
    constraints, its proof) comes along."""
    if built.harness_afl.is_file() and (built.harness_cmplog is not None or not cmplog):
        return built
    fuzzable = build(pair_of(built, instance), built.layout, work_dir, built.tolerance, afl=True, cmplog=cmplog)
    for kept in [*built.dir.glob("proof-*.json"), built.dir / "constraints.json"]:
        if kept.is_file() and not (fuzzable.dir / kept.name).exists():
            write_atomic(fuzzable.dir / kept.name, kept.read_bytes())
    return fuzzable


def _pre_key(pre_hash: str, layout: InputLayout, afl: bool) -> str:
    """What pre's library depends on: the same program built against the same layout with the
    same compilers fails the same way, whatever post is (the whole program as its frontend
    wrote it is pre of every pass instance judged whole)."""
    import dace

    blob = json.dumps({"harnessgen": __version__, "dace": dace.__version__, "pre": pre_hash,
                       "layout": layout.to_json(), "flags": CXXFLAGS, "compilers": compiler_versions(afl),
                       "templates": hashlib.sha256(template_sources().encode()).hexdigest()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def publish_dir(final: Path, fill) -> None:
    """Fill a temporary sibling of ``final`` and rename it into place: nobody ever sees half a
    directory, a failed fill leaves nothing behind, and of two processes filling the same
    directory the first to publish wins (the other's copy is dropped)."""
    tmp = Path(tempfile.mkdtemp(prefix=f"{final.name}.tmp-", dir=final.parent))
    try:
        fill(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        os.rename(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def _build_into(out: Path, key: str, pair: CutoutPair, layout: InputLayout, tolerance: Tolerance,
                afl: bool, cmplog: bool, saved: "SavedSides", replay_binary: bool = True) -> Dict:
    started = time.perf_counter()
    pre = generate_side(pair.pre, out)
    _refuse_known_cause(out, pre, pair.pre, afl)          # before anything else is written: seconds for a whole program
    saved.write(out)
    layout.save(out / "layout.json")
    (out / "instance.json").write_text(json.dumps(pair.instance.to_json(), indent=1))
    (out / "transformation.json").write_text(json.dumps(pair.translated_match, indent=1, default=str))
    # DaCe generates post (Python) while pre compiles
    with cf.ThreadPoolExecutor(max_workers=1) as early:
        pre_library = _library_job(out, pre, "libpre.so")
        pre_cuda = _cuda_jobs(out, pre)
        running = {} if pre_cuda else {"libpre.so": early.submit(_run_job, "libpre.so", pre_library)}
        post = generate_side(pair.post, out)
        codegen_s = time.perf_counter() - started
        (out / "harness.cpp").write_text(render_harness(pair.instance.id, layout, pre, post, tolerance))
        run_jobs({"libpre.so": pre_library, **pre_cuda, **_jobs_after_pre(out, [post], afl, cmplog, replay_binary)},
                 running)
    for obj in out.glob("*.o"):
        obj.unlink()

    import dace

    manifest = {
        "key": key, "subject": "sdfg", "instance": pair.instance.id, "harnessgen": __version__,
        "dace": dace.__version__,
        "compilers": compiler_versions(afl), "flags": CXXFLAGS, "oracle": tolerance.to_json(),
        "afl": afl, "cmplog": cmplog, "codegen_seconds": round(codegen_s, 3),
        "build_seconds": round(time.perf_counter() - started, 3),
        "pre": {"name": pre.name, "init_args": pre.init_args, "program_args": pre.program_args, "gpu": pre.on_gpu},
        "post": {"name": post.name, "init_args": post.init_args, "program_args": post.program_args,
                 "gpu": post.on_gpu},
        "cuda": _cuda_manifest(pre, post),
        "input_config": pair.input_config, "output_config": pair.output_config,
        "aliases": pair.aliases, "grown_for": pair.grown_for,
        # a replay-only CPU build left its binary for later (``complete_replay``)
        "replay_deferred": not (replay_binary or afl or cmplog or pre.on_gpu or post.on_gpu),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


RPATH = "-Wl,-rpath,$ORIGIN"
# LLVM's linker where it is installed (`make setup` installs it): a third of GNU ld's time per
# link (0.03 s of 0.09 s), three links a build. afl-cc's links keep its own choice of linker.
LINKER = ["-fuse-ld=lld"] if shutil.which("ld.lld") else []


def cause_registry(work_dir: Path, afl: bool) -> CauseRegistry:
    """The constructs this DaCe and these compilers are known not to build (codegen_causes)."""
    import dace

    versions = json.dumps({"dace": dace.__version__, "compilers": compiler_versions(afl), "flags": CXXFLAGS},
                          sort_keys=True)
    return CauseRegistry(work_dir, versions)


def _refuse_known_cause(out: Path, pre: SideSource, pre_sdfg, afl: bool) -> None:
    """Pre holds a construct that failed to compile before, in a program DaCe made, with its
    names of the same kinds: stop before the compiler runs."""
    if pre.cpp is None or not pre.cpp.is_file():
        return
    cause = cause_registry(_work_dir(out), afl).match(pre.cpp.read_text(), pre.name, pre_sdfg)
    if cause is not None:
        raise BuildError(f"pre holds a construct DaCe's code generator cannot compile: {cause.describe()}",
                         side=pre.name, log=f"not compiled: known cause {cause.id}\n{cause.log}", cause=cause.id)


def _cuda_manifest(*sides: SideSource) -> Optional[Dict]:
    """What a GPU build was made with; None for a CPU-only build."""
    if not any(side.on_gpu for side in sides):
        return None
    toolkit = cuda_toolkit.find()
    return {"nvcc": toolkit.version, "flags": cuda_toolkit.dace_nvcc_flags()[:-1] + ["cccl3_compat.h"],
            "runtime": toolkit.cudart.name}


def _flags(out: Path, cxxflags: List[str] = CXXFLAGS) -> List[str]:
    return cxxflags + ["-I", str(dace_include()), "-I", str(out / "include")]


def _work_dir(out: Path) -> Path:
    """Where the precompiled headers live: ``out`` is ``<work>/builds/<key>.tmp-...``. System
    headers are most of a file's compile time: each compiler parses them once."""
    return Path(out).parent.parent


def _library_job(out: Path, side: SideSource, soname: str) -> "Job":
    """A side's plain shared library, exporting only DaCe's entry points (a GPU side: its
    frame code, its CUDA objects and the CUDA runtime, found beside the library)."""
    host = (cuda_toolkit.dace_host_flags() if side.on_gpu
            else header_pch(_work_dir(out), CXX, side.cpp))
    exports = out / f"exports_{side.name}.map"
    return Job([CXX, *_flags(out), *host, *SIDE_FLAGS, str(side.cpp), *_cuda_link(out, side), *LINKER, "-shared",
                f"-Wl,--version-script={exports}", f"-Wl,-soname,{soname}", RPATH, "-o",
                str(out / soname)], side.name, after=tuple(o.name for o in _cuda_objects(out, side)),
               reuse=None if side.on_gpu else _reusable(out, out / soname, side.cpp, exports, FRESH_STATE_HEADER))


def _cuda_objects(out: Path, side: SideSource) -> List[Path]:
    return [out / f"{side.name}_cuda{i}.o" for i in range(len(side.cuda))]


def _cuda_link(out: Path, side: SideSource) -> List[str]:
    """What a binary holding this side links besides its frame code."""
    if not side.on_gpu:
        return []
    return [*map(str, _cuda_objects(out, side)), str(out / cuda_toolkit.find().cudart.name)]


def _cuda_jobs(out: Path, side: SideSource) -> Dict[str, "Job"]:
    """nvcc calls for a GPU side's CUDA files; the runtime library is copied into the build so
    the build (and a reproducer made from it) runs wherever a driver is."""
    if not side.on_gpu:
        return {}
    toolkit = cuda_toolkit.find()
    if not (out / toolkit.cudart.name).exists():
        shutil.copy2(toolkit.cudart, out / toolkit.cudart.name)
    return {obj.name: Job([str(toolkit.nvcc), *cuda_toolkit.dace_nvcc_flags(), "-I", str(dace_include()), "-I",
                           str(out / "include"), "-c", str(cu), "-o", str(obj)], side.name)
            for cu, obj in zip(side.cuda, _cuda_objects(out, side))}


def _jobs_after_pre(out: Path, posts: List[SideSource], afl: bool, cmplog: bool,
                    replay_binary: bool = True) -> Dict[str, "Job"]:
    """Everything after pre's library: each post's, the harness object (``harness.cpp`` written)
    and the binaries (one post: ``libpost.so``, ``post_afl.o``; several: named after each).
    ``replay_binary=False``: a replay-only build of CPU code leaves its binary for later."""
    flags, work_dir, harness_cpp = _flags(out), _work_dir(out), out / "harness.cpp"
    gpu = any(post.on_gpu for post in posts)
    # the harness's own code is never instrumented: its coverage is the decoder's and the
    # comparison's, the same for every input; instrumenting it tripled its compile time
    (out / "afl_denylist.txt").write_text("src: harness.cpp\n")
    # one harness object for every binary: with AFL++, afl-cc compiles it (its macros make the
    # persistent loop) and links it (its runtime), the replay binary included
    harness_cxx, harness_env = (AFL_CXX, {**AFL_ENV, "AFL_LLVM_DENYLIST": str(out / "afl_denylist.txt")}) \
        if afl else (CXX, {})
    libraries = {post.name: "libpost.so" if len(posts) == 1 else f"lib{post.name}.so" for post in posts}
    jobs: Dict[str, Job] = {}
    for post in posts:
        jobs.update(_cuda_jobs(out, post))
        jobs[libraries[post.name]] = _library_job(out, post, libraries[post.name])
    sides = (str(out / "libpre.so"), *(str(out / lib) for lib in libraries.values()))
    if not (afl or cmplog or gpu):
        if replay_binary:
            jobs["harness_replay"] = _replay_only_job(out, harness_cpp, _replay_only_flags(out, harness_cpp), sides,
                                                      tuple(libraries.values()))
        return jobs
    harness_opt = CXXFLAGS if afl or cmplog else _replay_only(CXXFLAGS)
    harness_pch = [] if gpu else header_pch(work_dir, harness_cxx, harness_cpp, AFL_ENV if afl else None,
                                            cxxflags=harness_opt)
    harness_flags = ["-DHG_CUDA", "-isystem", str(cuda_toolkit.find().include)] if gpu else []
    jobs["harness.o"] = Job([harness_cxx, *_flags(out, harness_opt), *harness_flags, *harness_pch, "-c",
                             str(harness_cpp), "-o", str(out / "harness.o")], "harness", harness_env,
                            reuse=None if gpu else _reusable(out, out / "harness.o", harness_cpp,
                                                             *([out / "afl_denylist.txt"] if afl else [])))
    jobs["harness_replay"] = Job([harness_cxx, *([] if afl else LINKER), "-fopenmp", str(out / "harness.o"),
                                  *sides, *_cuda_link(out, posts[0])[-1:],
                                  RPATH, "-o", str(out / "harness_replay")], "harness", AFL_ENV if afl else {},
                                 after=("harness.o", "libpre.so", *libraries.values()))
    if afl or cmplog:
        # the fuzzing harness links post's object itself: its allocator comes from an object of its
        # own, compiled without AFL++'s instrumentation (instrumented, every allocation of the
        # harness's decoder was coverage that depends on the run before: 70 % stability, and the
        # planted FastExpBand went unfound in 1.8 million executions)
        jobs["fresh_state.o"] = Job([CXX, *CXXFLAGS, "-x", "c++", "-c", str(FRESH_STATE_HEADER), "-o",
                                     str(out / "fresh_state.o")], "harness",
                                    reuse=_reusable(out, out / "fresh_state.o", FRESH_STATE_HEADER))
    cmplog_env = {**AFL_ENV, "AFL_LLVM_CMPLOG": "1"}
    for variant, env in (("afl", AFL_ENV), ("cmplog", cmplog_env)):
        if not (afl if variant == "afl" else cmplog):
            continue
        objects = []
        for post in posts:
            obj = f"post_{variant}.o" if len(posts) == 1 else f"{post.name}_{variant}.o"
            post_host = cuda_toolkit.dace_host_flags() if post.on_gpu else header_pch(work_dir, AFL_CXX, post.cpp, env)
            jobs[obj] = Job([AFL_CXX, *flags, *post_host, "-c", str(post.cpp), "-o", str(out / obj)], "hg_post", env,
                            reuse=None if post.on_gpu else _reusable(out, out / obj, post.cpp))
            objects.append(obj)
        cuda_objects = tuple(o.name for post in posts for o in _cuda_objects(out, post))
        jobs[f"harness_{variant}"] = Job([AFL_CXX, "-fopenmp", str(out / "harness.o"), *(str(out / o) for o in objects),
                                          str(out / "fresh_state.o"), *_cuda_link(out, posts[0]),
                                          str(out / "libpre.so"), RPATH, "-o", str(out / f"harness_{variant}")],
                                         "harness", env,
                                         after=("harness.o", *objects, "fresh_state.o", "libpre.so", *cuda_objects))
    return jobs


def _replay_only_flags(out: Path, harness_cpp: Path) -> List[str]:
    """How a replay-only harness compiles: its own code at ``REPLAY_ONLY_HARNESS_OPT``, with
    its precompiled headers."""
    harness_opt = _replay_only(CXXFLAGS)
    return [*_flags(out, harness_opt), *header_pch(_work_dir(out), CXX, harness_cpp, None, cxxflags=harness_opt)]


def _replay_only_job(out: Path, harness_cpp: Path, compile_flags: List[str], sides: Tuple[str, ...],
                     post_libraries: Tuple[str, ...], output: Optional[Path] = None) -> Job:
    """The replay binary of a build that is never fuzzed, compiled and linked in one call (a
    separate object and link were a third of its harness's time), into ``output`` (default
    ``harness_replay``). It is kept by its source: it names its libraries by soname and the
    three entry points each exports (the export maps, among its inputs), so the same harness
    over other sides is the same binary."""
    output = output or out / "harness_replay"
    return Job([CXX, *compile_flags, *LINKER, str(harness_cpp), *sides, RPATH,
                "-o", str(output)], "harness", after=("libpre.so", *post_libraries),
               reuse=_reusable(out, output, harness_cpp, *sorted(out.glob("exports_*.map"))))


def build_variants(pairs: List[CutoutPair], layout: InputLayout, work_dir: Path,
                   tolerance: Optional[Tolerance] = None) -> HarnessBuild:
    """One harness holding the posts of several pairs that share pre and layout (the parameter
    variants of one match): an input's first byte picks the post, the rest is its input. What
    ``bench/params_modes.py`` measures against one build per variant; its binaries are
    ``harness_afl`` and ``harness_replay`` (no libraries for cffi)."""
    import dace

    tolerance = tolerance or Tolerance()
    key = hashlib.sha256(json.dumps(["variants", *(cache_key(p, layout, tolerance, True, False) for p in pairs)])
                         .encode()).hexdigest()[:20]
    final = Path(work_dir) / "builds" / key
    if reusable(final, ["manifest.json", "layout.json", "harness_afl", "harness_replay"]):
        return HarnessBuild.open(final)
    final.parent.mkdir(parents=True, exist_ok=True)

    def fill(out: Path) -> None:
        started = time.perf_counter()
        layout.save(out / "layout.json")
        pre = generate_side(pairs[0].pre, out)
        posts = []
        for k, pair in enumerate(pairs):
            post = copy.deepcopy(pair.post)
            post.name = f"{post.name}{k}"          # distinct entry points: every post links into one binary
            posts.append(generate_side(post, out))
        (out / "harness.cpp").write_text(render_harness(pairs[0].instance.match_id, layout, pre, posts[0],
                                                        tolerance, more_posts=posts[1:]))
        run_jobs({"libpre.so": _library_job(out, pre, "libpre.so"), **_jobs_after_pre(out, posts, True, False)})
        for obj in out.glob("*.o"):
            obj.unlink()
        write_json(out / "manifest.json", {
            "key": key, "subject": "sdfg", "instance": pairs[0].instance.match_id, "harnessgen": __version__,
            "dace": dace.__version__, "compilers": compiler_versions(True), "flags": CXXFLAGS,
            "oracle": tolerance.to_json(), "afl": True, "cmplog": False, "cuda": None,
            "variants": [p.instance.id for p in pairs], "posts": [p.name for p in posts],
            "build_seconds": round(time.perf_counter() - started, 3)})

    publish_dir(final, fill)
    return HarnessBuild.open(final)


def _replay_only(cxxflags: List[str]) -> List[str]:
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
    import dace

    cxxflags = list(CXXFLAGS if cxxflags is None else cxxflags)
    extra = dict(env or {})
    includes = "".join(line for line in Path(source).read_text().splitlines(keepends=True)
                       if line.startswith("#include <"))
    if not includes:
        return []
    try:
        version = _tool_version(compiler)
    except ToolMissing:
        return []
    # a PCH names its header by absolute path: the real folder is part of the key, so a work
    # directory reached through a link, or moved, gets PCHs of its own instead of broken ones
    root = (Path(work_dir) / "pch").resolve()
    key = hashlib.sha256(json.dumps([compiler, version, cxxflags, PCH_INSTANTIATE, dace.__version__,
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
        import dace

        out = str(job.reuse.out)
        digest = hashlib.sha256(json.dumps([
            [part.replace(out, "<out>") for part in job.cmd],
            sorted((k, v.replace(out, "<out>")) for k, v in job.env.items()),
            _tool_version(job.cmd[0]), dace.__version__, __version__,
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


def _reusable(out: Path, output: Path, *sources: Path) -> Reusable:
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


def _run_job(name: str, job: "Job"):
    if job.reuse is not None:
        return ObjectCache(_work_dir(job.reuse.out)).run(name, job)
    return _compile(name, job)


def _compile(name: str, job: "Job"):
    env = {**os.environ, "AFL_QUIET": "1", **job.env}
    proc = subprocess.run(job.cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0 and "-include-pch" in job.cmd and _pch_refused(proc.stderr):
        # a precompiled header that no longer loads only costs time: never blame the code for it
        at = job.cmd.index("-include-pch")
        proc = subprocess.run(job.cmd[:at] + job.cmd[at + 2:], capture_output=True, text=True, env=env)
    return name, proc


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
                    pending.add(pool.submit(_run_job, name, jobs[name]))
            if not pending:
                break
            done, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for future in done:
                name, proc = future.result()
                results[name] = proc
    for name, proc in sorted(results.items(), key=lambda r: (jobs[r[0]].side != "hg_pre", r[0])):
        if proc.returncode != 0:
            log = (proc.stderr or proc.stdout)[-4000:]
            why = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else \
                (log.strip().splitlines()[-1] if log.strip() else f"exit {proc.returncode}, no output")
            raise BuildError(f"building {name} failed ({jobs[name].side}): {why}",
                             side=jobs[name].side, log=" ".join(jobs[name].cmd) + "\n" + log)


def source_files(build_dir: Path) -> List[Path]:
    return sorted(Path(build_dir).rglob("*.cpp"))


def compile_errors(sdfg, every_error: bool = False, work_dir: Optional[Path] = None) -> Optional[str]:
    """What the compiler says about the code DaCe generates for ``sdfg`` (``-fsyntax-only``,
    with the flags harnesses build with; ``every_error``: not only the first twenty;
    ``work_dir``: with its precompiled headers, a fraction of the time); None when it compiles."""
    limit = ["-ferror-limit=0"] if every_error and "clang" in Path(CXX).name else []
    with tempfile.TemporaryDirectory(prefix="hg-syntax-") as tmp:
        out = Path(tmp)
        try:
            side = generate_side(sdfg, out)
        except BuildError as exc:
            return f"{exc}\n{exc.log}"
        pch = header_pch(work_dir, CXX, side.cpp) if work_dir is not None else []
        proc = subprocess.run([CXX, *_flags(out), *pch, *SIDE_FLAGS, "-fsyntax-only", *limit, str(side.cpp)],
                              capture_output=True, text=True)
    return None if proc.returncode == 0 else f"building {sdfg.name} failed\n{proc.stderr}"


def program_compile_causes(program_sdfg, work_dir: Path, afl: bool) -> List[Cause]:
    """Every error the compiler reports for the code DaCe generates for a program as DaCe made
    it (no cutout, no stand-in of harnessgen's); ``[]`` where it compiles. Asked once per
    program, DaCe and compilers (kept in the cause registry): a build failure of a cutout is
    DaCe's only where its program fails alike."""
    registry = cause_registry(work_dir, afl)
    key = program_key(program_sdfg)
    known = registry.program_causes(key)
    if known is not None:
        return known
    errors = compile_errors(copy_sdfg(program_sdfg), every_error=True, work_dir=work_dir)
    causes = [] if errors is None else all_from_compiler_output(errors, program_sdfg.name) or [
        Cause(message="no compiler error", line=errors.splitlines()[0][:300])]
    registry.record_program_causes(key, causes)
    return causes


def program_fails_alike(program_sdfg, cause: Cause, work_dir: Path, afl: bool) -> bool:
    """Whether the code DaCe generates for the program itself fails with ``cause`` (the same
    error at the same line): the construct is DaCe's, not a cutout's."""
    return any((c.message, c.line) == (cause.message, cause.line)
               for c in program_compile_causes(program_sdfg, work_dir, afl))


def program_key(program_sdfg) -> str:
    """A program's content, as a key: the identity it was loaded with, else its JSON's hash."""
    identity = template_identity(program_sdfg)
    if identity:
        return hashlib.sha256(identity.encode()).hexdigest()[:24]
    return hashlib.sha256(json.dumps(sdfg_json(program_sdfg), sort_keys=True, default=str).encode()).hexdigest()[:24]
