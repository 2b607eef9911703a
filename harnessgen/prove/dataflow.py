"""Value-based dataflow of a modelled program (``model.Program``), with isl.

``Dataflow`` checks that the schedule is the program's order wherever order matters (two
accesses to one element, one a write, are ordered by the state's dataflow or by the state
sequence; map iterations are unordered, so a conflict between two of them is refused), then
asks isl for each read's last writer (``compute_flow``). ``final_cases(C)`` gives the value
each element of container C holds at the end: a list of (region of elements, expression
tree), the tree's leaves being input elements (``("in", container, map element -> input
element)``), index values (``("ix", map element -> value)``), or values no statement
defined (``("undef", container)``: a transient read before it was written).
"""
from __future__ import annotations

from typing import Dict, List, Tuple

import islpy as isl
import networkx as nx

from .affine import NotAffine
from .model import Program, Statement, first_child, tuple_name

# beyond this many cases of one container's values, the proof gives up (UNKNOWN)
MAX_CASES = 512
END = "END"


class Dataflow:
    def __init__(self, prog: Program, side: str):
        self.prog = prog
        # containers written with write-conflict resolution: their operation and their reducers
        self.ops: Dict[str, str] = {}
        self.reducers: Dict[str, List[Statement]] = {}
        for st in prog.statements:
            if st.wcr:
                op = _wcr_op(st)
                if self.ops.setdefault(st.write.container, op) != op:
                    raise NotAffine(f"{st.write.container} is reduced with two operations")
                self.reducers.setdefault(st.write.container, []).append(st)
        self.side = side
        self.width = max([len(s.schedule) for s in prog.statements] + [1])
        self.by_name = {s.name: s for s in prog.statements}
        self.writes = {s.name: prog.access(s, s.write) for s in prog.statements}
        self.reads = {(s.name, k): prog.access(s, r) for s in prog.statements for k, r in enumerate(s.reads)}
        self.stamps = {s.name: prog.schedule(s, self.width) for s in prog.statements}
        self.schedule = isl.UnionMap.empty(prog.context.get_space())
        for stamp in self.stamps.values():
            self.schedule = self.schedule.union(isl.UnionMap.from_map(stamp))
        self.lex_lt = isl.Map.lex_lt(isl.Space.set_alloc(prog.ctx, 0, self.width))
        self.check_races()
        self.check_reductions()
        self.deps: Dict[Tuple[str, int], List[Tuple[str, object]]] = {}
        self.no_source: Dict[Tuple[str, int], object] = {}
        self.contributions: Dict[Tuple[str, int], List[Tuple[str, object]]] = {}
        for s in prog.statements:
            for k in range(len(s.reads)):
                self.deps[(s.name, k)], self.no_source[(s.name, k)] = self.flow(self.reads[(s.name, k)],
                                                                               s.reads[k].container, self.schedule)
                self.contributions[(s.name, k)] = self.contributed(self.reads[(s.name, k)], self.stamps[s.name],
                                                                   s.reads[k].container, s.origin)

    # -------------------------------------------------------------- reductions
    def before(self, first, second):
        """{ a -> b : stamp(a) before stamp(b) } for two schedule maps."""
        return first.apply_range(self.lex_lt).apply_range(second.reverse())

    def check_reductions(self) -> None:
        """Every plain write of an element comes before every contribution to it, so that its
        value is the last plain write combined with all contributions."""
        for container, reducers in self.reducers.items():
            for plain in self.prog.statements:
                if plain.wcr or plain.write.container != container:
                    continue
                for red in reducers:
                    same = self.writes[red.name].apply_range(self.writes[plain.name].reverse())
                    if not same.intersect(self.before(self.stamps[red.name], self.stamps[plain.name])).is_empty():
                        raise NotAffine(f"{plain.origin} overwrites {container} after {red.origin} reduced into it")

    def contributed(self, sink, stamp, container: str, origin: str) -> List[Tuple[str, object]]:
        """For the reads ``sink`` (instance -> element) of a reduced container: [(reducer,
        instance -> the reducer's instances that contributed to the element before it)]. A read
        that falls between two contributions to its element is refused."""
        out = []
        for red in self.reducers.get(container, []):
            same = sink.apply_range(self.writes[red.name].reverse())
            earlier = same.intersect(self.before(self.stamps[red.name], stamp).reverse())
            later = same.subtract(earlier)
            if not earlier.domain().intersect(later.domain()).is_empty():
                raise NotAffine(f"{origin} reads {container} while {red.origin} is still reducing into it")
            if not earlier.is_empty():
                out.append((red.name, earlier))
        return out

    # -------------------------------------------------------------- order
    def check_races(self) -> None:
        """Refuse conflicting accesses the program leaves unordered."""
        graphs = {}
        for a in self.prog.statements:
            for b in self.prog.statements:
                accesses = [self.writes[b.name]] + [self.reads[(b.name, k)] for k in range(len(b.reads))]
                for k, acc in enumerate(accesses):
                    if acc.get_tuple_name(isl.dim_type.out) != tuple_name(a.write.container):
                        continue
                    if k > 0 and a.name == b.name:
                        continue                  # an instance reads its inputs before it writes
                    if k == 0 and a.wcr and b.wcr:
                        continue                  # contributions to a reduction: resolved, in any order
                    pairs = self.writes[a.name].apply_range(acc.reverse())
                    if a.name == b.name:
                        pairs = pairs.subtract(isl.Map.identity(pairs.get_space()))
                    if pairs.is_empty() or a.state != b.state:
                        continue                  # states run one after the other
                    # the same state in another iteration of a loop around it runs after it
                    pairs = pairs.intersect(_equal_prefix(pairs.get_space(), a.loops))
                    if pairs.is_empty():
                        continue
                    shared = a.loops + _shared_dims(a, b)
                    if shared > a.loops:
                        across = pairs.subtract(_equal_prefix(pairs.get_space(), shared))
                        if not across.is_empty():
                            entry = next(e for e, _ in a.maps)
                            raise NotAffine(f"iterations of map {entry.map.label} conflict on {a.write.container} "
                                            f"({a.origin}; {b.origin})")
                    if a is b:
                        continue
                    if k == 0 and a.nodes == b.nodes and a.nodes[0] is a.nodes[1]:
                        raise NotAffine(f"{a.origin} and {b.origin}: one tasklet writes an element twice")
                    state = self.prog.states[a.state]
                    graph = graphs.setdefault(a.state, state.nx)
                    if not (_reaches(graph, a.nodes[1], b.nodes[0]) or _reaches(graph, b.nodes[1], a.nodes[0])):
                        raise NotAffine(f"unordered accesses to {a.write.container} in state {state.label} "
                                        f"({a.origin}; {b.origin})")

    # -------------------------------------------------------------- last writers
    def flow(self, sink, container: str, schedule) -> Tuple[List[Tuple[str, object]], object]:
        """For the reads ``sink`` (instance -> element): [(writer, instance -> writer instance)]
        and the instances whose element no statement wrote before them."""
        sources = isl.UnionMap.empty(self.prog.context.get_space())
        for s in self.prog.statements:      # contributions of reductions are combined apart
            if s.write.container == container and not s.wcr:
                sources = sources.union(isl.UnionMap.from_map(self.writes[s.name]))
        info = isl.UnionAccessInfo.from_sink(isl.UnionMap.from_map(sink))
        info = info.set_must_source(sources).set_schedule_map(schedule)
        flow = info.compute_flow()
        deps = []
        for dep in _maps(flow.get_must_dependence()):
            deps.append((dep.get_tuple_name(isl.dim_type.in_), dep.reverse()))
        deps.sort(key=lambda d: d[0])
        no_source = flow.get_must_no_source().domain()
        space_name = sink.get_tuple_name(isl.dim_type.in_)
        nosrc = isl.Set.empty(sink.domain().get_space())
        for part in _sets(no_source):
            if part.get_tuple_name() == space_name:
                nosrc = nosrc.union(part)
        return deps, nosrc

    # -------------------------------------------------------------- final values
    def final_cases(self, container: str) -> List[Tuple[object, tuple]]:
        extent = self.prog.extent(container)
        dims = [f"o{k}" for k in range(len(self.prog.shapes[container]))]
        sink = isl.Map(f"{self.prog.params()} -> {{ {END}[{', '.join(dims)}] -> {tuple_name(container)}"
                       f"[{', '.join(dims)}] }}", context=self.prog.ctx)
        sink = sink.intersect_domain(extent.set_tuple_name(END))
        end = isl.Map(f"{self.prog.params()} -> {{ {END}[{', '.join(dims)}] -> "
                      f"[{', '.join([str(len(self.prog.states) + 1)] + ['0'] * (self.width - 1))}] }}",
                      context=self.prog.ctx)
        deps, nosrc = self.flow(sink, container, self.schedule.union(isl.UnionMap.from_map(end)))
        contributions = self.contributed(sink, end, container, "the end of the cutout")
        identity = isl.Map.identity(sink.domain().get_space().map_from_set()).intersect_domain(sink.domain())
        return self._read_cases(identity, deps, nosrc, sink, container, [], contributions)

    def _read_cases(self, inst, deps, nosrc, access, container: str, stack: List[str],
                    contributions=(), earlier: bool = False) -> List[Tuple[object, tuple]]:
        out = self._plain_cases(inst, deps, nosrc, access, container, stack, earlier)
        return self._reduced(inst, out, contributions, container, stack)

    def _reduced(self, inst, cases, contributions, container: str, stack: List[str]) -> List[Tuple[object, tuple]]:
        """Where reducers contributed to the element read: ("reduce", op, the value before,
        terms), each term (reducer, element -> its instances, cases over [element -> instance])."""
        terms, covered = [], None
        for name, rel in contributions:
            reached = inst.apply_range(rel)
            if reached.is_empty():
                continue
            if name in stack:
                raise NotAffine(f"a value carried through the reduction {self.by_name[name].origin} (a recurrence)")
            terms.append((name, reached, tuple(self._statement_cases(reached.range_map(), self.by_name[name],
                                                                     stack + [name]))))
            covered = reached.domain() if covered is None else covered.union(reached.domain())
        if not terms:
            return cases
        single = self._single_term(terms, container)
        out = []
        for region, tree in cases:
            inside, outside = region.intersect(covered), region.subtract(covered)
            if not outside.is_empty():
                out.append((outside, tree))
            if inside.is_empty():
                continue
            if single is None:
                out.append((inside, ("reduce", self.ops[container], tree, tuple(terms))))
                continue
            for term_region, term in single:      # one contribution: the value before, op, that term
                both = inside.intersect(term_region)
                if not both.is_empty():
                    out.append((both, ("store", self.prog.dtypes[container], ("bin", self.ops[container], tree, term))))
        return out

    def _single_term(self, terms, container: str):
        """Where each element gets exactly one contribution of a sum or product: its cases over
        the elements (a reduction of one term is one operation, bit for bit), else None."""
        if len(terms) != 1 or self.ops[container] not in ("+", "*"):
            return None
        _, reached, cases = terms[0]
        if not reached.is_single_valued():
            return None
        graph = reached.domain_map().reverse()          # element -> [element -> instance]
        out = []
        for region, tree in cases:
            rebased = _rebase(tree, graph)
            if rebased is None:
                return None
            out.append((region.unwrap().domain(), rebased))
        return out

    def _plain_cases(self, inst, deps, nosrc, access, container: str, stack: List[str],
                     earlier: bool = False) -> List[Tuple[object, tuple]]:
        """``earlier``: the read is a predicated statement's value before its write: where it
        comes from an instance of a statement being resolved (a loop around the branch), the
        value is an unknown earlier one (an ``undef`` leaf), used only where the predicate fails."""
        out = []
        for writer, dep in deps:
            reached = inst.apply_range(dep)
            if reached.is_empty():
                continue
            if writer in stack and earlier:
                out.append((reached.domain(), ("undef", container, f"{self.side}, an earlier value")))
                continue
            if writer in stack:
                raise NotAffine(f"a value carried from one instance of {self.by_name[writer].origin} to another "
                                "(a recurrence)")
            out += self._statement_cases(reached, self.by_name[writer], stack + [writer])
        initial = inst.intersect_range(nosrc)
        if not initial.is_empty():
            if self.prog.transient.get(container, False):
                out.append((initial.domain(), ("undef", container, self.side)))
            else:
                out.append((initial.domain(), ("in", container, initial.apply_range(access))))
        if len(out) > MAX_CASES:
            raise NotAffine(f"more than {MAX_CASES} cases of values")
        return out

    def _statement_cases(self, inst, st: Statement, stack: List[str]) -> List[Tuple[object, tuple]]:
        combos = [(inst.domain(), {})]
        for k in sorted(_reads_used(st.expr)):
            cases = self._read_cases(inst, self.deps[(st.name, k)], self.no_source[(st.name, k)],
                                     self.reads[(st.name, k)], st.reads[k].container, stack,
                                     self.contributions[(st.name, k)], earlier=k == st.old_read)
            merged = []
            for region, chosen in combos:
                for sub_region, tree in cases:
                    both = region.intersect(sub_region)
                    if not both.is_empty():
                        merged.append((both, {**chosen, k: tree}))
            if len(merged) > MAX_CASES:
                raise NotAffine(f"more than {MAX_CASES} cases of values in {st.origin}")
            combos = merged
        return [(region, ("store", self.prog.dtypes[st.write.container],
                          _substitute(st.expr, chosen, inst, st, self.prog)))
                for region, chosen in combos]


def _rebase(tree, graph):
    """A tree over [element -> instance] as a tree over the elements (``graph`` maps each
    element to its one instance); None for a nested reduction."""
    kind = tree[0]
    if kind == "in":
        return ("in", tree[1], graph.apply_range(tree[2]))
    if kind == "ix":
        return ("ix", graph.apply_range(tree[1]))
    if kind in ("const", "undef"):
        return tree
    if kind == "reduce":
        return None
    head = first_child(kind)
    parts = [_rebase(x, graph) for x in tree[head:]]
    return None if any(p is None for p in parts) else tree[:head] + tuple(parts)


def _wcr_op(st: Statement) -> str:
    """The operation of a write-conflict resolution lambda: +, *, max or min."""
    import ast

    try:
        body = ast.parse(st.wcr.strip()).body[0].value
    except (SyntaxError, IndexError, AttributeError) as exc:
        raise NotAffine(f"{st.origin}: the write-conflict resolution {st.wcr!r}") from exc
    if isinstance(body, ast.Lambda) and len(body.args.args) == 2:
        x, y = (a.arg for a in body.args.args)
        expr = body.body
        operands = None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Mult)):
            op, operands = ("+" if isinstance(expr.op, ast.Add) else "*"), (expr.left, expr.right)
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ("max", "min") \
                and len(expr.args) == 2:
            op, operands = expr.func.id, tuple(expr.args)
        if operands and {getattr(o, "id", None) for o in operands} == {x, y}:
            return op
    raise NotAffine(f"{st.origin}: the write-conflict resolution {st.wcr.strip()} (only +, *, max, min)")


def _maps(union_map) -> list:
    out = []
    union_map.foreach_map(out.append)
    return out


def _sets(union_set) -> list:
    out = []
    union_set.foreach_set(out.append)
    return out


def _reads_used(expr: tuple) -> set:
    if expr[0] == "read":
        return {expr[1]}
    return set().union(*[_reads_used(a) for a in expr[1:] if isinstance(a, tuple)]) if len(expr) > 1 else set()


def _substitute(expr: tuple, chosen: Dict[int, tuple], inst, st: Statement, prog: Program) -> tuple:
    kind = expr[0]
    if kind == "read":
        return chosen[expr[1]]
    if kind == "idx":
        value = isl.Map(f"{prog.params()} -> {{ {st.name}[{', '.join(st.dims)}] -> [{expr[1]}] }}", context=prog.ctx)
        return ("ix", inst.apply_range(value))
    if kind == "const":
        return expr
    head = first_child(kind)
    return expr[:head] + tuple(_substitute(a, chosen, inst, st, prog) for a in expr[head:])


def _shared_dims(a: Statement, b: Statement) -> int:
    n = 0
    for (ea, da), (eb, _) in zip(a.maps, b.maps):
        if ea is not eb:
            break
        n += da
    return n


def _equal_prefix(space, n: int):
    """{ A[i] -> B[j] : i_k = j_k for k < n } in ``space``."""
    m = isl.Map.universe(space)
    for k in range(n):
        c = isl.Constraint.equality_alloc(isl.LocalSpace.from_space(space))
        c = c.set_coefficient_val(isl.dim_type.in_, k, 1).set_coefficient_val(isl.dim_type.out, k, -1)
        m = m.add_constraint(c)
    return m


def _reaches(graph, a, b) -> bool:
    return a is b or nx.has_path(graph, a, b)
