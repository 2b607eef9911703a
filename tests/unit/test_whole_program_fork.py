"""Whether a change fails on the whole program is asked of a forked child that changes a copy
made ahead (``pre_on_failure=False``): it must answer as this process would, word for word,
and where the child gives no answer the question is asked here again."""
import json
import os

import dace
import pytest

from harnessgen import subjects
from harnessgen.core.errors import Unsupported
from harnessgen.core.outcome import Outcome
from harnessgen.cutout.extract import whole_program_pair
from harnessgen.dacecompat import sdfg_json
from tests.conftest import program_sdfg


@pytest.fixture(scope="module")
def kept_program():
    """A program kept as its subject loads it (it has a template, so a copy made ahead)."""
    return subjects.load("kernels:jacobi2d").sdfg("jacobi2d", True)


def _both(program, transform):
    forked = whole_program_pair(program, "w", transform=transform, pre_on_failure=False)
    here = whole_program_pair(program, "w", transform=transform, pre_on_failure=True)
    return forked, here


def _fails_to_apply(post):
    raise ValueError(f"no such node in {post.name}")


def _invalid(post):
    name = sorted(n for n, d in post.arrays.items() if not d.transient)[0]
    post.arrays[name].shape = (1, 2, 3, 4)      # disagrees with every memlet of it


@pytest.mark.parametrize("transform, verdict", [(_fails_to_apply, Outcome.FAILED_TO_APPLY),
                                                (_invalid, Outcome.INVALID_SDFG)])
def test_a_failure_is_said_by_the_child_as_this_process_says_it(kept_program, transform, verdict):
    forked, here = _both(kept_program, transform)
    assert forked.verdict == here.verdict == verdict
    assert forked.error == here.error and "_change_fails" in forked.error   # the same frames, so the same signature
    assert forked.pre is None and here.pre is not None


def test_a_change_that_takes_gives_the_post_this_process_makes(kept_program):
    def tile(post):
        post.add_array("hg_added", [3], dace.float64, transient=True)

    forked, here = _both(kept_program, tile)
    assert forked.ok and here.ok
    assert "hg_added" in forked.post.arrays and forked.post is not kept_program
    text = [json.dumps(sdfg_json(p.post), sort_keys=True, default=str) for p in (forked, here)]
    assert text[0] == text[1] and forked.input_config == here.input_config
    assert "hg_added" not in kept_program.arrays


def test_unsupported_passes_on_from_the_child(kept_program):
    def no_match(post):
        raise Unsupported("does not match in a copy of the whole program")

    with pytest.raises(Unsupported, match="does not match"):
        whole_program_pair(kept_program, "w", transform=no_match, pre_on_failure=False)


def test_a_child_that_dies_leaves_the_question_to_this_process(kept_program):
    parent = os.getpid()

    def dies_in_a_child(post):
        if os.getpid() != parent:
            os._exit(9)
        raise ValueError("asked here")

    pair = whole_program_pair(kept_program, "w", transform=dies_in_a_child, pre_on_failure=False)
    assert pair.verdict == Outcome.FAILED_TO_APPLY and "asked here" in pair.error


def test_the_child_is_asked_first_where_the_program_has_a_copy_made_ahead(kept_program):
    parent = os.getpid()

    def fails_in_a_child_only(post):
        if os.getpid() != parent:
            raise ValueError("asked in a child")

    pair = whole_program_pair(kept_program, "w", transform=fails_in_a_child_only, pre_on_failure=False)
    assert pair.verdict == Outcome.FAILED_TO_APPLY and "asked in a child" in pair.error
    unkept = program_sdfg("jacobi2d")        # built afresh, no template: asked here
    assert whole_program_pair(unkept, "w", transform=fails_in_a_child_only, pre_on_failure=False).ok
