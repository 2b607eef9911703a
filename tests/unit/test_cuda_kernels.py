"""Kernel manifests: checked with errors that name the file and field; the shipped kernels load,
pair each planted bug with a correct counterpart, and render sides that launch what the
manifest says. The CUDA toolchain's knobs fail clearly."""
import json

import pytest

from harnessgen.core import expr as ex
from harnessgen.core.errors import ConfigError
from harnessgen.cuda import toolkit
from harnessgen.gpukernels import spec as kernels
from harnessgen.subjects.sdfg import transformation_specs
from harnessgen.targets import GPU_TRANSFORMATIONS, resolve

BASE = {
    "source": "k.cu", "kernel": "k", "symbols": {"N": [1, 64], "T": [1, "N"]},
    "grid": ["(N + T - 1) // T"], "block": ["T"], "shared_bytes": "T * 8",
    "args": [{"name": "x", "role": "in", "dtype": "float64", "shape": ["N"]},
             {"name": "y", "role": "out", "dtype": "float64", "shape": ["N"]},
             {"name": "n", "role": "value", "dtype": "int32", "value": "N"}],
    "reference": {"cpu": "k_ref", "extra": ["T"]},
}


def write(tmp_path, manifest, name="k.json"):
    (tmp_path / "k.cu").write_text("// kernel\n")
    path = tmp_path / name
    path.write_text(json.dumps(manifest))
    return path


def test_a_manifest_loads_into_a_layout_of_symbols_then_arrays(tmp_path):
    spec = kernels.load(write(tmp_path, BASE))
    layout = kernels.layout(spec)
    assert [s.name for s in layout.symbols] == ["N", "T"]
    assert [(c.name, c.is_output) for c in layout.containers] == [("x", False), ("y", True)]
    decoded = layout.decode(b"\x05\x00\x00\x00\x09\x00\x00\x00")
    assert decoded.symbols["N"] == 5 and 1 <= decoded.symbols["T"] <= 5   # T's bound uses N
    assert decoded.arrays["x"].size == 5


@pytest.mark.parametrize("change, message", [
    ({"args": [{"name": "x", "role": "sideways", "dtype": "float64", "shape": ["N"]}]}, "role must be one of"),
    ({"args": [{"name": "x", "role": "in", "dtype": "float64", "shape": ["M"]}]}, "uses M, which 'symbols'"),
    ({"args": [{"name": "x", "role": "in", "dtype": "float128", "shape": ["N"]}]}, "dtype 'float128'"),
    ({"grid": []}, "1 to 3 expressions"),
    ({"block": ["T", "1", "1", "1"]}, "1 to 3 expressions"),
    ({"reference": {}}, "reference is"),
    ({"source": "missing.cu"}, "not beside the manifest"),
    ({"symbols": {"N": [1]}}, "symbols.N must be [lo, hi]"),
    ({"expect": "WRONGISH"}, "is not a verdict"),
])
def test_a_broken_manifest_names_its_file_and_field(tmp_path, change, message):
    path = write(tmp_path, {**BASE, **change})
    with pytest.raises(ConfigError, match="k.json") as info:
        kernels.load(path)
    assert message in str(info.value)


def test_extends_merges_and_a_loop_is_an_error(tmp_path):
    write(tmp_path, BASE)
    child = write(tmp_path, {"extends": "k.json", "kernel": "k_bad", "expect": "RACE"}, "k_bad.json")
    spec = kernels.load(child)
    assert (spec.kernel, spec.expect, spec.name) == ("k_bad", "RACE", "k_bad")
    write(tmp_path, {"extends": "k_loop.json"}, "k_loop.json")
    with pytest.raises(ConfigError, match="loops back"):
        kernels.load(tmp_path / "k_loop.json")


def test_shipped_kernels_pair_every_planted_bug_with_a_correct_kernel():
    target, specs = kernels.resolve("gpukernels")
    assert target == "gpukernels"
    by_source = {}
    for spec in specs:
        by_source.setdefault(spec.source.name, []).append(spec)
    assert {s.expect for s in specs} >= {"RACE", "BARRIER_DIVERGENCE", "REDUNDANT_BARRIER", None}
    for source, group in by_source.items():
        assert any(s.expect is None for s in group), f"{source} has no correct kernel"
        assert any(s.expect in ("RACE", "BARRIER_DIVERGENCE") for s in group), f"{source} has no planted bug"
        assert len({s.instance(target).id for s in group}) == len(group)


def test_a_side_launches_the_manifests_geometry(tmp_path):
    spec = kernels.load(write(tmp_path, BASE))
    post = kernels.render_side(spec, "post")
    assert "k<<<hg_grid, hg_block, hg_shared>>>(hg_dev_x, hg_dev_y, (int32_t)(N));" in post
    assert "hg_floordiv(((N + T) - INT64_C(1)), T)" in post
    assert "cudaMemcpy(y, hg_dev_y" in post and "cudaMemcpy(x, hg_dev_x" not in post   # outputs only come back
    pre = kernels.render_side(spec, "pre")
    assert "k_ref(x, y, (int32_t)(N), (T));" in pre and "<<<" not in pre


def test_kernel_specs_are_told_apart_from_programs(tmp_path):
    write(tmp_path, BASE)
    assert kernels.is_kernel_spec("gpukernels") and kernels.is_kernel_spec("gpukernels:block_sum")
    assert kernels.is_kernel_spec(str(tmp_path)) and not kernels.is_kernel_spec("kernels:gemm")
    with pytest.raises(ConfigError, match="no manifest nope.json"):
        kernels.resolve("gpukernels:nope")


def test_transformation_gpu_names_the_targets_gpu_set():
    target, _ = resolve("kernels")
    assert transformation_specs(target, "gpu") == GPU_TRANSFORMATIONS
    assert transformation_specs(target, "MapTiling,gpu,GPUTransformMap") == ["MapTiling", *GPU_TRANSFORMATIONS]


def test_cuda_arch_must_be_a_compute_capability_cuda_13_targets(monkeypatch):
    monkeypatch.setenv("HARNESSGEN_CUDA_ARCH", "80,90")
    assert toolkit.arch_flags() == ["-gencode", "arch=compute_80,code=[sm_80,compute_80]",
                                    "-gencode", "arch=compute_90,code=[sm_90,compute_90]"]
    monkeypatch.setenv("HARNESSGEN_CUDA_ARCH", "60")
    with pytest.raises(ConfigError, match="HARNESSGEN_CUDA_ARCH=60"):
        toolkit.arch_flags()


def test_a_cuda_home_without_nvcc_is_named(tmp_path):
    with pytest.raises(ConfigError, match="HARNESSGEN_CUDA_HOME=.*holds no bin/nvcc"):
        toolkit.find(str(tmp_path))


def test_gpu_check_says_in_one_line_what_it_needs_before_building_anything(monkeypatch):
    monkeypatch.setattr(toolkit, "available", lambda: False)
    assert "needs a CUDA toolkit" in toolkit.gpu_check_blocker() and "nothing was run" in toolkit.gpu_check_blocker()
    monkeypatch.setattr(toolkit, "available", lambda: True)
    monkeypatch.setattr(toolkit, "gpu_unavailable", lambda: "no CUDA device")
    said = toolkit.gpu_check_blocker()
    assert "needs an NVIDIA GPU" in said and "(no CUDA device)" in said and "\n" not in said
    monkeypatch.setattr(toolkit, "gpu_unavailable", lambda: None)
    assert toolkit.gpu_check_blocker() is None


def test_launch_geometry_is_evaluated_like_the_decoder(tmp_path):
    from harnessgen.gpukernels.kernel_reproducer import launch_geometry

    (tmp_path / "transformation.json").write_text(json.dumps(BASE))
    assert launch_geometry(tmp_path, {"N": 10, "T": 4}) == {"grid": [3, 1, 1], "block": [4, 1, 1], "shared_bytes": 32}
    assert ex.evaluate(ex.parse("(N + T - 1) // T"), {"N": 10, "T": 4}) == 3


def test_barrier_sites_are_the_kernels_own_and_a_variant_drops_exactly_one(tmp_path):
    from harnessgen.gpukernels import barriers

    _, specs = kernels.resolve("gpukernels:transpose_extra_barrier")
    spec = specs[0]
    text = spec.source.read_text()
    sites = barriers.barrier_sites(text, spec.kernel)
    lines = [text.count("\n", 0, s) + 1 for s in sites]
    assert len(sites) == 2 and lines[1] > lines[0]
    start, end = barriers.kernel_body(text, spec.kernel)
    assert all(start < s < end for s in sites)      # not the barriers of transpose_tiled above it
    changed = barriers.variant(spec, sites[1], tmp_path / "v")
    assert changed.source.read_text().count("__syncthreads()") == text.count("__syncthreads()") - 1
    assert changed.name == f"transpose_extra_barrier-without-barrier-L{lines[1]}"
    assert changed.instance("gpukernels").id != spec.instance("gpukernels").id
    with pytest.raises(ConfigError, match="no __global__ void nope"):
        barriers.barrier_sites(text, "nope")
