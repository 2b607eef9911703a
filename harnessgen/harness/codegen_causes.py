"""Programs DaCe cannot build before any transformation: found once per cause, not once per
instance.

Where pre (the program, or a cutout of it, before the change) does not compile, nothing
about the change can be judged, and every instance whose pre holds the same construct fails
the same way: on the unsimplified CLOUDSC, one branch condition on a one-element array
(``if (zdqs > 0.0)`` with ``double zdqs[1]``) made each of dozens of pass instances spend a
minute compiling to the same error. A *cause* is that error: the compiler's first message
and the generated line it points at, both with the side's own name and the layout of the
text taken out. The first instance that meets a cause records it (``CauseRegistry``) and
writes it as a finding against DaCe's code generator; every later pre is checked against the
known causes right after DaCe generated its code, before the compiler runs, and an instance
whose pre holds a known construct is ``BLOCKED`` at once, naming the cause. Where pre is a
whole program, the program itself is recorded as blocked by the cause: the next instance
judged on the whole program (a pass at the top level) is BLOCKED before its change is applied.

Causes are kept per DaCe version and compiler under ``<work>/codegen-causes/``: a new DaCe
or compiler meets each construct afresh.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path
from typing import Dict, List, Optional

from ..core.files import write_json

CAUSES_DIR = "codegen-causes"
_ERROR = re.compile(r"^(?P<file>[^:\s]+\.(?:cpp|cu|h)):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: (?P<message>.*)$")
_SPACE = re.compile(r"\s+")


def normalized(text: str, side_name: str = "") -> str:
    """Text with the side's name and the layout of the code taken out."""
    if side_name:
        text = text.replace(side_name, "<side>")
    return _SPACE.sub(" ", text).strip()


@dataclasses.dataclass
class Cause:
    message: str                    # the compiler's first error, without file and position
    line: str                       # the generated line it points at (normalized)
    log: str = ""                   # the compiler's diagnostics (``diagnostics``)
    first_instance: str = ""        # the instance that met it first
    # what each name of the line is where it failed (``line_context``): the same text compiles
    # where a name has another kind (``if (x < lo)`` with a scalar ``lo``, not ``double lo[1]``)
    context: Dict[str, str] = dataclasses.field(default_factory=dict)
    # the program DaCe made that fails alike (``CauseRegistry.dace_made``): what the finding is against
    program: str = ""

    @property
    def id(self) -> str:
        return "codegen-" + hashlib.sha1(f"{self.message}\n{self.line}".encode()).hexdigest()[:10]

    def folder(self, crashes_root: Path, target: str) -> Path:
        """Where a run keeps this cause's finding."""
        return Path(crashes_root) / target / "dace-codegen" / self.id

    def describe(self) -> str:
        return f"`{self.line}` ({self.message})"

    def to_json(self) -> Dict:
        return {**dataclasses.asdict(self), "id": self.id}

    @classmethod
    def from_json(cls, entry: Dict) -> "Cause":
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in entry.items() if k in fields})

    def matches_source(self, source: str, side_name: str, sdfg=None) -> bool:
        """Whether a generated file holds this cause's line, its names of the same kinds as
        where it failed (``sdfg``: the SDFG the file was generated from)."""
        if not any(normalized(line, side_name) == self.line for line in source.splitlines() if line.strip()):
            return False
        return sdfg is None or line_context(self.line, sdfg) == self.context

    def matches_log(self, log: str, side_name: str) -> bool:
        """Whether a compiler's output shows this cause (its message at its line)."""
        found = from_compiler_output(log, side_name)
        return found is not None and (found.message, found.line) == (self.message, self.line)


def from_compiler_output(log: str, side_name: str) -> Optional[Cause]:
    """The cause a compiler's diagnostics show first: its first error and the source line it
    quotes (clang and gcc print the line right after the message); None without one."""
    return next(iter(all_from_compiler_output(log, side_name)), None)


def all_from_compiler_output(log: str, side_name: str) -> List[Cause]:
    """Every error a compiler's diagnostics show, with the source line it quotes, in order."""
    lines = log.splitlines()
    found = []
    for index, text in enumerate(lines):
        match = _ERROR.match(text.strip())
        if match and index + 1 < len(lines) and lines[index + 1].strip():
            message = normalized(re.sub(r" \[-W[^\]]*\]$", "", match.group("message")), side_name)
            found.append(Cause(message=message, line=normalized(lines[index + 1], side_name)))
    return found


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def line_context(line: str, sdfg) -> Dict[str, str]:
    """What each name of a generated line is in ``sdfg`` (nested SDFGs included): the kind,
    element type and rank of a container, the type of a symbol; names it does not have are
    left out (keywords, DaCe's own)."""
    kinds: Dict[str, set] = {}
    for graph in sdfg.all_sdfgs_recursive():
        for name, desc in graph.arrays.items():
            kinds.setdefault(name, set()).add(f"{type(desc).__name__} {desc.dtype} rank {len(desc.shape)}")
        for name, dtype in graph.symbols.items():
            kinds.setdefault(name, set()).add(f"symbol {dtype}")
    return {name: " | ".join(sorted(kinds[name])) for name in sorted(set(_NAME.findall(line))) if name in kinds}


def diagnostics(log: str) -> str:
    """A build log's compiler messages without the command line, each file named by its own
    name (where the build ran is of no use to whoever reads the report)."""
    lines = [line for line in log.splitlines() if line.strip() and not line.lstrip().startswith(("clang", "g++", "gcc",
                                                                                               "nvcc", "afl-"))]
    return "\n".join(re.sub(r"(?:/[^\s:/]+)+/([^\s:/]+\.(?:cpp|cu|h))", r"\1", line) for line in lines)


class CauseRegistry:
    """The causes met so far with this DaCe and compiler, one JSON file each (shared by every
    process of every run that builds into the same work directory)."""

    def __init__(self, work_dir: Path, versions: str):
        digest = hashlib.sha1(versions.encode()).hexdigest()[:12]
        self.root = Path(work_dir) / CAUSES_DIR / digest

    def known(self) -> List[Cause]:
        if not self.root.is_dir():
            return []
        causes = []
        for path in sorted(self.root.glob("*.json")):
            try:
                causes.append(Cause.from_json(json.loads(path.read_text())))
            except (OSError, json.JSONDecodeError, TypeError):
                continue        # a file being written: its cause is met again, and recorded again
        return causes

    def match(self, source: str, side_name: str, sdfg=None) -> Optional[Cause]:
        """A cause of a program DaCe made that ``source`` holds (``sdfg``: what it was generated from)."""
        return next((cause for cause in self.known() if cause.program and
                     cause.matches_source(source, side_name, sdfg)), None)

    def get(self, cause_id: str) -> Optional[Cause]:
        return next((cause for cause in self.known() if cause.id == cause_id), None)

    def blocking_program(self, program_key: str) -> Optional[Cause]:
        """The cause that keeps a whole program (``program_key``: its content and form) from
        building before any change, where one was met: every instance judged on that whole
        program is BLOCKED by it, without applying its change or generating code."""
        try:
            entry = json.loads((self.root / "programs" / f"{program_key}.json").read_text())
        except (OSError, json.JSONDecodeError):
            return None
        return self.get(entry.get("cause", ""))

    def record_program(self, program_key: str, cause: Cause) -> None:
        write_json(self.root / "programs" / f"{program_key}.json", {"cause": cause.id})

    def program_causes(self, program_key: str) -> Optional[List[Cause]]:
        """What the compiler said of a program's own code, where it was asked (``[]``: it compiles)."""
        try:
            entries = json.loads((self.root / "compiled" / f"{program_key}.json").read_text())
        except (OSError, json.JSONDecodeError):
            return None
        return [Cause.from_json(e) for e in entries]

    def record_program_causes(self, program_key: str, causes: List[Cause]) -> None:
        write_json(self.root / "compiled" / f"{program_key}.json", [c.to_json() for c in causes])

    def record(self, cause: Cause) -> Cause:
        """Keep ``cause`` (the first record of one confirmed in a program DaCe made stays)."""
        existing = self.get(cause.id)
        if existing is not None and (existing.program or not cause.program):
            return existing
        write_json(self.root / f"{cause.id}.json", cause.to_json())
        return cause
