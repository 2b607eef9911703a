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

from ..emit import template_environment
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

    @property
    def operator(self) -> Op:
        return OPS_BY_NAME[self.op]

    def expression(self, compiler: str, names: Optional[Dict[str, str]] = None) -> str:
        """The statement's right-hand side; ``names`` renames operands (loops, closures)."""
        names = names or {}
        operands = [names.get(a, a) for a in self.args]
        fields = {"x": operands[0], "y": operands[1] if len(operands) > 1 else "",
                  "c": repr(self.const), "axis": self.axis}
        return self.operator.render(compiler, **fields)


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

    def make_inputs(self) -> Dict[str, np.ndarray]:
        """The input values, drawn from ``seed`` in input order."""
        rng = np.random.default_rng(self.seed)
        arrays = {}
        for value in self.inputs:
            if value.dtype in INTS:
                arrays[value.name] = rng.integers(-INT_INPUT_BOUND, INT_INPUT_BOUND + 1, value.shape).astype(value.dtype)
            else:
                arrays[value.name] = rng.uniform(-INPUT_BOUND, INPUT_BOUND, value.shape).astype(value.dtype)
        return arrays

    # ------------------------------------------------------------ source
    def source(self) -> str:
        helpers, body = render_body(self)
        template = template_environment().get_template("pyprogram.py.j2")
        return template.render(compiler=self.compiler, function=FUNCTION, helpers=helpers, body=body,
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
                   stmts=[Stmt(value(s["target"]), s["op"], list(s["args"]), s.get("const"), s.get("axis"))
                          for s in data["stmts"]],
                   outputs=list(data["outputs"]), seed=int(data["seed"]),
                   mutations=[Mutation(m["kind"], m["stmt"], dict(m.get("params", {}))) for m in data.get("mutations", [])],
                   valid=bool(data.get("valid", True)))

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    def copy(self) -> "Program":
        return Program.from_json(json.loads(self.dumps()))
