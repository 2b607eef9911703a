"""Program reduction keeps what shows the bug and drops the rest, never what the bug needs."""
import dace
import numpy as np

from harnessgen.bugs.cluster import Bug, FindingRecord
from harnessgen.bugs.reduce import ReduceOptions, StaticJudge, program_size, reduce_program
from harnessgen.bugs.signature import exception_signature
from harnessgen.cutout.changes import load_change
from harnessgen.plan.instances import load_transformation
from tests.conftest import PROGRAMS

SPEC = f"{PROGRAMS / 'broken_xforms.py'}:RaisesOnApply"
N = dace.symbol("N")


@dace.program
def three_steps(A: dace.float64[N], B: dace.float64[N], C: dace.float64[N]):
    for i in dace.map[0:N]:
        B[i] = A[i] * 2.0 + 1.0
    for i in dace.map[0:N]:
        C[i] = np.exp(B[i])          # only this tasklet matches (it calls exp)
    for i in dace.map[0:N]:
        A[i] = C[i] - B[i]


def _bug_of(sdfg, cls):
    from harnessgen.cutout.extract import transformed_program
    from harnessgen.plan.instances import Instance, pattern_matches


    xform = next(iter(pattern_matches(sdfg, cls, None)))
    inst = Instance(id="t", target="", program="three_steps", transformation=cls.__name__,
                    transformation_spec=SPEC, match=xform.to_json())
    pair = transformed_program(sdfg, inst, cls)
    signature = exception_signature(pair.verdict.name, cls.__name__, pair.error, ())
    record = FindingRecord(path=PROGRAMS, outcome=pair.verdict.name, transformation=cls.__name__, instance="t",
                           program="three_steps", target="", seen_at=0.0, input_bytes=None,
                           size=program_size(sdfg), signature=signature)
    return Bug(signature, [record]), inst


def test_reduction_drops_what_the_failure_does_not_need_and_keeps_the_failure():
    cls = load_transformation(SPEC)
    sdfg = three_steps.to_sdfg(simplify=True)
    bug, instance = _bug_of(sdfg, cls)
    judge = StaticJudge(bug, load_change(SPEC), instance)
    reduced, pair, message, judged, kept, why = reduce_program(sdfg, judge, ReduceOptions(seconds=120))
    assert pair is not None and kept >= 1 and judged > kept
    assert program_size(reduced)[1] < program_size(sdfg)[1]
    nodes = [n for n, _ in reduced.all_nodes_recursive()]
    # the two maps around the one that calls exp are gone; the match itself stays
    assert sum(isinstance(n, dace.nodes.MapEntry) for n in nodes) == 1
    assert sum(isinstance(n, dace.nodes.Tasklet) and "exp(" in n.code.as_string for n in nodes) == 1
    assert "gave up half way" in message and judge(reduced) is not None       # and still fails the same way
    assert why == "no smaller program shows the bug"


def test_a_program_without_the_failure_is_not_reduced():
    cls = load_transformation(SPEC)
    sdfg = three_steps.to_sdfg(simplify=True)
    bug, instance = _bug_of(sdfg, cls)
    for node, state in list(sdfg.all_nodes_recursive()):         # nothing calls exp any more: no match
        if isinstance(node, dace.nodes.Tasklet):
            node.code = dace.properties.CodeBlock(node.code.as_string.replace("exp(", "abs("))
    _, pair, _, judged, kept, why = reduce_program(sdfg, StaticJudge(bug, load_change(SPEC), instance), ReduceOptions())
    assert pair is None and kept == 0 and judged == 1 and "does not show" in why


def test_a_reduction_that_fails_is_recorded_and_the_others_go_on(tmp_path):
    from harnessgen.bugs.analysis import _reduced
    from harnessgen.bugs.reduce import ReduceOptions

    folder = tmp_path / "finding"
    folder.mkdir()
    (folder / "pre.sdfg").write_text("{ not an SDFG")
    signature = exception_signature("FAILED_TO_APPLY", "T", "KeyError: 'x'", ())
    record = FindingRecord(path=folder, outcome="FAILED_TO_APPLY", transformation="T", instance="T-1", program="p",
                           target="t", seen_at=0.0, input_bytes=None, size=(1, 2), signature=signature)
    reduction = _reduced(Bug(signature, [record]), tmp_path, ReduceOptions())
    assert reduction["folder"] is None and "harnessgen defect" in reduction["reason"]
    assert reduction["before"] == reduction["after"] == [1, 2]


@dace.program
def count_up(A: dace.float64[N]):
    for i in range(N):
        A[i] = A[i] + 1.0


@dace.program
def clip(A: dace.float64[N]):
    for i in range(N):
        if A[i] > 1.0:
            A[i] = 1.0
        else:
            A[i] = A[i] * 2.0


def test_a_loop_cut_to_one_trip_enters_its_body_at_the_start_only_and_is_offered_once():
    from dace.sdfg.state import LoopRegion

    from harnessgen.bugs.reduce import _loop_of, edits, weight

    sdfg = count_up.to_sdfg(simplify=False)
    # DaCe 1.0.2 writes the loop as states around a guard, DaCe 2.0 as a LoopRegion
    guards = [s for s in sdfg.nodes() if not isinstance(s, LoopRegion) and _loop_of(sdfg, s) is not None]
    regions = [b for b in sdfg.nodes() if isinstance(b, LoopRegion)]
    assert len(guards) + len(regions) == 1
    cuts = [edit for label, edit in edits(sdfg) if label.startswith("one trip")]
    assert len(cuts) == 1
    before = weight(sdfg)
    if guards:
        itervar, start, body, leave = _loop_of(sdfg, guards[0])
    cuts[0](sdfg)
    assert weight(sdfg) < before and not [e for label, e in edits(sdfg) if label.startswith("one trip")]
    if guards:
        # the body is entered only at the start (and only where it was entered before); the way
        # out is exactly the other case
        entered, left = body.data.condition.as_string, leave.data.condition.as_string
        assert f"(i < N) and ({itervar} == {start})" in entered and itervar == "i" and str(start) == "0"
        assert left.replace(" ", "").startswith("(not(") and entered.strip("()").replace(" ", "") in left.replace(" ", "")
    else:
        condition = regions[0].loop_condition.as_string.replace(" ", "")
        assert "(i==0)" in condition and "i<N" in condition, condition
    sdfg.validate()


def test_a_branch_of_a_conditional_region_can_be_dropped():
    from dace.sdfg.state import ConditionalBlock

    from harnessgen.bugs.reduce import edits

    sdfg = clip.to_sdfg(simplify=True)
    conditionals = [b for b in sdfg.all_control_flow_blocks() if isinstance(b, ConditionalBlock)]
    drops = [edit for label, edit in edits(sdfg) if label.startswith("drop branch")]
    assert len(drops) == sum(len(c.branches) for c in conditionals if len(c.branches) > 1)
    if drops:           # DaCe 2.0 keeps the if/else as a conditional region; 1.0.2 as states
        branches = sum(len(c.branches) for c in conditionals)
        drops[0](sdfg)
        sdfg.validate()
        assert sum(len(c.branches) for c in sdfg.all_control_flow_blocks()
                   if isinstance(c, ConditionalBlock)) == branches - 1
