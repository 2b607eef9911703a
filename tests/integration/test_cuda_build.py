"""Compile-only checks of the CUDA side (no GPU needed; `make test` installs the toolchain with
`make setup-cuda`): every shipped kernel and GPU cutout builds into a harness that says so when
no GPU is there, the kernel harness decodes as the NumPy decoder does, the CPU references
compute what NumPy computes, and both reproducer kinds are generated and refuse to judge
without a GPU (exit 3) instead of reporting a bug."""
import json
import subprocess
import sys

import numpy as np
import pytest

from harnessgen.cuda import toolkit
from harnessgen.gpukernels import spec as kernels
from harnessgen.gpukernels.kernel_build import build_kernel
from harnessgen.harness.replay import execute
from tests.conftest import REPO, run_cli, summary_of
from tests.integration.test_decoder_agreement import check_agreement, random_inputs

pytestmark = pytest.mark.skipif(not toolkit.available(), reason="no CUDA toolchain: run `make setup-cuda`")


@pytest.fixture(scope="module")
def kernel_builds(build_cache):
    target, specs = kernels.resolve("gpukernels")
    return {spec.name: build_kernel(spec, target, build_cache) for spec in specs}


def test_every_shipped_kernel_builds_a_gpu_harness(kernel_builds):
    assert len(kernel_builds) == 7
    for name, build in kernel_builds.items():
        for artifact in ("libpre.so", "libpost.so", "harness_afl", "harness_replay", "libcudart.so.13"):
            assert (build.dir / artifact).is_file(), (name, artifact)
        assert build.manifest["post"]["gpu"] and build.manifest["kernel"]["name"] == name
        missing = build.gpu_missing()
        check = subprocess.run([str(build.harness_replay), "--device-check"], capture_output=True, text=True)
        if missing is None:
            assert check.returncode == 0
        else:     # no GPU: a named exit status, never a crash the fuzzer would count
            assert check.returncode == 69 and "HARNESSGEN: NO_GPU reason=" in check.stderr


def test_the_kernel_harness_decodes_as_numpy_does(kernel_builds):
    build = kernel_builds["transpose_tiled"]
    check_agreement(build.layout, build.harness_replay, random_inputs(300, seed=8))


def _decoded(build, symbols, seed):
    rng = np.random.default_rng(seed)
    layout = build.layout
    counts = layout.counts(symbols)
    arrays = {c.name: rng.uniform(-100, 100, counts[c.name]).astype(c.dtype) for c in layout.containers}
    return layout.decode(layout.encode(symbols, arrays))


@pytest.mark.parametrize("symbols", [{"N": 1, "THREADS": 1}, {"N": 37, "THREADS": 8}, {"N": 300, "THREADS": 96}])
def test_the_references_compute_what_numpy_computes(kernel_builds, symbols):
    sums = kernel_builds["block_sum"]
    decoded = _decoded(sums, symbols, 1)
    n, t = symbols["N"], symbols["THREADS"]
    got = execute(sums.dir, decoded, "pre")["partial"]
    want = [decoded.arrays["x"][b:b + t].sum() for b in range(0, n, t)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)

    rotate = kernel_builds["rotate_in_block"]
    decoded = _decoded(rotate, symbols, 2)
    got = execute(rotate.dir, decoded, "pre")["y"]
    want = np.concatenate([np.roll(decoded.arrays["x"][b:b + t], -1) for b in range(0, n, t)])
    np.testing.assert_array_equal(got, want)

    transpose = kernel_builds["transpose_tiled"]
    dims = {"ROWS": n % 50 + 1, "COLS": t % 40 + 1, "BLOCK_ROWS": 8}
    decoded = _decoded(transpose, dims, 3)
    got = execute(transpose.dir, decoded, "pre")["at"]
    want = decoded.arrays["a"].reshape(dims["ROWS"], dims["COLS"]).T.ravel()
    np.testing.assert_array_equal(got, want)


def test_gpu_transformations_build_on_a_kernel_and_end_built_without_a_gpu(tmp_path):
    proc = run_cli(["fuzz", "--program", "kernels:column_window", "--transformation",
                    "gpu,harnessgen.zoo.planted:GPUOffloadCopiesWholeArray", "--time", "5"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = summary_of(tmp_path)["instances"]
    assert {r["transformation"] for r in results} == {"GPUTransformMap", "GPUTransformSDFG", "GPUOffloadMap",
                                                      "GPUOffloadCopiesWholeArray"}
    for r in results:
        manifest = json.loads((REPO / r["build_dir"] / "manifest.json").read_text())
        assert manifest["post"]["gpu"] and not manifest["pre"]["gpu"], r["id"]
        assert manifest["cuda"]["nvcc"].startswith("Cuda compilation tools"), r["id"]
        if r["verdict"] == "BUILT":
            assert "this machine cannot run it" in r["message"]
        else:   # a GPU is here: then it was fuzzed
            assert r["verdict"] in ("PASS", "MISMATCH"), r


def test_a_gpu_cutout_reproducer_builds_post_with_nvcc(tmp_path, build_cache):
    from harnessgen.harness.build import build
    from harnessgen.harness.compiler import CXX, CXXFLAGS
    from harnessgen.triage.reproducer import write_finding
    from tests.conftest import layout_of, make_pair

    pair = make_pair("column_window", "harnessgen.targets.cloudsc_xforms:GPUOffloadMap")
    layout = layout_of(pair)
    built = build(pair, layout, build_cache, afl=False)
    data = b"\x03\x00\x00\x00" * 8
    decoded = layout.decode(data)
    meta = {"outcome": "MISMATCH", "container": "TEND", "transformation": "GPUOffloadMap", "instance": pair.instance.id,
            "target": "kernels", "program": "column_window", "tolerance": {"rtol": 1e-5, "atol": 1e-8, "exact": False},
            "index": [0, 0], "threads": 1, "versions": {"harnessgen": "test", "dace": "1.0.2", "cuda": built.manifest["cuda"]}}
    dtypes = {s.name: s.dtype for s in layout.symbols} | {c.name: c.dtype for c in layout.containers}
    folder = write_finding(tmp_path / "finding", meta, built.dir, data, decoded, dtypes, CXX, CXXFLAGS, "summary", "# r\n")
    proc = subprocess.run([sys.executable, str(folder / "repro.py")], capture_output=True, text=True, timeout=900,
                          env={"PATH": "/usr/bin:/bin", "CUDA_HOME": str(toolkit.find().root)})
    assert list((folder / ".repro-build").glob("post-*/src/cuda/*.o")), proc.stdout + proc.stderr
    if built.gpu_missing():
        assert proc.returncode == 3 and "none is usable here" in proc.stdout, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 0, proc.stdout


def test_a_kernel_reproducer_is_generated_and_needs_a_gpu_to_judge(tmp_path, kernel_builds):
    from harnessgen.gpukernels.kernel_reproducer import launch_geometry, write_kernel_finding

    build = kernel_builds["transpose_racy"]
    decoded = _decoded(build, {"ROWS": 40, "COLS": 33, "BLOCK_ROWS": 8}, 4)
    meta = {"summary": "RACE: test", "instance": "transpose_racy-x", "outcome": "RACE",
            "kernel": build.manifest["kernel"], "symbols": decoded.symbols,
            "launch": launch_geometry(build.dir, decoded.symbols), "tolerance": {"rtol": 1e-5, "atol": 1e-8},
            "synchronization": {"repeated_runs": {"runs": 20, "differing": 3}, "sanitizer": None,
                                "sanitizer_missing": "not here"}}
    assert meta["launch"] == {"grid": [2, 2, 1], "block": [32, 8, 1], "shared_bytes": 0}
    expected = execute(build.dir, decoded, "pre")
    folder = write_kernel_finding(tmp_path / "finding", meta, build.dir, b"\x00", decoded, expected)
    assert {p.name for p in folder.iterdir()} >= {"repro.py", "input.bin", "inputs.npz", "expected.npz", "kernel",
                                                  "meta.json", "README.md"}
    compile(folder.joinpath("repro.py").read_text(), "repro.py", "exec")
    proc = subprocess.run([sys.executable, str(folder / "repro.py")], capture_output=True, text=True, timeout=600)
    if build.gpu_missing():
        assert proc.returncode == 3 and "cannot run here" in proc.stdout, proc.stdout + proc.stderr


def test_a_gpu_post_keeps_its_input_scalars_by_value():
    """gemm's alpha and beta, read inside GPUTransformSDFG's kernels: made 1-element host arrays
    for the harness (as on the CPU) they were host memory read from the GPU, and DaCe's code
    generator crashed (a false BUILD_FAILURE). Only the scalars a side writes become arrays, and
    neither side writes alpha."""
    import dace

    from tests.conftest import make_pair

    pair = make_pair("gemm", "GPUTransformSDFG")
    assert pair.ok
    assert isinstance(pair.post.arrays["alpha"], dace.data.Scalar)
    assert isinstance(pair.pre.arrays["alpha"], dace.data.Scalar)
    assert any(obj.language == "cu" for obj in pair.post.generate_code())


def test_a_symbolic_loop_nest_is_cut_out_whole_where_dace_cannot_make_alibi_nodes():
    """clip_small's nested SDFG moves to the GPU: DaCe's alibi nodes there compare ``N > 1`` and
    raise, which ended the instance UNSUPPORTED. The cutout now takes whole containers, and
    GPUTransformSDFG itself is judged: on DaCe 1.0.2 it makes an invalid SDFG (a container
    written through an input connector), the DaCe failure it also shows on CLOUDSC; DaCe 2.0
    makes a valid post there, which is then built and fuzzed."""
    import dace

    from harnessgen.core.outcome import Outcome
    from tests.conftest import make_pair

    pair = make_pair("clip_small", "GPUTransformSDFG", pick=lambda inst: inst.match.get("cfg_id") == 1)
    assert pair.pre is not None and set(pair.output_config) == {"QX", "FLUX"}
    if dace.__version__ == "1.0.2":
        assert pair.verdict == Outcome.FAILED_TO_APPLY
        assert "only given to nested SDFG as an input connector" in pair.error
    else:
        assert pair.ok and pair.post is not None, pair.error

FAKE_PYCUDA = {
    "pycuda/__init__.py": "",
    "pycuda/autoinit.py": "",
    "pycuda/driver.py": '''
import numpy as np

class _Buffer:
    def __init__(self, nbytes):
        self.data = bytearray(nbytes)
    def free(self):
        pass

def mem_alloc(nbytes):
    return _Buffer(nbytes)

def memcpy_htod(buffer, host):
    buffer.data[:host.nbytes] = host.tobytes()

def memcpy_dtoh(host, buffer):
    host.view(np.uint8)[:] = np.frombuffer(bytes(buffer.data[:host.nbytes]), np.uint8)

class Context:
    @staticmethod
    def synchronize():
        pass
''',
    # the "kernel": a transpose in NumPy, wrong in every third launch (a race's pattern)
    "pycuda/compiler.py": '''
import numpy as np

LAUNCHES = [0]

class SourceModule:
    def __init__(self, source, nvcc=None, no_extern_c=False, include_dirs=(), options=()):
        assert '#include "transpose.cu"' in source and no_extern_c
    def get_function(self, name):
        def launch(a, at, rows, cols, grid, block, shared):
            assert grid == (2, 2, 1) and block == (32, 8, 1) and shared == 0
            m = np.frombuffer(bytes(a.data), np.float64).reshape(int(rows), int(cols))
            out = np.ascontiguousarray(m.T).ravel()
            LAUNCHES[0] += 1
            if name == "transpose_racy" and LAUNCHES[0] % 3 == 0:
                out[5] += 1.0
            at.data[:] = out.tobytes()
        return launch
''',
}


@pytest.mark.parametrize("kernel, status", [("transpose_tiled", 0), ("transpose_racy", 1)])
def test_the_kernel_reproducer_marshals_launches_and_judges_them(tmp_path, kernel_builds, kernel, status):
    """repro.py against a stand-in pycuda (a NumPy transpose behind its driver API): the right
    arguments and geometry reach the launch, outputs come back and are compared with the
    reference, and a kernel wrong in some launches exits 1."""
    from harnessgen.gpukernels.kernel_reproducer import launch_geometry, write_kernel_finding

    for name, text in FAKE_PYCUDA.items():
        (tmp_path / "fake" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "fake" / name).write_text(text)
    build = kernel_builds[kernel]
    decoded = _decoded(build, {"ROWS": 40, "COLS": 33, "BLOCK_ROWS": 8}, 5)
    meta = {"summary": "test", "instance": kernel, "outcome": "RACE", "kernel": build.manifest["kernel"],
            "symbols": decoded.symbols, "launch": launch_geometry(build.dir, decoded.symbols),
            "tolerance": {"rtol": 1e-5, "atol": 1e-8}, "synchronization": {"repeated_runs": {"runs": 6, "differing": 2}}}
    folder = write_kernel_finding(tmp_path / kernel, meta, build.dir, b"\x00", decoded,
                                  execute(build.dir, decoded, "pre"))
    proc = subprocess.run([sys.executable, str(folder / "repro.py")], capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(tmp_path / "fake"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert ("BUG: 2 of 6 launches" if status else "PASS: 6 of 6 launches") in proc.stdout


@pytest.mark.parametrize("recorded", [{"rtol": 1e-5, "atol": 1e-8, "exact": False}, {"rtol": 1e-3, "atol": 0.0},
                                      {"exact": True}])
def test_the_kernel_reproducer_judges_by_the_harness_rule(tmp_path, kernel_builds, recorded):
    """The kernel reproducer's comparison is the runtime's (the rule the harness binary follows,
    test_oracle_agreement), with the tolerance the finding recorded: every pair of the oracle's
    value pool, in float64 and float32, gets the same verdict from both."""
    import itertools
    import runpy

    from harnessgen.core.runtime import Tolerance, differing
    from harnessgen.gpukernels.kernel_reproducer import launch_geometry, write_kernel_finding
    from tests.integration.test_oracle_agreement import POOL

    build = kernel_builds["transpose_tiled"]
    decoded = _decoded(build, {"ROWS": 4, "COLS": 3, "BLOCK_ROWS": 2}, 6)
    meta = {"summary": "test", "instance": "transpose_tiled", "outcome": "MISMATCH", "kernel": build.manifest["kernel"],
            "symbols": decoded.symbols, "launch": launch_geometry(build.dir, decoded.symbols), "tolerance": recorded,
            "synchronization": {"repeated_runs": {"runs": 1, "differing": 1}}}
    folder = write_kernel_finding(tmp_path / "finding", meta, build.dir, b"\x00", decoded,
                                  execute(build.dir, decoded, "pre"))
    repro = runpy.run_path(str(folder / "repro.py"), run_name="kernel_repro")
    tolerance = Tolerance.from_json(recorded)
    assert repro["Tolerance"].from_json(repro["TOLERANCE"]) == repro["Tolerance"](**tolerance.to_json())
    for dtype in (np.float64, np.float32):
        for ref, out in itertools.product(POOL, POOL):
            with np.errstate(over="ignore"):
                a, b = np.array([ref], dtype=dtype), np.array([out], dtype=dtype)
            harness_says = bool(differing(a, b, tolerance).any())
            assert (repro["differs"](a, b, repro["Tolerance"](**tolerance.to_json())) is not None) == harness_says, \
                (dtype, ref, out, recorded)


def test_a_gpu_post_is_proven_over_the_reals_only():
    """The same operations as pre's, yet on the GPU: its math library rounds otherwise than the
    CPU's, so the proof claims equality over the reals (the pair is still fuzzed), never bit for bit."""
    from harnessgen.prove import IEEE, PROVEN, REAL, prove
    from tests.conftest import layout_of, make_pair

    pair = make_pair("sigmoid", "GPUTransformMap")
    proof = prove(pair.pre, pair.post, layout_of(pair, strict_names=False))
    assert proof.verdict == PROVEN and proof.arithmetic == REAL and "GPU" in proof.reason, proof
    assert not proof.settles
    cpu = make_pair("sigmoid", "MapTiling")
    cpu_proof = prove(cpu.pre, cpu.post, layout_of(cpu, strict_names=False))
    assert cpu_proof.verdict == PROVEN and cpu_proof.arithmetic == IEEE, cpu_proof
