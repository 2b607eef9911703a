"""A user's own program and the recipes that optimize it, as a performance engineer writes
them: simplify, fusion everywhere it applies, a tiling at a chosen map, DaCe's auto_optimize.
``planted`` is ``correct`` with one wrong step among the others (a zoo transformation that
drops the last partial tile, applied with ``apply_to`` at one map)."""
import dace
from dace.transformation.dataflow import MapTiling

N = dace.symbol("N")


@dace.program
def smooth(A: dace.float64[N], B: dace.float64[N], C: dace.float64[N], D: dace.float64[N]):
    t1 = A * 2.0 + 1.0
    t2 = t1 * t1 - A
    t3 = t2 + B
    C[:] = t3 * 0.5
    t4 = B - C
    t5 = t4 * t4
    D[:] = t5 + t1


def _early(sdfg):
    from dace.transformation.dataflow import MapFusion

    sdfg.simplify()
    sdfg.apply_transformations_repeated([MapFusion])


def _late(sdfg):
    from dace.transformation.auto.auto_optimize import auto_optimize
    from dace.transformation.dataflow import MapExpansion

    from harnessgen.targets.cloudsc_recipe import apply_where_it_applies, outermost_maps

    apply_where_it_applies(MapTiling, outermost_maps(sdfg), tile_sizes=[8])
    sdfg.apply_transformations_repeated([MapExpansion])
    auto_optimize(sdfg, dace.DeviceType.CPU)


def _first_map(sdfg):
    from dace.sdfg import nodes

    return next(n for n, _ in sdfg.all_nodes_recursive() if isinstance(n, nodes.MapEntry))


def correct(sdfg):
    _early(sdfg)
    MapTiling.apply_to(sdfg, options={"tile_sizes": [4]}, map_entry=_first_map(sdfg))
    _late(sdfg)


def planted(sdfg):
    from harnessgen.zoo.planted import TilingWithoutRemainder

    _early(sdfg)
    TilingWithoutRemainder.apply_to(sdfg, map_entry=_first_map(sdfg))      # the wrong step
    _late(sdfg)


def raises(sdfg):
    _early(sdfg)
    raise RuntimeError("the recipe's own mistake")


def elsewhere(sdfg):
    """Optimizes a copy of the program: nothing it does is a step of this program."""
    from dace.transformation.dataflow import MapFusion

    other = dace.SDFG.from_json(sdfg.to_json())
    other.simplify()
    other.apply_transformations_repeated([MapFusion])


def nothing(sdfg):
    sdfg.validate()


def returns_a_copy(sdfg):
    other = dace.SDFG.from_json(sdfg.to_json())
    other.simplify()
    return other


class OwnTiling(MapTiling):
    """A transformation of the recipe's own (a worker loads it again from this file)."""


def own_class(sdfg):
    _early(sdfg)
    OwnTiling.apply_to(sdfg, options={"tile_sizes": [4]}, map_entry=_first_map(sdfg))
