"""A generated program as TVM Relax: one ``BlockBuilder`` binding per statement.

The program record, not its NumPy source, is what TVM compiles: each statement
becomes the Relax operator of the same meaning (the table ``LOWER``, one entry
per operator of the ``tvm`` pool in ``ops``), inside one dataflow block of a
function ``main`` whose parameters are the program's inputs and whose result is
the tuple of its outputs. Constants take the dtype of the operand they meet, as
NumPy's scalars do.

Modes are Relax and TIR pipelines (``relax_pipelines``): TVM's default one for
llvm, and subsets and additions of its passes, so that a difference between
modes points at the passes that differ.
"""
from __future__ import annotations

from typing import Callable, Dict

from .program_record import Program, Stmt


def _const(relax, value, dtype: str):
    return relax.const(value, dtype)


def _binary(name: str) -> Callable:
    return lambda R, op, x, y, s: getattr(op, name)(x, y)


def _unary(name: str) -> Callable:
    return lambda R, op, x, y, s: getattr(op, name)(x)


def _dtype_of(s: Stmt) -> str:
    return s.target.dtype



LOWER: Dict[str, Callable] = {
    "exp": _unary("exp"), "sin": _unary("sin"), "cos": _unary("cos"), "tanh": _unary("tanh"),
    "sqrt_abs": lambda R, op, x, y, s: op.sqrt(op.abs(x)),
    "log1p_abs": lambda R, op, x, y, s: op.log(op.add(op.abs(x), _const(R, 1.0, _dtype_of(s)))),
    "abs": _unary("abs"), "neg": _unary("negative"),
    "add": _binary("add"), "sub": _binary("subtract"), "mul": _binary("multiply"),
    "div": lambda R, op, x, y, s: op.divide(x, op.add(op.abs(y), _const(R, 1.0, _dtype_of(s)))),
    "maximum": _binary("maximum"), "minimum": _binary("minimum"),
    "scale": lambda R, op, x, y, s: op.multiply(x, _const(R, s.const, _dtype_of(s))),
    "shift": lambda R, op, x, y, s: op.add(x, _const(R, s.const, _dtype_of(s))),
    "sum": lambda R, op, x, y, s: op.sum(x, axis=[s.axis]),
    "max": lambda R, op, x, y, s: op.max(x, axis=[s.axis]),
    "mean": lambda R, op, x, y, s: op.mean(x, axis=[s.axis]),
    "matmul": lambda R, op, x, y, s: op.matmul(x, y),
    "transpose": lambda R, op, x, y, s: op.permute_dims(x, [1, 0]),
    "where": lambda R, op, x, y, s: op.where(op.greater(x, y), x, y),
    "relu": lambda R, op, x, y, s: op.nn.relu(x),
    "sigmoid": lambda R, op, x, y, s: op.sigmoid(x),
    "gt": _binary("greater"),
    "cast": lambda R, op, x, y, s: op.astype(x, s.params["dtype"]),
    "slice": lambda R, op, x, y, s: op.strided_slice(x, axes=[s.params["dim"]], begin=[s.params["start"]],
                                                     end=[s.params["stop"]], strides=[s.params["step"]]),
    "select": lambda R, op, x, y, s: op.take(x, _const(R, s.params["index"], "int64"), axis=s.params["dim"]),
    "reshape": lambda R, op, x, y, s: op.reshape(x, list(s.params["shape"])),
    "squeeze": lambda R, op, x, y, s: op.squeeze(x, axis=[s.params["dim"]]),
    "unsqueeze": lambda R, op, x, y, s: op.expand_dims(x, axis=s.params["dim"]),
    "expand": lambda R, op, x, y, s: op.broadcast_to(x, list(s.params["shape"])),
    "cat": lambda R, op, x, y, s: op.concat([x, y], axis=s.params["dim"]),
    "stack": lambda R, op, x, y, s: op.stack([x, y], axis=s.params["dim"]),
    "pad": lambda R, op, x, y, s: op.nn.pad(x, [0, 0] * (s.params["rank"] - 1) + [s.params["left"], s.params["right"]],
                                            pad_value=float(s.const)),
}


def to_relax(program: Program):
    """The IRModule of ``program`` (``main``: inputs -> tuple of outputs)."""
    from tvm import relax

    op = relax.op
    builder = relax.BlockBuilder()
    params = [relax.Var(v.name, relax.TensorType(list(v.shape), v.dtype)) for v in program.inputs]
    env = {v.name: p for v, p in zip(program.inputs, params)}
    with builder.function("main", params):
        with builder.dataflow():
            for stmt in program.stmts:
                operands = [env[a] for a in stmt.args] + [None, None]
                if stmt.op == "masked":
                    expr = op.where(operands[0], operands[1], operands[2])
                else:
                    expr = LOWER[stmt.op](relax, op, operands[0], operands[1], stmt)
                env[stmt.target.name] = builder.emit(expr, name_hint=stmt.target.name)
            result = builder.emit_output(relax.Tuple([env[name] for name in program.outputs]))
        builder.emit_func_output(result)
    return builder.get()
