"""What a target is (its programs and its defaults), apart from how targets are found, so
that target modules and loaders depend on this and on nothing above it."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..core.data import AFL_CONFIGS
from ..core.errors import ConfigError
from ..dacecompat import newer_defaults, simplify_defaults

# what --transformation gpu means for the built-in targets
GPU_TRANSFORMATIONS = ["GPUTransformMap", "GPUTransformSDFG", "harnessgen.targets.cloudsc_xforms:GPUOffloadMap"]


def builtin_defaults(own: List[str]) -> List[str]:
    """A built-in target's defaults: its ``own`` transformations, those only newer DaCe versions
    have (region transformations and passes, where the installed DaCe has them), then DaCe's
    simplify pipeline and each of its members, in its order, as the installed DaCe lists them."""
    simplify = simplify_defaults()
    return own + newer_defaults(exclude=own + simplify) + simplify

@dataclasses.dataclass
class Program:
    """One program of a target: a name and the functions that build its SDFG."""

    name: str
    build: Callable[[], "object"]  # () -> dace.SDFG, simplified, library nodes expanded
    description: str = ""
    # () -> dace.SDFG as the frontend (or the file) gave it, library nodes expanded, not simplified
    build_unsimplified: Optional[Callable[[], "object"]] = None
    # what the program computes, run in Python on NumPy arrays (``reference.Reference``); checked
    # against the loaded SDFG before anything else
    reference: Optional["object"] = None
    # the program's content as a key ("" where unknown): what it was built from, so that what
    # is derived from it (the plan of its instances) can be cached
    identity: str = ""
    # () -> a constraints file of the program's own (``{"name": ["lo", "hi"]}``), or None: used
    # where the user gives none (an NPBench benchmark's size orders)
    constraints: Optional[Callable[[], Optional[Path]]] = None
    # the program's own realistic inputs (NPBench's ``initialize``): (largest size) -> (sizes,
    # {argument: value}); the first seed of its instances and what an independent reference
    # judges it on
    own_inputs: Optional[Callable[[int], Tuple[Dict[str, int], Dict[str, Any]]]] = None

    def sdfg(self, simplified: bool = True):
        if simplified:
            return self.build()
        if self.build_unsimplified is None:
            raise ConfigError(f"program {self.name!r} has no unsimplified form: its loader keeps only the "
                              "simplified SDFG (drop --no-simplify, or pass a pattern transformation)")
        return self.build_unsimplified()


@dataclasses.dataclass
class Target:
    """What the pipeline needs to know about a program source."""

    name: str
    programs: Dict[str, Program]
    default_transformations: List[str] = dataclasses.field(default_factory=list)
    # --transformation gpu: those that move code onto a GPU (their post is CUDA)
    gpu_transformations: List[str] = dataclasses.field(default_factory=list)
    constraints_file: Optional[Path] = None
    options_file: Optional[Path] = None
    dict_file: Optional[Path] = None
    # the file a ``file.py:function`` target came from (a transformation may
    # live in the same file: it is loaded once)
    source_module: Optional[object] = None
    # which form pattern transformations meet unless --simplify/--no-simplify says: a program a
    # frontend wrote is simplified first (what its users run); an SDFG handed over as a file or
    # by a builder is tested as given (a bug simplify would remove, or in a transformation
    # simplify applies itself, must not be hidden)
    simplify_by_default: bool = True
    # the target's own optimization recipe (``harnessgen recipe``'s default): module:function
    recipe: str = ""
    # a suite of programs of others (NPBench): one that cannot be loaded is left out of the run
    # with its reason (``unloadable``), and the others run; elsewhere such a program stops the run
    partial: bool = False
    unloadable: Dict[str, str] = dataclasses.field(default_factory=dict)

    def select(self, program: Optional[str]) -> List[Program]:
        if program is None:
            return [self.programs[k] for k in sorted(self.programs) if k not in self.unloadable]
        if program not in self.programs:
            raise ConfigError(f"target {self.name!r} has no program {program!r}; "
                              f"choose one of: {', '.join(sorted(self.programs))}")
        return [self.programs[program]]

    def listing(self) -> List[tuple]:
        """(program, description) for ``harnessgen targets``."""
        return [(p.name, p.description) for p in self.select(None)]


def _afl_config(name: str, suffix: str) -> Optional[Path]:
    path = AFL_CONFIGS / f"{name}{suffix}"
    return path if path.is_file() else None


def with_afl_configs(target: Target) -> Target:
    """Attach ``afl_configs/<target>.options|.dict|.constraints.json`` when present."""
    target.options_file = target.options_file or _afl_config(target.name, ".options")
    target.dict_file = target.dict_file or _afl_config(target.name, ".dict")
    target.constraints_file = target.constraints_file or _afl_config(target.name, ".constraints.json")
    return target
