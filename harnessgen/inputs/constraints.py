"""Stage 3: the ranges every symbol and container value of a cutout may take.

Derived from the whole program (not just the cutout):

* sizes (symbols in array shapes) are in ``[1, max_size]``;
* loop variables and map parameters of the enclosing program are within their
  loop bounds;
* index-like symbols keep every memlet they appear in within its container's
  extent (a point index in ``[0, E-1]``, a range start in ``[0, E]``, a range
  end in ``[-1, E-1]``), also through the maps and loops whose bounds they set;
* integer arrays whose elements are read into such symbols (``j = col[k]``,
  ``for k in range(rowptr[i], rowptr[i+1])``) get the symbol's range as value
  range;
* floats are finite and within ``[-float_bound, float_bound]`` unless asked.

A user file in FuzzyFlow's schema (``{"name": ["lo", "hi"]}``, bounds may
reference symbols) is merged in: a user range replaces a *default* range and
is intersected with a *safety* range (user bounds narrow, are never
overwritten).
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import json
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

from ..core import expr as ex
from ..core.errors import ConfigError, Unsupported
from ..core.records import DEFAULT_FLOAT_BOUND, DEFAULT_MAX_SIZE
from ..core.names import SYMBOL_INPUT_PREFIX

# values with a smaller magnitude are flushed to (signed) zero: subnormals
# make correct reassociations differ by orders of magnitude
DEFAULT_FLOAT_TINY = 1e-9

@dataclasses.dataclass(frozen=True)
class Range:
    lo: ex.Expr
    hi: ex.Expr
    origin: str          # human-readable reason, shown by ``harnessgen instances -v`` and in layout.json
    kind: str = "safety"  # "safety" (needed for a valid input), "default" or "user"

    def to_json(self) -> Dict[str, str]:
        return {"lo": str(self.lo), "hi": str(self.hi), "origin": self.origin, "kind": self.kind}


@dataclasses.dataclass
class Constraints:
    symbols: Dict[str, Range]
    values: Dict[str, Range]            # container name -> element value range (numeric containers)
    float_bound: float = DEFAULT_FLOAT_BOUND
    float_tiny: float = DEFAULT_FLOAT_TINY
    allow_nonfinite: bool = False

    def to_json(self):
        return {"symbols": {k: v.to_json() for k, v in self.symbols.items()},
                "values": {k: v.to_json() for k, v in self.values.items()},
                "float_bound": self.float_bound, "float_tiny": self.float_tiny,
                "allow_nonfinite": self.allow_nonfinite}


# ----------------------------------------------------------------- sympy glue
def _sympify(text):
    return ex.to_sympy(text)


def _solve(expr_text, sym: str, lo, hi) -> Optional[Tuple[object, object]]:
    """Bounds on ``sym`` such that ``lo <= expr <= hi``, if expr is ``±sym + c``."""
    split = _linear_in(ex.text_of(expr_text), sym)
    if split is None:
        return None
    a, rest = split
    if a == 1:
        return lo - rest, hi - rest
    return rest - hi, rest - lo


@functools.lru_cache(maxsize=1 << 16)
def _linear_in(expr_text: str, sym: str) -> Optional[Tuple[int, object]]:
    """(a, rest) where ``expr`` is ``a * sym + rest`` with ``a`` 1 or -1 and ``rest`` free of
    ``sym``; else None. Asked for the same uses of a program for every cutout: kept."""
    import sympy

    try:
        e = sympy.expand(_sympify(expr_text))
    except Exception:  # unparseable DaCe expression: no constraint from it
        return None
    s = sympy.Symbol(sym)
    if s not in e.free_symbols:
        return None
    a = e.coeff(s)
    rest = sympy.expand(e - a * s)
    if s in rest.free_symbols or a not in (1, -1):
        return None
    return (1 if a == 1 else -1), rest


def _to_expr(value) -> Optional[ex.Expr]:
    return _expr_of_text(ex.text_of(value))


@functools.lru_cache(maxsize=1 << 16)
def _expr_of_text(text: str) -> Optional[ex.Expr]:
    """A bound's expression, parsed and simplified once per text (``Expr`` is immutable)."""
    try:
        return ex.simplify(ex.from_sympy(text))
    except ConfigError:
        return None


# ----------------------------------------------------------------- analysis
@dataclasses.dataclass
class _Use:
    expr: object      # sympy expression
    kind: str         # "point" | "begin" | "end"
    extent: object    # sympy expression


@dataclasses.dataclass
class _Iterator:
    name: str
    low: object       # sympy, inclusive
    high: object      # sympy, inclusive
    origin: str


class ProgramAnalysis:
    """Index uses, iterator ranges and array-to-symbol reads of a whole program."""

    def __init__(self, sdfg):
        self.sdfg = sdfg
        self.uses: Dict[str, List[_Use]] = {}
        self.iterators: Dict[str, List[_Iterator]] = {}
        self.array_reads: Dict[str, Set[str]] = {}   # array -> symbols assigned from its elements
        # containers the control flow reads by name (a loop bound, a condition): they decide how
        # often and whether code runs, as a symbol would
        self.control_reads: Set[str] = set()
        self.size_symbols: Set[str] = set()
        self._need_cache: Dict[str, Tuple[List, List]] = {}
        # (free symbols, max size) -> (their ranges, need() cache after deriving them)
        self._ranges_memo: Dict[Tuple, Tuple[Dict, Dict]] = {}
        for sd in sdfg.all_sdfgs_recursive():
            self._scan_sdfg(sd)

    @functools.cached_property
    def names(self) -> Set[str]:
        """Every symbol and container the program knows, at any nesting depth (what a
        constraints file may name): asked for by every instance, so found once."""
        names = {str(s) for s in self.sdfg.free_symbols} | set(self.sdfg.arrays)
        for sd in self.sdfg.all_sdfgs_recursive():
            names |= set(sd.symbols) | set(sd.arrays)
        return names

    # -- collection
    def _scan_sdfg(self, sd) -> None:
        # DaCe here, not at the top: the replay worker decodes inputs with this module and
        # starts again after every input that kills it (without DaCe, a second faster)
        import dace

        from ..dacecompat import control_flow_code, for_loops

        for desc in sd.arrays.values():
            for dim in list(desc.shape) + [desc.total_size]:
                self.size_symbols |= {str(s) for s in _free(dim)}
        for state in sd.states():
            for node in state.nodes():
                if isinstance(node, dace.nodes.MapEntry):
                    for param, (b, e, _st) in zip(node.map.params, node.map.range.ndrange()):
                        self._add_iterator(param, b, e, f"map {node.map.label}")
            for edge in state.edges():
                self._scan_memlet(sd, state, edge)
        for edge in control_flow_code(sd):
            self._scan_interstate(sd, edge)
        for loop in for_loops(sd):
            low, high = (loop.end, loop.start) if _negative(loop.stride) else (loop.start, loop.end)
            self._add_iterator(loop.variable, low, high, "loop")

    def _add_iterator(self, name, low, high, origin) -> None:
        self.iterators.setdefault(str(name), []).append(_Iterator(str(name), low, high, origin))

    def _scan_memlet(self, sd, state, edge) -> None:
        import dace

        memlet = edge.data
        if memlet is None or memlet.data is None or memlet.data not in sd.arrays:
            return
        self._record_subset(memlet.subset, sd.arrays[memlet.data].shape)
        if memlet.other_subset is not None:
            other = edge.dst if isinstance(edge.dst, dace.nodes.AccessNode) and edge.dst.data != memlet.data \
                else edge.src
            if isinstance(other, dace.nodes.AccessNode) and other.data in sd.arrays:
                self._record_subset(memlet.other_subset, sd.arrays[other.data].shape)

    def _record_subset(self, subset, shape) -> None:
        if subset is None:
            return
        try:
            ranges = subset.ndrange()
        except Exception:  # exotic subset types carry no index information for us
            return
        for (b, e, _st), extent in zip(ranges, shape):
            if b is e or ex.text_of(b) == ex.text_of(e):
                self._record(b, "point", extent)
            else:
                self._record(b, "begin", extent)
                self._record(e, "end", extent)

    def _record(self, value, kind, extent) -> None:
        for s in _free(value):
            self.uses.setdefault(str(s), []).append(_Use(value, kind, extent))

    def _scan_interstate(self, sd, isedge) -> None:
        texts = [isedge.condition.as_string] if isedge.condition is not None else []
        for sym, rhs in isedge.assignments.items():
            texts.append(rhs)
            tree = _parse_py(rhs)
            if isinstance(tree, ast.Subscript) and isinstance(tree.value, ast.Name) and tree.value.id in sd.arrays:
                read = tree.value.id
            elif isinstance(tree, ast.Name) and tree.id in sd.arrays:
                read = tree.id   # a scalar, e.g. an indirection idx[i] passed into a nested SDFG
            else:
                continue
            self.array_reads.setdefault(_outer_name(sd, read), set()).add(sym)
        for text in texts:
            tree = _parse_py(text)
            if tree is None:
                continue
            self.control_reads |= {_outer_name(sd, n.id) for n in ast.walk(tree)
                                   if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in sd.arrays}
            for node in ast.walk(tree):
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                        and node.value.id in sd.arrays:
                    shape = sd.arrays[node.value.id].shape
                    idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                    for i, extent in zip(idx, shape):
                        self._record(_sympify(ast.unparse(i)), "point", extent)

    # -- requirements
    def need(self, sym: str, _depth: int = 0) -> Tuple[List, List]:
        """Lower and upper bounds (sympy) that keep every use of ``sym`` in bounds."""
        if sym in self._need_cache:
            return self._need_cache[sym]
        self._need_cache[sym] = ([], [])  # breaks cycles
        los, his = [], []
        windows = {"point": (0, -1), "begin": (0, 0), "end": (-1, -1)}
        for use in self.uses.get(sym, []):
            lo_off, hi_off = windows[use.kind]
            extent = _sympify(use.extent)
            solved = _solve(use.expr, sym, lo_off, extent + hi_off)
            if solved:
                los.append(solved[0])
                his.append(solved[1])
        if _depth < 6:
            folded: Dict[str, Tuple] = {}   # name -> max of its lower, min of its upper bounds
            for name, iters in self.iterators.items():
                for it in iters:
                    for bound, is_low in ((it.low, True), (it.high, False)):
                        if sym not in {str(s) for s in _free(bound)}:
                            continue
                        plo, phi = self.need(name, _depth + 1)
                        if name not in folded:   # a loop variable of many loops: fold its bounds once
                            folded[name] = (_max(plo), _min(phi))
                        lowest, highest = folded[name]
                        if is_low:
                            window_lo = lowest
                            window_hi = highest + 1 if phi else None
                        else:
                            window_lo = lowest - 1 if plo else None
                            window_hi = highest
                        if window_lo is not None:
                            s = _solve(bound, sym, window_lo, 10**18)
                            if s:
                                los.append(s[0])
                        if window_hi is not None:
                            s = _solve(bound, sym, -10**18, window_hi)
                            if s:
                                his.append(s[1])
        result = (los, his)
        self._need_cache[sym] = result
        return result


def _outer_name(sd, name: str) -> str:
    """Follow a nested SDFG's container out through its connector to the top-level container."""
    while sd.parent_nsdfg_node is not None and sd.parent is not None:
        state, node = sd.parent, sd.parent_nsdfg_node
        edge = next((e for e in state.in_edges(node) if e.dst_conn == name), None)
        if edge is None or edge.data.data is None:
            break
        name, sd = edge.data.data, sd.parent_sdfg
    return name


def _max(values):
    return _folded("Max", tuple((type(v), v) for v in values)) if values else None


def _min(values):
    return _folded("Min", tuple((type(v), v) for v in values)) if values else None


@functools.lru_cache(maxsize=1 << 14)
def _folded(op: str, typed_values: Tuple) -> object:
    """sympy's Min or Max of the values (keyed with their types: ``1`` and ``1.0`` are equal
    and print apart), built once: sympy compares every pair of them, and a program's loops
    ask for the same bounds of each cutout's symbols."""
    import sympy

    return getattr(sympy, op)(*(v for _, v in typed_values))


def _free(value) -> Set:
    try:
        return set(getattr(value, "free_symbols", set()))
    except Exception:
        return set()


def _negative(stride) -> bool:
    try:
        return bool(stride < 0)
    except TypeError:  # symbolic stride: assume a forward loop
        return False


def _parse_py(text: str) -> Optional[ast.AST]:
    try:
        return ast.parse(str(text).strip(), mode="eval").body
    except SyntaxError:
        return None


_ANALYSES: Dict[int, Tuple[object, ProgramAnalysis]] = {}


def program_analysis(sdfg) -> ProgramAnalysis:
    """One analysis per program SDFG object: every instance of a program shares it (scanning
    CLOUDSC takes seconds). Programs are never modified in place -- transformations are applied
    to cutouts -- so the object's identity is a sound key; the SDFG is kept referenced so that
    its id cannot be reused."""
    hit = _ANALYSES.get(id(sdfg))
    if hit is None or hit[0] is not sdfg:
        if len(_ANALYSES) >= 8:
            _ANALYSES.clear()
        hit = _ANALYSES[id(sdfg)] = (sdfg, ProgramAnalysis(sdfg))
    hit[1]._need_cache.clear()   # bounds depend on query order: start each derivation afresh
    return hit[1]


# ----------------------------------------------------------------- derivation
def derive(pair, max_size: int = DEFAULT_MAX_SIZE, user_file: Optional[Path] = None,
           float_bound: float = DEFAULT_FLOAT_BOUND, float_tiny: float = DEFAULT_FLOAT_TINY,
           allow_nonfinite: bool = False, strict_names: bool = True) -> Constraints:
    """Constraints for every free symbol and numeric container of ``pair.pre``."""
    analysis = program_analysis(pair.program_sdfg)
    free = sorted(str(s) for s in pair.pre.free_symbols)
    user = {}
    if user_file:
        data = read_user_file(user_file)
        user = user_ranges(data, Path(user_file).name, analysis.names, strict_names)
        float_tiny = user_settings(data, Path(user_file).name).get("_float_tiny", float_tiny)
    symbols = _symbol_ranges(analysis, free, max_size)
    values = {}
    for name in pair.containers:
        derived = _value_range(name, pair, analysis, set(free), float_bound, max_size)
        if derived is not None:
            values[name] = derived
    derived_symbols = dict(symbols)
    for name, rng in user.items():
        if name in symbols:
            symbols[name] = _merge(symbols[name], _within_cutout(rng, symbols[name], set(free)))
        target = _container_for(name, pair)
        for cname in target:
            values[cname] = _merge(values[cname], rng) if cname in values else rng
    symbols = _drop_unresolvable(symbols, free, derived_symbols, {n: r for n, r in user.items() if n in symbols},
                                 lambda sym, without: _symbol_range(sym, analysis, set(free) - without, max_size))
    for cname, rng in list(values.items()):
        bad = (rng.lo.symbols() | rng.hi.symbols()) - set(free)
        if bad:
            raise ConfigError(f"value range of {cname} refers to {sorted(bad)}, which the cutout does not have "
                              "as symbols; fix the constraints file")
    return Constraints(symbols=symbols, values=values, float_bound=float_bound, float_tiny=float_tiny,
                       allow_nonfinite=allow_nonfinite)


def _symbol_ranges(analysis: ProgramAnalysis, free: List[str], max_size: int) -> Dict[str, Range]:
    """Derived ranges of a cutout's free symbols. A program's cutouts share few distinct
    symbol sets (CLOUDSC: subsets of KLON, KLEV, KIDIA, KFDIA, NCLDTOP) and deriving one
    set costs seconds of sympy, so each set is derived once per program. need() answers
    depend on the order of queries (its cycle breaking), so a hit also restores the need()
    cache as the derivation left it: the container ranges derived next come out the same."""
    key = (tuple(free), max_size)
    hit = analysis._ranges_memo.get(key)
    if hit is None:
        ranges = {s: _symbol_range(s, analysis, set(free), max_size) for s in free}
        hit = analysis._ranges_memo[key] = (ranges, dict(analysis._need_cache))
    analysis._need_cache = dict(hit[1])
    return dict(hit[0])


def _only(exprs: Iterable, allowed: Set[str]) -> List[ex.Expr]:
    out = []
    for value in exprs:
        e = _to_expr(value)
        if e is not None and e.symbols() <= allowed:
            out.append(e)
    return out


def _fold(exprs: List[ex.Expr], op: str) -> Optional[ex.Expr]:
    """``op`` (min or max) of the bounds: each distinct one once, the numbers folded into one,
    combined as a balanced tree (a program as its frontend wrote it gives a symbol hundreds of
    bounds: a chain of them is deeper than Python lets expressions be walked)."""
    if not exprs:
        return None
    items = [e for e in dict.fromkeys(exprs) if e.op != "num"]
    numbers = [e.value for e in dict.fromkeys(exprs) if e.op == "num"]
    if numbers:
        items.append(ex.Expr.num(max(numbers) if op == "max" else min(numbers)))
    while len(items) > 1:
        items = [ex.simplify(ex.Expr(op, (items[i], items[i + 1]))) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


# how a symbol's range that is a loop's or map's range says so ("loop variable of the program")
LOOP_VARIABLE_ORIGIN = "variable of the program"


def _symbol_range(sym: str, analysis: ProgramAnalysis, free: Set[str], max_size: int) -> Range:
    allowed = free - {sym}
    for it in analysis.iterators.get(sym, []):
        lo, hi = _only([it.low], allowed), _only([it.high], allowed)
        if lo and hi:
            return Range(lo[0], hi[0], f"{it.origin} {LOOP_VARIABLE_ORIGIN}", "safety")
    los, his = analysis.need(sym)
    lo, hi = _fold(_only(los, allowed), "max"), _fold(_only(his, allowed), "min")
    if sym in analysis.size_symbols:
        lo = ex.Expr("max", (ex.Expr.num(1), lo)) if lo is not None else ex.Expr.num(1)
        hi = ex.Expr("min", (ex.Expr.num(max_size), hi)) if hi is not None else ex.Expr.num(max_size)
        return Range(ex.simplify(lo), ex.simplify(hi), "size (--max-size)", "default")
    if lo is not None or hi is not None:
        return Range(lo if lo is not None else ex.Expr.num(0), hi if hi is not None else ex.Expr.num(max_size),
                     "index within container extents", "safety")
    return Range(ex.Expr.num(0), ex.Expr.num(max_size), "unconstrained symbol (--max-size)", "default")


def _original_name(name: str, pair) -> str:
    """Alibi containers of a cutout (``__cutout_X``) stand for program container X."""
    if name.startswith("__cutout_"):
        base = name[len("__cutout_"):]
        while base and base not in pair.program_sdfg.arrays and "_" in base:
            base = base.rsplit("_", 1)[0]
        if base in pair.program_sdfg.arrays:
            return base
    return name


def _container_for(name: str, pair) -> List[str]:
    return [c for c in pair.containers if c == name or _original_name(c, pair) == name]


def _value_range(name: str, pair, analysis: ProgramAnalysis, free: Set[str], float_bound: float,
                 max_size: int = DEFAULT_MAX_SIZE) -> Optional[Range]:
    desc = pair.pre.arrays[name]
    kind = desc.dtype.as_numpy_dtype().kind
    if kind in "fc":
        return Range(ex.Expr.num(-float(float_bound)), ex.Expr.num(float(float_bound)),
                     "default float domain (--float-bound)", "default")
    if kind not in "iu":
        return None
    if name.startswith(SYMBOL_INPUT_PREFIX) and name[len(SYMBOL_INPUT_PREFIX):] in analysis.names:
        # a symbol's value where the cutout starts (``extract._symbols_as_outputs``): as the symbol ranges
        sym = name[len(SYMBOL_INPUT_PREFIX):]
        return _symbol_range(sym, analysis, free - {sym}, max_size)
    original = _original_name(name, pair)
    los, his = [], []
    for sym in sorted(analysis.array_reads.get(original, ())):
        sl, sh = analysis.need(sym)
        los += sl
        his += sh
    lo, hi = _fold(_only(los, free), "max"), _fold(_only(his, free), "min")
    if lo is not None and hi is not None:
        return Range(lo, hi, "values index other containers", "safety")
    if original in analysis.control_reads:
        # a loop bound or a condition read from data: any int64 would run for ages
        return Range(ex.Expr.num(0), ex.Expr.num(max_size), "read by the control flow, as an unconstrained "
                     "symbol (--max-size)", "default")
    return None  # full range of the integer type


def _within_cutout(user: Range, derived: Range, free: Set[str]) -> Range:
    """A user bound naming a symbol the cutout does not have (``KFDIA <= KLON`` in a cutout
    without arrays of extent KLON) cannot be decoded: that side keeps the derived bound."""
    lo = user.lo if user.lo.symbols() <= free else derived.lo
    hi = user.hi if user.hi.symbols() <= free else derived.hi
    return Range(lo, hi, user.origin, user.kind)


def _merge(derived: Range, user: Range) -> Range:
    if derived.kind != "safety":
        return user
    lo = ex.simplify(ex.Expr("max", (derived.lo, user.lo)))
    hi = ex.simplify(ex.Expr("min", (derived.hi, user.hi)))
    return Range(lo, hi, f"{user.origin} within {derived.origin}", "user")


def _drop_unresolvable(symbols: Dict[str, Range], order: List[str], derived: Dict[str, Range],
                       user: Dict[str, Range], rederive: Callable[[str, Set[str]], Range]) -> Dict[str, Range]:
    """Bounds that form a cycle cannot be decoded. The symbol of the cycle that comes last in
    ``order`` is derived again without the bounds that name the other members (``rederive``),
    and the user's range for it is merged again where it names none of them. Nothing is
    lost: a derived bound comes from an index expression or a loop bound solved for each of
    its symbols, so the relation that tied it to the others is still a bound of theirs, and
    they are decoded after it. Should a cycle remain, a user bound closing it gives way to
    the derived one (a user file written for the whole program, e.g. ``KFDIA >= KIDIA``,
    meeting a cutout whose derived bounds tie KIDIA to KFDIA)."""
    import networkx as nx  # here, not at import: replay workers never need it

    symbols = dict(symbols)
    cut: Dict[str, Set[str]] = {}        # symbol -> cycle members its bounds may no longer name
    while True:
        graph = nx.DiGraph()
        graph.add_nodes_from(order)
        for s, rng in symbols.items():
            for dep in (rng.lo.symbols() | rng.hi.symbols()):
                graph.add_edge(dep, s)
        if nx.is_directed_acyclic_graph(graph):
            return symbols
        members = [b for _, b in nx.find_cycle(graph)]
        last = max(members, key=lambda m: (not _is_loop_range(derived[m]), order.index(m)))
        others = set(members) - {last}
        if not others <= cut.get(last, set()):
            without = cut.setdefault(last, set())
            without |= others
            fresh = rederive(last, without)
            if last in user:
                fresh = _merge(fresh, _within_cutout(user[last], fresh, set(order) - without))
            symbols[last] = derived[last] = fresh
            continue
        victims = [b for b in members if symbols[b].kind == "user"]
        if not victims:
            raise Unsupported(f"derived symbol bounds form a cycle through {last} ({members}); "
                              "give one of them constant bounds in the constraints file")
        symbols[victims[-1]] = derived[victims[-1]]


def _is_loop_range(rng: Range) -> bool:
    """A range that is the values a loop or map of the program gives its variable: exactly what
    the cutout's place sees. Another symbol's bounds naming it are derived from index uses and
    only approximate the same relation, so a cycle is cut at those, never at the loop's range
    (cutting ``i in [0, H-1]`` left ``i`` up to --max-size while ``H`` was 1: a cutout of
    resnet's conv2d then read and wrote far outside its containers)."""
    return rng.kind == "safety" and rng.origin.endswith(LOOP_VARIABLE_ORIGIN)


# keys of a constraints file that set the decoder instead of naming a symbol or container
FILE_SETTINGS = {
    "_float_tiny": "floats with a smaller magnitude decode as zero (default 1e-9; a scheme whose "
                   "thresholds lie below that needs a smaller value)",
}


def read_user_file(path: Path) -> Dict:
    """The constraints file as JSON; the message names the file to fix."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"--constraints: no such file {str(path)!r}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--constraints {path.name}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"--constraints {path.name}: expected an object {{\"name\": [\"lo\", \"hi\"]}}")
    return data


def user_settings(data: Dict, file_name: str) -> Dict[str, float]:
    """The decoder settings (``FILE_SETTINGS``) a constraints file sets."""
    out = {}
    for key in FILE_SETTINGS:
        if key in data:
            try:
                out[key] = float(data[key])
            except (TypeError, ValueError):
                raise ConfigError(f"--constraints {file_name}: {key} must be a number") from None
            if not out[key] >= 0:
                raise ConfigError(f"--constraints {file_name}: {key} must be >= 0")
    return out


def user_ranges(data: Dict, file_name: str, known: Set[str], strict_names: bool) -> Dict[str, Range]:
    """``{"name": ["lo", "hi"]}`` entries naming one of the ``known`` symbols and containers;
    the message names the file and key to fix."""
    out = {}
    for name, bounds in data.items():
        if name.startswith("_"):
            continue  # comments and metadata keys
        if not (isinstance(bounds, list) and len(bounds) == 2):
            raise ConfigError(f"--constraints {file_name}: {name!r} must map to [lo, hi]")
        if name not in known:
            if strict_names:
                raise ConfigError(f"--constraints {file_name}: {name!r} is neither a symbol nor a container "
                                  "of the program")
            continue
        lo = ex.parse(bounds[0], f"{file_name}: {name} lower bound")
        hi = ex.parse(bounds[1], f"{file_name}: {name} upper bound")
        out[name] = Range(lo, hi, f"user file {file_name}", "user")
    return out
