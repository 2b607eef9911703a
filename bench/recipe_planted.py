"""The CLOUDSC recipe (``harnessgen.targets.cloudsc_recipe``) with one wrong step: at the
middle one of the outermost maps, a zoo tiling that drops the last partial tile
(``TilingWithoutRemainder``) instead of MapTiling. ``bench/recipe.py`` judges it."""
from harnessgen.targets.cloudsc_recipe import optimize as cloudsc_optimize
from harnessgen.zoo.planted import TilingWithoutRemainder


def optimize(sdfg) -> None:
    cloudsc_optimize(sdfg, planted=TilingWithoutRemainder)
