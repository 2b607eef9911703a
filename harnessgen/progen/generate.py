"""Seeded random DaCe programs rich in the shapes transformations match.

A program is a few argument arrays (sizes ``N``, ``M`` or constants, each dimension padded
by 0-2) and a sequence of blocks; each block kind (``BLOCK_KINDS``) writes one kind of code:

  map_nest   map nests: offsets, strides, constant and symbolic bounds, triangular ranges,
             transposed and constant-index reads
  loop       sequential loops, positive and negative steps, nested or around a map, with and
             without a carried dependency, a bound assigned to a variable first
  map_loop   a map whose body holds a loop (a nested SDFG): a recurrence or an accumulator
  map_cond   a data-dependent branch inside a map
  branch     a branch between states, on data or on a size symbol
  reduce     np.sum/np.max/np.min over a slice, or a write-conflict-resolved (+=) map
  temp       a temporary over whole arrays, read again at once and by later blocks
  slice      slice arithmetic between arrays at offsets
  view       a name bound to a slice (a view), read in a later statement
  time_loop  a block repeated in a loop (its value read by the next trip)

Every access stays inside its array for every size >= 1, whatever the range (ranges may be
empty), and no map reads what it writes at another index (a map's iterations are
independent): the program is valid and means the same in DaCe and in Python. Each block is
said twice, as DaCe source and as a NumPy reference (plain loops where the program has maps).
The same seed and emphasis give the same program in every process (``random.Random``).
"""
from __future__ import annotations

import dataclasses
import random
from typing import Callable, Dict, List, Optional, Sequence

from ..core.errors import ConfigError
from .generated_program import SIZE_SYMBOLS, ArrayDecl, Block, Dim, GenProgram, extent

CONSTANTS = ("0.5", "0.25", "1.5", "0.75", "2.0")
CONDITION_THRESHOLDS = ("0.0", "0.25", "-0.5")
MIN_BLOCKS, MAX_BLOCKS = 3, 6
# argument names: no size symbol, no name sympy reads as its own (E, I, N, O, Q, S), none of the
# prefixes of temporaries (T), views (V) and iteration variables (i)
ARRAY_NAMES = "ABCDFGHJKLPRUWXYZ"


@dataclasses.dataclass
class Var:
    """An iteration variable: its values lie in [lo_min, size + h_max)."""

    name: str
    size: str
    lo_min: int
    h_max: int
    dace: str           # the range in dace.map[...] or the range(...) of a loop
    python: str         # the same range as a Python range(...)
    sequential: bool = False


class _Gen:
    """The state of one program while its blocks are generated."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.arrays: List[ArrayDecl] = []
        self.counters: Dict[str, int] = {}

    # ------------------------------------------------------------ names and arrays
    def fresh(self, prefix: str) -> str:
        self.counters[prefix] = self.counters.get(prefix, 0) + 1
        return f"{prefix}{self.counters[prefix] - 1}"

    def new_dim(self, size: Optional[str] = None) -> Dim:
        if size is None:
            size = self.rng.choices(["N", "M", "3", "5"], weights=[5, 4, 1, 1])[0]
        return Dim(size, self.rng.choice([0, 0, 1, 2]))

    def new_array(self, dims: Sequence[Dim]) -> ArrayDecl:
        taken = len(self.arguments())
        name = ARRAY_NAMES[taken] if taken < len(ARRAY_NAMES) else self.fresh("X")
        array = ArrayDecl(name, tuple(dims))
        self.arrays.append(array)
        return array

    def arguments(self) -> List[ArrayDecl]:
        return [a for a in self.arrays if not a.transient]

    def writable(self, rank: Optional[int] = None) -> ArrayDecl:
        """An argument array (of that rank), made when none fits."""
        fitting = [a for a in self.arguments() if rank is None or len(a.dims) == rank]
        if fitting and self.rng.random() < 0.85:
            return self.rng.choice(fitting)
        return self.new_array([self.new_dim() for _ in range(rank or self.rng.choice([1, 2, 2]))])

    def with_sizes(self, sizes: Sequence[str]) -> ArrayDecl:
        """An array whose dimensions have these sizes, in this order (made when none has)."""
        fitting = [a for a in self.arrays if [d.size for d in a.dims] == list(sizes)]
        if fitting and self.rng.random() < 0.8:
            return self.rng.choice(fitting)
        return self.new_array([self.new_dim(s) for s in sizes])

    def readable(self, avoid: Optional[ArrayDecl] = None) -> ArrayDecl:
        """Any array but ``avoid``; temporaries weigh more (they are there to be read again)."""
        pool = [a for a in self.arrays if a is not avoid]
        if not pool:
            return self.new_array([self.new_dim() for _ in range(self.rng.choice([1, 2]))])
        return self.rng.choices(pool, weights=[3 if a.transient else 1 for a in pool])[0]

    # ------------------------------------------------------------ ranges and accesses
    def var(self, dim: Dim, step: int = 1, negative: bool = False, lo: Optional[int] = None,
            h: Optional[int] = None) -> Var:
        """A variable over part of a dimension: [lo, size + h), h <= the dimension's pad."""
        lo = self.rng.choice([0, 0, 1, 2]) if lo is None else lo
        h = dim.pad - self.rng.choice([0, 0, 1, 2]) if h is None else h
        name = self.fresh("i")
        upper = extent(dim.size, h)
        if negative:
            rng_text = f"range({extent(dim.size, h - 1)}, {lo - 1}, -1)"
            return Var(name, dim.size, lo, h, rng_text, rng_text, sequential=True)
        dace = f"{lo}:{upper}" + (f":{step}" if step > 1 else "")
        return Var(name, dim.size, lo, h, dace, f"range({lo}, {upper}" + (f", {step})" if step > 1 else ")"))

    def triangular(self, outer: Var, dim: Dim) -> Var:
        """A variable whose range starts or ends at ``outer`` (same size): above the diagonal,
        or below it where ``outer`` stays inside this dimension."""
        name = self.fresh("i")
        if self.rng.random() < 0.5 or outer.h_max > dim.pad:
            shift = self.rng.choice([0, 1])
            h = dim.pad - self.rng.choice([0, 1])
            lower = f"{outer.name} + {shift}" if shift else outer.name
            return Var(name, dim.size, outer.lo_min + shift, h, f"{lower}:{extent(dim.size, h)}",
                       f"range({lower}, {extent(dim.size, h)})")
        lo = self.rng.choice([0, 1])
        return Var(name, dim.size, lo, outer.h_max, f"{lo}:{outer.name} + 1", f"range({lo}, {outer.name} + 1)")

    def index(self, array: ArrayDecl, variables: Sequence[Var], tags: set,
              exact: Optional[Sequence[str]] = None) -> str:
        """An in-bounds access of ``array`` indexed by ``variables`` (at offsets where they fit),
        or exactly ``exact``."""
        if exact is not None:
            return f"{array.name}[{', '.join(exact)}]"
        parts, used = [], []
        for position, dim in enumerate(array.dims):
            choices = [v for v in variables if v.size == dim.size and v not in used]
            fitting = [v for v in choices if -v.lo_min <= dim.pad - v.h_max]
            if fitting and self.rng.random() < 0.9:
                var = self.rng.choice(fitting)
                if variables.index(var) != position:
                    tags.add("access.transposed")
                used.append(var)
                low, high = -var.lo_min, dim.pad - var.h_max
                offset = self.rng.choice([o for o in (0, 0, 0, -1, 1, 2) if low <= o <= high] or [low])
                if offset:
                    tags.add("access.offset")
                parts.append(_offset(var.name, offset))
            else:
                tags.add("access.constant")
                parts.append(str(self.rng.randint(0, dim.pad)))
        return f"{array.name}[{', '.join(parts)}]"

    def expr(self, reads: Sequence[str]) -> str:
        terms = [f"{self.rng.choice(CONSTANTS)} * {r}" if self.rng.random() < 0.5 else r for r in reads]
        out, multiplied = terms[0], False
        for term in terms[1:]:
            op = self.rng.choice(["+", "-", "*"] if not multiplied else ["+", "-"])
            multiplied |= op == "*"
            out = f"{out} {op} {term}" if op != "*" else f"({out}) * {term}"
        return out

    def reads(self, variables: Sequence[Var], tags: set, avoid: Optional[ArrayDecl] = None, count: int = 0) -> List[str]:
        count = count or self.rng.choice([1, 2, 2, 3])
        return [self.index(self.readable(avoid), variables, tags) for _ in range(count)]


def _slice_start(g: _Gen, h: int) -> int:
    """Where a slice ending at size + h may start: never more than one past its end at size 1
    (NumPy makes a reversed slice empty; DaCe would give it a negative length)."""
    return g.rng.choice([lo for lo in (0, 0, 1, 2) if lo <= h + 1] or [0])


def _offset(name: str, offset: int) -> str:
    return name if offset == 0 else f"{name} + {offset}" if offset > 0 else f"{name} - {-offset}"


def _nest(headers: Sequence[str], body: Sequence[str]) -> List[str]:
    """Lines of nested blocks: each header indents what follows it."""
    lines = []
    for depth, header in enumerate(headers):
        lines.append("    " * depth + header)
    return lines + ["    " * len(headers) + line for line in body]


def _map_headers(variables: Sequence[Var], nested: bool) -> List[str]:
    if nested:
        return [f"for {v.name} in dace.map[{v.dace}]:" for v in variables]
    return [f"for {', '.join(v.name for v in variables)} in dace.map[{', '.join(v.dace for v in variables)}]:"]


def _loop_headers(variables: Sequence[Var]) -> List[str]:
    return [f"for {v.name} in {v.python}:" for v in variables]


def _dace_headers(variables: Sequence[Var], nested: bool = False) -> List[str]:
    """Sequential variables as loops, runs of parallel ones as one map (nested maps where a
    range reads an enclosing variable, or where asked)."""
    headers, run = [], []
    for v in variables:
        if v.sequential:
            headers += _map_headers(run, nested or _dependent(run)) if run else []
            run = []
            headers.append(f"for {v.name} in {v.python}:")
        else:
            run.append(v)
    return headers + (_map_headers(run, nested or _dependent(run)) if run else [])


def _dependent(variables: Sequence[Var]) -> bool:
    return any(other.name in v.dace for v in variables for other in variables if other is not v)


# ---------------------------------------------------------------- block kinds
def map_nest(g: _Gen) -> Block:
    target = g.writable(g.rng.choice([1, 2, 2, 3]))
    tags = {"map", f"map.rank{len(target.dims)}"}
    variables: List[Var] = []
    for position, dim in enumerate(target.dims):
        if position and dim.size == target.dims[position - 1].size and g.rng.random() < 0.4:
            var = g.triangular(variables[-1], dim)
            tags.add("map.triangular")
        else:
            step = g.rng.choice([1, 1, 1, 2, 3])
            var = g.var(dim, step=step)
            if step > 1:
                tags.add("map.strided")
        variables.append(var)
    if any(v.lo_min > 0 or v.h_max < d.pad for v, d in zip(variables, target.dims)):
        tags.add("map.partial")
    write = g.index(target, variables, tags, exact=[v.name for v in variables])
    reads = g.reads(variables, tags, avoid=target)
    if g.rng.random() < 0.3:
        reads.append(write)             # the value it overwrites, at the same index
        tags.add("map.update")
    body = [f"{write} = {g.expr(reads)}"]
    nested = len(variables) > 1 and g.rng.random() < 0.35
    if nested or "map.triangular" in tags:
        tags.add("map.nested")
    return Block("map_nest", sorted(tags), _nest(_dace_headers(variables, nested), body),
                 _nest(_loop_headers(variables), body))


def loop(g: _Gen) -> Block:
    target = g.writable(g.rng.choice([1, 2, 2]))
    dim = target.dims[0]
    negative = g.rng.random() < 0.5
    carried = g.rng.random() < 0.6
    tags = {"loop", "loop.negative" if negative else "loop.positive"}
    lo = 1 if carried and not negative else None
    h = dim.pad - 1 if carried and negative else None
    outer = g.var(dim, negative=negative, lo=lo, h=h)
    prelude = []
    if not negative:
        outer.sequential = True
        if g.rng.random() < 0.4:        # the bound through a variable: an interstate assignment
            bound = g.fresh("u")
            prelude = [f"{bound} = {extent(dim.size, outer.h_max)}"]
            outer.python = f"range({outer.lo_min}, {bound})"
            tags.add("interstate.assign")
        outer.dace = outer.python
    variables = [outer]
    if len(target.dims) > 1:
        inner = g.var(target.dims[1])
        if g.rng.random() < 0.5:
            inner.sequential, inner.dace = True, inner.python
            tags.add("loop.nested")
        else:
            tags.add("loop.map")
        variables.append(inner)
    write = g.index(target, variables, tags, exact=[v.name for v in variables])
    reads = g.reads(variables, tags, avoid=target)
    if carried:                    # the value the previous trip wrote
        previous = [_offset(outer.name, 1 if negative else -1)] + [v.name for v in variables[1:]]
        reads.append(f"{target.name}[{', '.join(previous)}]")
        tags.add("loop.carried")
    body = [f"{write} = {g.expr(reads)}"]
    return Block("loop", sorted(tags), prelude + _nest(_dace_headers(variables), body),
                 prelude + _nest(_loop_headers(variables), body))


def map_loop(g: _Gen) -> Block:
    if g.rng.random() < 0.5:
        return _map_accumulate(g)
    target = g.writable(2)
    tags = {"map.loop", "map.loop.recurrence"}
    outer = g.var(target.dims[0])
    inner = g.var(target.dims[1], lo=1)
    inner.sequential, inner.dace = True, inner.python
    variables = [outer, inner]
    write = f"{target.name}[{outer.name}, {inner.name}]"
    reads = g.reads(variables, tags, avoid=target) + [f"{target.name}[{outer.name}, {inner.name} - 1]"]
    body = [f"{write} = {g.expr(reads)}"]
    return Block("map_loop", sorted(tags), _nest(_dace_headers(variables), body), _nest(_loop_headers(variables), body))


def _map_accumulate(g: _Gen) -> Block:
    target = g.writable(1)
    tags = {"map.loop", "map.loop.accumulate"}
    source = g.with_sizes([target.dims[0].size, g.rng.choice(["N", "M"])])
    outer = g.var(target.dims[0], h=min(target.dims[0].pad, source.dims[0].pad))
    inner = g.var(source.dims[1])
    acc = g.fresh("acc")
    read = g.index(source, [outer, inner], tags)
    other = g.reads([outer], tags, avoid=target, count=1)[0]
    inner_body = [f"{acc} = {acc} + {g.rng.choice(CONSTANTS)} * {read}"]
    body = [f"{acc} = 0.0", f"for {inner.name} in {inner.python}:", *["    " + l for l in inner_body],
            f"{target.name}[{outer.name}] = {acc} + {other}"]
    return Block("map_loop", sorted(tags), _nest(_dace_headers([outer]), body), _nest(_loop_headers([outer]), body))


def map_cond(g: _Gen) -> Block:
    target = g.writable(g.rng.choice([1, 2]))
    tags = {"map", "map.cond"}
    variables = [g.var(d) for d in target.dims]
    write = g.index(target, variables, tags, exact=[v.name for v in variables])
    test = g.reads(variables, tags, avoid=target, count=1)[0]
    body = [f"if {test} > {g.rng.choice(CONDITION_THRESHOLDS)}:",
            f"    {write} = {g.expr(g.reads(variables, tags, avoid=target))}",
            "else:",
            f"    {write} = {g.expr(g.reads(variables, tags, avoid=target))}"]
    return Block("map_cond", sorted(tags), _nest(_dace_headers(variables), body), _nest(_loop_headers(variables), body))


def branch(g: _Gen) -> Block:
    symbols = sorted({d.size for a in g.arrays for d in a.dims if d.size in SIZE_SYMBOLS})
    if symbols and g.rng.random() < 0.4:
        condition = f"{g.rng.choice(symbols)} > {g.rng.choice([2, 3, 5])}"
        tags = {"branch", "branch.symbol"}
    else:
        source = g.readable()
        condition = f"{source.name}[{', '.join('0' for _ in source.dims)}] > {g.rng.choice(CONDITION_THRESHOLDS)}"
        tags = {"branch", "branch.data"}
    then = g.rng.choice(SIMPLE_KINDS)(g)
    other = g.rng.choice(SIMPLE_KINDS)(g) if g.rng.random() < 0.7 else None
    tags.update(then.tags + (other.tags if other else []))

    def lines(side: str) -> List[str]:
        out = [f"if {condition}:", *["    " + l for l in getattr(then, side)]]
        return out + (["else:", *["    " + l for l in getattr(other, side)]] if other else [])

    return Block("branch", sorted(tags), lines("dace"), lines("reference"))


def reduce(g: _Gen) -> Block:
    if g.rng.random() < 0.35:
        return _wcr(g)
    target = g.writable(1)
    size = target.dims[0].size
    axis = g.rng.choice([0, 1])
    other = g.rng.choice(["N", "M", "4"])
    source = g.with_sizes([size, other] if axis == 1 else [other, size])
    kept = source.dims[1 - axis]
    h = min(target.dims[0].pad, kept.pad) - g.rng.choice([0, 0, 1])
    lo = _slice_start(g, h)
    kept_slice = f"{lo}:{extent(size, h)}"
    op = g.rng.choice(["sum", "max", "min"])
    if op == "sum":               # a part of the reduced dimension (maybe empty: the sum is 0)
        red_h = source.dims[axis].pad - g.rng.choice([0, 1])
        reduced_slice = f"{_slice_start(g, red_h)}:{extent(source.dims[axis].size, red_h)}"
    else:                         # all of it (never empty): an empty max has no value in NumPy
        reduced_slice = ":"
    slices = [kept_slice, reduced_slice] if axis == 1 else [reduced_slice, kept_slice]
    line = f"{target.name}[{kept_slice}] = np.{op}({source.name}[{', '.join(slices)}], axis={axis})"
    return Block("reduce", [f"reduce.{op}"], [line], [line])


def _wcr(g: _Gen) -> Block:
    target = g.writable(1)
    tags = {"wcr"}
    outer = g.var(target.dims[0])
    # the reduced dimension is one of an array it reads (a size no array has is no symbol of the program)
    inner = g.var(g.rng.choice(g.readable(avoid=target).dims), h=0)
    variables = [outer, inner]
    write = f"{target.name}[{outer.name}]"
    body = [f"{write} += {g.expr(g.reads(variables, tags, avoid=target))}"]
    return Block("reduce", sorted(tags), _nest(_dace_headers(variables), body), _nest(_loop_headers(variables), body))


def temp(g: _Gen) -> Block:
    first = g.readable()
    same = [a for a in g.arrays if a.dims == first.dims]
    operands = [first] + [g.rng.choice(same) for _ in range(g.rng.choice([1, 2]))]
    name = g.fresh("T")
    expression = g.expr([a.name for a in operands])
    g.arrays.append(ArrayDecl(name, first.dims, transient=True))
    lines = [f"{name} = {expression}"]
    outputs = [a for a in g.arguments() if a.dims == first.dims]
    if outputs:                    # read at once as well as later
        out = g.rng.choice(outputs)
        lines.append(f"{out.name}[:] = {g.rng.choice(CONSTANTS)} * {name} - {out.name}")
    return Block("temp", ["temp"], lines, lines)


def slice_block(g: _Gen, view: bool = False) -> Block:
    target = g.writable(g.rng.choice([1, 2]))
    source = g.with_sizes([d.size for d in target.dims])
    tags = {"view"} if view else {"slice"}
    target_slices, source_slices = [], []
    for dim, sdim in zip(target.dims, source.dims):
        h = min(dim.pad, sdim.pad) - g.rng.choice([0, 0, 1])
        lo = _slice_start(g, h)
        offsets = [o for o in (0, 0, 1, -1, 2) if lo + o >= 0 and h + o <= sdim.pad]
        offset = g.rng.choice(offsets)
        if offset:
            tags.add("slice.offset")
        target_slices.append(f"{lo}:{extent(dim.size, h)}")
        source_slices.append(f"{lo + offset}:{extent(dim.size, h + offset)}")
    written = f"{target.name}[{', '.join(target_slices)}]"
    read = f"{source.name}[{', '.join(source_slices)}]"
    lines = []
    if view:
        name = g.fresh("V")
        lines.append(f"{name} = {read}")
        read = name
    lines.append(f"{written} = {g.rng.choice(CONSTANTS)} * {read} + {written}")
    return Block("view" if view else "slice", sorted(tags), lines, lines)


def view(g: _Gen) -> Block:
    return slice_block(g, view=True)


def time_loop(g: _Gen) -> Block:
    inner = g.rng.choice([map_nest, slice_block])(g)
    trips = g.rng.choice(["2", "3"] + sorted({d.size for a in g.arrays for d in a.dims if d.size in SIZE_SYMBOLS}))
    name = g.fresh("t")
    header = f"for {name} in range({trips}):"
    return Block("time_loop", sorted({"loop.time", *inner.tags}), [header, *["    " + l for l in inner.dace]],
                 [header, *["    " + l for l in inner.reference]])


BLOCK_KINDS: Dict[str, Callable[[_Gen], Block]] = {
    "map_nest": map_nest, "loop": loop, "map_loop": map_loop, "map_cond": map_cond, "branch": branch,
    "reduce": reduce, "temp": temp, "slice": slice_block, "view": view, "time_loop": time_loop,
}
SIMPLE_KINDS = (map_nest, slice_block, loop)


def generate(seed: int, emphasis: Sequence[str] = ()) -> GenProgram:
    """The program of ``seed``: the ``emphasis`` kinds first, then kinds drawn at random."""
    unknown = [k for k in emphasis if k not in BLOCK_KINDS]
    if unknown:
        raise ConfigError(f"--program generated:{seed}+{'+'.join(emphasis)}: no block kind "
                          f"{', '.join(unknown)}; choose from {', '.join(BLOCK_KINDS)}")
    g = _Gen(seed)
    for _ in range(g.rng.choice([2, 3, 3])):
        g.new_array([g.new_dim() for _ in range(g.rng.choice([1, 2, 2]))])
    kinds = list(emphasis)
    total = max(len(kinds) + 1, g.rng.randint(MIN_BLOCKS, MAX_BLOCKS))
    kinds += [g.rng.choice(sorted(BLOCK_KINDS)) for _ in range(total - len(kinds))]
    blocks = [BLOCK_KINDS[kind](g) for kind in kinds]
    return GenProgram(seed, tuple(emphasis), list(g.arrays), blocks)
