"""Built-in target ``generated``: random DaCe programs (``harnessgen.progen``), each with the
NumPy reference of what it computes.

  ``generated:17``          the program of seed 17
  ``generated:17+reduce``   seed 17 asked to hold a block of that kind first (a stream's names)
  ``generated:0-29``        a stream: seeds 0 to 29, each program made for the transformations
                            the earlier ones matched least (``progen.guide``)
  ``generated``             the stream ``generated:0-23``

Each program is written, as the Python file a user reads and runs, to
``<program cache>/generated/<name>.py`` (``HARNESSGEN_PROGRAM_CACHE``), and parsed from it.
A name alone regenerates its program: workers and later runs need nothing else.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .. import __version__ as tool_version, progen
from ..core import envs
from ..core.errors import ConfigError
from ..core.files import write_atomic, write_json
from ..dacecompat import simplify_defaults
from ..plan import instances
from ..plan.instances import cpu_builtin_transformations, match_scopes
from ..targets.base import GPU_TRANSFORMATIONS, Program, Target
from ..targets.loaders import cached_program, content_identity, load_module, program_key
from ..targets.reference import Reference
from . import generate as generate_module, generated_program, guide
from .generate import generate
from .generated_program import parse_name
from .guide import stream

DEFAULT_STREAM = "0-23"
_RANGE = re.compile(r"^(\d+)-(\d+)$")
# what a run tests by default (the stream is guided by every CPU built-in, whatever a run tests)
DEFAULTS = ["all"]


def generated_dir() -> Path:
    return Path(envs.get("HARNESSGEN_PROGRAM_CACHE")) / "generated"


def program_file(name: str) -> Path:
    """Where a generated program's source is written."""
    return generated_dir() / f"{name}.py"


def _generator_key() -> str:
    """Changes with the generator's and the matcher's code, so that cached streams follow them."""
    digest = hashlib.sha256()
    for module in (progen, generate_module, guide, generated_program, instances):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:12]


def make_program(name: str) -> Program:
    """The generated program a name stands for, its source written beside the program cache."""

    seed, emphasis = parse_name(name)
    record = generate(seed, emphasis)
    source = record.source()
    path = program_file(name)
    if not path.is_file() or path.read_text() != source:
        write_atomic(path, source.encode())

    def module():
        return load_module(path)

    def build(simplify: bool = True):
        return cached_program(f"generated-{name}", source.encode(),
                              lambda: getattr(module(), record.function).to_sdfg(simplify=simplify), simplify)

    def reference(**kwargs):
        return module().reference(**kwargs)

    reference.__signature__ = _reference_signature(record)

    return Program(name, build, f"{record.describe()} ({path})", build_unsimplified=lambda: build(False),
                   reference=Reference(f"generated:{name}", reference),
                   identity=content_identity(program_key(source.encode()).encode(), name.encode()))


def _reference_signature(record):
    import inspect

    names = [a.name for a in record.arguments] + record.symbols
    return inspect.Signature([inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in names])


class GeneratedPrograms(dict):
    """Programs by name, each made the first time it is asked for."""

    def __missing__(self, name: str) -> Program:
        program = make_program(name)
        self[name] = program
        return program


def stream_span(spec: Optional[str]) -> Optional[Tuple[int, int]]:
    """(first seed, count) of a stream spec (``0-29``; none: the default stream); None for a
    single program's name."""
    span = _RANGE.match(spec or DEFAULT_STREAM)
    if span is None:
        return None
    first, last = int(span.group(1)), int(span.group(2))
    if last < first:
        raise ConfigError(f"--program generated:{spec}: a stream runs from a seed to a larger one (generated:0-29)")
    return first, last - first + 1


class GeneratedTarget(Target):
    def select(self, program: Optional[str]) -> List[Program]:
        span = stream_span(program)
        if span is None:
            return [self.programs[program]]
        return [self.programs[name] for name in stream_names(*span)]

    def listing(self) -> List[Tuple[str, str]]:
        return [("SEED", "one random program (e.g. generated:17)"),
                ("FIRST-LAST", f"a stream of programs guided by what matched (default {DEFAULT_STREAM})")]


def _stream_file(first_seed: int, count: int) -> Path:
    """Where a stream's names and coverage are cached: per generator, matcher and tool version."""
    return generated_dir() / f"stream-{first_seed}-{count}-{_generator_key()}-{tool_version}.json"


def stream_names(first_seed: int, count: int) -> List[str]:
    """The names of a guided stream, computed once per generator version and cached: guiding
    matches every CPU built-in on every program, which takes seconds per program."""
    cached = _stream_file(first_seed, count)
    if cached.is_file():
        return json.loads(cached.read_text())["names"]

    transformations = cpu_builtin_transformations()

    def matcher(record):
        return match_scopes(make_program(record.name).build(), transformations)

    programs, coverage = stream(first_seed, count, transformations, matcher)
    write_json(cached, {"names": [p.name for p in programs], "coverage": coverage.to_json()})
    return [p.name for p in programs]


def stream_coverage(first_seed: int, count: int) -> Dict:
    """What guided a stream (``Coverage.to_json``), once it was computed."""
    cached = _stream_file(first_seed, count)
    return json.loads(cached.read_text())["coverage"] if cached.is_file() else {}


def make_target() -> Target:
    return GeneratedTarget(name="generated", programs=GeneratedPrograms(), default_transformations=DEFAULTS + simplify_defaults(),
                           gpu_transformations=list(GPU_TRANSFORMATIONS))
