"""A match's parameter variants take the cutout made for the match (DaCe's cutout and its input
reduction are most of a variant's cutout), each with its own properties, and get exactly the
pair a cutout made for them alone would give."""
from harnessgen import subjects
from harnessgen.cutout import extract as ex
from harnessgen.cutout.canonical import pair_key


def _key(pair):
    return pair_key(pair.pre.to_json(), pair.post.to_json(),
                    {"in": pair.input_config, "out": pair.output_config, "aliases": pair.aliases})


def test_a_variant_reuses_its_matchs_cut_and_gets_the_pair_it_would_get_alone():
    subject = subjects.load("kernels:elementwise_chain")
    change = subject.change("MapTiling")
    program = subject.sdfg("elementwise_chain")
    base = subject.instances("MapTiling")[0]
    variant = change.with_params(base, {"tile_sizes": [3]})

    ex._CUTS_AT.clear()
    alone = change.extract(program, variant, 0)
    ex._CUTS_AT.clear()
    first = change.extract(program, base, 0)
    reused = change.extract(program, variant, 0)
    assert len(ex._CUTS_AT) == 1                      # one place: the variant took the match's cut
    assert [int(t) for t in reused.translated_match["tile_sizes"]] == [3] != first.translated_match.get("tile_sizes")
    assert _key(reused) == _key(alone) != _key(first)  # its own tiling, on the same cut
    assert variant.id in reused.grown_for or not reused.grown_for
    reused.aliases.append({"changed": "by its user"})  # what one instance does to its pair stays there
    assert change.extract(program, base, 0).aliases == first.aliases
