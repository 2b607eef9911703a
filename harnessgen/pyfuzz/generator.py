"""Stage 1 of pyfuzz: a program from the fuzzer's bytes.

Every choice comes from ``ByteChoices``: how many statements, which operator and
dtype, which earlier value feeds it, the shapes of new inputs, constants and
axes. In **strict** mode the type, shape and bound rules of ``ops`` hold for
every statement, so the program is valid: NumPy (or torch eagerly) runs it and
every value stays finite. In **disruptive** mode one statement then breaks a
rule on purpose (shapes that do not broadcast, a matmul whose inner dimensions
differ, an axis out of range): the compiler must reject it with a clear error.

With ``guided`` the three coverage criteria of ``Coverage`` steer the choices:
operator x dtype, operator x output shape and operator -> operator edges that
were seen less often weigh more. The guidance reads the coverage of earlier
programs in the same process, so the same bytes may give another program later
in a session; a finding therefore stores the program itself (``Program.to_json``).
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Counter, Dict, List, Optional, Tuple

from .choices import ByteChoices
from .ops import BOOLS, BROADCASTING, CONSTANTS, INTS, POOLS, Op, limit, result_shape
from .program_record import INPUT_BOUND, INT_INPUT_BOUND, Program, Stmt, Value
from .shapes import SHAPES, Aliases, Draft

MODES = ("strict", "disruptive")
VIOLATIONS = ("broadcast", "matmul", "axis")


@dataclasses.dataclass(frozen=True)
class GenOptions:
    compiler: str = "dace"
    mode: str = "strict"
    guided: bool = True
    max_stmts: int = 8
    min_dim: int = 1
    max_dim: int = 8


def shape_class(shape: Tuple[int, ...]) -> str:
    """Output shapes by rank and size class of each dimension: 1, small (2-4), large."""
    return f"{len(shape)}:" + "".join("1" if n == 1 else "s" if n <= 4 else "L" for n in shape)


class Coverage:
    """How often each operator x dtype, operator x output shape class and operator ->
    operator edge occurred in the programs recorded so far."""

    def __init__(self):
        self.op_dtype: Counter = collections.Counter()
        self.op_shape: Counter = collections.Counter()
        self.edges: Counter = collections.Counter()

    def record(self, program: Program) -> None:
        producer = {v.name: "input" for v in program.inputs}
        values = program.values()
        for stmt in program.stmts:
            # the dtype the operator was chosen for: its first operand's (a cast or a comparison
            # returns another)
            self.op_dtype[(stmt.op, values[stmt.args[0]].dtype)] += 1
            self.op_shape[(stmt.op, shape_class(stmt.target.shape))] += 1
            for arg in stmt.args:
                self.edges[(producer[arg], stmt.op)] += 1
            producer[stmt.target.name] = stmt.op

    def summary(self) -> Dict[str, int]:
        return {"op_dtype": len(self.op_dtype), "op_shape": len(self.op_shape), "edges": len(self.edges)}


class _Builder:
    """The state of one program while it is generated."""

    def __init__(self, choices: ByteChoices, options: GenOptions, coverage: Optional[Coverage]):
        self.choices, self.options = choices, options
        self.coverage = coverage if options.guided else None
        self.pool: List[Op] = POOLS[options.compiler]
        self.inputs: List[Value] = []
        self.stmts: List[Stmt] = []
        self.bounds: Dict[str, float] = {}
        self.producer: Dict[str, str] = {}
        self.used: set = set()
        self.aliases = Aliases()

    # ------------------------------------------------------------ values
    def values(self) -> List[Value]:
        return self.inputs + [s.target for s in self.stmts]

    def new_input(self, shape: Tuple[int, ...], dtype: str) -> Value:
        value = Value(f"a{len(self.inputs)}", tuple(shape), dtype)
        self.inputs.append(value)
        self.bounds[value.name] = INT_INPUT_BOUND if dtype in INTS else 1.0 if dtype in BOOLS else INPUT_BOUND
        self.producer[value.name] = "input"
        self.aliases.new(value.name)
        return value

    def new_shape(self, rank: Optional[int] = None, op: Optional[Op] = None) -> Tuple[int, ...]:
        """A shape for a new input; guided, the least covered shape class for ``op`` of three drawn."""
        def draw():
            r = rank or self.choices.integer(1, 2)
            return tuple(self.choices.integer(self.options.min_dim, self.options.max_dim) for _ in range(r))

        if self.coverage is None or op is None:
            return draw()
        candidates = [draw() for _ in range(3)]
        return min(candidates, key=lambda shape: self.coverage.op_shape[(op.name, shape_class(shape))])

    def pick(self, candidates: List[Value], op: Op) -> Value:
        """One of ``candidates``: by edge and shape novelty when guided, else uniformly."""
        if self.coverage is None:
            return self.choices.choice(candidates)
        weights = [1.0 / (1 + self.coverage.edges[(self.producer[v.name], op.name)])
                   + 1.0 / (1 + self.coverage.op_shape[(op.name, shape_class(v.shape))]) for v in candidates]
        return self.choices.weighted(candidates, weights)

    def operand(self, op: Op, dtype: str, rank: Optional[int] = None) -> Value:
        candidates = [v for v in self.values() if v.dtype == dtype and (rank is None or len(v.shape) == rank)]
        if not candidates or self.choices.boolean(0.15):
            return self.new_input(self.new_shape(rank, op), dtype)
        # values nothing reads yet first: programs without dead code
        unread = [v for v in candidates if v.name not in self.used and v.name not in self.input_names()]
        return self.pick(unread if unread and self.choices.boolean(0.7) else candidates, op)

    def input_names(self) -> set:
        return {v.name for v in self.inputs}

    def partner(self, x: Value, shape: Tuple[int, ...], dtype: Optional[str] = None, apart: bool = False) -> Value:
        """A second operand of ``shape`` and x's dtype (or ``dtype``): an earlier value or a new
        input; ``apart``: none that shares x's storage (torch refuses a write from memory it overlaps)."""
        dtype = dtype or x.dtype
        candidates = [v for v in self.values() if v.dtype == dtype and v.shape == shape and v.name != x.name
                      and not (apart and self.aliases.root[v.name] == self.aliases.root[x.name])]
        if candidates and self.choices.boolean(0.7):
            return self.choices.choice(candidates)
        return self.new_input(shape, dtype)

    # ------------------------------------------------------------ statements
    def choose_op(self) -> Tuple[Op, str]:
        pairs = [(op, dtype) for op in self.pool for dtype in op.dtypes]
        if self.coverage is None:
            return self.choices.choice(pairs)
        weights = [1.0 / (1 + self.coverage.op_dtype[(op.name, dtype)]) for op, dtype in pairs]
        return self.choices.weighted(pairs, weights)

    def statement(self) -> Optional[Stmt]:
        op, dtype = self.choose_op()
        return self.make(op, dtype)

    def make(self, op: Op, dtype: str) -> Optional[Stmt]:
        draft = SHAPES.get(op.kind, _Builder.elementwise)(self, op, dtype)
        if draft is None:
            return None
        if draft.bound is None or draft.bound > limit(draft.dtype):
            return None            # strict: the value could overflow or leave the operator's domain
        target = Value(f"v{len(self.stmts)}", draft.shape, draft.dtype)
        self.bounds[target.name] = draft.bound
        return Stmt(target, op.name, draft.args, draft.const, draft.axis, draft.params)

    def elementwise(self, op: Op, dtype: str) -> Optional["Draft"]:
        """The operator kinds DaCe and torch share (the module docstring of ``ops``)."""
        needs_rank2 = op.kind in ("reduce", "transpose", "matmul")
        x = self.operand(op, dtype, 2 if needs_rank2 else None)
        args, const, axis, bound = [x.name], None, None, None
        bx = self.bounds[x.name]
        if op.kind in ("binary", "where"):
            row = len(x.shape) == 2 and op.kind == "binary" and self.choices.boolean(0.3)
            y = self.partner(x, x.shape[-1:] if row else self.broadcast_shape(x.shape))
            args.append(y.name)
            bound = op.bound(bx, self.bounds[y.name])
            shape = result_shape(op, x.shape)
        elif op.kind == "scalar":
            const = self.choices.choice(CONSTANTS)
            bound, shape = op.bound(bx, const), x.shape
        elif op.kind in ("reduce", "reduce_keep"):
            axis = self.choices.integer(0, len(x.shape) - 1)
            bound, shape = op.bound(bx, x.shape[axis]), result_shape(op, x.shape, axis=axis)
        elif op.kind == "matmul":
            y_shape = (x.shape[1],) if self.choices.boolean(0.3) else (x.shape[1], self.choices.integer(self.options.min_dim, self.options.max_dim))
            y = self.partner(x, y_shape)
            args.append(y.name)
            bound = op.bound(bx, self.bounds[y.name], x.shape[1])
            shape = result_shape(op, x.shape, y.shape)
        else:
            bound, shape = op.bound(bx), result_shape(op, x.shape)
        return Draft(args, shape, dtype, bound, const, axis)

    def broadcast_shape(self, shape: Tuple[int, ...]) -> Tuple[int, ...]:
        """``shape``, or where the language broadcasts, now and then with some dimensions 1."""
        if self.options.compiler not in BROADCASTING or not self.choices.boolean(0.25):
            return shape
        return tuple(1 if self.choices.boolean() else n for n in shape)

    def add(self, stmt: Stmt) -> None:
        self.stmts.append(stmt)
        self.producer[stmt.target.name] = stmt.op
        self.used.update(stmt.args)
        self.aliases.record(stmt, self.bounds)

    def outputs(self) -> List[str]:
        """Every value nothing else reads, and the base of every group written through an
        alias (its final state); DaCe returns no views."""
        unread = [s.target.name for s in self.stmts if s.target.name not in self.used
                  and (self.options.compiler in BROADCASTING or not s.operator.view)]
        written = [self.aliases.root[s.target.name] for s in self.stmts if s.operator.mutates]
        inputs = self.input_names()
        return list(dict.fromkeys(unread + [w for w in written if w not in inputs]))


def generate(choices: ByteChoices, options: GenOptions, coverage: Optional[Coverage] = None) -> Optional[Program]:
    """A program, or None when the bytes led to no statement at all."""
    builder = _Builder(choices, options, coverage)
    wanted = choices.integer(1, options.max_stmts)
    attempts = 0
    while len(builder.stmts) < wanted and attempts < 4 * wanted:
        attempts += 1
        stmt = builder.statement()
        if stmt is not None:
            builder.add(stmt)
    if not builder.stmts:
        return None
    outputs = builder.outputs()
    if not outputs:
        return None
    program = Program(options.compiler, builder.inputs, builder.stmts, outputs, choices.seed())
    if options.mode == "disruptive":
        program = _break_a_rule(program, choices, builder)
    if coverage is not None:
        coverage.record(program)
    return program


def _break_a_rule(program: Program, choices: ByteChoices, builder: _Builder) -> Program:
    """One statement made invalid on purpose (its operand shapes or its axis)."""
    kind = choices.choice(VIOLATIONS)
    targets = {"broadcast": ("binary", "where"), "matmul": ("matmul",), "axis": ("reduce", "reduce_keep")}[kind]
    candidates = [i for i, s in enumerate(program.stmts) if s.operator.kind in targets]
    if not candidates:
        return program
    stmt = program.stmts[choices.choice(candidates)]
    if kind == "axis":
        x = program.values()[stmt.args[0]]
        stmt.axis = len(x.shape) + choices.integer(0, 1)
    else:
        x = program.values()[stmt.args[1]]
        wrong = tuple(n + 1 + choices.integer(0, 2) for n in x.shape)
        bad = Value(f"a{len(program.inputs)}", wrong, x.dtype)
        program.inputs.append(bad)
        stmt.args[1] = bad.name
    program.valid = False
    return program
