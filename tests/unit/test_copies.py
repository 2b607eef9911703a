"""Copies of a loaded program: from its pickle (fast) they are the SDFG a copy through JSON gives."""
import gc
import json

import dace
import pytest

from harnessgen import subjects
from harnessgen.dacecompat import copies, copy_sdfg, keep_template, sdfg_json


def _text(sdfg) -> str:
    """The SDFG as a file holds it, without empty debug records (a nested SDFG's, which DaCe
    writes or leaves out depending on how the object came to be: it says nothing)."""
    return json.dumps(_without_empty_debuginfo(sdfg_json(sdfg)), sort_keys=True, default=str)


def _without_empty_debuginfo(value):
    if isinstance(value, dict):
        return {k: _without_empty_debuginfo(v) for k, v in value.items()
                if not (k == "debuginfo" and (v is None or (not v.get("filename") and not v.get("start_line"))))}
    if isinstance(value, list):
        return [_without_empty_debuginfo(v) for v in value]
    return value


@pytest.mark.parametrize("program", ["kernels:jacobi2d", "kernels:clip_small", "kernels:two_phase"])
@pytest.mark.parametrize("simplified", [True, False])
def test_a_kept_program_copies_to_the_sdfg_json_gives(program, simplified):
    subject = subjects.load(program)
    loaded = subject.sdfg(program.split(":")[1], simplified)      # kept by the subject as it loads it
    fast = copy_sdfg(loaded, "renamed")
    assert fast is not loaded and fast.name == "renamed"
    fast.name = loaded.name
    assert _text(fast) == _text(loaded)
    fast.validate()
    # a copy shares nothing with the program: changing it leaves the next copy as loaded
    fast.add_array("hg_scribble", [4], dace.float64, transient=True)
    assert "hg_scribble" not in copy_sdfg(loaded).arrays
    assert "hg_scribble" not in loaded.arrays


def test_a_kept_program_is_copied_as_it_was_kept():
    loaded = copy_sdfg(subjects.load("kernels:gemm").sdfg("gemm"))
    keep_template(loaded)
    loaded.add_array("hg_later", [2], dace.float64, transient=True)   # nobody should; a copy ignores it
    assert "hg_later" not in copy_sdfg(loaded).arrays
    key = id(loaded)
    del loaded                          # a kept SDFG that goes takes its pickle with it
    gc.collect()                        # (an SDFG's states point back at it)
    assert key not in copies._TEMPLATES


def test_a_program_after_a_pass_is_kept_for_every_later_process(tmp_path, monkeypatch):
    """The plan's enumeration applies each pass once; every worker then starts from what it
    kept (``AppliedOnce``), never from a pass of its own: the same SDFG, the pass not run."""
    from harnessgen.cutout.extract import AppliedOnce
    from tests.conftest import program_sdfg

    # the shared program comes from the usual program cache before this test points it elsewhere:
    # built afresh there it would be numbered otherwise, and every later test of this worker
    # would meet matches enumerated on the other numbering
    base = program_sdfg("softmax")
    monkeypatch.setenv("HARNESSGEN_PROGRAM_CACHE", str(tmp_path))
    program = copy_sdfg(base)
    keep_template(program, identity="softmax-as-given")
    runs = []

    def apply(sdfg):
        runs.append(sdfg)
        sdfg.simplify()

    first = AppliedOnce(apply, "simplify")(program)("post")
    assert len(runs) == 1 and len(list((tmp_path / "applied").glob("*.pickle"))) == 1
    later = AppliedOnce(apply, "simplify")(program)("post")             # another worker, another run
    assert len(runs) == 1 and _text(later) == _text(first)
    AppliedOnce(apply, "another pass")(program)("post")                 # kept apart, per pass
    assert len(runs) == 2

    offered = AppliedOnce(apply, "offered")
    made = copy_sdfg(program)
    made.simplify()
    offered.offer(program, made)
    assert _text(AppliedOnce(apply, "offered")(program)("post")) == _text(first)
    assert len(runs) == 2

    nameless = copy_sdfg(base)                                           # no identity: nothing kept
    AppliedOnce(apply, "simplify")(nameless)("post")
    assert len(runs) == 3 and len(list((tmp_path / "applied").glob("*.pickle"))) == 3


def test_a_cache_file_is_read_from_its_pickle_only_while_it_is_that_file(tmp_path):
    from harnessgen.targets.loaders import read_cached
    from tests.conftest import program_sdfg

    cached = tmp_path / "softmax.sdfg"
    program_sdfg("softmax").save(str(cached))
    first = read_cached(cached)
    assert (tmp_path / "softmax.sdfg.pickle").is_file()
    again = read_cached(cached)                       # from the pickle
    assert again is not first and _text(again) == _text(first)
    other = copy_sdfg(program_sdfg("softmax"), "another_program")
    other.save(str(cached))                           # the file written again: its pickle is stale
    assert read_cached(cached).name == "another_program"


def _spare_copy_and_forks():
    """What the tests below assert, seen in a fresh interpreter (``in_a_fresh_process``)."""
    import os
    import threading

    from harnessgen.core.procs import call_in_fork

    seen = {}
    loaded = subjects.load("kernels:jacobi2d").sdfg("jacobi2d", True)
    spare = copies.spare_copy(loaded)
    seen["spare"] = spare is not None and spare is not loaded and copies.spare_copy(loaded) is spare
    seen["spare_as_loaded"] = _text(spare) == _text(loaded)

    def scribble():
        spare.add_array("hg_scribble", [4], dace.float64, transient=True)
        return sorted(spare.arrays)

    seen["scribbled"] = call_in_fork(scribble)
    seen["spare_after"] = ("hg_scribble" in spare.arrays, _text(spare) == _text(loaded))
    seen["unkept"] = copies.spare_copy(dace.SDFG("hg_unkept"))

    def raises():
        raise ValueError("no answer")

    seen["raises"] = call_in_fork(raises)
    seen["dies"] = call_in_fork(lambda: os._exit(3))
    seen["answers"] = call_in_fork(lambda: {"kept": [1, 2]})
    seen["long_answer"] = call_in_fork(lambda: "x" * 300_000, timeout=60)
    seen["too_slow"] = call_in_fork(lambda: threading.Event().wait(60), timeout=0.2)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        seen["threaded"] = call_in_fork(lambda: "answered")
    finally:
        release.set()
        other.join()
    seen["alone_again"] = call_in_fork(lambda: "answered")
    return seen


@pytest.fixture(scope="module")
def forks_seen():
    from tests.conftest import in_a_fresh_process

    return in_a_fresh_process(_spare_copy_and_forks)


def test_a_spare_copy_is_made_once_and_a_forked_childs_change_stays_in_the_child(forks_seen):
    """What a forked child changes in the copy made ahead is its own: the copy here stays as a
    fresh copy, for the next child."""
    assert forks_seen["spare"] and forks_seen["spare_as_loaded"]
    answered, names = forks_seen["scribbled"]
    assert answered and "hg_scribble" in names
    assert forks_seen["spare_after"] == (False, True)
    # a program without a template has no spare copy (it would be a copy through JSON anyway)
    assert forks_seen["unkept"] is None


def test_a_forked_child_that_raises_or_dies_gives_no_answer(forks_seen):
    assert forks_seen["raises"] == (False, None) and forks_seen["dies"] == (False, None)


def test_a_forked_child_past_its_timeout_is_killed_and_gives_no_answer(forks_seen):
    assert forks_seen["too_slow"] == (False, None)
    assert forks_seen["long_answer"] == (True, "x" * 300_000)     # an answer larger than a pipe holds
    assert forks_seen["answers"] == (True, {"kept": [1, 2]})


def test_a_process_running_other_threads_is_not_forked(forks_seen):
    assert forks_seen["threaded"] == (False, None)
    assert forks_seen["alone_again"] == (True, "answered")
