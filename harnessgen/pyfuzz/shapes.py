"""torch's shape, view and in-place statements for the generator (the kinds ``ops`` lists
after its shared ones).

One function per kind draws the operands and parameters of one statement and
returns a ``Draft`` (operands, shape, dtype, bound), or None when the program so
far has nothing it can apply to. ``Aliases`` keeps what the rules need to know
about storage: which values share it (a view and its base, an in-place
statement's value and the tensor it wrote), which may overlap (``expand``), which
are contiguous (``view`` needs it), which groups nothing may write any more (a
``reshape`` may or may not have copied), and which values carry no rounding
(a float becomes an integer or a boolean, by a cast or a comparison, only
then, or a compiler's last-bit difference would flip it).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Dict, List, Optional, Tuple

from .ops import ALL, BOOLS, CONSTANTS, FLOATS, OPS_BY_NAME, Op
from .program_record import Stmt, Value

MAX_RANK = 3


@dataclasses.dataclass
class Draft:
    args: List[str]
    shape: Tuple[int, ...]
    dtype: str
    bound: Optional[float]
    const: Optional[float] = None
    axis: Optional[int] = None
    params: Dict = dataclasses.field(default_factory=dict)


class Aliases:
    def __init__(self):
        self.root: Dict[str, str] = {}
        self.overlapping: set = set()
        self.contiguous: set = set()
        self.frozen: set = set()          # groups nothing writes any more
        self.inexact: set = set()

    def new(self, name: str) -> None:
        self.root[name] = name
        self.contiguous.add(name)

    def group(self, name: str) -> List[str]:
        root = self.root[name]
        return [n for n, r in self.root.items() if r == root]

    def writable(self, value: Value) -> bool:
        return value.name not in self.overlapping and self.root[value.name] not in self.frozen

    def exact(self, name: str) -> bool:
        return name not in self.inexact

    def record(self, stmt: Stmt, bounds: Dict[str, float]) -> None:
        op, name, x = stmt.operator, stmt.target.name, stmt.args[0]
        self.root[name] = self.root[x] if (op.view or op.mutates) else name
        if op.ambiguous:
            self.frozen.add(self.root[x])
        if stmt.op == "expand" or (op.view and x in self.overlapping):
            self.overlapping.add(name)
        if _contiguous_result(stmt, x in self.contiguous):
            self.contiguous.add(name)
        if not op.exact or any(a in self.inexact for a in stmt.args):
            self.inexact.add(name)
        if op.mutates:
            # the write reaches every value of the group: their bounds and exactness follow it
            for member in self.group(x):
                bounds[member] = max(bounds[member], bounds[name])
                if name in self.inexact:
                    self.inexact.add(member)


def _contiguous_result(stmt: Stmt, source_contiguous: bool) -> bool:
    op = stmt.operator
    if op.mutates:
        return source_contiguous
    if not op.view or op.ambiguous:
        return True
    if stmt.op in ("squeeze", "unsqueeze", "view"):
        return source_contiguous
    if stmt.op == "slice":        # a run of whole rows of a contiguous tensor
        return source_contiguous and stmt.params["dim"] == 0 and stmt.params["step"] == 1
    if stmt.op == "select":
        return source_contiguous and stmt.params["dim"] == 0
    return False


# ---------------------------------------------------------------- helpers
def _dim(b, n: int) -> int:
    return b.choices.integer(b.options.min_dim, b.options.max_dim) if n is None else n


def _slice_params(b, shape: Tuple[int, ...]) -> Tuple[Dict, Tuple[int, ...]]:
    dim = b.choices.integer(0, len(shape) - 1)
    n = shape[dim]
    start = b.choices.integer(0, n - 1)
    stop = b.choices.integer(start + 1, n)
    step = 1 if stop - start < 2 else b.choices.choice((1, 1, 2))
    length = -(-(stop - start) // step)
    params = {"rank": len(shape), "dim": dim, "start": start, "stop": stop, "step": step}
    return params, shape[:dim] + (length,) + shape[dim + 1:]


def _sized(b, dtype: str, min_rank: int = 1, max_rank: int = MAX_RANK) -> List[Value]:
    return [v for v in b.values() if v.dtype == dtype and min_rank <= len(v.shape) <= max_rank
            and all(n > 0 for n in v.shape)]


def _some(b, op: Op, dtype: str, min_rank: int = 1, max_rank: int = MAX_RANK, keep=lambda v: True) -> Optional[Value]:
    """An earlier value of ``dtype`` that ``keep`` accepts, or a new input of rank 1-2."""
    candidates = [v for v in _sized(b, dtype, min_rank, max_rank) if keep(v)]
    if not candidates or b.choices.boolean(0.1):
        rank = b.choices.integer(max(min_rank, 1), min(max_rank, 2))
        fresh = b.new_input(b.new_shape(rank, op), dtype)
        return fresh if keep(fresh) else None
    return b.pick(candidates, op)


# views an in-place statement makes first when the program has none to write through
ALIAS_MAKERS = ("slice", "select", "unsqueeze", "view", "transpose")


def _writable(b, op: Op, dtype: str, max_rank: int = MAX_RANK) -> Optional[Value]:
    """A value an in-place statement may write: views first (a write through an alias);
    with none, now and then a view made for it (a statement of its own)."""
    candidates = [v for v in _sized(b, dtype, 1, max_rank) if b.aliases.writable(v)]
    views = [v for v in candidates if b.aliases.root[v.name] != v.name]
    if not views and b.choices.boolean(0.5):
        maker = OPS_BY_NAME[b.choices.choice(ALIAS_MAKERS)]
        stmt = b.make(maker, dtype) if dtype in maker.dtypes else None
        if stmt is not None and len(stmt.target.shape) <= max_rank and stmt.target.shape:
            b.add(stmt)
            views = [stmt.target] if b.aliases.writable(stmt.target) else []
    if views and b.choices.boolean(0.8):
        return b.pick(views, op)
    if not candidates or b.choices.boolean(0.1):
        return b.new_input(b.new_shape(None, op), dtype)
    return b.pick(candidates, op)


# ---------------------------------------------------------------- one function per kind
def _compare(b, op, dtype):
    """``x > y``: on floats only of values no rounding produced (a last-bit difference of a
    compiler's exp or sum would flip the boolean, which no tolerance forgives)."""
    x = _some(b, op, dtype)
    y = b.partner(x, b.broadcast_shape(x.shape))
    if dtype in FLOATS and not (b.aliases.exact(x.name) and b.aliases.exact(y.name)):
        return None
    return Draft([x.name, y.name], x.shape, "bool", 1.0)


def _cast(b, op, dtype):
    x = _some(b, op, dtype)
    targets = [t for t in ALL + BOOLS if t != dtype]
    if dtype in FLOATS and not b.aliases.exact(x.name):
        targets = [t for t in targets if t in FLOATS]      # rounding must not flip an integer or a boolean
    to = b.choices.choice(targets)
    bound = 1.0 if to in BOOLS else b.bounds[x.name]
    return Draft([x.name], x.shape, to, bound, params={"dtype": to})


def _masked(b, op, dtype):
    mask = _some(b, op, "bool")
    if mask is None:
        return None
    value_type = b.choices.choice(ALL)
    y = b.partner(mask, mask.shape, value_type)
    z = b.partner(y, b.broadcast_shape(mask.shape))
    return Draft([mask.name, y.name, z.name], mask.shape, value_type, max(b.bounds[y.name], b.bounds[z.name]))


def _slice(b, op, dtype):
    x = _some(b, op, dtype)
    params, shape = _slice_params(b, x.shape)
    return Draft([x.name], shape, dtype, b.bounds[x.name], params=params)


def _select(b, op, dtype):
    x = _some(b, op, dtype, min_rank=2)
    if x is None:
        return None
    dim = b.choices.integer(0, len(x.shape) - 1)
    index = b.choices.integer(0, x.shape[dim] - 1)
    return Draft([x.name], x.shape[:dim] + x.shape[dim + 1:], dtype, b.bounds[x.name],
                 params={"dim": dim, "index": index})


def _new_shape(b, shape: Tuple[int, ...]) -> Tuple[int, ...]:
    """The same number of elements in another shape: flattened, the first dimension split
    by one of its divisors, or the first two dimensions merged."""
    numel = math.prod(shape)
    options = [(numel,)]
    divisors = [d for d in range(2, shape[0]) if shape[0] % d == 0]
    if divisors and len(shape) < MAX_RANK:
        d = b.choices.choice(divisors)
        options.append((d, shape[0] // d) + shape[1:])
    if len(shape) >= 2:
        options.append((shape[0] * shape[1],) + shape[2:])
    return b.choices.choice(options)


def _view(b, op, dtype):
    needs_contiguous = not op.ambiguous
    x = _some(b, op, dtype, keep=lambda v: v.name in b.aliases.contiguous or not needs_contiguous)
    if x is None:
        return None
    shape = _new_shape(b, x.shape)
    return Draft([x.name], shape, dtype, b.bounds[x.name], params={"shape": shape})


def _squeeze(b, op, dtype):
    x = _some(b, op, dtype, min_rank=2, keep=lambda v: 1 in v.shape)
    if x is None:
        return None
    dims = [d for d, n in enumerate(x.shape) if n == 1]
    dim = b.choices.choice(dims)
    return Draft([x.name], x.shape[:dim] + x.shape[dim + 1:], dtype, b.bounds[x.name], params={"dim": dim})


def _unsqueeze(b, op, dtype):
    x = _some(b, op, dtype, max_rank=MAX_RANK - 1)
    dim = b.choices.integer(0, len(x.shape))
    return Draft([x.name], x.shape[:dim] + (1,) + x.shape[dim:], dtype, b.bounds[x.name], params={"dim": dim})


def _expand(b, op, dtype):
    x = _some(b, op, dtype, keep=lambda v: 1 in v.shape)
    if x is None:
        return None
    shape = tuple(b.choices.integer(2, max(2, b.options.max_dim)) if n == 1 and b.choices.boolean(0.7) else n
                  for n in x.shape)
    return Draft([x.name], shape, dtype, b.bounds[x.name], params={"shape": shape})


def _cat(b, op, dtype):
    x = _some(b, op, dtype)
    dim = b.choices.integer(0, len(x.shape) - 1)
    other = x.shape[:dim] + (b.choices.integer(1, b.options.max_dim),) + x.shape[dim + 1:]
    y = b.partner(x, other)
    shape = x.shape[:dim] + (x.shape[dim] + other[dim],) + x.shape[dim + 1:]
    return Draft([x.name, y.name], shape, dtype, op.bound(b.bounds[x.name], b.bounds[y.name]), params={"dim": dim})


def _stack(b, op, dtype):
    x = _some(b, op, dtype, max_rank=MAX_RANK - 1)
    y = b.partner(x, x.shape)
    dim = b.choices.integer(0, len(x.shape))
    return Draft([x.name, y.name], x.shape[:dim] + (2,) + x.shape[dim:], dtype,
                 op.bound(b.bounds[x.name], b.bounds[y.name]), params={"dim": dim})


def _pad(b, op, dtype):
    x = _some(b, op, dtype)
    n = x.shape[-1]
    crop = min(2, n - 1) if b.options.compiler == "torch" else 0      # torch's negative widths crop
    left = b.choices.integer(-crop, 2)
    right = b.choices.integer(-crop, 2)
    if n + left + right < 1:
        right = 1 - n - left
        if -right >= n:
            return None
    const = b.choices.choice(CONSTANTS)
    return Draft([x.name], x.shape[:-1] + (n + left + right,), dtype, op.bound(b.bounds[x.name], const),
                 const=const, params={"left": left, "right": right, "rank": len(x.shape)})


def _inplace(b, op, dtype):
    x = _writable(b, op, dtype)
    if x is None:
        return None
    y = b.partner(x, b.broadcast_shape(x.shape), apart=True)
    return Draft([x.name, y.name], x.shape, dtype, op.bound(b.bounds[x.name], b.bounds[y.name]))


def _inplace_scalar(b, op, dtype):
    x = _writable(b, op, dtype)
    const = b.choices.choice(CONSTANTS)
    return Draft([x.name], x.shape, dtype, op.bound(b.bounds[x.name], const), const=const)


def _setitem(b, op, dtype):
    x = _writable(b, op, dtype)
    params, shape = _slice_params(b, x.shape)
    y = b.partner(x, shape, apart=True)
    return Draft([x.name, y.name], x.shape, dtype, op.bound(b.bounds[x.name], b.bounds[y.name]), params=params)


def _fill_slice(b, op, dtype):
    x = _writable(b, op, dtype)
    params, _ = _slice_params(b, x.shape)
    const = b.choices.choice(CONSTANTS)
    return Draft([x.name], x.shape, dtype, op.bound(b.bounds[x.name], const), const=const, params=params)


def _index_put(b, op, dtype):
    x = _writable(b, op, dtype)
    n = x.shape[0]
    count = b.choices.integer(1, 2 * n)
    indices = [b.choices.integer(0, n - 1) for _ in range(count)]      # repeats are the point
    y = b.partner(x, (count,) + x.shape[1:], apart=True)
    return Draft([x.name, y.name], x.shape, dtype, op.bound(b.bounds[x.name], b.bounds[y.name], count),
                 params={"indices": indices})


def _nested(shape: Tuple[int, ...], draw: Callable[[], int]):
    if not shape:
        return draw()
    return [_nested(shape[1:], draw) for _ in range(shape[0])]


def _scatter_add(b, op, dtype):
    x = _writable(b, op, dtype, max_rank=2)
    if x is None:
        return None
    dim = b.choices.integer(0, len(x.shape) - 1)
    shape = x.shape[:dim] + (b.choices.integer(1, x.shape[dim] + 2),) + x.shape[dim + 1:]
    index = _nested(shape, lambda: b.choices.integer(0, x.shape[dim] - 1))
    y = b.partner(x, shape, apart=True)
    return Draft([x.name, y.name], x.shape, dtype, op.bound(b.bounds[x.name], b.bounds[y.name], shape[dim]),
                 params={"dim": dim, "index": index})


SHAPES: Dict[str, Callable] = {
    "compare": _compare, "cast": _cast, "masked": _masked, "slice": _slice, "select": _select,
    "view": _view, "squeeze": _squeeze, "unsqueeze": _unsqueeze, "expand": _expand, "cat": _cat,
    "stack": _stack, "pad": _pad, "inplace": _inplace, "inplace_scalar": _inplace_scalar,
    "setitem": _setitem, "fill_slice": _fill_slice, "index_put": _index_put, "scatter_add": _scatter_add,
}
