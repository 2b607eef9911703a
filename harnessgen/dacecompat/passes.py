"""Which passes and transformations the installed DaCe has: simplify's members as DaCe lists
them (11 in 1.0.2, 18 in 2.0), and the names of those only newer DaCe versions define."""
from __future__ import annotations

import functools
from typing import List, Sequence, Set

import dace.transformation.dataflow  # noqa: F401 -- registers the pattern transformations
import dace.transformation.interstate  # noqa: F401
import dace.transformation.passes  # noqa: F401 -- registers the passes
from dace.transformation import pass_pipeline, transformation as xf
from dace.transformation.passes.simplify import SIMPLIFY_PASSES
from dace.transformation.transformation import PatternTransformation

# DaCe 2.0's pattern transformations on control-flow regions and fused maps, and its passes
# that make or use regions: in the built-in targets' defaults wherever the installed DaCe has them
NEWER_TRANSFORMATIONS = ("MapFusionHorizontal", "BlockFusion", "ConditionFusion", "ConditionMapInterchange",
                         "LoopOverwriteElimination")
NEWER_PASSES = ("ControlFlowRaising", "InlineControlFlowRegions", "SymbolPropagation", "LoopToReduce",
                "LoopLocalMemoryReduction", "FullMapFusion")


def simplify_members() -> List[str]:
    """simplify's member passes, in the order it runs them."""
    return [cls.__name__ for cls in SIMPLIFY_PASSES]


def simplify_defaults() -> List[str]:
    """simplify itself and each of its members."""
    return ["simplify"] + simplify_members()


@functools.lru_cache(maxsize=1)
def _defined() -> Set[str]:
    names = {cls.__name__ for cls in PatternTransformation.subclasses_recursive()}
    todo = list(pass_pipeline.Pass.__subclasses__())
    while todo:
        cls = todo.pop()
        names.add(cls.__name__)
        todo += cls.__subclasses__()
    return names


def present(names: Sequence[str]) -> List[str]:
    """Those of ``names`` the installed DaCe defines, in their order."""
    return [name for name in names if name in _defined()]


def newer_defaults(exclude: Sequence[str] = ()) -> List[str]:
    """The newer transformations and passes this DaCe has, without those in ``exclude``."""
    return [n for n in present(NEWER_TRANSFORMATIONS + NEWER_PASSES) if n not in exclude]


def region_compatible(cls):
    """Marks a pass of ours as one that handles control-flow regions: DaCe 2.0's simplify skips
    every member without the mark (a warning, nothing more) on a program with regions, which
    would make a pipeline holding it silently DaCe's own; DaCe 1.0.2 names the same mark
    differently."""
    mark = getattr(xf, "explicit_cf_compatible", None) or getattr(xf, "experimental_cfg_block_compatible", None)
    return mark(cls) if mark is not None else cls
