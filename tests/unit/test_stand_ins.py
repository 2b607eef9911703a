"""The stand-ins a cutout uses to read scalars back are faithful: a scalar the program writes
becomes a one-element array, and every place the control flow reads it by name reads its
element (on DaCe 2.0 also the conditions of ``ConditionalBlock``s and the statements of
``LoopRegion``s); a scalar it only reads stays a scalar, passed by value as the program
passes it. The converted program, compiled by DaCe, computes what the program computes."""
import numpy as np
import pytest

from harnessgen.core.errors import ConfigError
from harnessgen.cutout.extract import scalars_to_arrays
from harnessgen.dacecompat import copy_sdfg
from harnessgen.dacecompat.code import bare_reads, code_places, index_bare_reads
from harnessgen.targets import resolve
from tests.conftest import PROGRAMS


def program(name: str):
    """The program as DaCe's frontend and simplify made it (``counted`` only where the frontend
    parses it: DaCe 1.0.2's refuses a scalar argument assigned in a ``while`` loop)."""
    import dace

    target, _ = resolve(f"{PROGRAMS / 'scalar_reads.py'}:{name}")
    try:
        sdfg = target.programs[name].sdfg(True)
    except ConfigError as exc:        # harnessgen's error naming what DaCe's frontend raised
        if not isinstance(exc.__cause__, FileExistsError):
            raise
        pytest.skip(f"DaCe {dace.__version__}'s frontend cannot parse {name}: {exc.__cause__}")
    return copy_sdfg(sdfg, f"hg_stand_in_{name}")


def test_index_bare_reads_rewrites_reads_only():
    assert index_bare_reads("(x_index < lo)", {"lo"}) == "x_index < lo[0]"
    assert index_bare_reads("i = (i + s)", {"s"}) == "i = i + s[0]"
    assert index_bare_reads("s[0] + t", {"s"}) == "s[0] + t"            # already an element
    assert index_bare_reads("A[s] > 0", {"s"}) == "A[s[0]] > 0"          # an index that reads it
    assert index_bare_reads("s = 1", {"s"}) == "s = 1"                  # a target is not a read
    assert bare_reads("min(s, t[s])", {"s", "t"}) == {"s"}


def test_a_scalar_only_read_stays_a_scalar():
    sdfg = program("clip_below")
    assert scalars_to_arrays(sdfg, ["lo", "x", "y"]) == []
    assert type(sdfg.arrays["lo"]).__name__ == "Scalar"


@pytest.mark.parametrize("name", ["flagged", "counted"])
def test_a_written_scalar_is_read_as_its_element_at_every_place_of_the_control_flow(name):
    sdfg = program(name)
    readers = [p.where for p in code_places(sdfg) if bare_reads(p.text, {"s"})]
    assert readers, "the program reads s in its control flow: the test would show nothing"
    assert scalars_to_arrays(sdfg, ["s", "x", "y"]) == ["s"]
    left = [(p.where, p.text) for p in code_places(sdfg) if bare_reads(p.text, {"s"})]
    assert not left, left
    sdfg.validate()


def expected(name: str, x: np.ndarray, y: np.ndarray):
    """(y, s) as the program computes them."""
    n = len(x)
    y = y.copy()
    if name == "flagged":
        s = x[0] * 2.0
        if s > 1.0:
            y = x + s
        return y, s
    s = n - 1
    y[:s] = x[:s]
    while s > 0:
        y[0] += 1.0
        s -= 2
    return y, s


@pytest.mark.parametrize("name", ["flagged", "counted"])
def test_the_converted_program_compiles_and_computes_what_the_program_computes(name, tmp_path):
    import dace

    sdfg = program(name)
    scalars_to_arrays(sdfg, ["s", "x", "y"])
    # DaCe's default flags hold -ffast-math, which would make this process flush subnormals
    flags = dace.config.Config.get("compiler", "cpu", "args").replace("-ffast-math", "")
    with dace.config.set_temporary("default_build_folder", value=str(tmp_path)), \
            dace.config.set_temporary("compiler", "cpu", "args", value=flags):
        compiled = sdfg.compile()
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 8):
        x = rng.uniform(-1.0, 1.0, n)
        x[0] = 0.9 if n % 2 else 0.1                 # both sides of the branch
        y = rng.uniform(-1.0, 1.0, n)
        s = np.zeros(1, dtype=sdfg.arrays["s"].dtype.as_numpy_dtype())
        want_y, want_s = expected(name, x, y)
        compiled(x=x.copy(), y=y, s=s, N=n)
        np.testing.assert_allclose(y, want_y)
        assert s[0] == pytest.approx(want_s)
