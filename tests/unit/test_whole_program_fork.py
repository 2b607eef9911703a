"""Whether a change fails on the whole program is asked of a forked child that changes a copy
made ahead (``pre_on_failure=False``): it must answer as this process would, word for word,
and where the child gives no answer the question is asked here again. Seen in a fresh
interpreter (``in_a_fresh_process``): a process running other threads is never forked."""
import json
import os

import dace
import pytest

from harnessgen import subjects
from harnessgen.core.errors import Unsupported
from harnessgen.cutout.extract import whole_program_pair
from harnessgen.dacecompat import sdfg_json
from tests.conftest import in_a_fresh_process, program_sdfg


def _fails_to_apply(post):
    raise ValueError(f"no such node in {post.name}")


def _invalid(post):
    name = sorted(n for n, d in post.arrays.items() if not d.transient)[0]
    post.arrays[name].shape = (1, 2, 3, 4)      # disagrees with every memlet of it


def _adds_a_container(post):
    post.add_array("hg_added", [3], dace.float64, transient=True)


def _no_match(post):
    raise Unsupported("does not match in a copy of the whole program")


def _both(program, transform):
    forked = whole_program_pair(program, "w", transform=transform, pre_on_failure=False)
    here = whole_program_pair(program, "w", transform=transform, pre_on_failure=True)
    return forked, here


def _pair_seen(pair) -> dict:
    return {"verdict": pair.verdict.name, "ok": pair.ok, "error": pair.error, "pre": pair.pre is not None,
            "post": json.dumps(sdfg_json(pair.post), sort_keys=True, default=str) if pair.ok else None,
            "inputs": pair.input_config}


def _observed() -> dict:
    """Every question below, asked in a fresh interpreter."""
    program = subjects.load("kernels:jacobi2d").sdfg("jacobi2d", True)   # kept: it has a copy made ahead
    parent = os.getpid()
    seen = {name: [_pair_seen(p) for p in _both(program, transform)]
            for name, transform in (("fails", _fails_to_apply), ("invalid", _invalid), ("takes", _adds_a_container))}
    seen["program_unchanged"] = "hg_added" not in program.arrays
    try:
        whole_program_pair(program, "w", transform=_no_match, pre_on_failure=False)
    except Unsupported as exc:
        seen["unsupported"] = str(exc)

    def dies_in_a_child(post):
        if os.getpid() != parent:
            os._exit(9)
        raise ValueError("asked here")

    def fails_in_a_child_only(post):
        if os.getpid() != parent:
            raise ValueError("asked in a child")

    seen["died"] = _pair_seen(whole_program_pair(program, "w", transform=dies_in_a_child, pre_on_failure=False))
    seen["child_first"] = _pair_seen(whole_program_pair(program, "w", transform=fails_in_a_child_only,
                                                        pre_on_failure=False))
    unkept = program_sdfg("jacobi2d")        # built afresh, no template: asked here
    seen["unkept"] = _pair_seen(whole_program_pair(unkept, "w", transform=fails_in_a_child_only,
                                                   pre_on_failure=False))
    return seen


@pytest.fixture(scope="module")
def observed():
    return in_a_fresh_process(_observed)


@pytest.mark.parametrize("case, verdict", [("fails", "FAILED_TO_APPLY"), ("invalid", "INVALID_SDFG")])
def test_a_failure_is_said_by_the_child_as_this_process_says_it(observed, case, verdict):
    forked, here = observed[case]
    assert forked["verdict"] == here["verdict"] == verdict
    assert forked["error"] == here["error"] and "_change_fails" in forked["error"]   # the same frames: one signature
    assert not forked["pre"] and here["pre"]


def test_a_change_that_takes_gives_the_post_this_process_makes(observed):
    forked, here = observed["takes"]
    assert forked["ok"] and here["ok"] and '"hg_added"' in forked["post"]
    assert forked["post"] == here["post"] and forked["inputs"] == here["inputs"]
    assert observed["program_unchanged"]


def test_unsupported_passes_on_from_the_child(observed):
    assert "does not match" in observed["unsupported"]


def test_a_child_that_dies_leaves_the_question_to_this_process(observed):
    assert observed["died"]["verdict"] == "FAILED_TO_APPLY" and "asked here" in observed["died"]["error"]


def test_the_child_is_asked_first_where_the_program_has_a_copy_made_ahead(observed):
    assert observed["child_first"]["verdict"] == "FAILED_TO_APPLY"
    assert "asked in a child" in observed["child_first"]["error"]
    assert observed["unkept"]["ok"]
