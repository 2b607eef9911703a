"""Where along the dataflow do pre and post first diverge?

The outputs say *that* post is wrong; developers need *where*. We build a
capture variant of the cutout pair in which every transient array of pre and
post becomes a global container (an extra argument, so its values come back
after the run), run both sides on the failing input in child processes, and
compare every container both sides have. The divergence point is the first
differing container in pre's dataflow order (states from the start state,
nodes in topological order), with the node that writes it, where it first
differs and by how much; the other differing containers follow in order.
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import networkx as nx
import numpy as np

from ..core import expr as ex
from ..core.runtime import Tolerance, compare
from ..cutout.extract import CutoutPair, plain_copy, scalars_to_arrays
from ..harness.build import build
from ..inputs.layout import ContainerSlot, allocated_count, DecodedInput, InputLayout


@dataclasses.dataclass
class Divergence:
    container: str
    node: str                    # the access node in pre that writes it first
    state: str
    index: List[int]
    pre: float
    post: float
    differing: int
    total: int
    order: List[str]             # every differing container, in pre's dataflow order
    compared: int                # how many containers both sides had

    def to_json(self):
        return dataclasses.asdict(self)

    def describe(self) -> str:
        where = ", ".join(map(str, self.index))
        rest = f"; then {', '.join(self.order[1:])}" if len(self.order) > 1 else ""
        writer = (f"written by {self.node} in state {self.state}" if self.node and self.state
                  else "(no access node of pre's own states writes it: a nested SDFG's or a library's write)")
        return (f"first divergence at {self.container}[{where}] {writer}: "
                f"pre={self.pre!r} post={self.post!r} ({self.differing} of {self.total} elements){rest}")


def dataflow_order(sdfg) -> List[Tuple[str, str, str]]:
    """(container, node label, state label) for the first write of every container, in dataflow order."""
    import dace

    seen: Dict[str, Tuple[str, str, str]] = {}
    for state in _states_in_order(sdfg):
        for node in nx.topological_sort(state.nx):
            if isinstance(node, dace.nodes.AccessNode) and state.in_degree(node) > 0 and node.data not in seen:
                seen[node.data] = (node.data, str(node), state.label)
    return list(seen.values())


def _states_in_order(graph) -> Iterator:
    """The states of a control-flow graph from its start on, those inside its loops and
    branches (DaCe 2.0's regions) in their place."""
    import dace

    if not graph.number_of_nodes():
        return
    start = getattr(graph, "start_block", None)
    if start is None:
        start = graph.start_state
    blocks = list(nx.dfs_preorder_nodes(graph.nx, start))
    blocks += [b for b in graph.nodes() if b not in blocks]
    for block in blocks:
        if isinstance(block, dace.SDFGState):
            yield block
        elif hasattr(block, "branches"):
            for _, branch in block.branches:
                yield from _states_in_order(branch)
        elif hasattr(block, "nx"):
            yield from _states_in_order(block)


def _globalize(sdfg) -> List[str]:
    """Make every transient array and scalar of the top level a global container; return their names."""
    import dace

    names = []
    for name, desc in list(sdfg.arrays.items()):
        if not desc.transient or isinstance(desc, dace.data.View) or not isinstance(
                desc, (dace.data.Array, dace.data.Scalar)):
            continue
        desc.transient = False
        desc.lifetime = dace.AllocationLifetime.Scope
        names.append(name)
    scalars_to_arrays(sdfg, names)
    return names


def capture_pair(pair: CutoutPair) -> Tuple[CutoutPair, List[str]]:
    """A copy of the pair whose pre and post expose their transients (shared names only)."""
    pre, post = plain_copy(pair.pre, pair.pre.name), plain_copy(pair.post, pair.post.name)
    exposed_pre, exposed_post = set(_globalize(pre)), set(_globalize(post))
    shared = sorted(exposed_pre & exposed_post)
    # a transient only one side has stays hidden on the other side's interface: re-add it as
    # an unused global so both libraries take the same arguments
    for name in sorted(exposed_pre ^ exposed_post):
        owner, other = (pre, post) if name in exposed_pre else (post, pre)
        if name not in other.arrays:
            other.add_datadesc(name, owner.arrays[name].clone())
    capture = dataclasses.replace(pair, pre=pre, post=post,
                                  instance=dataclasses.replace(pair.instance, id=pair.instance.id + "-capture"))
    return capture, shared


def capture_layout(layout: InputLayout, capture: CutoutPair) -> InputLayout:
    """The original layout plus zero-filled slots for the exposed containers."""
    known = {c.name for c in layout.containers}
    extra = []
    for name in sorted(n for n, d in capture.pre.arrays.items() if not d.transient and n not in known):
        desc = capture.pre.arrays[name]
        extra.append(ContainerSlot(name=name, dtype=desc.dtype.as_numpy_dtype().name,
                                   count=allocated_count(desc),
                                   shape=tuple(ex.simplify(ex.from_sympy(s)) for s in desc.shape)))
    return dataclasses.replace(layout, containers=sorted(layout.containers + extra, key=lambda c: c.name))


def localize(pair: CutoutPair, layout: InputLayout, data: bytes, work_dir: Path,
             tolerance: Optional[Tolerance] = None, timeout_s: float = 60.0, threads: int = 1,
             attempts: int = 1) -> Optional[Divergence]:
    """The first divergence for ``data``; None when post crashed or nothing shared differs.
    For a race, post runs on ``threads`` threads up to ``attempts`` times until it differs."""
    tolerance = tolerance or Tolerance()

    capture, shared = capture_pair(pair)
    cap_layout = capture_layout(layout, capture)
    built = build(capture, cap_layout, work_dir, afl=False)
    decoded = layout.decode(data)
    if decoded is None:
        return None
    counts = cap_layout.counts(decoded.symbols)
    arrays = dict(decoded.arrays)
    for slot in cap_layout.containers:
        arrays.setdefault(slot.name, np.zeros(counts[slot.name], dtype=slot.dtype))
    full = DecodedInput(decoded.symbols, arrays, decoded.consumed, decoded.offsets)
    compared: List[ContainerSlot] = []
    differing: Dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="hg-localize-") as tmp:
        inputs = Path(tmp) / "inputs.npz"
        full.to_npz(inputs)
        pre = _run_child(built.dir, "pre", inputs, Path(tmp), timeout_s, 1)
        if pre is None:
            return None
        compared = [c for c in cap_layout.containers if c.name in pre
                    and (c.name in shared or c.name in {s.name for s in layout.containers})]
        for _ in range(max(1, attempts)):
            post = _run_child(built.dir, "post", inputs, Path(tmp), timeout_s, threads)
            if post is None:
                return None
            for slot in compared:
                diff = compare(slot.name, pre[slot.name], post[slot.name], tolerance) if slot.name in post else None
                if diff is not None:
                    differing[slot.name] = diff
            if differing:
                break
    if not differing:
        return None
    order = [entry for entry in dataflow_order(capture.pre) if entry[0] in differing]
    order += [(name, "", "") for name in sorted(differing) if name not in {e[0] for e in order}]
    name, node, state = order[0]
    diff = differing[name]
    shape = cap_layout.shape(name, decoded.symbols)
    slot = cap_layout.container(name)
    element = diff.index // 2 if slot.kind == "c" else diff.index
    index = ([int(i) for i in np.unravel_index(element, shape)] if shape and int(np.prod(shape)) ==
             counts[name] else [element])
    return Divergence(container=name, node=node, state=state, index=index, pre=diff.pre, post=diff.post,
                      differing=diff.differing, total=diff.total, order=[e[0] for e in order], compared=len(compared))


def _run_child(build_dir: Path, side: str, inputs: Path, tmp: Path, timeout_s: float,
               threads: int) -> Optional[Dict[str, np.ndarray]]:
    out = tmp / f"{side}.npz"
    out.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-m", "harnessgen.triage.capture_child", str(build_dir), side, str(inputs), str(out),
                           str(threads)], capture_output=True, timeout=timeout_s,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    if proc.returncode != 0 or not out.exists():
        return None
    with np.load(out) as npz:
        return {k: npz[k] for k in npz.files}
