"""The canonical form of a cutout pair: equal up to names and GUIDs, and nothing more."""
import copy
import types
import uuid

import dace

from harnessgen.cutout.canonical import pair_key

N = dace.symbol("N")


def scaled_copy(src: str, dst: str, factor: float, name: str = "p", declared=None) -> dace.SDFG:
    """``dst[i] = src[i] * factor + 1`` as one map (src and dst may be one container), its
    containers declared in the order ``declared`` (default: src first)."""
    sdfg = dace.SDFG(name)
    for container in declared or dict.fromkeys([src, dst]):
        sdfg.add_array(container, [N], dace.float64)
    state = sdfg.add_state("s")
    state.add_mapped_tasklet("m", {"i": "0:N"}, {"a": dace.Memlet(f"{src}[i]")}, f"b = a * {factor} + 1.0",
                             {"b": dace.Memlet(f"{dst}[i]")}, external_edges=True)
    return sdfg


def key(pre: dace.SDFG, post: dace.SDFG, extra=None):
    return pair_key(pre.to_json(), post.to_json(), extra)


def test_pairs_that_differ_only_in_names_and_guids_have_one_key():
    first = key(scaled_copy("A", "B", 2.0), scaled_copy("A", "B", 2.0, name="other"))
    renamed = key(scaled_copy("X", "Y", 2.0), scaled_copy("X", "Y", 2.0, name="again"))
    assert first is not None and first == renamed
    fresh = scaled_copy("A", "B", 2.0)
    for node, _ in fresh.all_nodes_recursive():
        node.guid = str(uuid.uuid4())
    assert key(fresh, scaled_copy("A", "B", 2.0)) == first
    # the order the containers were declared in is not the program's
    assert key(scaled_copy("A", "B", 2.0, declared=["B", "A"]), scaled_copy("A", "B", 2.0)) == first


def test_pairs_that_differ_in_one_constant_or_in_the_change_have_two_keys():
    base = key(scaled_copy("A", "B", 2.0), scaled_copy("A", "B", 2.0))
    assert key(scaled_copy("A", "B", 3.0), scaled_copy("A", "B", 3.0)) != base
    assert key(scaled_copy("A", "B", 2.0), scaled_copy("A", "B", 3.0)) != base        # post differs only


def test_names_are_renamed_as_a_bijection_never_merged():
    """In place (one container read and written) is another program than a copy between two."""
    apart = key(scaled_copy("A", "B", 2.0), scaled_copy("A", "B", 2.0))
    together = key(scaled_copy("A", "A", 2.0), scaled_copy("A", "A", 2.0))
    assert together != apart


def test_the_constraints_are_part_of_the_pair():
    pre, post = scaled_copy("A", "B", 2.0), scaled_copy("A", "B", 2.0)
    small = {"constraints": {"symbols": {"N": {"lo": "1", "hi": "8"}}}}
    large = {"constraints": {"symbols": {"N": {"lo": "1", "hi": "9"}}}}
    assert key(pre, post, small) != key(pre, post, large)
    renamed = {"constraints": {"symbols": {"M": {"lo": "1", "hi": "8"}}}}
    other_pre, other_post = (copy.deepcopy(s) for s in (pre, post))
    for sdfg in (other_pre, other_post):
        sdfg.replace("N", "M")
    assert key(other_pre, other_post, renamed) == key(pre, post, small)


def test_a_name_that_is_also_called_has_no_key():
    sdfg = dace.SDFG("called")
    sdfg.add_array("exp", [N], dace.float64)
    sdfg.add_array("B", [N], dace.float64)
    state = sdfg.add_state("s")
    state.add_mapped_tasklet("m", {"i": "0:N"}, {"a": dace.Memlet("exp[i]")}, "b = exp(a)",
                             {"b": dace.Memlet("B[i]")}, external_edges=True)
    assert key(sdfg, sdfg) is None


def test_a_pair_whose_containers_share_a_buffer_is_another_pair():
    """Two containers that are views of one array of the program (aliases) make another
    program than two arrays apart, though pre and post read the same."""
    from harnessgen.subjects.sdfg import _pair_key

    constraints = types.SimpleNamespace(to_json=lambda: {"symbols": {}})

    def pair(aliases):
        return types.SimpleNamespace(pre=scaled_copy("A", "B", 2.0), post=scaled_copy("A", "B", 2.0),
                                     input_config=["A"], output_config=["B"], symbol_outputs=[],
                                     whole_program=False, aliases=aliases)

    from harnessgen.harness.build import SavedSides

    def pair_key_of(aliases):
        the_pair = pair(aliases)
        return _pair_key(the_pair, constraints, SavedSides.of(the_pair))

    apart = pair_key_of([])
    shared = pair_key_of([{"container": "B", "members": ["A", "B"], "offsets": [0, 1]}])
    assert apart and shared and apart != shared


def test_the_key_of_sides_saved_for_their_build_is_the_key_of_the_sides():
    """The pair key is taken from the sides as the build serialises them (with DaCe's hash of
    each, which depends on names): the hash must not enter the key, or pairs equal up to
    names would no longer share one."""
    from harnessgen.harness.build import SavedSides

    pre, post = scaled_copy("A", "B", 2.0), scaled_copy("A", "B", 3.0)
    renamed_pre, renamed_post = scaled_copy("X", "Y", 2.0), scaled_copy("X", "Y", 3.0)
    saved = SavedSides.of(types.SimpleNamespace(pre=pre, post=post))
    renamed = SavedSides.of(types.SimpleNamespace(pre=renamed_pre, post=renamed_post))
    assert saved.pre_hash != renamed.pre_hash
    assert pair_key(saved.pre, saved.post) == key(pre, post) == pair_key(renamed.pre, renamed.post)


def _clip_loop(factor: float):
    """A loop around a branch; ``factor`` a constant inside it."""
    @dace.program
    def clip_loop(x: dace.float64[N], y: dace.float64[N]):
        for i in range(N):
            if x[i] > 0.5:
                y[i] = x[i] * factor
            else:
                y[i] = x[i]
    return clip_loop.to_sdfg(simplify=True)


@dace.program
def _clip_loop_renamed(a: dace.float64[N], b: dace.float64[N]):
    for k in range(N):
        if a[k] > 0.5:
            b[k] = a[k] * 2.0
        else:
            b[k] = a[k]


def test_what_a_branch_holds_is_named_and_compared_like_the_rest():
    """DaCe 2.0 writes a conditional block's branches as (condition, region) tuples: what they
    hold loses its GUIDs and is renamed like the rest, so one pair has one key in every run (a
    transformation's new nodes get random GUIDs) and two places that differ only in names share
    it; a constant inside a branch still makes another key."""
    sdfg = _clip_loop(2.0)
    base = key(sdfg, sdfg)
    fresh = copy.deepcopy(sdfg)
    for element in list(fresh.all_nodes_recursive()) + list(fresh.all_control_flow_blocks()):
        element = element[0] if isinstance(element, tuple) else element
        element.guid = str(uuid.uuid4())
    assert base is not None and key(fresh, fresh) == base
    renamed = _clip_loop_renamed.to_sdfg(simplify=True)
    assert key(renamed, renamed) == base
    other = _clip_loop(3.0)
    assert key(other, other) != base
