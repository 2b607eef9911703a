"""Root-cause signatures: what stays the same when one bug shows in another instance.

A finding names its instance's containers, symbols, states and generated variables, and its
numbers (sizes, line numbers, addresses) change from one cutout to the next; none of that says
which bug it is. A signature keeps what does, per outcome kind:

- FAILED_TO_APPLY / INVALID_SDFG: the exception type, the innermost frame in DaCe's or the
  transformation's own code (``file:function``; the standard library's and harnessgen's are
  left out) and the message, normalised;
- BUILD_FAILURE: the compiler's first error, normalised;
- POST_CRASH: the signal and why the access faulted (null pointer, unmapped address, general
  protection: a misaligned vector access) and the innermost frames of post's stack
  (``stack.py``), or the signal alone where no stack could be taken (the faulting instruction
  is kept for the report, not the signature: one misaligned access faults on whichever
  aligned instruction the compiler chose);
- OOB_WRITE, MISMATCH, RACE, POST_HANG: where post goes wrong, as a shape: the kind of node
  that writes the first diverging container and the pattern of its memlet (dimensions, ranges
  or single elements, write-conflict resolution, indirection), never its name.

Every signature holds the transformation too: the same symptom made by two transformations is
counted as two bugs (splitting one bug in two costs a developer a look; merging two would hide
one).

Normalising a message: names the program uses (read from the finding's ``pre.sdfg``), quoted
names, generated identifiers (with digits or a leading underscore), numbers, paths and
addresses all become placeholders; ordinary words and type names stay.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

# innermost frames (of DaCe's or the transformation's code) that identify where an exception was
# raised: one, because how many a finding recorded varies (a recursion in the standard library
# can fill a short traceback), and one more frame would split a bug between findings
FRAMES_KEPT = 1
POST_FRAMES_KEPT = 2

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line \d+, in (?P<func>[\w<>.]+)')
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_PATH = re.compile(r"(?:[\w.~-]*/)+[\w.-]+")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPACES = re.compile(r"\s+")
# where DaCe's validator says which state and edge or node: names only
_AT_STATE = re.compile(r"\s*\(at state .*$")
# harnessgen's own interface check says "cutout" or "program" by where post was made: one check
_INTERFACE = re.compile(r"post changed the (?:cutout|program)'s interface")
_COMPILER_ERROR = re.compile(r"^(?P<where>\S+?):\d+:\d+: (?:fatal )?error: (?P<message>.*)$")


@dataclasses.dataclass(frozen=True)
class Signature:
    kind: str                      # the outcome: MISMATCH, BUILD_FAILURE, ...
    transformation: str
    parts: Tuple[str, ...]         # normalised: the same for every finding of one bug

    @property
    def key(self) -> str:
        digest = hashlib.sha1(json.dumps([self.kind, self.transformation, list(self.parts)]).encode()).hexdigest()
        return f"{self.kind.lower()}-{digest[:8]}"

    def describe(self) -> str:
        return f"{self.transformation}: {self.kind}: " + " | ".join(p for p in self.parts if p)

    def to_json(self) -> Dict:
        return {"key": self.key, "kind": self.kind, "transformation": self.transformation, "parts": list(self.parts)}


# the parts of an exception signature: its type, its message, DaCe's frames (which move
# between DaCe versions)
EXCEPTION_KINDS = ("FAILED_TO_APPLY", "INVALID_SDFG")


def version_stable(signature: Signature) -> Tuple[str, ...]:
    """What of a signature holds across DaCe versions: an exception's type and message (not the
    frames, whose files and functions move), a compiler's error; for a wrong result, its kind
    alone (a wrong result of the same kind is the transformation still breaking the program)."""
    if signature.kind in EXCEPTION_KINDS:
        return signature.parts[:2]
    if signature.kind == "BUILD_FAILURE":
        return signature.parts
    return ()


# ------------------------------------------------------------------ normalising text
def program_names(sdfg_json: Optional[Dict]) -> Set[str]:
    """Every name a program gives: containers, symbols, labels of states and nodes, map
    parameters, connectors (from the SDFG's JSON, nested SDFGs included)."""
    names: Set[str] = set()

    def walk(obj) -> None:
        if isinstance(obj, dict):
            for key in ("_arrays", "symbols", "in_connectors", "out_connectors", "assignments"):
                if isinstance(obj.get(key), dict):
                    names.update(obj[key])
            label = obj.get("label")
            if isinstance(label, str):
                names.update(_IDENT.findall(label))
            for key in ("params", "data", "loop_variable"):
                value = obj.get(key)
                if isinstance(value, list):
                    names.update(v for v in value if isinstance(v, str))
                elif isinstance(value, str) and key != "params":
                    names.add(value)
            for value in obj.values():
                walk(value)
        elif isinstance(obj, list):
            for value in obj:
                walk(value)

    walk(sdfg_json)
    return {n for n in names if n and _IDENT.fullmatch(n)}


def identifiers(text: str) -> Set[str]:
    """The identifiers in a piece of code or an expression."""
    return set(_IDENT.findall(text))


def _generated(name: str) -> bool:
    """A name a tool made up: with a digit, a leading underscore or a double one."""
    return any(c.isdigit() for c in name) or name.startswith("_") or "__" in name


# what normalising writes in place of what it removed: never itself taken for a name
PLACEHOLDERS = frozenset({"ID", "N", "PATH", "ADDR", "TYPE"})


def normalise(text: str, names: Iterable[str] = ()) -> str:
    """``text`` with the program's names, generated identifiers, numbers, paths and addresses
    replaced by placeholders (``ID``, ``N``, ``PATH``, ``ADDR``); whitespace collapsed."""
    known = set(names) - PLACEHOLDERS
    text = _HEX.sub("ADDR", text)
    text = _PATH.sub("PATH", text)

    def ident(match: re.Match) -> str:
        word = match.group(0)
        return "ID" if word in known or (_generated(word) and word not in PLACEHOLDERS) else word

    text = _IDENT.sub(ident, text)        # names first: a program's symbol may be called N
    text = _NUMBER.sub("N", text)
    return _SPACES.sub(" ", text).strip()


def frame_name(function: str) -> str:
    """A function in post's stack as the same function in another build: without its parameter
    list, OpenMP's outlined regions under one name (``.omp_outlined.``, ``omp_outlined[]``),
    generated names as ``ID``."""
    name = re.sub(r"\(.*\)\s*$", "", function.strip())
    if "omp_outlined" in name:
        return "omp_outlined"
    return normalise(name)


# C and C++ scalar types: a compiler error about one of them is the same error about another
_SCALAR_TYPES = re.compile(r"\b(?:(?:unsigned|signed|long|short)\s+)*(?:double|float|int|long|short|char|bool|"
                           r"u?int(?:8|16|32|64)_t|size_t)\b")


def normalise_compiler(text: str, names: Iterable[str] = ()) -> str:
    """As ``normalise``, and C's scalar types become ``TYPE`` (the same code-generation error
    shows for whichever type the program's containers have)."""
    return normalise(_SCALAR_TYPES.sub("TYPE", text), names)


# ------------------------------------------------------------------ exceptions
def frames(traceback_text: str) -> List[Tuple[str, str]]:
    """(file, function) of each frame in a formatted traceback, outermost first; files as the
    path inside their package (``dace/transformation/...``); the standard library's frames and
    harnessgen's own left out."""
    out = []
    for match in _FRAME.finditer(traceback_text):
        where = package_path(match.group("file"))
        if where and not _harness_frame(where):
            out.append((where, match.group("func")))
    return out


def _harness_frame(where: str) -> bool:
    """A frame of harnessgen's own driving code (how it applied the change: a cutout, the whole
    program), not of the code under test (its zoo of planted transformations is)."""
    return where.startswith("harnessgen/") and not where.startswith("harnessgen/zoo/")


def package_path(path: str) -> Optional[str]:
    """``dace/...`` for a file of an installed package, the file's name for a user's file, None
    for the standard library (its frames say nothing about the bug)."""
    parts = Path(path).parts
    if "site-packages" in parts:
        return "/".join(parts[parts.index("site-packages") + 1:])
    for anchor in ("dace", "harnessgen"):
        if anchor in parts:
            return "/".join(parts[len(parts) - 1 - parts[::-1].index(anchor):])
    if re.search(r"/python3\.\d+/", path) or path.startswith("<"):
        return None
    return Path(path).name


def exception_line(message: str) -> Tuple[str, str]:
    """(exception type, its message) from the first line of a formatted exception."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    # an exception class (dotted, its own name capitalised), with or without a message
    match = re.match(r"^(?P<type>(?:[a-z_][\w]*\.)*[A-Z]\w*)(?:\s*:\s*(?P<msg>.*))?$", first)
    if match:
        return match.group("type").rsplit(".", 1)[-1], match.group("msg") or ""
    return "", first


def exception_signature(kind: str, transformation: str, message: str, names: Iterable[str]) -> Signature:
    """FAILED_TO_APPLY / INVALID_SDFG: type, innermost frames of ours or DaCe's, the message."""
    etype, text = exception_line(message)
    text = _AT_STATE.sub("", text)
    text = _INTERFACE.sub("post changed the interface", text)
    where = [f"{f}:{fn}" for f, fn in frames(message)[-FRAMES_KEPT:]]
    return Signature(kind, transformation, (etype, normalise(text, names), " < ".join(reversed(where))))


# ------------------------------------------------------------------ compilers
def first_compiler_error(log: str) -> Optional[str]:
    """The first ``error:`` line of a compiler's output, without its file and position."""
    for line in log.splitlines():
        match = _COMPILER_ERROR.match(line.strip())
        if match:
            return match.group("message")
    for line in log.splitlines():
        if "error" in line.lower():
            return line.strip()
    return None


def build_signature(transformation: str, log: str, names: Iterable[str]) -> Signature:
    error = first_compiler_error(log) or (log.strip().splitlines() or [""])[0]
    return Signature("BUILD_FAILURE", transformation, (normalise_compiler(error, names),))


# ------------------------------------------------------------------ where post goes wrong
def write_pattern(sdfg_json: Optional[Dict], container: Optional[str], state_label: Optional[str] = None) -> str:
    """How ``container`` is written in an SDFG, as a shape: the kinds of the nodes writing it,
    the dimensions of their memlets, ranges or single elements, WCR, and whether it is a
    transient; the first state that writes it (``state_label`` first, when given)."""
    if not sdfg_json or not container:
        return "unlocalized"
    found = _writers(sdfg_json, container, state_label)
    if not found:
        return "no writer"
    return " + ".join(sorted(set(found)))


def _writers(sdfg_json: Dict, container: str, state_label: Optional[str]) -> List[str]:
    states = list(_states_of(sdfg_json.get("nodes", [])))
    states.sort(key=lambda s: s.get("label") != state_label)       # the named state first
    transient = bool(sdfg_json.get("attributes", {}).get("_arrays", {}).get(container, {})
                     .get("attributes", {}).get("transient"))
    for state in states:
        nodes = {str(n.get("id")): n for n in state.get("nodes", [])}
        targets = {i for i, n in nodes.items() if n.get("type") == "AccessNode"
                   and n.get("attributes", {}).get("data") == container}
        out = []
        for edge in state.get("edges", []):
            if str(edge.get("dst")) not in targets:
                continue
            src = nodes.get(str(edge.get("src")), {})
            memlet = edge.get("attributes", {}).get("data", {}).get("attributes", {})
            out.append(f"{src.get('type', '?')} -> {'transient' if transient else 'global'} "
                       f"{_memlet_shape(memlet)}")
        if out:
            return out
    for state in states:            # written only inside a nested SDFG
        for node in state.get("nodes", []):
            nested = node.get("attributes", {}).get("sdfg")
            if node.get("type") == "NestedSDFG" and isinstance(nested, dict):
                inner = _writers(nested, container, None)
                if inner:
                    return [f"NestedSDFG[{w}]" for w in inner]
    return []


def _states_of(value) -> Iterator[Dict]:
    """The states of an SDFG's JSON, in its control-flow regions too (DaCe 2.0's loops and
    branches hold theirs), not those of its nested SDFGs."""
    if isinstance(value, list):
        for item in value:
            yield from _states_of(item)
    elif isinstance(value, dict):
        if value.get("type") == "SDFGState":
            yield value
        elif value.get("type") not in ("NestedSDFG", "SDFG"):
            for key in sorted(k for k in value if k != "attributes"):
                yield from _states_of(value[key])


def _memlet_shape(memlet: Dict) -> str:
    """A memlet as a shape: a range or one element (how many dimensions is the program's, not
    the bug's: one tiling bug shows on vectors and matrices alike), with write-conflict
    resolution and indirect indices, which change what a write means."""
    subset = memlet.get("subset") or {}
    ranges = subset.get("ranges", []) if isinstance(subset, dict) else []
    shape = "?" if not ranges else "element" if all(r.get("start") == r.get("end") for r in ranges) else "range"
    extras = [e for e, present in (("wcr", memlet.get("wcr")), ("indirect", any(_indirect(r) for r in ranges)))
              if present]
    return f"[{shape}]" + (f" {' '.join(extras)}" if extras else "")


def _indirect(rng: Dict) -> bool:
    return any("[" in str(rng.get(k, "")) for k in ("start", "end"))


def divergence_signature(kind: str, transformation: str, pre_json: Optional[Dict], post_json: Optional[Dict],
                         container: Optional[str], divergence: Optional[Dict], region: Sequence[str] = ()) -> Signature:
    """MISMATCH / RACE / OOB_WRITE / POST_HANG: how pre writes the first container that
    diverges, and how post writes it (what the transformation changed there)."""
    where = (divergence or {}).get("container") or container
    state = (divergence or {}).get("state")
    parts = (f"pre: {write_pattern(pre_json, where, state)}", f"post: {write_pattern(post_json, where, state)}")
    if kind == "OOB_WRITE":         # which side of the buffer post wrote past
        parts += (" ".join(region),)
    return Signature(kind, transformation, parts)


def crash_signature(transformation: str, signal: str, stack: Optional[Dict]) -> Signature:
    """POST_CRASH: the signal, the faulting instruction and post's innermost frames."""
    if not stack or not stack.get("frames"):
        return Signature("POST_CRASH", transformation, (signal or "crash", "no stack"))
    mine = [frame_name(f) for f in stack["frames"]][:POST_FRAMES_KEPT]
    return Signature("POST_CRASH", transformation, (stack.get("fault") or stack.get("signal") or signal,
                                                    " < ".join(mine)))
