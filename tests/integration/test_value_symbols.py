"""Float and bool interstate symbols that are free in a cutout become decoded inputs:
the value the fuzzer chooses is the value the cutout computes with."""
import numpy as np
import pytest

from harnessgen.core.names import SYMBOL_INPUT_PREFIX
from harnessgen.cutout.extract import extract
from harnessgen.harness.build import build
from harnessgen.harness.replay import execute
from harnessgen.plan.instances import enumerate_instances, load_transformation
from harnessgen.targets.loaders import load_python_program
from tests.conftest import PROGRAMS, layout_of

SYMBOL = "g"           # g = G[0] * 2.0 in gated.py's gated_symbol, tested in `if g > 1.0`
CONTAINER = SYMBOL_INPUT_PREFIX + SYMBOL


@pytest.fixture(scope="module")
def gated_pair():
    target = load_python_program(PROGRAMS / "gated.py", "gated_symbol")
    program = target.programs["gated_symbol"]
    sdfg = program.build()
    assert str(sdfg.symbols[SYMBOL]) == "double"
    cls = load_transformation("MapTiling")
    insts = enumerate_instances(target, [program], cls, "MapTiling", {"gated_symbol": sdfg})
    # the map before the branch: B[i] = A[i] * g
    first = next(i for i in insts if sdfg.node(i.match.get("state_id", 0)).label == "MapState")
    return extract(sdfg, first, cls)


def test_a_float_symbol_becomes_an_input_container_of_pre_and_post(gated_pair):
    pair = gated_pair
    assert pair.ok, pair.error
    for sdfg in (pair.pre, pair.post):
        assert SYMBOL not in {str(s) for s in sdfg.free_symbols}
        assert not sdfg.arrays[CONTAINER].transient and str(sdfg.arrays[CONTAINER].dtype) == "double"
    assert CONTAINER in pair.input_config and CONTAINER in pair.containers
    assert CONTAINER not in pair.output_config


def test_the_decoded_value_is_the_value_the_cutout_computes_with(gated_pair, build_cache):
    layout = layout_of(gated_pair)
    assert layout.container(CONTAINER).dtype == "float64"
    harness = build(gated_pair, layout, build_cache, afl=False)
    a = np.arange(1.0, 6.0)
    for g in (0.25, -3.0):
        data = layout.encode({"N": 5}, {"A": a, "B": np.zeros(5), CONTAINER: np.array([g])})
        decoded = layout.decode(data)
        assert decoded.arrays[CONTAINER][0] == g
        for side in ("pre", "post"):
            out = execute(harness.dir, decoded, side=side)
            np.testing.assert_array_equal(out["B"], a * g)


def test_a_condition_reading_a_scalar_input_reads_its_value(build_cache):
    """The harness passes scalars as 1-element arrays; a condition that read the scalar by
    name must read element 0, not compare the pointer (pre and post both failed to build)."""
    from harnessgen.cutout.extract import whole_program_pair
    from harnessgen.dacecompat.code import code_places, names_read

    sdfg = load_python_program(PROGRAMS / "gated.py", "branch_on_scalar").programs["branch_on_scalar"].build()
    # an interstate edge's condition on DaCe 1.0.2, a ConditionalBlock's branch on 2.0
    assert any("s" in names_read(place.text) for place in code_places(sdfg)), [p.text for p in code_places(sdfg)]
    pair = whole_program_pair(sdfg)
    layout = layout_of(pair)
    harness = build(pair, layout, build_cache, afl=False)
    a = np.arange(4.0)
    for s, expected in ((2.0, a * 2.0), (0.5, a - 1.0)):
        decoded = layout.decode(layout.encode({"N": 4}, {"A": a, "B": np.zeros(4), "s": np.array([s])}))
        np.testing.assert_array_equal(execute(harness.dir, decoded, side="post")["B"], expected)
