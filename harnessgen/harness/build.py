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
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

from .. import __version__
from ..core import envs
from ..core.errors import BuildError
from ..core.files import write_atomic, write_json
from ..core.runtime import Tolerance
from ..cuda import toolkit as cuda_toolkit
from ..cutout.extract import CutoutPair
from ..dacecompat import copy_sdfg, dace_identity, sdfg_json, template_identity
from ..inputs.layout import InputLayout
from .built import HarnessBuild
from .compiler import (CXX, CXXFLAGS, LINKER, REPLAY_ONLY_HARNESS_OPT, RPATH, Job, compile_flags, replay_only_cxxflags,
                       replay_only_compile_flags, replay_only_job, reusable_compile, run_job, tool_version, work_dir_of,
                       complete_replay, dace_include, header_pch, run_jobs)
from .codegen_causes import Cause, CauseRegistry, all_from_compiler_output
from .emit import FRESH_STATE_HEADER, SideSource, generate_side, render_harness, template_sources

AFL_CXX = envs.get("HARNESSGEN_AFL_CXX")
# The generated code of each side (pre and post) allocates from templates/fresh_state.h: every
# heap block starts as the same bytes, so a transient read before it is written is a
# deterministic difference, not whatever the other side left in the block it freed.
SIDE_FLAGS = ["-include", str(FRESH_STATE_HEADER)]
# afl-cc adds -g and -funroll-loops unless told not to: our flags stay the only ones, so the
# instrumented post is compiled as libpost.so is (and without debug info, a third faster)
AFL_ENV = {"AFL_DONT_OPTIMIZE": "1"}






def compiler_versions(afl: bool) -> Dict[str, str]:
    versions = {"cxx": tool_version(CXX)}
    if afl:
        versions["afl_cxx"] = tool_version(AFL_CXX)
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
    them are there."""
    return ["manifest.json", "layout.json", "pre.sdfg", "post.sdfg", "libpre.so", "libpost.so", "harness_replay",
            *(["harness_afl"] if afl else []), *(["harness_cmplog"] if cmplog else [])]


def _needed(final: Path, afl: bool, cmplog: bool) -> List[str]:
    """``artifacts`` of the cached build ``final``, less the replay binary where it was made
    without one (manifest ``replay_deferred``): that one is compiled when asked for."""
    needed = artifacts(afl, cmplog)
    manifest = final / "manifest.json"
    if not (final / "harness_replay").is_file() and manifest.is_file() and \
            json.loads(manifest.read_text()).get("replay_deferred"):
        needed.remove("harness_replay")
    return needed


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
          afl: bool = True, cmplog: bool = False, replay_binary: bool = True,
          saved: Optional[SavedSides] = None) -> HarnessBuild:
    """Build (or reuse) everything an instance needs; raises BuildError with the failing side.
    ``replay_binary=False`` (a replay-only build, its inputs screened through cffi first: a
    pair proven equal): the libraries without the replay binary, which ``complete_replay``
    compiles the first time it is asked for. ``saved``: the pair's sides serialised already
    (for its pair key), unchanged since."""
    tolerance = tolerance or Tolerance()
    saved = saved or SavedSides.of(pair)
    key = cache_key(pair, layout, tolerance, afl, cmplog, saved)
    final = Path(work_dir) / "builds" / key
    if not reusable(final, _needed(final, afl, cmplog)):
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
    if replay_binary and built.replay_deferred:
        complete_replay(built.dir)
    return built




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

    blob = json.dumps({"harnessgen": __version__, "dace": dace_identity(), "pre": pre_hash,
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
    pre = generate_side(pair.pre, out, generated_code(out, pair.pre.name, saved.pre_hash))
    _refuse_known_cause(out, pre, pair.pre, afl)          # before anything else is written: seconds for a whole program
    saved.write(out)
    layout.save(out / "layout.json")
    (out / "instance.json").write_text(json.dumps(pair.instance.to_json(), indent=1))
    (out / "transformation.json").write_text(json.dumps(pair.translated_match, indent=1, default=str))
    # DaCe generates post (Python) while pre compiles
    with cf.ThreadPoolExecutor(max_workers=1) as early:
        pre_library = _library_job(out, pre, "libpre.so")
        pre_cuda = _cuda_jobs(out, pre)
        running = {} if pre_cuda else {"libpre.so": early.submit(run_job, "libpre.so", pre_library)}
        post = generate_side(pair.post, out, generated_code(out, pair.post.name, saved.post_hash))
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




def generated_code(out: Path, name: str, saved_hash: str) -> Path:
    """Where the code DaCe generates for the side ``name`` whose saved form hashes to
    ``saved_hash`` is kept, beside the builds: DaCe's hash of a program is what the build
    cache trusts already (two pairs with both hashes equal share one build)."""
    key = hashlib.sha256(json.dumps([__version__, dace_identity(), name, saved_hash]).encode()).hexdigest()[:24]
    return work_dir_of(out) / "generated" / key[:2] / f"{key}.json"


def cause_registry(work_dir: Path, afl: bool) -> CauseRegistry:
    """The constructs this DaCe and these compilers are known not to build (codegen_causes)."""

    versions = json.dumps({"dace": dace_identity(), "compilers": compiler_versions(afl), "flags": CXXFLAGS},
                          sort_keys=True)
    return CauseRegistry(work_dir, versions)


def _refuse_known_cause(out: Path, pre: SideSource, pre_sdfg, afl: bool) -> None:
    """Pre holds a construct that failed to compile before, in a program DaCe made, with its
    names of the same kinds: stop before the compiler runs."""
    if pre.cpp is None or not pre.cpp.is_file():
        return
    cause = cause_registry(work_dir_of(out), afl).match(pre.cpp.read_text(), pre.name, pre_sdfg)
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






def _library_job(out: Path, side: SideSource, soname: str) -> "Job":
    """A side's plain shared library, exporting only DaCe's entry points (a GPU side: its
    frame code, its CUDA objects and the CUDA runtime, found beside the library)."""
    host = (cuda_toolkit.dace_host_flags() if side.on_gpu
            else header_pch(work_dir_of(out), CXX, side.cpp))
    exports = out / f"exports_{side.name}.map"
    return Job([CXX, *compile_flags(out), *host, *SIDE_FLAGS, str(side.cpp), *_cuda_link(out, side), *LINKER, "-shared",
                f"-Wl,--version-script={exports}", f"-Wl,-soname,{soname}", RPATH, "-o",
                str(out / soname)], side.name, after=tuple(o.name for o in _cuda_objects(out, side)),
               reuse=None if side.on_gpu else reusable_compile(out, out / soname, side.cpp, exports, FRESH_STATE_HEADER))


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
    flags, work_dir, harness_cpp = compile_flags(out), work_dir_of(out), out / "harness.cpp"
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
            jobs["harness_replay"] = replay_only_job(out, harness_cpp, replay_only_compile_flags(out, harness_cpp), sides,
                                                      tuple(libraries.values()))
        return jobs
    harness_opt = CXXFLAGS if afl or cmplog else replay_only_cxxflags(CXXFLAGS)
    harness_pch = [] if gpu else header_pch(work_dir, harness_cxx, harness_cpp, AFL_ENV if afl else None,
                                            cxxflags=harness_opt)
    harness_flags = ["-DHG_CUDA", "-isystem", str(cuda_toolkit.find().include)] if gpu else []
    jobs["harness.o"] = Job([harness_cxx, *compile_flags(out, harness_opt), *harness_flags, *harness_pch, "-c",
                             str(harness_cpp), "-o", str(out / "harness.o")], "harness", harness_env,
                            reuse=None if gpu else reusable_compile(out, out / "harness.o", harness_cpp,
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
                                    reuse=reusable_compile(out, out / "fresh_state.o", FRESH_STATE_HEADER))
    cmplog_env = {**AFL_ENV, "AFL_LLVM_CMPLOG": "1"}
    for variant, env in (("afl", AFL_ENV), ("cmplog", cmplog_env)):
        if not (afl if variant == "afl" else cmplog):
            continue
        objects = []
        for post in posts:
            obj = f"post_{variant}.o" if len(posts) == 1 else f"{post.name}_{variant}.o"
            post_host = cuda_toolkit.dace_host_flags() if post.on_gpu else header_pch(work_dir, AFL_CXX, post.cpp, env)
            jobs[obj] = Job([AFL_CXX, *flags, *post_host, "-c", str(post.cpp), "-o", str(out / obj)], "hg_post", env,
                            reuse=None if post.on_gpu else reusable_compile(out, out / obj, post.cpp))
            objects.append(obj)
        cuda_objects = tuple(o.name for post in posts for o in _cuda_objects(out, post))
        jobs[f"harness_{variant}"] = Job([AFL_CXX, "-fopenmp", str(out / "harness.o"), *(str(out / o) for o in objects),
                                          str(out / "fresh_state.o"), *_cuda_link(out, posts[0]),
                                          str(out / "libpre.so"), RPATH, "-o", str(out / f"harness_{variant}")],
                                         "harness", env,
                                         after=("harness.o", *objects, "fresh_state.o", "libpre.so", *cuda_objects))
    return jobs


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
        proc = subprocess.run([CXX, *compile_flags(out), *pch, *SIDE_FLAGS, "-fsyntax-only", *limit, str(side.cpp)],
                              capture_output=True, text=True)
    return None if proc.returncode == 0 else f"building {sdfg.name} failed\n{proc.stderr}"


def dace_build_error(changed_sdfg, program_sdfg, work_dir: Path) -> Optional[str]:
    """Why the code DaCe generates for a program after a change does not build (its generator,
    then the compiler, with the program's own arguments: nothing of harnessgen's in it), where
    the code DaCe generates for the program itself builds; None where it builds, or where the
    program itself does not (that is DaCe's finding against the program, not the change's)."""
    errors = compile_errors(copy.deepcopy(changed_sdfg), work_dir=work_dir)   # its generator changes it
    if errors is None or program_compile_causes(program_sdfg, work_dir, afl=False):
        return None
    return f"DaCe's own build of the program after the change fails, where the program's builds: {errors}"


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
