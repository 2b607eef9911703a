"""Which form of a program pattern transformations meet: an SDFG handed over as a file (or by a
builder) as given, a program a frontend wrote simplified; --simplify/--no-simplify decide."""
import dace
import pytest

from harnessgen import subjects
from harnessgen.plan.params import ParamOptions

N = dace.symbol("N")


def _two_states(path):
    """Two states one after the other, each copying a container: simplify fuses them."""
    sdfg = dace.SDFG("two_states")
    sdfg.add_array("A", [N], dace.float64)
    sdfg.add_array("B", [N], dace.float64)
    sdfg.add_array("C", [N], dace.float64)
    first = sdfg.add_state("first", is_start_block=True)
    second = sdfg.add_state_after(first, "second")
    for state, src, dst in ((first, "A", "B"), (second, "A", "C")):
        state.add_mapped_tasklet("copy", {"i": "0:N"}, {"a": dace.Memlet(f"{src}[i]")}, "b = a + 1",
                                 {"b": dace.Memlet(f"{dst}[i]")}, external_edges=True)
    sdfg.save(str(path))
    return path


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
    sdfg = dace.SDFG("producer_consumer")
    for name in "ABC":
        sdfg.add_array(name, [N], dace.float64)
    first = sdfg.add_state("first", is_start_block=True)
    second = sdfg.add_state_after(first, "second")
    for state, src, dst in ((first, "A", "B"), (second, "B", "C")):
        state.add_mapped_tasklet("step", {"i": "0:N"}, {"a": dace.Memlet(f"{src}[i]")}, "b = a * 2",
                                 {"b": dace.Memlet(f"{dst}[i]")}, external_edges=True)
    sdfg.save(str(path))
    return path


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
