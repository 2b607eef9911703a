"""Root-cause signatures: the same bug in another instance gets the same one, another bug never."""
import json
from pathlib import Path

import dace
import pytest
from hypothesis import given, settings, strategies as st

from harnessgen.bugs import signature as sig
from harnessgen.bugs.cluster import FindingRecord, cluster, sdfg_size
from harnessgen.triage.stack import fault_kind, parse_gdb
from harnessgen.triage.localize import dataflow_order

TRACEBACK = '''AttributeError: 'CodeBlock' object has no attribute '_fields'
  File "{venv}/lib/python3.11/site-packages/dace/transformation/interstate/loop_unroll.py", line 131, in instantiate_loop
    ASTFindReplace({{{var}: str(value)}}).visit(data.condition)
  File "{py}/lib/python3.11/ast.py", line 418, in visit
    return visitor(node)
'''


def test_names_numbers_and_paths_become_placeholders_words_and_types_stay():
    text = "Memlet subset out-of-bounds for __tmp_551_16_w[0:5] in /x/y/hg_post.cpp at 0x7ffe12 of ZQX (line 23)"
    out = sig.normalise(text, names={"ZQX"})
    assert out == "Memlet subset out-of-bounds for ID[N:N] in PATH at ADDR of ID (line N)"
    assert sig.normalise_compiler("assigning to 'dace::vec<double, 4>' from incompatible type 'double'") == \
        sig.normalise_compiler("assigning to 'dace::vec<int, 8>' from incompatible type 'int'")


def test_the_same_exception_in_two_instances_has_one_signature():
    one = TRACEBACK.format(venv="/a/.venv", py="/usr", var="jm")
    two = TRACEBACK.format(venv="/elsewhere/env", py="/opt/python", var="kt")
    a = sig.exception_signature("FAILED_TO_APPLY", "LoopUnroll", one, names={"jm"})
    b = sig.exception_signature("FAILED_TO_APPLY", "LoopUnroll", two, names={"kt"})
    assert a.key == b.key
    assert a.parts == ("AttributeError", "'CodeBlock' object has no attribute 'ID'",
                       "dace/transformation/interstate/loop_unroll.py:instantiate_loop")


@pytest.mark.parametrize("change", [
    lambda t: t.replace("instantiate_loop", "apply"),                       # raised elsewhere
    lambda t: t.replace("AttributeError", "KeyError"),                      # another exception
    lambda t: t.replace("no attribute", "no item"),                          # another message
])
def test_another_place_type_or_message_is_another_bug(change):
    text = TRACEBACK.format(venv="/v", py="/usr", var="jm")
    base = sig.exception_signature("FAILED_TO_APPLY", "LoopUnroll", text, names={"jm"})
    assert sig.exception_signature("FAILED_TO_APPLY", "LoopUnroll", change(text), names={"jm"}).key != base.key
    assert sig.exception_signature("FAILED_TO_APPLY", "LoopToMap", text, names={"jm"}).key != base.key


def test_validation_messages_lose_the_state_and_edge_they_name():
    one = "dace.sdfg.validation.InvalidSDFGEdgeError: Memlet subset out-of-bounds (at state s1, edge a -> b)"
    two = "dace.sdfg.validation.InvalidSDFGEdgeError: Memlet subset out-of-bounds (at state body_7, edge c[0:3])"
    assert sig.exception_signature("INVALID_SDFG", "LoopToMap", one, ()).key == \
        sig.exception_signature("INVALID_SDFG", "LoopToMap", two, ()).key


def test_the_compilers_first_error_without_file_position_or_names():
    log = ("building libpost.so failed (hg_post): 1 error generated.\nclang++ -O2 x.cpp\n"
           "/tmp/b1/src/cpu/hg_post.cpp:23:33: error: use of undeclared identifier 'hg_tmp_17'\n"
           "/tmp/b1/src/cpu/hg_post.cpp:40:1: error: expected ';'\n")
    assert sig.first_compiler_error(log) == "use of undeclared identifier 'hg_tmp_17'"
    other = log.replace("23:33", "90:2").replace("hg_tmp_17", "hg_tmp_3").replace("/tmp/b1", "/tmp/b9")
    assert sig.build_signature("X", log, ()).key == sig.build_signature("X", other, ()).key
    assert sig.build_signature("X", log, ()).key != sig.build_signature(
        "X", log.replace("use of undeclared identifier", "no member named"), ()).key


GDB_OUTPUT = """Program received signal SIGSEGV, Segmentation fault.
0x00007ffff7fb75f5 in omp_outlined[] () from /b/libpost.so
$1 = {code}
$2 = (void *) {addr}
=> 0x7ffff7fb75f5 <.omp_outlined.+197>:\tmulpd  0x10(%rsi,%rcx,8),%xmm1
#0  0x00007ffff7fb75f5 in omp_outlined[] () from /b/libpost.so
#1  0x00007ffff7bb25a3 in __kmp_invoke_microtask () from /usr/lib/llvm-14/lib/libomp.so.5
#4  0x00007ffff7fb7959 in __program_hg_post () from /b/libpost.so
#5  0x0000555555557ab4 in hg_run_one(unsigned char const*, unsigned long) ()
"""


def test_post_stack_from_gdb_keeps_posts_frames_and_why_it_faulted():
    stack = parse_gdb(GDB_OUTPUT.format(code=128, addr="0x0"))
    assert stack["frames"] == ["omp_outlined[]", "__program_hg_post"] and stack["mnemonic"] == "mulpd"
    assert stack["fault"].startswith("general protection")
    null = parse_gdb(GDB_OUTPUT.format(code=1, addr="0x8"))
    assert null["fault"].startswith("null pointer")
    assert sig.crash_signature("V", "SIGSEGV", stack).key != sig.crash_signature("V", "SIGSEGV", null).key
    assert fault_kind("SIGSEGV", "1", "0x7fff0000") == "unmapped address"
    assert parse_gdb("[Inferior 1 (process 7) exited with code 01]") is None


def _map_writing(wcr: bool):
    sdfg = dace.SDFG("w")
    sdfg.add_array("A", [10], dace.float64)
    sdfg.add_array("B", [10], dace.float64)
    state = sdfg.add_state()
    state.add_mapped_tasklet("m", {"i": "0:10"}, {"a": dace.Memlet("A[i]")}, "b = a",
                             {"b": dace.Memlet("B[0]", wcr="lambda x, y: x + y") if wcr else dace.Memlet("B[i]")},
                             external_edges=True)
    return json.loads(json.dumps(sdfg.to_json()))


def test_write_patterns_tell_a_reduction_from_an_elementwise_write_but_not_names():
    plain, reduce = _map_writing(False), _map_writing(True)
    assert sig.write_pattern(plain, "B") == "MapExit -> global [range]"
    assert "wcr" in sig.write_pattern(reduce, "B")
    renamed = json.loads(json.dumps(plain).replace('"B"', '"Out"').replace("B[", "Out["))
    assert sig.write_pattern(renamed, "Out") == sig.write_pattern(plain, "B")
    assert sdfg_size(plain) == (1, 5)


def _loop_writing_b():
    """B written in a loop's body: inside the loop's region on DaCe 2.0, a state of a state
    machine at the top on 1.0.2."""
    sdfg = dace.SDFG("looped")
    sdfg.add_array("A", [10], dace.float64)
    sdfg.add_array("B", [10], dace.float64)
    try:
        from dace.sdfg.state import LoopRegion
    except ImportError:
        LoopRegion = None
    if LoopRegion is not None:
        loop = LoopRegion("loop", "i < 10", "i", "i = 0", "i = i + 1")
        sdfg.add_node(loop, is_start_block=True)
        body = loop.add_state("body", is_start_block=True)
    else:
        before, body, after = sdfg.add_state("before"), sdfg.add_state("body"), sdfg.add_state("after")
        sdfg.add_loop(before, body, after, "i", "0", "i < 10", "i + 1")
    body.add_mapped_tasklet("t", {"j": "0:1"}, {"a": dace.Memlet("A[i]")}, "b = a", {"b": dace.Memlet("B[i]")},
                            external_edges=True)
    return sdfg


def test_a_write_inside_a_loop_is_found_where_the_loop_keeps_its_states():
    """A MISMATCH must not read "pre: no writer" where pre writes the container in its loop (and
    post, the loop unrolled, at the top), nor name no node and no state."""
    sdfg = _loop_writing_b()
    assert sig.write_pattern(json.loads(json.dumps(sdfg.to_json())), "B") == "MapExit -> global [element]"
    assert dataflow_order(sdfg) == [("B", "B", "body")]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), min_size=1, max_size=30))
def test_clusters_never_merge_two_bugs_and_never_split_one(labelled):
    """Findings with known ground truth (bug b, seen in instance i, its names renamed per
    instance): one cluster per bug, each holding exactly that bug's findings."""
    messages = ["KeyError: '{v}'", "AttributeError: 'NoneType' object has no attribute 'label'",
                "ValueError: shape mismatch in {v}", "AttributeError: 'CodeBlock' object has no attribute 'x'"]
    records = []
    for n, (bug, inst) in enumerate(labelled):
        name = f"var{inst}"
        s = sig.exception_signature("FAILED_TO_APPLY", "T", messages[bug].format(v=name), names={name})
        records.append(FindingRecord(path=Path(f"/f/{n}"), outcome="FAILED_TO_APPLY",
                                     transformation="T", instance=f"T-{inst}", program="p", target="t",
                                     seen_at=float(n), input_bytes=None, size=(1, n), signature=s))
    bugs = cluster(records)
    truth = {}
    for (bug, _), record in zip(labelled, records):
        truth.setdefault(bug, set()).add(record.path)
    assert sorted(sorted(map(str, {f.path for f in b.findings})) for b in bugs) == \
        sorted(sorted(map(str, paths)) for paths in truth.values())
    for b in bugs:
        assert b.representative.size == min(f.size for f in b.findings)


def test_a_longer_traceback_of_the_same_failure_has_the_same_signature():
    """Findings record different numbers of frames (older ones fewer): the outer frames must
    not split a bug, and harnessgen's own frames are not the bug's."""
    short = TRACEBACK.format(venv="/v", py="/usr", var="jm")
    outer = ('  File "/v/lib/python3.11/site-packages/dace/transformation/interstate/loop_unroll.py", line 80, '
             'in apply\n    self.instantiate_loop()\n'
             '  File "/repo/harnessgen/audit.py", line 107, in apply\n    xform.apply_pattern(append=False)\n')
    head, rest = short.split("\n", 1)
    longer = f"{head}\n{outer}{rest}"
    assert sig.exception_signature("FAILED_TO_APPLY", "LoopUnroll", longer, ()).key == \
        sig.exception_signature("FAILED_TO_APPLY", "LoopUnroll", short, ()).key
    assert all(not f.startswith("harnessgen/audit") for f, _ in sig.frames(longer))


def test_one_crash_site_in_other_builds_is_one_frame():
    """gdb names OpenMP's outlined regions and C++ functions differently from build to build."""
    names = ["omp_outlined[]", ".omp_outlined.", "omp_outlined"]
    assert {sig.frame_name(n) for n in names} == {"omp_outlined"}
    assert sig.frame_name("__program_hg_post_internal(hg_post_state_t*, double*, int)") == \
        sig.frame_name("__program_hg_post") == "ID"


def test_placeholders_are_never_taken_for_the_programs_names():
    """A program whose size symbol is N: the vector width 4 and the symbol read alike, not as
    two different messages."""
    assert sig.normalise_compiler("vec<double, 4>", names={"N"}) == sig.normalise_compiler("vec<float, 8>", ()) \
        == "vec<TYPE, N>"
    assert sig.exception_line("StopIteration") == ("StopIteration", "")


def test_the_analysis_reduces_wrong_results_and_bugs_on_the_newest_dace_first(monkeypatch):
    """A DaCe developer files a wrong result before a crash, and a bug on the newest DaCe before
    one only an older DaCe has: the reductions go in that order, whatever the clustering's."""
    from harnessgen.bugs.analysis import reduction_order
    from harnessgen.bugs.cluster import Bug

    def bug(kind: str, dace: str, instances: int, versions=None) -> Bug:
        s = sig.Signature(kind, "T", (kind.lower(), dace, str(instances)))
        findings = [FindingRecord(path=Path(f"/f/{kind}-{dace}-{n}"), outcome=kind, transformation="T",
                                  instance=f"T-{n}", program="p", target="t", seen_at=float(n), input_bytes=None,
                                  size=(1, 1), signature=s, dace=dace) for n in range(instances)]
        return Bug(s, findings, versions=versions or {})

    crash_new = bug("FAILED_TO_APPLY", "2.0.0b1", 9)
    mismatch_old = bug("MISMATCH", "1.0.2", 5)
    mismatch_fixed = bug("RACE", "1.0.2", 4, {"2.0.0b1": {"verdict": "FIXED"}})
    oob_new = bug("OOB_WRITE", "2.0.0b1", 1)
    mismatch_still = bug("MISMATCH", "1.0.2", 2, {"2.0.0b1": {"verdict": "STILL_PRESENT"}})
    ordered = reduction_order([crash_new, mismatch_old, mismatch_fixed, oob_new, mismatch_still])
    assert ordered == [oob_new, mismatch_still, mismatch_old, mismatch_fixed, crash_new]
    # a wrong result is reduced even where the analysis's time is spent; a crash waits
    import harnessgen.bugs.analysis as analysis

    reduced = []
    patches = {"collect": lambda runs, out: [crash_new, mismatch_old], "cached_reduction": lambda b, out: None,
               "_reduced": lambda b, out, options: reduced.append(b.signature.kind) or {"reduced": True},
               "load_kept_versions": lambda bugs, out: None, "write_bug_reports": lambda bugs, out: None,
               "write_bugs": lambda *a, **k: None}
    for name, value in patches.items():
        monkeypatch.setattr(analysis, name, value)
    analysis.analyse([Path("run")], reduce=analysis.ReduceOptions(seconds=30.0), seconds=0.0)
    assert reduced == ["MISMATCH"] and "not reduced" in crash_new.reduction["reason"]


def test_a_bounded_analysis_confirms_before_it_reduces(monkeypatch):
    """In a run's bound (``hard``) whether DaCe alone shows each bug comes first, the reductions
    get what is left; otherwise the bugs are reduced first, then confirmed."""
    import harnessgen.bugs.analysis as analysis
    from harnessgen.bugs.cluster import Bug

    s = sig.Signature("POST_CRASH", "T", ("crash",))
    crash = Bug(s, [FindingRecord(path=Path("/f/c"), outcome="POST_CRASH", transformation="T", instance="T-0",
                                  program="p", target="t", seen_at=0.0, input_bytes=None, size=(1, 1), signature=s,
                                  dace="2.0.0b1")], versions={})
    events = []
    patches = {"collect": lambda runs, out: [crash], "cached_reduction": lambda b, out: None,
               "_reduced": lambda b, out, options: events.append("reduce") or {"reduced": True},
               "confirm_bugs": lambda bugs, out, deadline, step: events.append("confirm"),
               "replays": lambda bug, out, deadline, step: True,
               "load_kept_versions": lambda bugs, out: None, "write_bug_reports": lambda bugs, out: None,
               "write_bugs": lambda *a, **k: None}
    for name, value in patches.items():
        monkeypatch.setattr(analysis, name, value)
    analysis.analyse([Path("run")], reduce=analysis.ReduceOptions(seconds=30.0), seconds=60.0, hard=True)
    assert events == ["confirm", "reduce"]
    events.clear()
    analysis.analyse([Path("run")], reduce=analysis.ReduceOptions(seconds=30.0), seconds=60.0)
    assert events == ["reduce", "confirm"]
