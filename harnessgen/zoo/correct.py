"""Correct transformations: they must stay silent under the default tolerance.

``ReciprocalDivision`` is correct only up to rounding: ``x / y`` becomes
``x * (1.0 / y)``, which differs from the division in the last bits for many
inputs. It passes with the default rtol/atol and must be caught by ``--exact``.
``TilingWithRemainder`` is the correct counterpart of the planted tiling bug.
``TileCountCeils`` is the correct counterpart of the planted ``TileCountFloors``: correct
with every tile size.
``StrideCountCeils`` is the correct counterpart of the planted ``StrideCountFloors``.
``OffsetTilesCeils`` is the correct counterpart of the planted ``OffsetTilesFloors``.
"""
import ast

import dace
from dace import nodes, properties, symbolic
from dace.sdfg import SDFG, SDFGState, utils as sdutil
from dace.transformation import transformation as xf
from dace.transformation.dataflow import StripMining

from .planted import TILE, FirstDimensionTiling, OffsetTiles, StrideNormalization


class _DivToReciprocal(ast.NodeTransformer):
    def __init__(self):
        self.changed = 0

    def visit_BinOp(self, node: ast.BinOp):
        self.generic_visit(node)
        if isinstance(node.op, ast.Div) and not isinstance(node.right, ast.Constant):
            self.changed += 1
            reciprocal = ast.BinOp(left=ast.Constant(1.0), op=ast.Div(), right=node.right)
            return ast.BinOp(left=node.left, op=ast.Mult(), right=reciprocal)
        return node


def _rewrite(code: str):
    tree = ast.parse(code)
    rewriter = _DivToReciprocal()
    tree = ast.fix_missing_locations(rewriter.visit(tree))
    return ast.unparse(tree), rewriter.changed


@properties.make_properties
class ReciprocalDivision(xf.SingleStateTransformation):
    """Rewrites every ``a / b`` (b not a literal) in a Python tasklet into ``a * (1.0 / b)``."""

    tasklet = xf.PatternNode(nodes.Tasklet)

    @classmethod
    def expressions(cls):
        return [sdutil.node_path_graph(cls.tasklet)]

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        if self.tasklet.language != dace.Language.Python:
            return False
        try:
            return _rewrite(self.tasklet.code.as_string)[1] > 0
        except SyntaxError:
            return False

    def apply(self, graph: SDFGState, sdfg: SDFG):
        code, _ = _rewrite(self.tasklet.code.as_string)
        self.tasklet.code = properties.CodeBlock(code, dace.Language.Python)


@properties.make_properties
class TilingWithRemainder(FirstDimensionTiling):
    """Strip-mines the first map dimension by 4, the last partial tile included: the correct
    version of the zoo's ``TilingWithoutRemainder`` (the two share their match)."""

    def apply(self, graph: SDFGState, sdfg: SDFG):
        StripMining.apply_to(sdfg, map_entry=self.map_entry, options={"tile_size": TILE, "dim_idx": 0}, save=False)


@properties.make_properties
class TileCountCeils(FirstDimensionTiling):
    """Strip-mines the first map dimension by ``tile_size``, the last partial tile included
    (the tile count rounds up): correct with every tile size."""

    tile_size = properties.Property(dtype=int, default=64, desc="elements per tile")

    def apply(self, graph: SDFGState, sdfg: SDFG):
        StripMining.apply_to(sdfg, map_entry=self.map_entry, options={"tile_size": self.tile_size, "dim_idx": 0},
                             save=False)


@properties.make_properties
class StrideCountCeils(StrideNormalization):
    """Gives strided maps unit steps with ``ceil((end - begin + 1) / step)`` trips (none when
    the range is empty): correct."""

    @staticmethod
    def trips(begin, end, step):
        import sympy
        from dace import symbolic

        return sympy.Max(0, symbolic.int_ceil(end - begin + 1, step))


@properties.make_properties
class OffsetTilesCeils(OffsetTiles):
    """Counts the tiles from the first one's start: ``ceil((extent + tile_offset) / tile_size)``."""

    def tiles(self, extent):
        return symbolic.int_ceil(extent + self.tile_offset, self.tile_size)
