"""Translation validation of affine cutout pairs (the ``prove`` stage).

For a pre/post pair whose statements the model covers (``model.py``), four obligations are
checked over every size the layout decodes (its symbol ranges), in the manner of end-to-end
translation validation for Halide:

* ``symbols``: post takes no symbol argument pre does not (a symbol post invented has no value
  a caller gives it: quantifying over it would prove a program no one can call);
* ``bounds``: every element pre and post read or write lies inside its container;
* ``coverage``: post writes exactly the elements pre writes, per compared container;
* ``values``: every element of every compared container ends with the same value, as an
  expression over the input elements (isl's last-writer dataflow, ``dataflow.py``); equal
  trees of the same operations on the same elements are equal bit for bit in IEEE arithmetic
  (the harness builds with ``-fno-fast-math -ffp-contract=off``); other trees are compared by
  z3 over the reals, which a proof then says.

``prove`` gives PROVEN (the arithmetic and the ranges it holds for), UNKNOWN (the reason)
or, where an obligation fails, candidate counterexamples (sizes, container, element). A
candidate is no verdict: the runner encodes it as an input and replays it natively, and only
a replay that fails makes the proof DISPROVEN (``Proof.confirm``). The prover never claims
DISPROVEN on its model alone, and claims PROVEN only for pairs entirely inside the model.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..core.files import write_json
from ..core.versions import source_digest
from ..cuda.toolkit import uses_gpu
from ..dacecompat.code import new_symbol_arguments
from ..inputs.layout import InputLayout
from ..inputs.seeds import PROOF_PREFIX, pattern_arrays
from .affine import NotAffine
from .dataflow import Dataflow
from .model import build_program
from .obligations import check_bounds, check_coverage, check_values, ranges_text
from .proof import (DISPROVEN, IEEE, ISL_MAX_OPERATIONS, MAX_COUNTEREXAMPLES, PROVEN, REAL, REASON_KINDS, UNKNOWN,
                    Counterexample, Proof)

__all__ = ["DISPROVEN", "IEEE", "PROVEN", "REAL", "REASON_KINDS", "UNKNOWN", "Counterexample", "Proof", "prove",
           "prove_build", "counterexample_inputs"]


def prove(pre, post, layout: InputLayout) -> Proof:
    """The proof of one pair (SDFGs pre and post, decoded by ``layout``)."""
    import islpy as isl

    started = time.monotonic()
    ctx = isl.Context()
    ctx.set_max_operations(ISL_MAX_OPERATIONS)
    try:
        proof = _prove(pre, post, layout, ctx)
    except NotAffine as exc:
        proof = Proof(UNKNOWN, reason=str(exc))
    except isl.Error as exc:
        message = str(exc).splitlines()[0][:160]
        limit = "operations" in message or "quota" in message or _exhausted(ctx)
        proof = Proof(UNKNOWN, reason=f"isl gave up ({message})" if limit else
                      f"isl failed, a prover defect: {message}")
    except Exception as exc:  # noqa: BLE001 -- the pair is fuzzed: the defect is said, never a PROVEN
        proof = Proof(UNKNOWN, reason=f"a prover defect: {type(exc).__name__}: {str(exc)[:160]}")
    if proof.verdict == PROVEN and proof.arithmetic == IEEE and post is not None and uses_gpu(post):
        # GPU builds contract no multiply-adds and divide and take roots as IEEE does (nvcc
        # --fmad=false -prec-div=true -prec-sqrt=true), but the GPU's math library rounds exp, log,
        # pow... otherwise than the CPU's that runs pre: the same operations are equal over the
        # reals only, and the pair is fuzzed
        proof.arithmetic = REAL
        proof.reason = "post runs on a GPU: its math library is not the CPU's bit for bit"
    proof.seconds = round(time.monotonic() - started, 3)
    return proof


def _exhausted(ctx) -> bool:
    """Whether ``ctx`` has spent its operations: isl then fails on whatever comes next, a parse
    included, with the error of that operation ("syntax error"), not the limit's."""
    import islpy as isl

    try:
        isl.Set("{ : }", context=ctx)
    except isl.Error:
        return True
    return False


def _prove(pre, post, layout: InputLayout, ctx) -> Proof:
    if post is None:
        raise NotAffine("the transformation gave no post")
    invented = new_symbol_arguments(pre, post)
    if invented:
        # a proof over the layout's ranges would quantify over values no caller gives them
        return Proof(UNKNOWN, reason=f"post takes symbol argument(s) {invented} that pre does not: no proof "
                                     "quantifies over a symbol post invented", obligations={"symbols": "fails"})
    pre_prog, post_prog = build_program(pre, layout, ctx), build_program(post, layout, ctx)
    compared = [c.name for c in layout.containers]
    for name in compared:
        if name not in post_prog.shapes or name not in pre_prog.shapes:
            raise NotAffine(f"container {name} is missing from {'post' if name in pre_prog.shapes else 'pre'}")
        if pre_prog.shapes[name] != post_prog.shapes[name]:
            raise NotAffine(f"container {name} has another shape in post")
    obligations: Dict[str, str] = {"symbols": "holds"}   # post takes no symbol pre does not
    ranges = ranges_text(layout)
    if pre_prog.context.is_empty():
        raise NotAffine("no sizes satisfy the layout's ranges")
    pre_oob = check_bounds(pre_prog)
    if pre_oob:
        raise NotAffine(f"pre itself accesses outside a container ({pre_oob[0].describe()}): a constraint is missing")
    cexs = check_bounds(post_prog)
    obligations["bounds"] = "fails" if cexs else "holds"
    coverage = check_coverage(pre_prog, post_prog, compared)
    obligations["coverage"] = "fails" if coverage else "holds"
    cexs += coverage
    try:
        flows = Dataflow(pre_prog, "pre"), Dataflow(post_prog, "post")
        value_cexs, arithmetic = check_values(flows[0], flows[1], compared)
    except NotAffine as exc:
        if not cexs:
            raise
        value_cexs, obligations["values"] = [], f"not checked: {exc}"   # the candidates decide
    else:
        obligations["values"] = "fails" if value_cexs else "holds"
    cexs += value_cexs
    if cexs:
        return Proof(UNKNOWN, reason=cexs[0].describe(), ranges=ranges, obligations=obligations,
                     counterexamples=cexs[:MAX_COUNTEREXAMPLES])
    return Proof(PROVEN, arithmetic=arithmetic, ranges=ranges, obligations=obligations)


def prove_build(build_dir: Path, layout: InputLayout) -> Optional[Proof]:
    """The proof of a build's pair (its ``pre.sdfg`` and ``post.sdfg``), as ``keep_proof`` kept
    it where it did; None when the build holds no SDFG pair."""
    import dace

    kept = _proof_file(build_dir)
    if kept.is_file():
        return Proof.from_json(json.loads(kept.read_text()))
    pre_file, post_file = Path(build_dir) / "pre.sdfg", Path(build_dir) / "post.sdfg"
    if not (pre_file.is_file() and post_file.is_file()):
        return None
    proof = prove(dace.SDFG.from_file(str(pre_file)), dace.SDFG.from_file(str(post_file)), layout)
    keep_proof(build_dir, proof)
    return proof


def _proof_file(build_dir: Path) -> Path:
    """A build's proof, for the prover that made it (a build folder is keyed by its content)."""
    return Path(build_dir) / f"proof-{source_digest()[:12]}.json"


def keep_proof(build_dir: Path, proof: Proof) -> None:
    """Keep a build's fresh proof (computed before it was built) for the instances that use it."""
    if not _proof_file(build_dir).is_file():
        write_json(_proof_file(build_dir), proof.to_json())


def counterexample_inputs(proof: Proof, layout: InputLayout, seed: int = 0) -> List[Tuple[str, bytes]]:
    """Each candidate counterexample as fuzzer bytes: its sizes, random data in the layout's
    ranges (different data tell different expressions apart) and aligned buffers."""
    rng = np.random.default_rng(seed)
    out = []
    for k, cex in enumerate(proof.counterexamples):
        sizes = {s.name: int(cex.sizes.get(s.name, 1)) for s in layout.symbols}
        if not layout.fits(sizes):      # sizes no input may hold: the decoder refuses them
            continue
        for pattern in ("random", "mixed"):
            arrays = pattern_arrays(layout, sizes, pattern, rng)
            out.append((f"{PROOF_PREFIX}{k:02d}-{cex.obligation}-{pattern}", layout.encode(sizes, arrays)))
    return out
