"""Parameter domains and variants (harnessgen/params.py): boundary-aware values read from a
transformation's property declarations and the scope it matched, variants planned as
instances of their own, simplest first."""
import json

import pytest
from dace import properties

from harnessgen import subjects
from harnessgen.core.errors import ConfigError
from harnessgen.plan import params
from harnessgen.plan.instances import load_transformation, match_settings, pattern_matches, rebuild_transformation
from harnessgen.plan.params import ParamOptions
from harnessgen.zoo.planted import TileCountFloors

FLOORS = "harnessgen.zoo.planted:TileCountFloors"


def _first_match(program: str, name: str):
    subject = subjects.load(f"kernels:{program}")
    cls = load_transformation(name)
    sdfg = subject.sdfg(program)
    return cls, next(iter(pattern_matches(sdfg, cls, None))), sdfg


def test_map_tiling_domains_come_from_declarations_and_the_matched_extents():
    cls, xform, sdfg = _first_match("jacobi2d", "MapTiling")
    space = params.space(cls, xform, sdfg, max_size=16)
    tiles = space.domain("tile_sizes")
    assert tiles.kind == "size" and tiles.default == [128, 128, 128]
    flat = {tuple(v) for v in tiles.values[1:]}
    assert {(1, 1), (2, 2), (3, 3), (5, 5)} <= flat                      # small values and primes
    extents, dims = params.scope_extents(xform, 16)
    assert dims == 2 and extents
    top = max(extents)
    assert {(top - 1, top - 1), (top + 1, top + 1), (2 * top + 1, 2 * top + 1)} <= flat   # around and beyond
    assert all(len(v) == dims for v in tiles.values[1:])                 # one value per map dimension
    assert space.domain("tile_offset").values[1] == [0, 0]               # zero offsets, then larger
    assert space.domain("tile_trivial").values == [False, True]
    # promises and names keep their defaults, each with its reason
    assert "promise" in space.fixed["divides_evenly"] and "prefix" in space.fixed
    assert "strides" in space.fixed and space.domain("strides") is None


def test_enumerations_and_hints_restrict_the_values():
    cls, xform, sdfg = _first_match("elementwise_chain", "StripMining")
    space = params.space(cls, xform, sdfg)
    assert space.domain("tiling_type").values == ["Normal", "CeilRange", "NumberOfTiles"]
    assert space.domain("dim_idx").values == [-1, 0]                     # an index: the map's one dimension
    assert 0 in space.domain("tile_offset").values


def test_a_class_declares_its_own_fixed_properties():
    @properties.make_properties
    class PinnedFloors(TileCountFloors):
        HARNESSGEN_PARAMS = {"tile_size": {"fixed": "tuned by hand"}}

    _, xform, sdfg = _first_match("elementwise_chain", FLOORS)
    assert params.space(TileCountFloors, xform, sdfg).domain("tile_size") is not None
    assert params.space(PinnedFloors, xform, sdfg).fixed == {"tile_size": "tuned by hand"}
    assert params.variants(params.space(PinnedFloors, xform, sdfg), "boundary") == [{}]


def test_variants_default_first_then_simplest():
    cls, xform, sdfg = _first_match("jacobi2d", "MapTiling")
    space = params.space(cls, xform, sdfg)
    assert params.variants(space, "default") == [{}]
    boundary = params.variants(space, "boundary")
    assert boundary[0] == {} and all(len(v) == 1 for v in boundary[1:])
    assert len(boundary) == 1 + sum(len(d.values) - 1 for d in space.domains)
    drawn = params.variants(space, "6", seed=1, key="m")
    assert len(drawn) == 6 and drawn[0] == {}
    assert drawn == params.variants(space, "6", seed=1, key="m")          # seeded: the same every time
    assert drawn != params.variants(space, "6", seed=2, key="m")
    ranks = [space.complexity(v) for v in drawn]
    assert ranks == sorted(ranks)


def test_simpler_variants_are_simpler_and_reach_the_default():
    cls, xform, sdfg = _first_match("jacobi2d", "MapTiling")
    space = params.space(cls, xform, sdfg)
    values = {"tile_sizes": [5, 5], "tile_trivial": True}
    steps = params.simpler(space, values)
    assert {"tile_sizes": [5, 5]} in steps and {"tile_trivial": True} in steps
    assert {"tile_sizes": [1, 1], "tile_trivial": True} in steps
    assert all(space.complexity(s) < space.complexity(values) for s in steps)
    current, seen = values, 0
    while current:                                   # always one step simpler: ends at the defaults
        current = params.simpler(space, current)[0]
        seen += 1
    assert seen <= len(values) + 1


def test_parse_mode_names_the_flag():
    assert params.parse_mode("Boundary") == "boundary" and params.parse_mode("12") == "12"
    for bad in ("0", "all", "-3"):
        with pytest.raises(ConfigError, match="--params"):
            params.parse_mode(bad)


def test_variant_instances_keep_the_match_and_set_their_parameters():
    subject = subjects.load("kernels:elementwise_chain")
    default = subject.instances(FLOORS)
    varied = subject.instances(FLOORS, None, ParamOptions("boundary"))
    base = default[0]
    mine = [i for i in varied if i.match_id == base.id]
    assert mine[0].id == base.id and mine[0].params == {} and mine[0].match == base.match
    assert len(mine) == len({i.id for i in mine}) > 1
    sdfg = subject.sdfg("elementwise_chain")
    cls = load_transformation(FLOORS)
    for variant in mine[1:]:
        assert variant.base == base.id and variant.id.startswith(base.id + "-p")
        assert match_settings(variant.match) == variant.params           # the match sets what it names
        assert rebuild_transformation(cls, variant.match, sdfg).tile_size == variant.params["tile_size"]
        again = subject.change(FLOORS).with_params(variant, {})
        assert (again.id, again.match, again.description) == (base.id, base.match, base.description)
    # --set pins a property: it is never varied
    pinned = subject.instances(FLOORS, ["tile_size=5"], ParamOptions("boundary"))
    assert {json.dumps(i.match.get("tile_size")) for i in pinned} == {"5"} and all(not i.params for i in pinned)


def test_a_run_with_parameter_variants_is_another_campaign():
    from pathlib import Path

    from harnessgen.campaign import Budget, CampaignConfig
    from harnessgen.core.records import FuzzOptions

    def identity(mode):
        return CampaignConfig("kernels", "MapTiling", Path("run"), Budget(1), FuzzOptions(params=mode)).identity

    assert "params" not in identity("default")           # directories from before --params keep theirs
    assert identity("boundary")["params"] == "boundary" and identity("boundary") != identity("8")
