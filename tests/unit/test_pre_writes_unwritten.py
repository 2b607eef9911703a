"""An input on which pre changes a container it never writes is invalid, never a finding.

A symbol left free by the constraints (a loop variable past its loop's end, a view's stride
past its buffer) has pre write far outside one container, into the buffer of another the
fuzzer allocated beside it: resnet's conv2d cutouts did so. Pre and post then both "differ" in
a container neither writes, on bytes no program holds. Every container pre's SDFG never writes
must come out of pre as it went in; where it does not, the input is INVALID_INPUT (a missing
constraint), in the native harness and in the replay alike.

The stand-in for such a stray write is a C++ tasklet that writes through a pointer to a
container its memlets only read: deterministic, where a real stray write lands wherever the
heap put the neighbouring buffer."""
import numpy as np
import dace

from harnessgen.core.outcome import Outcome
from harnessgen.core.runtime import Tolerance
from harnessgen.cutout.extract import whole_program_pair
from harnessgen.harness import judge
from harnessgen.harness.replay import replay
from harnessgen.triage.classify import native_signature

N = dace.symbol("N")


def _program(stray: bool) -> dace.SDFG:
    sdfg = dace.SDFG("stray_write" if stray else "plain_read")
    sdfg.add_array("a", [N], dace.float64)
    sdfg.add_array("b", [N], dace.float64)
    state = sdfg.add_state()
    code = ("const_cast<double *>(src)[0] = -7.0;\n" if stray else "") + "dst = src[0] + 1.0;"
    tasklet = state.add_tasklet("t", {"src"}, {"dst"}, code, language=dace.Language.CPP)
    state.add_edge(state.add_read("a"), None, tasklet, "src", dace.Memlet("a[0:N]"))
    state.add_edge(tasklet, "dst", state.add_write("b"), None, dace.Memlet("b[0]"))
    return sdfg


def _prepared(tmp_path, stray: bool):
    pair = whole_program_pair(_program(stray), "stray" if stray else "plain")
    return judge.prepare(pair, judge.JudgeOptions(work_dir=tmp_path))


def _input(layout):
    arrays = {"a": np.arange(1.0, 5.0), "b": np.zeros(4)}
    return layout.encode({"N": 4}, {c.name: arrays[c.name] for c in layout.containers})


def test_the_layout_knows_which_containers_pre_writes(tmp_path):
    layout = _prepared(tmp_path, stray=False).layout
    assert {c.name: c.pre_writes for c in layout.containers} == {"a": False, "b": True}


def test_a_pre_that_changes_a_container_it_never_writes_makes_the_input_invalid(tmp_path):
    prepared = _prepared(tmp_path, stray=True)
    data = _input(prepared.layout)
    result = replay(prepared.harness.dir, data)
    assert result.outcome == Outcome.INVALID_INPUT and result.container == "a", result.describe()
    assert "never writes" in result.message
    assert native_signature(prepared.harness, data, Tolerance()) == (Outcome.INVALID_INPUT.name, None)


def test_the_same_program_without_the_stray_write_passes(tmp_path):
    prepared = _prepared(tmp_path, stray=False)
    data = _input(prepared.layout)
    assert replay(prepared.harness.dir, data).outcome == Outcome.PASS
    assert native_signature(prepared.harness, data, Tolerance()) == (Outcome.PASS.name, None)
