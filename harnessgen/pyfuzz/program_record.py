"""The record passed between the pyfuzz stages: a generated program in SSA form.

A ``Program`` holds typed inputs, statements (each one operator applied to
earlier values), the values it returns, the seed of its input values and the
mutations applied to it. It renders to the Python source a compiler takes
(``templates/pyprogram.py.j2``): a ``@dace.program`` over NumPy, or a plain
function over torch tensors. It round-trips through JSON, which is what a
finding stores: the program is the reproducer, the fuzzer's bytes only led to it.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..core.data import template_environment
from .ops import INTS, OPS_BY_NAME, Op
from .rendering import render_body

FUNCTION = "program"
# input values: floats uniform in (-INPUT_BOUND, INPUT_BOUND), integers in [-INT_INPUT_BOUND, INT_INPUT_BOUND]
INPUT_BOUND = 2.0
INT_INPUT_BOUND = 5


@dataclasses.dataclass(frozen=True)
class Value:
    name: str
    shape: Tuple[int, ...]
    dtype: str


@dataclasses.dataclass
class Stmt:
    target: Value
    op: str
    args: List[str]
    const: Optional[float] = None
    axis: Optional[int] = None
    params: Dict = dataclasses.field(default_factory=dict)     # slices, shapes, indices, dtypes (``ops``)

    @property
    def operator(self) -> Op:
        return OPS_BY_NAME[self.op]

    def expression(self, compiler: str, names: Optional[Dict[str, str]] = None) -> str:
        """The statement's right-hand side, or for an in-place operator the statement that
        writes its first operand; ``names`` renames operands (loops, closures)."""
        names = names or {}
        operands = [names.get(a, a) for a in self.args] + ["", ""]
        fields = dict(self.params, x=operands[0], y=operands[1], z=operands[2], c=self.const, axis=self.axis)
        return self.operator.render(compiler, **fields)

    def lines(self, compiler: str, names: Optional[Dict[str, str]] = None) -> List[str]:
        """The statement's source: an assignment, or the write and then its value bound."""
        if not self.operator.mutates:
            return [f"{self.target.name} = {self.expression(compiler, names)}"]
        written = (names or {}).get(self.args[0], self.args[0])
        return [self.expression(compiler, names), f"{self.target.name} = {written}"]


@dataclasses.dataclass
class Mutation:
    kind: str                 # a family in mutations.FAMILIES
    stmt: int                 # index of the statement it rewrites
    params: Dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Program:
    compiler: str
    inputs: List[Value]
    stmts: List[Stmt]
    outputs: List[str]
    seed: int
    mutations: List[Mutation] = dataclasses.field(default_factory=list)
    valid: bool = True        # False: generated in disruptive mode to break a rule on purpose

    # ------------------------------------------------------------ values
    def values(self) -> Dict[str, Value]:
        out = {v.name: v for v in self.inputs}
        out.update({s.target.name: s.target for s in self.stmts})
        return out

    def make_inputs(self, call: int = 0) -> Dict[str, np.ndarray]:
        """The input values, drawn from ``seed`` in input order; ``call`` > 0 draws other
        values of the same shapes (a compiled function called again)."""
        rng = np.random.default_rng(self.seed if call == 0 else [self.seed, call])
        arrays = {}
        for value in self.inputs:
            if value.dtype == "bool":
                arrays[value.name] = rng.integers(0, 2, value.shape).astype(bool)
            elif value.dtype in INTS:
                arrays[value.name] = rng.integers(-INT_INPUT_BOUND, INT_INPUT_BOUND + 1, value.shape).astype(value.dtype)
            else:
                arrays[value.name] = rng.uniform(-INPUT_BOUND, INPUT_BOUND, value.shape).astype(value.dtype)
        return arrays

    def alias_roots(self) -> Dict[str, str]:
        """Each value's alias group, named by the value that owns the storage: a view and
        an in-place statement's value share their first operand's group."""
        roots = {v.name: v.name for v in self.inputs}
        for stmt in self.stmts:
            shares = stmt.operator.view or stmt.operator.mutates
            roots[stmt.target.name] = roots[stmt.args[0]] if shares else stmt.target.name
        return roots

    def written_groups(self) -> List[Optional[str]]:
        """Per statement, the alias group it writes (None for a statement that writes nothing new)."""
        roots = self.alias_roots()
        return [roots[s.args[0]] if s.operator.mutates else None for s in self.stmts]

    def overlapping(self) -> set:
        """Values whose elements may share memory (an ``expand`` and every view of it): a
        write to them is an error in torch, so nothing writes them."""
        out: set = set()
        for stmt in self.stmts:
            if stmt.op == "expand" or (stmt.operator.view and stmt.args[0] in out):
                out.add(stmt.target.name)
        return out

    def widened(self) -> "Program":
        """The same program in float64 wherever it computes in float32: the reference that
        tells a compiler's rounding from its errors."""
        def wide(dtype: str) -> str:
            return "float64" if dtype == "float32" else dtype

        out = self.copy()
        out.inputs = [Value(v.name, v.shape, wide(v.dtype)) for v in out.inputs]
        for stmt in out.stmts:
            stmt.target = Value(stmt.target.name, stmt.target.shape, wide(stmt.target.dtype))
            if "dtype" in stmt.params:
                stmt.params["dtype"] = wide(stmt.params["dtype"])
        return out

    @property
    def has_float32(self) -> bool:
        return any(v.dtype == "float32" for v in self.values().values())

    # ------------------------------------------------------------ source
    def source(self) -> str:
        helpers, body = render_body(self)
        template = template_environment().get_template("pyprogram.py.j2")
        return template.render(compiler=self.compiler, function=FUNCTION, helpers=helpers, body=body,
                               graph_breaks=any(m.kind == "break" for m in self.mutations),
                               inputs=[dict(name=v.name, dtype=v.dtype, shape=list(v.shape)) for v in self.inputs],
                               outputs=self.outputs) + "\n"

    # ------------------------------------------------------------ JSON
    def to_json(self) -> Dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Dict) -> "Program":
        def value(d):
            return Value(d["name"], tuple(d["shape"]), d["dtype"])

        return cls(compiler=data["compiler"], inputs=[value(v) for v in data["inputs"]],
                   stmts=[Stmt(value(s["target"]), s["op"], list(s["args"]), s.get("const"), s.get("axis"),
                               _tuples(s.get("params", {}))) for s in data["stmts"]],
                   outputs=list(data["outputs"]), seed=int(data["seed"]),
                   mutations=[Mutation(m["kind"], m["stmt"], dict(m.get("params", {}))) for m in data.get("mutations", [])],
                   valid=bool(data.get("valid", True)))

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    def copy(self) -> "Program":
        return Program.from_json(json.loads(self.dumps()))


def _tuples(params: Dict) -> Dict:
    """JSON has no tuples: shapes come back as lists, and render as tuples again."""
    return {k: tuple(v) if k == "shape" else v for k, v in params.items()}
