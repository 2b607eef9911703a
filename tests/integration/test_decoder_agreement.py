"""The C++ decoder (rendered from the layout) and the NumPy decoder agree byte for byte."""
import struct
import subprocess

import numpy as np
import pytest

from harnessgen.cutout.extract import whole_program_pair
from harnessgen.harness.build import build
from harnessgen.inputs.constraints import derive
from harnessgen.inputs.layout import build_layout
from tests.conftest import PROGRAMS, layout_of, make_pair


def random_inputs(count, seed):
    """Random lengths (mostly short, a few up to 1 MiB) and contents of several flavours."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        kind = i % 5
        length = int(rng.choice([rng.integers(0, 64), rng.integers(64, 4096), rng.integers(4096, 1 << 20)],
                                p=[0.5, 0.4999, 0.0001] if i else [1, 0, 0]))
        if kind == 0:
            data = rng.integers(0, 256, size=length, dtype=np.uint8).tobytes()
        elif kind == 1:   # small integers in every slot: symbols near their bounds
            data = rng.integers(-3, 20, size=(length + 3) // 4, dtype=np.int32).tobytes()[:length]
        elif kind == 2:   # doubles around the interesting magnitudes, specials included
            vals = rng.choice([0.0, -0.0, 1e-12, -1e-9, 1e-9, 2.5, 1e6, -1e6, 3e6, np.nan, np.inf, -np.inf, 1e300],
                              size=(length + 7) // 8)
            data = vals.astype("<f8").tobytes()[:length]
        elif kind == 3:   # floats of single precision
            data = rng.normal(0, 1e3, size=(length + 3) // 4).astype("<f4").tobytes()[:length]
        else:             # all bits set: the largest raw values of every width
            data = b"\xff" * length
        out.append(data)
    return out


def cpp_decode(binary, inputs):
    stream = b"".join(struct.pack("<I", len(d)) + d for d in inputs)
    proc = subprocess.run([str(binary), "--decode-dump"], input=stream, capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def check_agreement(layout, binary, inputs):
    out = cpp_decode(binary, inputs)
    pos = 0
    for n, data in enumerate(inputs):
        expected = layout.decode(data)
        ok = out[pos]
        pos += 1
        assert ok == (expected is not None), f"input {n}: satisfiable differs"
        if expected is None:
            continue
        consumed = struct.unpack_from("<Q", out, pos)[0]
        pos += 8
        assert consumed == expected.consumed, f"input {n}: consumed bytes differ"
        for slot in layout.symbols:
            value = struct.unpack_from("<q", out, pos)[0]
            pos += 8
            assert value == expected.symbols[slot.name], f"input {n}: symbol {slot.name}"
        for slot in layout.containers:
            offset, count = struct.unpack_from("<QQ", out, pos)
            pos += 16
            assert offset == expected.offsets[slot.name], f"input {n}: offset of {slot.name}"
            want = expected.arrays[slot.name]
            assert count == want.size, f"input {n}: count of {slot.name}"
            got = out[pos:pos + count * slot.itemsize]
            pos += count * slot.itemsize
            assert got == want.astype(want.dtype.newbyteorder("<")).tobytes(), f"input {n}: values of {slot.name}"
    assert pos == len(out)


@pytest.fixture(scope="module")
def mixed_build(build_cache):

    from harnessgen.targets.loaders import load_python_program

    target = load_python_program(PROGRAMS / "mixed_types.py", "mixed")
    pair = whole_program_pair(target.programs["mixed"].build(), "mixed-types")
    constraints = derive(pair, user_file=PROGRAMS / "mixed_types.constraints.json")
    layout = build_layout(pair, constraints)
    assert {c.dtype for c in layout.containers} >= {"float64", "float32", "int16", "uint8", "bool", "complex128",
                                                    "int64", "uint32"}
    return layout, build(pair, layout, build_cache, afl=False)


def test_all_dtypes_agree_on_10000_random_inputs(mixed_build):
    layout, harness = mixed_build
    check_agreement(layout, harness.harness_replay, random_inputs(10_000, seed=1))


def test_nonfinite_mode_agrees(build_cache):
    pair = make_pair("sigmoid", "MapTiling")
    layout = layout_of(pair, allow_nonfinite=True)
    harness = build(pair, layout, build_cache, afl=False)
    check_agreement(layout, harness.harness_replay, random_inputs(2_000, seed=2))


@pytest.mark.parametrize("program,spec", [("spmv", "LoopToMap"), ("column_window", "MapTiling"),
                                          ("gemm", "MapTiling")])
def test_derived_constraints_agree(build_cache, program, spec):
    pair = make_pair(program, spec)
    layout = layout_of(pair)
    harness = build(pair, layout, build_cache, afl=False)
    check_agreement(layout, harness.harness_replay, random_inputs(2_000, seed=3))


# DaCe 2.0's frontend passes the row through one in-and-out connector: no two connectors alias
@pytest.mark.dace_102
@pytest.mark.parametrize("program", ["shift_rows", "shift_rows_sized"])
def test_joined_alias_groups_agree(build_cache, program):
    """A cutout whose aliased views are joined into one container (a constant length, then a
    symbolic one): one allocation and one contents in both decoders."""
    from harnessgen.cutout.extract import extract
    from harnessgen.plan.instances import enumerate_instances, load_transformation
    from harnessgen.targets.loaders import load_python_program

    target = load_python_program(PROGRAMS / "aliased_rows.py", program)
    sdfg = target.programs[program].build()
    cls = load_transformation("LoopToMap")
    [inst] = enumerate_instances(target, [target.programs[program]], cls, "LoopToMap", {program: sdfg})
    pair = extract(sdfg, inst, cls)
    [group] = pair.aliases
    layout = layout_of(pair)
    [joint] = [slot for slot in layout.containers if slot.name == group["joined_as"]]
    assert str(joint.count) == group["length"] and not any(m in pair.containers for m in group["members"])
    harness = build(pair, layout, build_cache, afl=False)
    check_agreement(layout, harness.harness_replay, random_inputs(2_000, seed=4))


def test_a_symbolic_power_size_agrees_where_it_fits_and_where_it_saturates(build_cache):
    """x[R**K]: both decoders take the same sizes, and both refuse the same inputs whose R**K
    passes the input limit (int64 saturating in C++, exact in Python)."""
    from harnessgen.targets.loaders import load_python_program

    target = load_python_program(PROGRAMS / "power_size.py", "power_size")
    pair = whole_program_pair(target.programs["power_size"].build(), "power-size")
    layout = build_layout(pair, derive(pair))
    assert {s.name for s in layout.symbols} == {"R", "K"}
    harness = build(pair, layout, build_cache, afl=False)
    inputs = random_inputs(400, seed=7)
    sizes = [layout.decode(d) for d in inputs]
    assert any(d is None for d in sizes) and any(d is not None and d.arrays["x"].size > 1 for d in sizes)
    check_agreement(layout, harness.harness_replay, inputs)
