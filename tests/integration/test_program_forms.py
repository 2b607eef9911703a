"""Which form of a program pattern transformations meet: an SDFG handed over as a file (or by a
builder) as given, a program a frontend wrote simplified; --simplify/--no-simplify decide."""
import dace
import pytest

from harnessgen import subjects
from harnessgen.plan.params import ParamOptions

N = dace.symbol("N")


def _map_per_state(path, name: str, copies, code: str):
    """Two states one after the other, a map in each: ``copies`` says what each reads and writes."""
    sdfg = dace.SDFG(name)
    for array in "ABC":
        sdfg.add_array(array, [N], dace.float64)
    first = sdfg.add_state("first", is_start_block=True)
    second = sdfg.add_state_after(first, "second")
    for state, (src, dst) in zip((first, second), copies):
        state.add_mapped_tasklet("step", {"i": "0:N"}, {"a": dace.Memlet(f"{src}[i]")}, code,
                                 {"b": dace.Memlet(f"{dst}[i]")}, external_edges=True)
    sdfg.save(str(path))
    return path


def _two_states(path):
    """Two states one after the other, each copying a container: simplify fuses them."""
    return _map_per_state(path, "two_states", (("A", "B"), ("A", "C")), "b = a + 1")


@pytest.mark.parametrize("flag,form,matches", [(None, "as given", 1), (True, "simplified", 0), (False, "as given", 1)])
def test_an_sdfg_file_is_tested_as_given_unless_asked(tmp_path, flag, form, matches):
    path = _two_states(tmp_path / "two_states.sdfg")
    subject = subjects.load(str(path), flag)
    found = subject.instances("StateFusion", None, ParamOptions("default"))
    assert len(found) == matches
    for inst in found:
        assert subject.describe("StateFusion", inst)["form"] == form


def test_a_builder_function_is_an_sdfg_given(tmp_path):
    path = _two_states(tmp_path / "two_states.sdfg")
    builder = tmp_path / "builder.py"
    builder.write_text(f"import dace\n\n\ndef build():\n    return dace.SDFG.from_file({str(path)!r})\n")
    subject = subjects.load(f"{builder}:build")
    [inst] = subject.instances("StateFusion", None, ParamOptions("default"))
    assert not inst.simplified


def test_a_dace_program_is_simplified_by_default():
    subject = subjects.load("kernels:gemm")
    assert subject.simplify is True
    assert all(i.simplified for i in subject.instances("MapTiling", None, ParamOptions("default")))


def _producer_then_consumer(path):
    """A map writing B, then in the next state a map reading it: fusable once simplify has put
    both in one state, not as given."""
    return _map_per_state(path, "producer_consumer", (("A", "B"), ("B", "C")), "b = a * 2")


def test_no_match_as_given_says_how_many_the_simplified_form_has(tmp_path):
    from harnessgen.campaign.planning import PlanRequest, enumerate_spec
    from harnessgen.cli.render import enumeration_line
    path = _producer_then_consumer(tmp_path / "pc.sdfg")
    request = PlanRequest(str(path))
    row, found, _ = enumerate_spec(subjects.load(str(path)), "MapFusion", 0, request, None, True)
    assert found == [] and row["in_other_form"] >= 1
    assert f"{row['in_other_form']} in the simplified program: pass --simplify" in enumeration_line(row, 0.1)
    # where the form met has matches, nothing is said of the other
    row, found, _ = enumerate_spec(subjects.load(str(path), True), "MapFusion", 0, request, None, True)
    assert found and "in_other_form" not in row and "--simplify" not in enumeration_line(row, 0.1)
