"""Operator pools: what a generated program may call, with the rules that keep it valid.

One ``Op`` per operator, the same record for every compiler: its kind (which
shape rule applies), the dtypes it takes, a bound rule (strict mode keeps every
value finite by tracking an upper bound of ``|value|``) and how it is spelled
in each compiler's source. A pool is the list of ops one compiler supports;
``POOLS`` finds it by compiler name.

Shape rules by kind::

    unary      x -> x.shape
    binary     x, y -> x.shape, y the same shape or x's last dimension (row broadcast)
    scalar     x, constant -> x.shape
    reduce     x (rank 2) -> x.shape without one axis
    matmul     (m, k) @ (k, n) -> (m, n); (m, k) @ (k,) -> (m,)
    transpose  (m, n) -> (n, m)
    where      x, y -> x.shape; picks x where x > y

torch only: the shape, view and in-place statements that reach functionalization,
alias analysis and the reinplacing passes (TorchProbe's program space)::

    compare    x, y -> bool x.shape
    cast       x -> x.shape in another dtype (float, int, bool)
    slice      x[.., a:b:s, ..] along one dimension (a view)
    select     x.select(d, i): one index of a dimension (a view, rank - 1)
    view       x.view(shape): the same elements in another shape (a view; x contiguous)
    reshape    x.reshape(shape): a view or a copy, torch does not say which (read only)
    squeeze / unsqueeze   drop / add a dimension of size 1 (views)
    expand     a dimension of size 1 repeated (a view whose elements overlap: never written)
    cat / stack           x and y joined along a dimension
    pad        F.pad on the last dimension, negative widths crop
    inplace    x.add_(y), x.mul_(c), x.copy_(y), x[slice] = y, x[slice] = c,
               x.index_put_((i,), y, accumulate=True) with repeated indices,
               x.scatter_add_(d, index, y): x is written, the statement's value is x
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Dict, List, Optional, Tuple

FLOATS = ("float64", "float32")
INTS = ("int64",)
BOOLS = ("bool",)
ALL = FLOATS + INTS
# the constants of scalar operators, paddings and fills
CONSTANTS = (0.5, 1.5, -2.0, 3.0, 0.25, -0.75)
# Strict mode keeps every value below this magnitude (float32 overflows at 3.4e38;
# int64 products must not overflow: signed overflow is undefined behaviour in C)
FLOAT_LIMIT = 1e12
INT_LIMIT = 2.0 ** 40

Bound = Callable[..., Optional[float]]


def _cap(limit: float) -> Callable[[float], Optional[float]]:
    return lambda b: b if b <= limit else None


def _exp_bound(b: float) -> Optional[float]:
    return math.exp(b) if b <= 25.0 else None


@dataclasses.dataclass(frozen=True)
class Op:
    name: str
    kind: str                           # the shape rule (module docstring)
    dtypes: Tuple[str, ...]
    spelling: Dict[str, str]            # compiler -> format string over {x}, {y}, {c}, {axis}
    bound: Bound                        # bounds of the operands (and constant) -> bound of the result, None: unsafe
    view: bool = False                  # the result aliases its first operand
    mutates: bool = False               # writes its first operand in place; its value is that operand
    ambiguous: bool = False             # may or may not alias (reshape): nothing writes its group after it
    # IEEE 754 rounds the result correctly (+ - * / sqrt, min/max, abs, selection): any
    # evaluation order or vector width gives the same bits. Transcendental functions are not:
    # torch's CPU kernels run SLEEF on full vectors and libm on the tail, 1 ulp apart
    exact: bool = False

    def render(self, compiler: str, **operands) -> str:
        spelling = self.spelling[SPELLED_AS.get(compiler, compiler)]
        if callable(spelling):
            return spelling(**operands)
        return spelling.format(**operands)


# compilers whose reference is a program spelled in another's language: TVM's is NumPy
SPELLED_AS = {"tvm": "numpy"}
# the languages that broadcast dimensions of size 1 and may return views
BROADCASTING = ("torch", "tvm")


def _both(np_form: str, torch_form: str) -> Dict[str, str]:
    return {"dace": np_form, "numpy": np_form, "torch": torch_form}


def _unary(name, np_form, torch_form, dtypes=FLOATS, bound=lambda b: b, exact=False):
    return Op(name, "unary", dtypes, _both(np_form, torch_form), bound, exact=exact)


def _binary(name, np_form, torch_form, bound, dtypes=ALL):
    return Op(name, "binary", dtypes, _both(np_form, torch_form), bound, exact=True)


COMMON: List[Op] = [
    _unary("exp", "np.exp({x})", "torch.exp({x})", bound=_exp_bound),
    _unary("sin", "np.sin({x})", "torch.sin({x})", bound=lambda b: min(b, 1.0)),
    _unary("cos", "np.cos({x})", "torch.cos({x})", bound=lambda b: 1.0),
    _unary("tanh", "np.tanh({x})", "torch.tanh({x})", bound=lambda b: min(b, 1.0)),
    _unary("sqrt_abs", "np.sqrt(np.abs({x}))", "torch.sqrt(torch.abs({x}))", bound=lambda b: math.sqrt(b),
           exact=True),
    _unary("log1p_abs", "np.log(np.abs({x}) + 1.0)", "torch.log(torch.abs({x}) + 1.0)",
           bound=lambda b: math.log(b + 1.0)),
    _unary("abs", "np.abs({x})", "torch.abs({x})", dtypes=ALL, exact=True),
    _unary("neg", "-{x}", "-{x}", dtypes=ALL, exact=True),
    _binary("add", "{x} + {y}", "{x} + {y}", lambda a, b: a + b),
    _binary("sub", "{x} - {y}", "{x} - {y}", lambda a, b: a + b),
    _binary("mul", "{x} * {y}", "{x} * {y}", lambda a, b: a * b),
    _binary("div", "{x} / (np.abs({y}) + 1.0)", "{x} / (torch.abs({y}) + 1.0)", lambda a, b: a, dtypes=FLOATS),
    _binary("maximum", "np.maximum({x}, {y})", "torch.maximum({x}, {y})", max),
    _binary("minimum", "np.minimum({x}, {y})", "torch.minimum({x}, {y})", max),
    Op("scale", "scalar", FLOATS, _both("{x} * {c}", "{x} * {c}"), lambda a, c: a * abs(c), exact=True),
    Op("shift", "scalar", FLOATS, _both("{x} + {c}", "{x} + {c}"), lambda a, c: a + abs(c), exact=True),
    Op("sum", "reduce", ALL, _both("np.sum({x}, axis={axis})", "torch.sum({x}, dim={axis})"),
       lambda b, n: b * n),
    Op("max", "reduce", ALL, _both("np.max({x}, axis={axis})", "torch.amax({x}, dim={axis})"),
       lambda b, n: b),
    Op("mean", "reduce", FLOATS, _both("np.mean({x}, axis={axis})", "torch.mean({x}, dim={axis})"),
       lambda b, n: b),
    Op("matmul", "matmul", FLOATS, _both("{x} @ {y}", "{x} @ {y}"), lambda a, b, k: a * b * k),
    Op("transpose", "transpose", ALL, _both("np.transpose({x})", "torch.transpose({x}, 0, 1)"),
       lambda b: b, view=True),
    Op("where", "where", ALL, _both("np.where({x} > {y}, {x}, {y})", "torch.where({x} > {y}, {x}, {y})"), max,
       exact=True),
]

TORCH_ONLY: List[Op] = [
    Op("relu", "unary", FLOATS, {"torch": "torch.relu({x})", "numpy": "np.maximum({x}, 0)"}, lambda b: b,
       exact=True),
    Op("sigmoid", "unary", FLOATS, {"torch": "torch.sigmoid({x})", "numpy": "1 / (1 + np.exp(-{x}))"},
       lambda b: 1.0),
    Op("softmax", "reduce_keep", FLOATS, {"torch": "torch.softmax({x}, dim={axis})"}, lambda b, n: 1.0),
]



# ---------------------------------------------------------------- torch: shapes, views, writes
def slice_text(rank: int, dim: int, start: int, stop: int, step: int) -> str:
    """The subscript that slices dimension ``dim`` of a rank-``rank`` tensor."""
    part = f"{start}:{stop}" + (f":{step}" if step != 1 else "")
    return ", ".join(part if d == dim else ":" for d in range(rank))


def _slice(x, rank, dim, start, stop, step, **_):
    return f"{x}[{slice_text(rank, dim, start, stop, step)}]"


def _index_tensor(values, like: str) -> str:
    return f"torch.tensor({values!r}, dtype=torch.int64, device={like}.device)"


def _assign_slice(x, y, rank, dim, start, stop, step, **_):
    return f"{x}[{slice_text(rank, dim, start, stop, step)}] = {y}"


def _fill_slice(x, c, rank, dim, start, stop, step, **_):
    return f"{x}[{slice_text(rank, dim, start, stop, step)}] = {c}"


def _index_put(x, y, indices, **_):
    return f"{x}.index_put_(({_index_tensor(indices, x)},), {y}, accumulate=True)"


def _scatter_add(x, y, dim, index, **_):
    return f"{x}.scatter_add_({dim}, {_index_tensor(index, x)}, {y})"


def _np_pad(x, left, right, c, rank, **_):
    widths = [(0, 0)] * (rank - 1) + [(left, right)]
    return f"np.pad({x}, {widths!r}, constant_values={c!r})"


def _torch(name, kind, form, bound, dtypes=ALL, numpy=None, **flags) -> Op:
    """A torch operator; ``numpy``: its NumPy spelling too, for a pure one (the reference of
    compilers that take NumPy programs)."""
    spelling = {"torch": form} if numpy is None else {"torch": form, "numpy": numpy}
    return Op(name, kind, dtypes, spelling, bound, **flags)


def _keep(b, *_):
    return b


TORCH_SHAPES: List[Op] = [
    _torch("gt", "compare", "{x} > {y}", lambda a, b: 1.0, dtypes=FLOATS + INTS, numpy="{x} > {y}", exact=True),
    _torch("cast", "cast", "{x}.to(torch.{dtype})", _keep, dtypes=ALL + BOOLS, numpy="{x}.astype({dtype!r})",
           exact=True),
    _torch("masked", "masked", "torch.where({x}, {y}, {z})", lambda m, a, b: max(a, b), dtypes=BOOLS,
           numpy="np.where({x}, {y}, {z})", exact=True),
    _torch("slice", "slice", _slice, _keep, dtypes=ALL + BOOLS, numpy=_slice, view=True, exact=True),
    _torch("select", "select", "{x}.select({dim}, {index})", _keep, dtypes=ALL + BOOLS,
           numpy="np.take({x}, {index}, axis={dim})", view=True, exact=True),
    _torch("view", "view", "{x}.view({shape!r})", _keep, dtypes=ALL, view=True, exact=True),
    _torch("reshape", "view", "{x}.reshape({shape!r})", _keep, dtypes=ALL, numpy="{x}.reshape({shape!r})", view=True,
           ambiguous=True, exact=True),
    _torch("squeeze", "squeeze", "{x}.squeeze({dim})", _keep, dtypes=ALL, numpy="np.squeeze({x}, {dim})", view=True,
           exact=True),
    _torch("unsqueeze", "unsqueeze", "{x}.unsqueeze({dim})", _keep, dtypes=ALL, numpy="np.expand_dims({x}, {dim})",
           view=True, exact=True),
    _torch("expand", "expand", "{x}.expand({shape!r})", _keep, dtypes=ALL, numpy="np.broadcast_to({x}, {shape!r})",
           view=True, exact=True),
    _torch("cat", "cat", "torch.cat([{x}, {y}], dim={dim})", max, dtypes=ALL + BOOLS,
           numpy="np.concatenate([{x}, {y}], axis={dim})", exact=True),
    _torch("stack", "stack", "torch.stack([{x}, {y}], dim={dim})", max, dtypes=ALL + BOOLS,
           numpy="np.stack([{x}, {y}], axis={dim})", exact=True),
    _torch("pad", "pad", "torch.nn.functional.pad({x}, ({left}, {right}), value={c!r})",
           lambda b, c: max(b, abs(c)), dtypes=FLOATS, numpy=_np_pad, exact=True),
    _torch("add_", "inplace", "{x}.add_({y})", lambda a, b: a + b, mutates=True, exact=True),
    _torch("mul_", "inplace_scalar", "{x}.mul_({c!r})", lambda a, c: a * abs(c), dtypes=FLOATS, mutates=True,
           exact=True),
    _torch("copy_", "inplace", "{x}.copy_({y})", lambda a, b: max(a, b), mutates=True, exact=True),
    _torch("setitem", "setitem", _assign_slice, lambda a, b: max(a, b), mutates=True, exact=True),
    _torch("fill_slice", "fill_slice", _fill_slice, lambda a, c: max(a, abs(c)), dtypes=FLOATS, mutates=True,
           exact=True),
    # repeated indices add up: the order of the additions is the compiler's (not exact)
    _torch("index_put_", "index_put", _index_put, lambda a, b, n: a + n * b, mutates=True),
    _torch("scatter_add_", "scatter_add", _scatter_add, lambda a, b, n: a + n * b, mutates=True),
]

POOLS: Dict[str, List[Op]] = {
    "dace": COMMON,
    "torch": COMMON + TORCH_ONLY + TORCH_SHAPES,
    # TVM's Relax is pure: every operator with a NumPy spelling, no views written, no in-place writes
    "tvm": COMMON + [op for op in TORCH_ONLY + TORCH_SHAPES if "numpy" in op.spelling and not op.mutates],
}

OPS_BY_NAME: Dict[str, Op] = {op.name: op for op in COMMON + TORCH_ONLY + TORCH_SHAPES}


def limit(dtype: str) -> float:
    return INT_LIMIT if dtype in INTS + BOOLS else FLOAT_LIMIT


def result_shape(op: Op, x: Tuple[int, ...], y: Optional[Tuple[int, ...]] = None,
                 axis: int = 0) -> Tuple[int, ...]:
    if op.kind in ("unary", "scalar", "where", "binary", "reduce_keep"):
        return x
    if op.kind == "reduce":
        return x[:axis] + x[axis + 1:]
    if op.kind == "transpose":
        return (x[1], x[0])
    if op.kind == "matmul":
        return (x[0],) if len(y) == 1 else (x[0], y[1])
    raise ValueError(f"unknown op kind {op.kind}")
