"""Builds are cached by content: same cutout, same directory; any change, a new key."""
import json
import subprocess

from harnessgen.build import build
from harnessgen.emit import OracleOptions
from tests.conftest import layout_of, make_pair


def test_same_content_reuses_the_build_and_oracle_changes_the_key(build_cache):
    pair = make_pair("elementwise_chain", "MapTiling")
    layout = layout_of(pair)
    first = build(pair, layout, build_cache, afl=False)
    marker = first.dir / "manifest.json"
    stamp = marker.stat().st_mtime_ns
    again = build(make_pair("elementwise_chain", "MapTiling"), layout_of(pair), build_cache, afl=False)
    assert again.dir == first.dir and marker.stat().st_mtime_ns == stamp
    exact = build(pair, layout, build_cache, OracleOptions(exact=True), afl=False)
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


def test_a_precompiled_header_that_no_longer_loads_never_fails_a_build(tmp_path):
    # e.g. its header was reached through a link that is gone: it costs time, never a false BUILD_FAILURE
    import shutil

    pair = make_pair("elementwise_chain", "MapTiling")
    layout = layout_of(pair)
    build(pair, layout, tmp_path, afl=False)
    pchs = list((tmp_path / "pch").rglob("*.pch"))
    assert pchs
    for pch in pchs:
        pch.write_bytes(b"not a precompiled header")
    shutil.rmtree(tmp_path / "builds")
    again = build(pair, layout, tmp_path, afl=False)
    assert again.libpost.is_file() and again.harness_replay.is_file()


def test_a_header_written_again_by_a_concurrent_builder_never_fails_a_build(tmp_path):
    # two builders starting on an empty cache both write headers.h: the PCH of the first then
    # sees a newer input file ("has been modified since the precompiled header was built")
    import os
    import shutil

    pair = make_pair("elementwise_chain", "MapTiling")
    layout = layout_of(pair)
    build(pair, layout, tmp_path, afl=False)
    headers = list((tmp_path / "pch").rglob("headers.h"))
    assert headers
    for header in headers:
        later = header.stat().st_mtime + 60
        os.utime(header, (later, later))
    shutil.rmtree(tmp_path / "builds")
    again = build(pair, layout, tmp_path, afl=False)
    assert again.libpost.is_file() and again.harness_replay.is_file()
