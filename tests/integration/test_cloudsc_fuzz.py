"""The cloudsc target as a fuzzing target: its shipped constraints decode every byte string
into a plausible configuration, and its own offload transformation stays silent."""
import functools

import numpy as np

from tests.conftest import PROGRAMS, run_cli, summary_of


@functools.lru_cache(maxsize=None)
def cloudsc():
    from harnessgen.targets import resolve

    target, _ = resolve("cloudsc")
    return target, target.programs["cloudsc"].build()


def test_shipped_constraints_order_the_window_and_keep_values_physical():
    from harnessgen.cutout.extract import whole_program_pair
    from harnessgen.inputs.constraints import derive
    from harnessgen.inputs.layout import build_layout

    target, sdfg = cloudsc()
    pair = whole_program_pair(sdfg)
    layout = build_layout(pair, derive(pair, user_file=target.constraints_file))
    assert layout.float_tiny == 1e-300
    rng = np.random.default_rng(0)
    for size in (0, 7, 64, 4096, 200_000):
        decoded = layout.decode(rng.bytes(size))
        s = decoded.symbols
        assert 1 <= s["KIDIA"] <= s["KFDIA"] <= s["KLON"] <= 16
        assert 2 <= s["NCLDTOP"] <= s["KLEV"] <= 16
        a = decoded.arrays
        assert 60 <= a["PTSPHY"].min() and a["PTSPHY"].max() <= 7200
        assert 160 <= a["PT"].min() and a["PT"].max() <= 340
        assert a["PAP"].min() >= 100 and a["PA"].min() >= 0 and a["PA"].max() <= 1
        assert a["PCLV"].min() >= 0 and a["PMFD"].max() <= 0


def test_offloading_a_cloudsc_map_stays_silent_and_no_input_is_invalid(tmp_path):
    from harnessgen.plan.instances import enumerate_instances, load_transformation

    spec = "harnessgen.targets.cloudsc_xforms:OffloadMap"
    target, sdfg = cloudsc()
    cls = load_transformation(spec)
    [first, *_] = enumerate_instances(target, list(target.programs.values()), cls, spec, {"cloudsc": sdfg})
    # fuzzed, not proved: every input the fuzzer makes must be valid for pre
    proc = run_cli(["fuzz", "--program", "cloudsc", "--transformation", spec, "--instance", first.id,
                    "--time", "20", "--prove", "off"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "PASS", entry
    assert entry["crashes"] == [] and entry["execs"] > 1000


def test_offloading_a_map_that_reads_the_level_above_stays_inside_the_arrays(tmp_path):
    """The memlet DaCe propagates out of the map spans T[:, k - 1:k + 1] even at k = 0, where
    the kernel does not read level k - 1; copying it whole into the device twin wrote before
    the twin's start (a POST_CRASH fuzzing CLOUDSC found). The copies are clamped to the array."""
    proc = run_cli(["fuzz", "--program", f"{PROGRAMS / 'level_above.py'}:level_above", "--transformation",
                    "harnessgen.targets.cloudsc_xforms:OffloadMap", "--time", "10"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "PASS" and entry["crashes"] == [] and entry["execs"] > 1000, entry
