"""Accesses a change leaves unordered: a state that reads A[k] in two tasklets, fused with the
next state that increments A[k], without the ordering the reads need (what DaCe's
StateFusionExtended did before its 2026 fix), is a data race by DaCe's semantics though
DaCe's sequential CPU code computes the right values. Only what the change adds counts;
conflict-resolved writes and disjoint elements are no conflict."""
import dace
from dace import InterstateEdge, Memlet

from harnessgen.cutout.ordering import new_unordered_accesses


def _read_then_increment(read_at: str = "k", wcr: bool = False) -> dace.SDFG:
    sdfg = dace.SDFG("read_then_increment")
    for name in "ABC":
        sdfg.add_array(name, [8], dace.float64)
    sdfg.add_symbol("k", dace.int64)
    first = sdfg.add_state("read_A", is_start_block=True)
    second = sdfg.add_state("increment_A")
    sdfg.add_edge(first, second, InterstateEdge())
    for out in "BC":
        tasklet = first.add_tasklet(f"copy_to_{out}", {"_in"}, {"_out"}, "_out = _in")
        first.add_edge(first.add_read("A"), None, tasklet, "_in", Memlet(f"A[{read_at}]"))
        first.add_edge(tasklet, "_out", first.add_write(out), None, Memlet(f"{out}[{read_at}]"))
    tasklet = second.add_tasklet("increment", {"_in"}, {"_out"}, "_out = _in + 1" if not wcr else "_out = 1")
    second.add_edge(second.add_read("A"), None, tasklet, "_in", Memlet("A[k]"))
    second.add_edge(tasklet, "_out", second.add_write("A"), None,
                    Memlet("A[k]", wcr="lambda a, b: a + b") if wcr else Memlet("A[k]"))
    return sdfg


def _fused_without_ordering(sdfg: dace.SDFG) -> dace.SDFG:
    first, second = sdfg.nodes()
    for node in second.nodes():
        first.add_node(node)
    for edge in second.edges():
        first.add_edge(edge.src, edge.src_conn, edge.dst, edge.dst_conn, edge.data)
    sdfg.remove_node(second)
    sdfg.validate()                 # DaCe's validation sees nothing wrong
    return sdfg


def test_a_fusion_that_drops_a_reads_ordering_is_found():
    pre = _read_then_increment()
    said = new_unordered_accesses(pre, _fused_without_ordering(_read_then_increment()))
    assert said.startswith("A is written by A (from increment) and accessed by A (read by copy_to_"), said
    assert "no path between them" in said


def test_what_pre_already_leaves_unordered_is_not_the_changes():
    fused = _fused_without_ordering(_read_then_increment())
    assert new_unordered_accesses(fused, _fused_without_ordering(_read_then_increment())) == ""
    assert new_unordered_accesses(_read_then_increment(), _read_then_increment()) == ""


def test_disjoint_elements_and_resolved_writes_are_no_conflict():
    pre = _read_then_increment(read_at="k + 1")
    assert new_unordered_accesses(pre, _fused_without_ordering(_read_then_increment(read_at="k + 1"))) == ""
    pre = _read_then_increment(wcr=True)
    assert new_unordered_accesses(pre, _fused_without_ordering(_read_then_increment(wcr=True))) == ""
