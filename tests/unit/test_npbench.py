"""The npbench target: every benchmark of an NPBench checkout, found from ``bench_info``.

``tests/programs/npbench_mini`` is a checkout in NPBench's layout with four benchmarks of our
own: one returns a value carried in a symbol through a loop (``checksum``), one reads a window
``i:i+K`` of an input ``H`` long (``window``: the kernel no wider than the input at every preset
size, and nowhere checked), one gathers through uint32 segment bounds (``segments``), and one
DaCe's frontend refuses (``unparsable``)."""
import json

import numpy as np
import pytest

from harnessgen.checks.reference_check import NOT_LOADED, describe_checks
from harnessgen.core.errors import ConfigError
from harnessgen.subjects.sdfg import SdfgSubject
from harnessgen.targets import npbench, resolve
from harnessgen.targets.reference import Reference
from tests.conftest import PROGRAMS

MINI = PROGRAMS / "npbench_mini"


@pytest.fixture
def mini(monkeypatch):
    monkeypatch.setenv("HARNESSGEN_NPBENCH", str(MINI))
    return MINI


def test_every_benchmark_comes_from_bench_info(mini):
    target, _ = resolve("npbench")
    assert sorted(target.programs) == ["checksum", "segments", "unparsable", "window"]
    assert target.partial and not target.default_transformations     # every CPU built-in
    window = target.programs["window"]
    assert window.description == "window/window_dace.py:window_sums"
    assert window.reference is not None and window.reference.independent


def test_a_missing_checkout_says_how_to_get_one(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESSGEN_NPBENCH", str(tmp_path))
    with pytest.raises(ConfigError, match="no NPBench checkout.*NPBENCH=<folder>.*git clone"):
        resolve("npbench")


def test_sizes_stay_ordered_only_where_the_program_combines_them():
    presets = {"S": {"H": 64, "K": 4, "B": 2}, "M": {"H": 640, "K": 8, "B": 3}}
    combined = {frozenset({"H", "K"})}
    assert npbench.relations(presets, ["B", "H", "K"], combined) == {"H": ["K"]}
    # B is smaller than H at every preset too, but the program never combines them
    text = npbench.constraints_text({"H": ["K"]})
    assert text["H"] == ["max(1, K)", "16"]


def test_the_window_benchmark_keeps_its_kernel_within_its_input(mini):
    target, _ = resolve("npbench")
    path = target.programs["window"].constraints()
    data = json.loads(path.read_text())
    assert data["H"] == ["max(1, K)", "16"] and "K" not in data, data
    assert target.programs["checksum"].constraints() is None


def test_own_inputs_are_the_benchmarks_initialize_at_scaled_sizes(mini):
    target, _ = resolve("npbench")
    sizes, values = target.programs["segments"].own_inputs(8)
    assert sizes == {"G": 1, "E": 8, "N": 1}, sizes          # S: 100, 800, 120 scaled to at most 8
    assert values["starts"].dtype == np.uint32 and values["starts"][-1] == 8
    assert npbench.scaled_sizes({"S": {"H": 64, "K": 4}}, 16) == {"H": 16, "K": 1}


def test_a_benchmark_that_does_not_load_is_one_line_and_the_others_run(mini, tmp_path):
    subject = SdfgSubject("npbench")
    for _, load in subject.loading_steps(["MapTiling"]):
        load()
    assert sorted(subject.unloadable()) == ["unparsable"]
    assert "DaCe's frontend cannot make an SDFG of it" in subject.unloadable()["unparsable"]
    assert [p.name for p in subject.target.select(None)] == ["checksum", "segments", "window"]
    [record] = [c for c in _not_loaded_checks(subject) if c["program"] == "unparsable"]
    assert record["verdict"] == NOT_LOADED
    lines = describe_checks([record])
    assert len(lines) == 1 and lines[0].startswith("unparsable: not loaded, left out of the run"), lines


def _not_loaded_checks(subject):
    from harnessgen.checks.reference_check import not_loaded

    return [not_loaded(name, reason) for name, reason in subject.unloadable().items()]


def test_one_benchmark_named_that_does_not_load_stops_the_run(mini):
    subject = SdfgSubject("npbench:unparsable")
    with pytest.raises(ConfigError, match="frontend cannot make an SDFG"):
        for _, load in subject.loading_steps(["MapTiling"]):
            load()


def test_a_returned_value_is_an_output_of_the_reference():
    arrays = {"data": np.arange(4, dtype=np.uint8), "__return": np.zeros(1, dtype=np.uint16)}
    out = Reference("sum", lambda data: int(data.sum()) + 1).run(arrays, {})
    assert out["__return"].tolist() == [7] and out["__return"].dtype == np.uint16
    # a NumPy version that returns what the program writes in place: nothing to put it in
    out = Reference("in place", lambda data: data * 2).run({"data": np.ones(2)}, {})
    assert out["data"].tolist() == [1.0, 1.0]


def test_a_reference_parameter_with_a_default_is_its_own_constant():
    out = Reference("poly", lambda data, poly=3: int(data.sum()) * poly).run(
        {"data": np.ones(2), "__return": np.zeros(1)}, {})
    assert out["__return"].tolist() == [6.0]
