"""Builds are cached by content: same cutout, same directory; any change, a new key."""
import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import dace

from harnessgen.core.runtime import Tolerance
from harnessgen.harness.build import build
from tests.conftest import layout_of, make_pair


def test_same_content_reuses_the_build_and_oracle_changes_the_key(build_cache):
    pair = make_pair("elementwise_chain", "MapTiling")
    layout = layout_of(pair)
    first = build(pair, layout, build_cache, afl=False)
    marker = first.dir / "manifest.json"
    stamp = marker.stat().st_mtime_ns
    again = build(make_pair("elementwise_chain", "MapTiling"), layout_of(pair), build_cache, afl=False)
    assert again.dir == first.dir and marker.stat().st_mtime_ns == stamp
    exact = build(pair, layout, build_cache, Tolerance(exact=True), afl=False)
    assert exact.dir != first.dir and exact.manifest["oracle"]["exact"] is True


def test_afl_harness_and_replay_binary_come_from_one_source(build_cache):
    pair = make_pair("elementwise_chain", "MapTiling")
    harness = build(pair, layout_of(pair), build_cache, afl=True)
    for binary in (harness.harness_afl, harness.harness_replay, harness.libpre, harness.libpost):
        assert binary.is_file()
    manifest = json.loads((harness.dir / "manifest.json").read_text())
    assert manifest["pre"]["name"] == "hg_pre" and manifest["post"]["name"] == "hg_post"
    # pre and post export only DaCe's entry points: nothing else can clash between them
    for lib, name in ((harness.libpre, "hg_pre"), (harness.libpost, "hg_post")):
        syms = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout
        exported = {line.split()[-1] for line in syms.splitlines() if " T " in line}
        assert exported == {f"__dace_init_{name}", f"__dace_exit_{name}", f"__program_{name}"}
    source = (harness.dir / "harness.cpp").read_text()
    assert "__AFL_FUZZ_INIT" in source and "__AFL_LOOP" in source and "LLVMFuzzerTestOneInput" in source
    assert "omp_set_num_threads(1)" in source


def _rebuild_after_spoiling(cache: Path, pattern: str, spoil) -> None:
    """Build once, ``spoil`` every cached precompiled-header file matching ``pattern``, build
    again from that cache: the second build must succeed."""
    pair = make_pair("elementwise_chain", "MapTiling")
    layout = layout_of(pair)
    build(pair, layout, cache, afl=False)
    spoiled = list((cache / "pch").rglob(pattern))
    assert spoiled
    for path in spoiled:
        spoil(path)
    shutil.rmtree(cache / "builds")
    shutil.rmtree(cache / "objects")         # else the compiles come from the object cache, no PCH loaded
    again = build(pair, layout, cache, afl=False)
    assert again.libpost.is_file() and again.harness_replay.is_file()


def test_a_precompiled_header_that_no_longer_loads_never_fails_a_build(tmp_path):
    # e.g. its header was reached through a link that is gone: it costs time, never a false BUILD_FAILURE
    _rebuild_after_spoiling(tmp_path, "*.pch", lambda pch: pch.write_bytes(b"not a precompiled header"))


def _touch_later(path: Path) -> None:
    later = path.stat().st_mtime + 60
    os.utime(path, (later, later))


def test_a_header_written_again_by_a_concurrent_builder_never_fails_a_build(tmp_path):
    # two builders starting on an empty cache both write headers.h: the PCH of the first then
    # sees a newer input file ("has been modified since the precompiled header was built")
    _rebuild_after_spoiling(tmp_path, "headers.h", _touch_later)


def test_a_pre_that_does_not_compile_is_not_compiled_again(tmp_path, monkeypatch):
    """Every pass instance judged whole shares pre (the program as written): once it failed with
    a compiler diagnostic, the next pair with that pre fails at once, with the same error."""
    import dace
    import pytest
    from dace import nodes

    from harnessgen.core.errors import BuildError
    from harnessgen.cutout.extract import whole_program_pair
    from harnessgen.harness import build as build_stage
    from tests.conftest import program_sdfg

    sdfg = dace.SDFG.from_json(program_sdfg("sigmoid").to_json())   # a copy: other tests share the program
    tasklet = next(n for n, _ in sdfg.all_nodes_recursive() if isinstance(n, nodes.Tasklet))
    tasklet.code = dace.properties.CodeBlock("this is not C++;", dace.Language.CPP)
    first = whole_program_pair(sdfg, "broken-pre")
    layout = layout_of(first)
    with pytest.raises(BuildError) as failed:
        build(first, layout, tmp_path, afl=False)
    assert failed.value.side == "hg_pre" and "error:" in failed.value.first_error

    def compile_again(*args, **kwargs):
        raise AssertionError("pre was compiled again")

    monkeypatch.setattr(build_stage, "run_jobs", compile_again)
    other_post = whole_program_pair(sdfg, "broken-pre-other-post", transform=lambda post: setattr(post, "name", "x"))
    with pytest.raises(BuildError) as again:
        build(other_post, layout, tmp_path, afl=False, cmplog=True)
    assert again.value.first_error == failed.value.first_error


def _built_then_compiles_recorded(tmp_path, monkeypatch):
    """A replay-only build of a MapTiling pair, and the list that records every compile after it."""
    from harnessgen.harness import compiler

    pair = make_pair("elementwise_chain", "MapTiling")
    layout = layout_of(pair)
    first = build(pair, layout, tmp_path, afl=False)
    compiled = []
    real = compiler._compile
    monkeypatch.setattr(compiler, "_compile", lambda name, job: compiled.append(name) or real(name, job))
    return pair, layout, first, compiled


def test_a_compile_another_build_made_is_reused_and_still_runs(tmp_path, monkeypatch):
    """Another oracle changes the harness, not pre or post: their libraries come from the
    object cache, byte for byte, and the replay binary linked from them runs."""
    from harnessgen.core import protocol

    pair, layout, first, compiled = _built_then_compiles_recorded(tmp_path, monkeypatch)
    exact = build(pair, layout, tmp_path, Tolerance(exact=True), afl=False)
    assert exact.dir != first.dir
    assert compiled == ["harness_replay"]      # a replay-only harness: compiled and linked in one call
    for name in ("libpre.so", "libpost.so"):
        assert (exact.dir / name).read_bytes() == (first.dir / name).read_bytes()
    assert protocol.run_native(exact.harness_replay, bytes(256)).exit == protocol.Exit.PASS


def test_a_replay_binary_over_the_same_harness_is_reused_and_runs(tmp_path, monkeypatch):
    """Another instance of the same pair (its harness differs in its first comment only) and a
    build of it with another post: the replay binary comes from the object cache, and it runs
    the libraries of its own build (it names them by soname)."""
    import dataclasses

    from harnessgen.core import protocol

    pair, layout, first, compiled = _built_then_compiles_recorded(tmp_path, monkeypatch)
    renamed = dataclasses.replace(pair, instance=dataclasses.replace(pair.instance, id=f"{pair.instance.id}-other"))
    other_post = copy.deepcopy(pair.post)
    for node, _ in other_post.all_nodes_recursive():     # another post, the same interface
        if isinstance(node, dace.nodes.Tasklet):
            node.label = f"{node.label}_renamed"
    again = build(dataclasses.replace(renamed, post=other_post), layout, tmp_path, afl=False)
    assert again.dir != first.dir and "harness_replay" not in compiled and "libpost.so" in compiled
    post_source = Path("src", "cpu", "hg_post.cpp")
    assert (again.dir / post_source).read_text() != (first.dir / post_source).read_text()
    assert (again.dir / "harness_replay").read_bytes() == (first.dir / "harness_replay").read_bytes()
    assert protocol.run_native(again.harness_replay, bytes(256)).exit == protocol.Exit.PASS


def test_the_object_key_follows_every_input_but_not_the_instance_comment(tmp_path):
    from harnessgen.harness.compiler import CXX, Job, ObjectCache, reusable_compile

    def key_after(edit) -> Path:
        out = tmp_path / "builds" / "b.tmp-1"
        shutil.rmtree(out, ignore_errors=True)
        (out / "include").mkdir(parents=True)
        (out / "include" / "hash.h").write_text("#pragma once\n")
        (out / "side.cpp").write_text("// generated for instance A\nint f() { return 1; }\n")
        (out / "side.h").write_text("int f();\n")
        edit(out)
        job = Job([CXX, "-c", str(out / "side.cpp"), "-o", str(out / "side.o")], "hg_pre",
                  reuse=reusable_compile(out, out / "side.o", out / "side.cpp"))
        return ObjectCache(tmp_path).path(job)

    plain = key_after(lambda out: None)
    assert key_after(lambda out: (out / "side.cpp").write_text("// generated for instance B\nint f() { return 1; }\n")) == plain
    for changed in ("side.cpp", "side.h", "include/hash.h"):
        assert key_after(lambda out: (out / changed).write_text("int g();\n")) != plain, changed


def test_a_side_compiled_with_templates_instantiated_in_the_pch_is_the_same_object(tmp_path, monkeypatch):
    """PCH_INSTANTIATE only moves work from every compile into the PCH: what is compiled is
    byte for byte what a PCH without it gives."""
    from harnessgen.harness import build as build_stage
    from harnessgen.harness import compiler
    from harnessgen.harness.emit import generate_side

    pair = make_pair("elementwise_chain", "MapTiling")
    objects = []
    for early in (compiler.PCH_INSTANTIATE, []):
        monkeypatch.setattr(compiler, "PCH_INSTANTIATE", early)
        out = tmp_path / f"early{len(early)}" / "builds" / "b"
        out.mkdir(parents=True)
        side = generate_side(pair.post, out)
        pch = compiler.header_pch(compiler.work_dir_of(out), compiler.CXX, side.cpp)
        assert pch, "no PCH was built"
        obj = out / "post.o"
        subprocess.run([compiler.CXX, *compiler.compile_flags(out), *pch, *build_stage.SIDE_FLAGS, "-c", str(side.cpp),
                        "-o", str(obj)], check=True, capture_output=True)
        objects.append(obj.read_bytes())
    assert objects[0] == objects[1]


def _same_sources_as_the_program():
    """A reference check's pair (the program, pre and post alike) and an instance's pair with the
    same two programs: what once shared one cache entry."""
    import dataclasses

    from harnessgen.cutout.extract import whole_program_pair
    from tests.conftest import program_sdfg

    reference = whole_program_pair(program_sdfg("elementwise_chain"), "reference-elementwise_chain")
    instance = dataclasses.replace(reference, instance=dataclasses.replace(reference.instance, id="an-instance"))
    return reference, instance, layout_of(reference)


def test_a_replay_only_build_and_a_fuzzing_build_of_the_same_sources_are_two_builds(tmp_path):
    """Either order (the reference check's replay-only build first, as in the run that lost its
    instance, or the instance's first): each gets every artifact it needs."""
    reference, instance, layout = _same_sources_as_the_program()
    for order in ("reference first", "instance first"):
        work = tmp_path / order.replace(" ", "-")
        steps = [(reference, False), (instance, True)]
        builds = {afl: build(pair, layout, work, afl=afl) for pair, afl in
                  (steps if order == "reference first" else steps[::-1])}
        assert builds[True].dir != builds[False].dir, order
        assert builds[True].harness_afl.is_file() and builds[True].manifest["afl"] is True, order
        assert not builds[False].harness_afl.exists() and builds[False].manifest["afl"] is False, order


def test_the_key_holds_what_the_instance_reads_and_writes_of_its_programs(tmp_path):
    import dataclasses

    from harnessgen.harness.build import cache_key

    reference, _, layout = _same_sources_as_the_program()
    fewer_outputs = dataclasses.replace(reference, output_config=reference.output_config[:-1])
    assert cache_key(reference, layout, Tolerance(), False, False) != \
        cache_key(fewer_outputs, layout, Tolerance(), False, False)
    assert cache_key(reference, layout, Tolerance(), True, False) != \
        cache_key(reference, layout, Tolerance(), True, True)


def test_a_cached_build_missing_an_artifact_is_built_again(tmp_path):
    reference, _, layout = _same_sources_as_the_program()
    first = build(reference, layout, tmp_path, afl=True)
    first.harness_afl.unlink()
    again = build(reference, layout, tmp_path, afl=True)
    assert again.dir == first.dir and again.harness_afl.is_file()
    assert not list(tmp_path.glob("builds/*.incomplete-*"))


def test_a_replay_only_build_that_must_be_fuzzed_after_all_gets_its_afl_harness(tmp_path):
    """A pair built for replay only (its proof was to settle it) whose proof did not settle it:
    ``with_afl`` builds it with the harness afl-fuzz runs, keeping what the folder kept."""
    from harnessgen.harness.build import with_afl

    reference, instance, layout = _same_sources_as_the_program()
    replay_only = build(reference, layout, tmp_path, afl=False)
    (replay_only.dir / "constraints.json").write_text("{}")
    fuzzable = with_afl(replay_only, instance.instance, tmp_path)
    assert fuzzable.dir != replay_only.dir and fuzzable.harness_afl.is_file()
    assert (fuzzable.dir / "constraints.json").is_file()
    assert with_afl(fuzzable, instance.instance, tmp_path).dir == fuzzable.dir


def test_warming_at_setup_makes_the_precompiled_headers_later_builds_use(tmp_path):
    """``make setup`` warms the work directory: an instance of another kernel and another
    transformation then builds without a precompiled header of its own."""
    from harnessgen.harness.warm import warm

    warm(tmp_path)
    made = sorted(p.name for p in (tmp_path / "pch").iterdir())
    assert len(made) >= 3, made          # DaCe's runtime for the plain and the AFL compiler, the harness
    pair = make_pair("softmax", "MapExpansion")
    build(pair, layout_of(pair), tmp_path, afl=True)
    build(pair, layout_of(pair), tmp_path, afl=False)     # replay only: its harness at -O0
    assert sorted(p.name for p in (tmp_path / "pch").iterdir()) == made


def test_warming_at_setup_reads_the_main_commands_program_once(tmp_path, monkeypatch):
    """The main command's first run reads its program from a pickle, not from JSON."""
    from harnessgen.harness.warm import MAIN_TARGET, warm_main_target

    monkeypatch.setenv("HARNESSGEN_PROGRAM_CACHE", str(tmp_path))
    warm_main_target()
    assert [p.name for p in tmp_path.glob(f"{MAIN_TARGET}-*.sdfg.pickle")]


def test_a_side_dace_generated_code_for_before_is_not_generated_again(tmp_path, monkeypatch):
    """The cutout is pre of every transformation that matches in it: another build with the
    same pre takes pre's code from where it is kept (byte for byte) and runs DaCe's code
    generator for its new post only; the build runs."""
    import dataclasses

    from harnessgen.core import protocol

    pair, layout, first, _ = _built_then_compiles_recorded(tmp_path, monkeypatch)
    generated = []
    real = dace.SDFG.generate_code
    monkeypatch.setattr(dace.SDFG, "generate_code", lambda sdfg: generated.append(sdfg.name) or real(sdfg))
    other_post = copy.deepcopy(pair.post)
    for node, _ in other_post.all_nodes_recursive():
        if isinstance(node, dace.nodes.Tasklet):
            node.label = f"{node.label}_renamed"
    again = build(dataclasses.replace(pair, post=other_post), layout, tmp_path, afl=False)
    assert generated == [pair.post.name]
    pre_source = Path("src", "cpu", f"{pair.pre.name}.cpp")
    assert (again.dir / pre_source).read_text() == (first.dir / pre_source).read_text()
    assert protocol.run_native(again.harness_replay, bytes(256)).exit == protocol.Exit.PASS
