"""The record of one generated program: its arrays and its blocks, each block said twice, as
DaCe source and as a NumPy reference. It renders (``templates/generated_program.py.j2``) to
one Python file a user can read and run: the ``@dace.program`` and the ``reference`` beside it.

A program is named by its seed and the block kinds it was asked to hold first
(``17``, ``17+reduce+map_loop``): the name alone regenerates it, in any process.
"""
from __future__ import annotations

import dataclasses
import re
from typing import List, Tuple

from ..core.data import template_environment
from ..core.errors import ConfigError

SIZE_SYMBOLS = ("N", "M")
_NAME = re.compile(r"^(\d+)((?:\+[a-z_]+)*)$")


def extent(size: str, pad: int) -> str:
    """``N + 2``, ``M - 1``, ``N``; constant sizes folded (``4``)."""
    if size.isdigit():
        return str(int(size) + pad)
    if pad == 0:
        return size
    return f"{size} + {pad}" if pad > 0 else f"{size} - {-pad}"


@dataclasses.dataclass(frozen=True)
class Dim:
    size: str          # a size symbol (N, M) or a constant ("4")
    pad: int           # the extent is size + pad

    @property
    def extent(self) -> str:
        return extent(self.size, self.pad)


@dataclasses.dataclass
class ArrayDecl:
    name: str
    dims: Tuple[Dim, ...]
    transient: bool = False    # a temporary of the program (not an argument)

    @property
    def shape(self) -> str:
        return ", ".join(d.extent for d in self.dims)


@dataclasses.dataclass
class Block:
    """One statement group of the program (one or more states of its SDFG)."""

    kind: str                  # the generator that made it (generate.BLOCK_KINDS)
    tags: List[str]            # the shapes it holds (coverage: map.strided, loop.negative, ...)
    dace: List[str]            # its lines in the @dace.program, unindented
    reference: List[str]       # its lines in the NumPy reference, unindented


@dataclasses.dataclass
class GenProgram:
    seed: int
    emphasis: Tuple[str, ...]
    arrays: List[ArrayDecl]
    blocks: List[Block]

    @property
    def name(self) -> str:
        return program_name(self.seed, self.emphasis)

    @property
    def function(self) -> str:
        """The @dace.program's name (a valid identifier, distinct per program)."""
        return "gen_" + self.name.replace("+", "_")

    @property
    def arguments(self) -> List[ArrayDecl]:
        return [a for a in self.arrays if not a.transient]

    @property
    def symbols(self) -> List[str]:
        used = {d.size for a in self.arrays for d in a.dims}
        return [s for s in SIZE_SYMBOLS if s in used]

    @property
    def tags(self) -> List[str]:
        return sorted({t for b in self.blocks for t in b.tags})

    def source(self) -> str:
        template = template_environment().get_template("generated_program.py.j2")
        return template.render(program=self) + "\n"

    def describe(self) -> str:
        return f"generated program {self.name}: " + ", ".join(b.kind for b in self.blocks)


def program_name(seed: int, emphasis: Tuple[str, ...]) -> str:
    return "+".join([str(seed), *emphasis])


def parse_name(name: str) -> Tuple[int, Tuple[str, ...]]:
    """``17+reduce`` -> (17, ("reduce",)); a ConfigError naming --program for anything else."""
    match = _NAME.match(name)
    if not match:
        raise ConfigError(f"--program generated:{name}: expected a seed, optionally followed by block kinds "
                          "(generated:17, generated:17+reduce+map_loop), or a seed range for a stream (generated:0-29)")
    return int(match.group(1)), tuple(k for k in match.group(2).split("+") if k)
