"""The three obligations of a proof, each giving candidate counterexamples where it fails:
bounds (every access inside its container), coverage (post writes what pre writes), values
(every compared element ends with the same value in pre and post)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import islpy as isl

from ..inputs.layout import InputLayout
from .dataflow import Dataflow
from .model import SIZE_PREFIX, Program, first_child
from .proof import IEEE, MAX_COUNTEREXAMPLES, REAL, Z3_TIMEOUT_MS, Counterexample

FLOAT_TYPES = ("float32", "float64", "float", "double")
COMMUTATIVE = ("+", "*")


def ranges_text(layout: InputLayout) -> str:
    return ", ".join(f"{s.lo} <= {s.name} <= {s.hi}" for s in layout.symbols) or "no sizes"


# ------------------------------------------------------------------ sample points
def _sample(s) -> Tuple[Dict[str, int], List[int]]:
    """The point of ``s`` (a set, or a wrapped map) with the smallest sizes, then the smallest
    coordinates: (sizes, coordinates)."""
    nparam = s.dim(isl.dim_type.param)
    names = [s.get_dim_name(isl.dim_type.param, k) for k in range(nparam)]
    flat = s.move_dims(isl.dim_type.set, 0, isl.dim_type.param, 0, nparam)
    point = flat.lexmin().sample_point()
    values = [int(point.get_coordinate_val(isl.dim_type.set, k).to_python())
              for k in range(flat.dim(isl.dim_type.set))]
    sizes = {n[len(SIZE_PREFIX):]: v for n, v in zip(names, values[:nparam])}
    return sizes, values[nparam:]


# ------------------------------------------------------------------ bounds
def check_bounds(prog: Program) -> List[Counterexample]:
    """Every access inside its container, and every transient allocated with extents >= 0
    (a negative one aborts the allocation)."""
    found = []
    for name in sorted(prog.shapes):
        if not prog.transient[name]:
            continue
        for k, extent in enumerate(prog.shapes[name]):
            negative = isl.Set(f"{prog.params()} -> {{ : {extent} < 0 }}", context=prog.ctx).intersect(prog.context)
            if not negative.is_empty():
                sizes, _ = _sample(negative)
                found.append(Counterexample("bounds", sizes, name, [],
                                            f"the transient {name} is allocated with extent {k} = {extent} < 0"))
                break
    for st in prog.statements:
        for role, acc in [("writes", st.write)] + [("reads", r) for r in st.reads]:
            outside = prog.access(st, acc).subtract_range(prog.extent(acc.container))
            if outside.is_empty():
                continue
            sizes, coords = _sample(outside.wrap())
            element = coords[len(st.dims):]
            found.append(Counterexample("bounds", sizes, acc.container, element,
                                        f"{st.origin} {role} outside {acc.container} "
                                        f"(extent {list(prog.shapes[acc.container])})"))
            if len(found) >= MAX_COUNTEREXAMPLES:
                return found
    return found


# ------------------------------------------------------------------ coverage
def written(prog: Program, container: str):
    out = isl.Set.empty(prog.extent(container).get_space())
    for st in prog.statements:
        if st.write.container == container:
            out = out.union(prog.access(st, st.write).range())
    return out


def check_coverage(pre: Program, post: Program, compared: List[str]) -> List[Counterexample]:
    found = []
    for name in compared:
        w_pre, w_post = written(pre, name), written(post, name)
        for only, detail in ((w_pre.subtract(w_post), "pre writes it, post does not"),
                             (w_post.subtract(w_pre), "post writes it, pre does not")):
            if not only.is_empty():
                sizes, element = _sample(only)
                found.append(Counterexample("coverage", sizes, name, element, detail))
    return found[:MAX_COUNTEREXAMPLES]


# ------------------------------------------------------------------ values
def check_values(pre: Dataflow, post: Dataflow, compared: List[str]) -> Tuple[List[Counterexample], str]:
    # one dtype everywhere: stores convert nothing, and trees compare without them
    uniform = len(set(pre.prog.dtypes.values()) | set(post.prog.dtypes.values())) == 1
    found, real = [], False
    for name in compared:
        pre_cases, post_cases = pre.final_cases(name), post.final_cases(name)
        if uniform:
            pre_cases = [(r, _unstored(t)) for r, t in pre_cases]
            post_cases = [(r, _unstored(t)) for r, t in post_cases]
        for region_p, tree_p in pre_cases:
            for region_q, tree_q in post_cases:
                region = region_p.intersect(region_q)
                if region.is_empty():
                    continue
                tree_p, tree_q = _resolved(tree_p, region), _resolved(tree_q, region)
                if _same(tree_p, tree_q, region):
                    real = real or _has_reduction(tree_p)      # terms combined in another order
                    continue
                if _equal_over_reals(tree_p, tree_q, region):
                    real = True
                    continue
                where = _differing(tree_p, tree_q, region) or region
                sizes, element = _sample(where)
                found.append(Counterexample("values", sizes, name, element,
                                            f"pre computes {_text(tree_p)}, post {_text(tree_q)}"))
                if len(found) >= MAX_COUNTEREXAMPLES:
                    return found, ""
    return found, (REAL if real else IEEE)


def _resolved(tree, region, facts: tuple = ()):
    """``tree`` with each select whose condition the selects around it decide replaced by the
    arm it takes (``facts``: their conditions and arms). A statement in a branch whose condition
    reads data keeps its element's earlier value where the condition fails; what it reads from
    a statement of the same branch is that statement's select, decided by the same condition."""
    kind = tree[0]
    if kind in ("in", "ix", "undef", "const", "reduce"):
        return tree
    if kind == "select":
        cond = _resolved(tree[1], region, facts)
        truth = _decided(cond, region, facts)
        if truth is not None:
            return _resolved(tree[2] if truth else tree[3], region, facts)
        return ("select", cond, _resolved(tree[2], region, facts + _facts(cond, True)),
                _resolved(tree[3], region, facts + _facts(cond, False)))
    head = first_child(kind)
    return tree[:head] + tuple(_resolved(a, region, facts) for a in tree[head:])


def _facts(cond, truth: bool) -> tuple:
    """What a condition's truth says: itself, and each part of a conjunction that holds."""
    found = ((cond, truth),)
    if truth and cond[0] == "bool" and cond[1] == "and":
        for part in cond[2:]:
            found += _facts(part, True)
    if cond[0] == "not":
        found += _facts(cond[1], not truth)
    return found


def _decided(cond, region, facts: tuple) -> Optional[bool]:
    """Whether ``facts`` decide ``cond`` (None where they do not)."""
    for known, truth in facts:
        if _same(known, cond, region):
            return truth
    if cond[0] == "not":
        inner = _decided(cond[1], region, facts)
        return None if inner is None else not inner
    if cond[0] == "bool" and cond[1] == "and":
        parts = [_decided(c, region, facts) for c in cond[2:]]
        if any(p is False for p in parts):
            return False
        if all(p is True for p in parts):
            return True
    return None


def _unstored(tree):
    if not isinstance(tree, tuple):
        return tree
    if tree[0] == "store":
        return _unstored(tree[2])
    if tree[0] in ("in", "ix", "undef", "const"):
        return tree
    if tree[0] == "reduce":
        return tree[:2] + (_unstored(tree[2]), tuple((name, reached, tuple((r, _unstored(t)) for r, t in cases))
                                                      for name, reached, cases in tree[3]))
    head = first_child(tree[0])
    return tree[:head] + tuple(_unstored(a) for a in tree[head:])


def _same(a, b, region) -> bool:
    """Structurally equal on ``region``: the same operations, the same elements."""
    if a[0] != b[0]:
        return False
    kind = a[0]
    if kind == "undef":
        return False
    if kind == "in":
        return a[1] == b[1] and _maps_equal(a[2], b[2], region)
    if kind == "ix":
        return _maps_equal(a[1], b[1], region)
    if kind == "const":
        return a[1] == b[1]
    if kind == "reduce":
        return _same_reduction(a, b, region)
    head = first_child(kind)
    if a[:head] != b[:head] or len(a) != len(b):
        return False
    if all(_same(x, y, region) for x, y in zip(a[head:], b[head:])):
        return True
    # IEEE addition and multiplication are commutative bit for bit (not associative)
    return kind == "bin" and a[1] in COMMUTATIVE and _same(a[2], b[3], region) and _same(a[3], b[2], region)


# ------------------------------------------------------------------ reductions
def _same_reduction(a, b, region) -> bool:
    """Two reductions are equal on ``region`` (over the reals: the order of their terms may
    differ) when they combine the same value before with the same multiset of terms: the terms
    of each shape, identified by the elements they read, form the same set per element, and
    no two instances of one side read the same elements (so each term counts once)."""
    if a[1] != b[1] or not _same(a[2], b[2], region):
        return False
    groups_a, groups_b = _term_groups(a[3]), _term_groups(b[3])
    if groups_a is None or groups_b is None:
        return False
    shapes = {k for k, t in groups_a.items() if not t.intersect_domain(region).is_empty()} | \
             {k for k, t in groups_b.items() if not t.intersect_domain(region).is_empty()}
    return all(k in groups_a and k in groups_b and _maps_equal(groups_a[k], groups_b[k], region) for k in shapes)


def _term_groups(terms) -> Optional[Dict[tuple, object]]:
    """shape -> { element -> the elements a term of that shape reads }, or None when a term
    cannot be identified by what it reads (an unwritten value, a nested reduction, two
    instances reading the same elements)."""
    groups: Dict[tuple, object] = {}
    for _, reached, cases in terms:
        per_shape: Dict[tuple, object] = {}
        for case_region, tree in cases:
            shape, leaves = _skeleton(tree), _leaf_maps(tree)
            if shape is None:
                return None
            sig = _signature(leaves, case_region)
            if sig is None:
                return None
            per_shape[shape] = sig if shape not in per_shape else per_shape[shape].union(sig)
        for shape, sig in per_shape.items():
            owner = sig.domain().unwrap().domain_map()          # [element -> instance] -> element
            if not owner.flat_range_product(sig).is_injective():
                return None
            by_element = sig.curry().range_factor_range().set_tuple_name(isl.dim_type.out, "sig")
            if shape in groups:
                if not groups[shape].intersect(by_element).is_empty():
                    return None
                groups[shape] = groups[shape].union(by_element)
            else:
                groups[shape] = by_element
    return groups


def _signature(leaves: List[object], region):
    if not leaves:
        return None                      # a constant term: only its count would tell
    sig = leaves[0]
    for leaf in leaves[1:]:
        sig = sig.flat_range_product(leaf)
    return sig.intersect_domain(region)


def _skeleton(tree) -> Optional[tuple]:
    """The tree with its leaves reduced to their kind and container."""
    kind = tree[0]
    if kind in ("undef", "reduce"):
        return None
    if kind == "in":
        return ("in", tree[1])
    if kind == "ix":
        return ("ix",)
    if kind == "const":
        return tree
    head = first_child(kind)
    parts = [_skeleton(x) for x in tree[head:]]
    return None if any(p is None for p in parts) else tree[:head] + tuple(parts)


def _leaf_maps(tree) -> List[object]:
    kind = tree[0]
    if kind == "in":
        return [tree[2].set_tuple_name(isl.dim_type.out, "e")]
    if kind == "ix":
        return [tree[1]]
    if kind in ("const", "undef", "reduce"):
        return []
    head = first_child(kind)
    return [m for x in tree[head:] for m in _leaf_maps(x)]


def _has_reduction(tree) -> bool:
    if not isinstance(tree, tuple) or tree[0] in ("in", "ix", "undef", "const"):
        return False
    if tree[0] == "reduce":
        return True
    head = first_child(tree[0])
    return any(_has_reduction(x) for x in tree[head:])


def _maps_equal(m1, m2, region) -> bool:
    return m1.intersect_domain(region).is_equal(m2.intersect_domain(region))


def _differing(a, b, region):
    """Where the two trees read different elements, if they have the same shape."""
    if a[0] != b[0]:
        return None
    if a[0] == "in" and a[1] != b[1]:
        return None                      # other containers: they differ wherever they are read
    if a[0] in ("in", "ix"):
        m1, m2 = (a[2], b[2]) if a[0] == "in" else (a[1], b[1])
        m1, m2 = m1.intersect_domain(region), m2.intersect_domain(region)
        diff = m1.subtract(m2).domain().union(m2.subtract(m1).domain())
        return None if diff.is_empty() else diff
    if a[0] in ("const", "undef", "reduce"):
        return None
    head = first_child(a[0])
    for x, y in zip(a[head:], b[head:]):
        d = _differing(x, y, region)
        if d is not None:
            return d
    return None


def _text(tree, limit: int = 160) -> str:
    out = _render(tree)
    return out if len(out) <= limit else out[:limit - 3] + "..."


def _render(t) -> str:
    kind = t[0]
    if kind == "in":
        return f"{t[1]}[..]"
    if kind == "ix":
        return "index"
    if kind == "undef":
        return f"(unwritten {t[1]})"
    if kind == "const":
        return t[1]
    if kind == "store":
        return _render(t[2])
    if kind == "reduce":
        return f"{t[1]}-reduction({_render(t[2])}, ...)"
    if kind in ("bin", "cmp"):
        return f"({_render(t[2])} {t[1]} {_render(t[3])})"
    if kind == "bool":
        return "(" + f" {t[1]} ".join(_render(x) for x in t[2:]) + ")"
    if kind == "call":
        return f"{t[1]}({', '.join(_render(x) for x in t[2:])})"
    if kind == "select":
        return f"({_render(t[2])} if {_render(t[1])} else {_render(t[3])})"
    if kind == "neg":
        return f"-{_render(t[1])}"
    if kind == "not":
        return f"not {_render(t[1])}"
    return str(kind)


# ------------------------------------------------------------------ z3, over the reals
class _Z3:
    """Trees as z3 terms over the reals: equal leaves (on the region) are one variable."""

    def __init__(self, region):
        import z3

        self.z3 = z3
        self.region = region
        self.leaves: List[Tuple[tuple, object]] = []
        self.functions: Dict[Tuple[str, int], object] = {}

    def leaf(self, t):
        z3 = self.z3
        if t[0] != "undef":
            for known, var in self.leaves:
                if known[0] == t[0] and _same(known, t, self.region):
                    return var
        var = z3.Real(f"x{len(self.leaves)}")
        self.leaves.append((t, var))
        return var

    def term(self, t):
        z3 = self.z3
        kind = t[0]
        if kind in ("in", "ix", "undef", "reduce"):
            return self.leaf(t)
        if kind == "const":
            if t[1] in ("True", "False"):
                return z3.BoolVal(t[1] == "True")
            return z3.RealVal(t[1])
        if kind == "store":
            if t[1] not in FLOAT_TYPES:
                raise _NotReal(f"a store to {t[1]}")
            return self.term(t[2])
        if kind == "neg":
            return -self.term(t[1])
        if kind == "not":
            return z3.Not(self.term(t[1]))
        if kind == "select":
            return z3.If(self.term(t[1]), self.term(t[2]), self.term(t[3]))
        if kind == "bool":
            args = [self.term(x) for x in t[2:]]
            return z3.And(*args) if t[1] == "and" else z3.Or(*args)
        if kind == "cmp":
            a, b = self.term(t[2]), self.term(t[3])
            return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[t[1]]
        if kind == "bin":
            a, b = self.term(t[2]), self.term(t[3])
            op = t[1]
            if op in ("+", "-", "*", "/"):
                return {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[op]
            if op == "**" and t[3][0] == "const" and t[3][1].isdigit() and int(t[3][1]) <= 8:
                out = z3.RealVal(1)
                for _ in range(int(t[3][1])):
                    out = out * a
                return out
            return self.function(f"op{op}", 2)(a, b)
        if kind == "call":
            return self.function(t[1], len(t) - 2)(*[self.term(x) for x in t[2:]])
        raise _NotReal(f"the expression kind {kind}")

    def function(self, name: str, arity: int):
        key = (name, arity)
        if key not in self.functions:
            z3 = self.z3
            self.functions[key] = z3.Function(f"f_{len(self.functions)}", *([z3.RealSort()] * (arity + 1)))
        return self.functions[key]


class _NotReal(Exception):
    pass


def _equal_over_reals(a, b, region) -> bool:
    conv = _Z3(region)
    z3 = conv.z3
    try:
        ta, tb = conv.term(a), conv.term(b)
        solver = z3.Solver()
        solver.set("timeout", Z3_TIMEOUT_MS)
        solver.add(ta != tb)
        return solver.check() == z3.unsat
    except (_NotReal, z3.Z3Exception):
        return False
