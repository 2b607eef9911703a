"""A static finding on the whole program counts only where the unchanged program passes the same
check: a program that does not validate as harnessgen holds it (NPBench's spmv, read back from
JSON, did not) makes every change to it "invalid", and none of those is the transformation's."""
import dace
import pytest

from harnessgen.core.errors import Unsupported
from harnessgen.core.outcome import Outcome
from harnessgen.cutout.extract import whole_program_pair


def _program(valid: bool):
    sdfg = dace.SDFG("counted")
    sdfg.add_array("A", [4], dace.float64)
    first = sdfg.add_state("first")
    second = sdfg.add_state("second")
    # an interstate edge reading a symbol nothing defines: DaCe's validation refuses the program
    sdfg.add_edge(first, second, dace.InterstateEdge(assignments={"k": "1" if valid else "undefined_count + 1"}))
    return sdfg


def test_an_invalid_program_after_a_change_counts_only_where_the_program_validates():
    with pytest.raises(Unsupported, match="the program itself does not validate"):
        whole_program_pair(_program(valid=False), "whole", transform=lambda post: None)
    pair = whole_program_pair(_program(valid=True), "whole",
                              transform=lambda post: post.add_edge(post.node(1), post.add_state("third"),
                                                                   dace.InterstateEdge(assignments={"j": "missing"})))
    assert pair.verdict == Outcome.INVALID_SDFG, pair.error
