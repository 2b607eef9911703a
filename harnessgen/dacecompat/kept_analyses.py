"""What DaCe infers about an unchanged program while a cutout is made of it, inferred once.

DaCe's ``SDFGCutout`` analyses the whole program around every cut it makes:

* the symbols defined where the cut is made (``defined_symbols``) walk every interstate edge
  of the SDFG holding it, inferring the type of each assignment from its expression
  (``InterstateEdge.new_symbols``): on CLOUDSC half of every cutout's time (0.23 s of 0.46 s);
* which states reach which (``StateReachability``), asked up to three times per cutout (what
  may have written an input before the cut, what may read an output after it, and the
  reduction of the input configuration): 0.1 s of every CLOUDSC instance;
* the reduction of the input configuration substitutes a guess for every symbol of the program
  into every memlet volume of the state (sympy's ``subs`` with a dict of all of CLOUDSC's
  symbols, 3 ms a call): 0.25 s of every CLOUDSC instance.

Each is asked again for each of hundreds of instances of the same program. While harnessgen
only reads a program (``reading``), the answers are kept: an edge's per edge, its assignments
and the symbols known before it; reachability per SDFG of the program; a substitution per
expression and mapping (a pure function of both). Any other SDFG, a copy included, is
answered by DaCe as always, and so is any call outside that block.

Sound because a program is never changed in place (its copies come from its pickle): an edge
of it, with the same assignments and the same symbols before it, in the same SDFG with the
same containers, has the same answer, and its SDFG the same control flow.
"""
from __future__ import annotations

import contextlib
import functools
from collections import defaultdict
from typing import Dict, Tuple

_active = 0                        # how many ``reading`` blocks are open
_program = None                    # the program of the kept answers
_sdfgs: Dict[int, object] = {}     # id -> the program, its nested SDFGs and control-flow regions
_kept: Dict[Tuple, Tuple] = {}     # (edge id, assignments, symbols) -> (edge, its answer)
_reach: Dict[int, Tuple] = {}      # SDFG id -> (the SDFG, its StateReachability)
_substituted: Dict[Tuple, object] = {}   # (expression, mapping's items) -> what subs gives


@contextlib.contextmanager
def reading(program):
    """A block in which DaCe only reads ``program`` (a cutout is made of it)."""
    global _active, _program, _sdfgs, _kept, _reach, _substituted
    _install()
    if program is not _program:
        _program, _sdfgs, _kept, _reach = program, {id(s): s for s in _parts(program)}, {}, {}
        _substituted = {}
    _active += 1
    try:
        yield
    finally:
        _active -= 1


def _parts(program):
    """The program's SDFGs and (DaCe 2.0) its control-flow regions: what DaCe is asked about."""
    regions = getattr(program, "all_control_flow_regions", None)
    return list(program.all_sdfgs_recursive()) + (list(regions(recursive=True)) if regions else [])


def _of_program(sdfg) -> bool:
    return bool(_active) and sdfg is not None and _sdfgs.get(id(sdfg)) is sdfg


def _install() -> None:
    _keep_symbol_types()
    _keep_state_reachability()
    _keep_substitutions()


def _replace(owner, name: str, wrap) -> None:
    """``owner.name`` becomes ``wrap(original)``, once per process."""
    original = getattr(owner, name)
    if getattr(original, "harnessgen_kept", False):
        return
    replacement = functools.wraps(original)(wrap(original))
    replacement.harnessgen_kept = True
    setattr(owner, name, replacement)


def _keep_symbol_types() -> None:
    from dace.sdfg.sdfg import InterstateEdge

    def wrap(infer):
        def new_symbols(self, sdfg, symbols):
            if not _of_program(sdfg):
                return infer(self, sdfg, symbols)
            try:
                key = (id(self), tuple(self.assignments.items()), frozenset(symbols.items()))
                hit = _kept.get(key)
            except TypeError:        # a symbol's type that cannot be hashed: DaCe answers
                return infer(self, sdfg, symbols)
            if hit is None or hit[0] is not self:
                hit = _kept[key] = (self, infer(self, sdfg, symbols))
            return dict(hit[1])
        return new_symbols

    _replace(InterstateEdge, "new_symbols", wrap)


def _keep_state_reachability() -> None:
    from dace.transformation.passes.analysis import StateReachability

    def wrap(analyse):
        def apply_pass(self, top_sdfg, pipeline_res):
            # only the standalone call (SDFGCutout's): a pipeline's results are its own
            if pipeline_res or not _of_program(top_sdfg):
                return analyse(self, top_sdfg, pipeline_res)
            hit = _reach.get(id(top_sdfg))
            if hit is None or hit[0] is not top_sdfg:
                hit = _reach[id(top_sdfg)] = (top_sdfg, analyse(self, top_sdfg, pipeline_res))
            # fresh dictionaries over the kept sets: a caller's lookup of a state with no
            # successors inserts an empty set into its own copy, never into the kept answer
            return {cfg_id: defaultdict(set, reach) for cfg_id, reach in hit[1].items()}
        return apply_pass

    _replace(StateReachability, "apply_pass", wrap)


def _keep_substitutions() -> None:
    import sympy

    def wrap(substitute):
        def subs(self, *args, **kwargs):
            # only ``expr.subs(mapping)``: sympy orders a mapping's items itself, so its items as
            # a set name the substitution; sympy's expressions are immutable, so the answer can
            # be shared
            if not _active or kwargs or len(args) != 1 or not isinstance(args[0], dict):
                return substitute(self, *args, **kwargs)
            mapping = _relevant(self, args[0])
            try:
                key = (self, frozenset(mapping.items()))
                hit = _substituted.get(key)
            except TypeError:        # an unhashable value: sympy answers
                return substitute(self, *args, **kwargs)
            if hit is None:
                hit = _substituted[key] = substitute(self, mapping)
            return hit
        return subs

    _replace(sympy.Basic, "subs", wrap)


def _relevant(expression, mapping: dict) -> dict:
    """The items of ``mapping`` that can change ``expression``. DaCe's cutout substitutes a
    guess for every symbol of the program (hundreds on CLOUDSC) into each small volume: sympy
    then makes a symbol of each name and orders them all, on every call. A name (sympy reads a
    string key as the symbol of that name) that is none of the expression's free symbols
    matches nothing in it, and a number put in place of another symbol brings no symbol in:
    such items are left out, which gives sympy's own answer. Any other mapping is kept whole."""
    import sympy

    number = (int, float, sympy.Number)
    if not all(isinstance(k, str) and isinstance(v, number) for k, v in mapping.items()):
        return mapping
    names = {str(symbol) for symbol in expression.free_symbols}
    return {k: v for k, v in mapping.items() if k in names}
