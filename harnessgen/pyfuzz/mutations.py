"""Semantics-preserving rewrites of a generated program (the TorchProbe families).

Each family rewrites one statement's source; they compose (a statement may be
resolved into loops, guarded and mutated-then-recovered at once). Every
rewrite computes the same values on the program's own input, which
``tests/unit/test_pyfuzz_mutations.py`` checks on generated programs:

``loops``    the operator resolved into explicit loops over the elements
             (torch: over the first dimension, an operator per row; only
             correctly rounded operators, whose bits do not depend on the
             vector width, see ``Op.exact``)
``closure``  the statement moved into a function: a module-level helper for
             DaCe (its frontend takes no nested functions), a closure that
             captures its other operands for torch
``guard``    an always-true conditional block around the statement; the
             condition compares an entry of an earlier value with a threshold
             synthesized from the value profiled on the program's input, with a
             margin wider than any rounding; the else branch computes zeros
``recover``  an entry of the result overwritten with junk and restored from a
             saved copy (mutate-then-recover); torch: also through a view, so
             that the junk reaches the view's base for a while
``break``    torch: a graph break (``torch._dynamo.graph_break()``) before the
             statement, so that its operands, aliases and pending writes cross
             from one compiled graph to the next
``hoist``    torch: a pure statement moved up to right after its last operand's
             definition, past the statements in between (none of which writes
             what it reads), so that it runs before writes and views it used to
             follow; it takes no other rewrite

torch guards compare an entry, that entry as a Python number (``.item()``) or
the probe's sum; the probe is a value nothing writes between its definition
and the guard, so the profiled value is the one the guard reads.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Tuple

import numpy as np

from .choices import ByteChoices
from .ops import INTS
from .program_record import Mutation, Program

ELEMENTWISE = ("unary", "binary", "scalar", "where")
FAMILIES = ("loops", "closure", "guard", "recover", "break", "hoist")
TORCH_ONLY = ("break", "hoist")
# the families that rewrite what each compiler compiles: TVM builds Relax from the program
# record, not from its NumPy source, so no source rewrite reaches it
FAMILIES_OF = {"dace": tuple(f for f in FAMILIES if f not in TORCH_ONLY), "torch": FAMILIES, "tvm": ()}
GUARD_FORMS = {"dace": ("entry",), "torch": ("entry", "item", "sum")}
# families that replace the statement's own line (at most one of them per statement)
REPLACING = ("loops", "closure")


# ---------------------------------------------------------------- choosing
def applicable(program: Program, kind: str, index: int) -> bool:
    stmt = program.stmts[index]
    taken = {m.kind for m in program.mutations if m.stmt == index}
    if kind in taken or (kind in REPLACING and taken & set(REPLACING)):
        return False
    if kind not in FAMILIES_OF[program.compiler] or "hoist" in taken or (kind == "hoist" and taken):
        return False
    if kind == "hoist":
        return _hoist_target(program, index) is not None
    if kind == "loops":
        return (stmt.operator.kind in ELEMENTWISE and len(stmt.target.shape) >= 1
                and (program.compiler == "dace" or stmt.operator.exact))
    if kind == "recover":
        if len(stmt.target.shape) < 1 or stmt.target.name in program.overlapping():
            return False
        return program.compiler == "torch" or not stmt.operator.view
    if kind == "guard":
        return bool(_probes(program, index))
    return True


def mutate(program: Program, choices: ByteChoices, profile: Dict[str, np.ndarray],
           families=FAMILIES, max_mutations: int = 3) -> Program:
    """``program`` with up to ``max_mutations`` rewrites chosen by ``choices``. ``profile``
    holds every value of the unmutated program on its input (guard thresholds)."""
    out = program.copy()
    for _ in range(choices.integer(0, max_mutations)):
        options = [(kind, i) for i in range(len(out.stmts)) for kind in families if applicable(out, kind, i)]
        if not options:
            break
        kind, index = choices.choice(options)
        out.mutations.append(Mutation(kind, index, PARAMS[kind](out, index, choices, profile)))
    return out


def _index(shape: Tuple[int, ...], choices: ByteChoices) -> List[int]:
    return [choices.integer(0, n - 1) for n in shape]


def _probes(program: Program, index: int):
    """Values a guard of statement ``index`` may read: defined before it, not empty, not
    boolean, and in a group nothing writes between their definition and the statement."""
    roots, written = program.alias_roots(), program.written_groups()
    earlier = [(-1, v) for v in program.inputs] + [(i, s.target) for i, s in enumerate(program.stmts[:index])]
    return [v for defined, v in earlier if all(n > 0 for n in v.shape) and v.dtype != "bool"
            and roots[v.name] not in written[defined + 1:index]]


def _hoist_target(program: Program, index: int):
    """The statement a pure statement can follow instead (-1: the top), or None: its last
    operand is defined right before it, or something in between writes what it reads, or
    another statement was hoisted already (one per program keeps the order simple)."""
    stmt = program.stmts[index]
    if stmt.operator.mutates or stmt.operator.ambiguous or any(m.kind == "hoist" for m in program.mutations):
        return None
    defined = {s.target.name: i for i, s in enumerate(program.stmts)}
    after = max((defined.get(a, -1) for a in stmt.args), default=-1)
    if after >= index - 1:
        return None
    roots, written = program.alias_roots(), program.written_groups()
    if {roots[a] for a in stmt.args} & set(written[after + 1:index]):
        return None
    return after


def guarded_value(values: np.ndarray, params: Dict) -> float:
    """What a guard with ``params`` compares with its threshold, given its probe's ``values``."""
    if params.get("form") == "sum":
        return float(np.sum(values, dtype=np.float64))
    return float(values[tuple(params["index"])])


def _guard_params(program: Program, index: int, choices: ByteChoices, profile) -> Dict:
    probe = choices.choice(_probes(program, index))
    form = choices.choice(GUARD_FORMS[program.compiler])
    where = _index(probe.shape, choices)
    values = profile[probe.name]
    seen = guarded_value(values, {"form": form, "index": where})
    margin = 1 + choices.integer(0, 3) + abs(seen) / 2
    below = choices.boolean()
    threshold = seen + margin if below else seen - margin
    if probe.dtype in INTS:
        threshold = int(np.floor(threshold)) if below else int(np.ceil(threshold))
    return {"probe": probe.name, "index": where, "threshold": threshold, "below": below, "form": form}


def _recover_params(program: Program, index: int, choices: ByteChoices, profile) -> Dict:
    target = program.stmts[index].target
    return {"index": _index(target.shape, choices), "junk": choices.choice([7, -3, 1000, 0])}


PARAMS: Dict[str, Callable] = {
    "loops": lambda program, index, choices, profile: {},
    "closure": lambda program, index, choices, profile: {},
    "guard": _guard_params,
    "recover": _recover_params,
    "break": lambda program, index, choices, profile: {},
    "hoist": lambda program, index, choices, profile: {"after": _hoist_target(program, index)},
}
