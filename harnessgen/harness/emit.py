"""Stage 5a: C++ sources. DaCe generates pre/post; jinja2 renders the harness.

Files written into a build directory (DaCe's own folder shape, because its
generated code includes ``../../include/hash.h``)::

    src/cpu/hg_pre.cpp  src/cpu/hg_pre.h  src/cpu/hg_post.cpp  src/cpu/hg_post.h
    include/hash.h      harness.cpp       exports_hg_pre.map   exports_hg_post.map
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import __version__
from ..core import expr as ex, protocol
from ..core.data import TEMPLATES, template_environment
from ..core.errors import BuildError, InternalError
from ..core.files import write_atomic
from ..core.runtime import CTYPES, GUARD_BYTES, Tolerance, parse_prototypes
from ..inputs.layout import MAX_INPUT_BYTES, InputLayout


@dataclasses.dataclass
class SideSource:
    """One side (pre or post) as DaCe generated it."""

    name: str
    cpp: Path
    init_args: List[str]                  # symbol names, in DaCe's order
    program_args: List[tuple]             # (name, is_pointer), in DaCe's order
    cuda: List[Path] = dataclasses.field(default_factory=list)   # DaCe's CUDA files (a GPU side)

    @property
    def on_gpu(self) -> bool:
        return bool(self.cuda)


def generate_side(sdfg, build_dir: Path, kept: Optional[Path] = None) -> SideSource:
    """Run DaCe's code generator for one side and write its files (``kept``: where the code
    DaCe generated for this very program is kept, read from there where it is)."""
    name = sdfg.name
    objects = _generated(sdfg, kept)
    (build_dir / "include").mkdir(exist_ok=True)
    (build_dir / "include" / "hash.h").write_text("#pragma once\n")
    cpp_path: Optional[Path] = None
    header = ""
    cuda: List[Path] = []
    for obj_name, language, code in objects:
        if language not in ("cpp", "h", "cu"):
            raise BuildError(f"{name}: DaCe generated {language} code ({obj_name}); only CPU and CUDA code "
                             f"is built", side=name)
        if obj_name.endswith("_main"):
            continue  # DaCe's sample main program
        src = build_dir / "src" / ("cuda" if language == "cu" else "cpu")
        src.mkdir(parents=True, exist_ok=True)
        path = src / f"{obj_name}.{language}"
        path.write_text(code)
        if language == "cu":
            cuda.append(path)
        if language == "cpp" and obj_name == name:
            cpp_path = path
        if language == "h" and obj_name == name:
            header = code
    if cpp_path is None or not header:
        raise InternalError(f"DaCe produced no frame code for {name}")
    try:
        init_args, program_args = parse_prototypes(name, header)
    except RuntimeError as exc:
        raise InternalError(str(exc)) from exc
    (build_dir / f"exports_{name}.map").write_text(
        "{\n  global:\n" + "".join(f"    {f}_{name};\n" for f in ("__dace_init", "__dace_exit", "__program"))
        + "  local: *;\n};\n")
    return SideSource(name=name, cpp=cpp_path, init_args=init_args, program_args=program_args, cuda=cuda)


def _generated(sdfg, kept: Optional[Path]) -> List[Tuple[str, str, str]]:
    """DaCe's code objects of ``sdfg`` as (name, language, code), from ``kept`` where DaCe
    generated them before (a cutout is pre of every transformation that matches in it: half
    of NPBench's builds had a pre generated already, a tenth of a second each), else
    generated and kept there."""
    if kept is not None and kept.is_file():
        return [tuple(entry) for entry in json.loads(kept.read_text())]
    try:
        objects = [(obj.name, obj.language, obj.clean_code) for obj in sdfg.generate_code()]
    except Exception as exc:  # DaCe refused to generate code for this SDFG: a build failure
        said = f"{type(exc).__name__}: {exc}"
        raise BuildError(f"DaCe code generation failed for {sdfg.name}: {said}", side=sdfg.name,
                         generator=said[:500]) from exc
    if kept is not None:
        write_atomic(kept, json.dumps(objects).encode())
    return objects


def _ident(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _render_side(side: SideSource, layout: InputLayout) -> Dict[str, object]:
    symbols = {s.name: s for s in layout.symbols}
    containers = {c.name: c for c in layout.containers}

    def by_value(arg: str) -> tuple:
        """(parameter declaration, call expression) of a value argument."""
        if arg in symbols:
            ctype = CTYPES[symbols[arg].dtype]
            return f"{ctype} {arg}", f"({ctype})in.sym_{arg}"
        if arg in containers:  # an input scalar container, passed by value
            ctype = CTYPES[containers[arg].dtype]
            return f"{ctype} {arg}", f"*reinterpret_cast<const {ctype} *>(b.c_{_ident(arg)}.data())"
        raise InternalError(f"{side.name} takes argument {arg!r}, which the input layout does not provide")

    init = [by_value(arg) for arg in side.init_args]
    program_params, program_call = [], []
    for arg, is_pointer in side.program_args:
        if not is_pointer:
            decl, call = by_value(arg)
        elif arg in containers:
            decl, call = f"void *{_ident(arg)}", f"b.c_{_ident(arg)}.data()"
        else:
            raise InternalError(f"{side.name} takes array {arg!r}, which the input layout does not provide")
        program_params.append(decl)
        program_call.append(call)
    return {"name": side.name, "init_params": ", ".join(d for d, _ in init),
            "init_call": ", ".join(c for _, c in init),
            "program_params": program_params, "program_call": program_call}


def _symbol_context(layout: InputLayout) -> List[Dict[str, str]]:
    return [{"name": s.name, "ctype": CTYPES[s.dtype], "lo_cpp": ex.to_cpp(s.lo), "hi_cpp": ex.to_cpp(s.hi),
             "lo_text": str(s.lo), "hi_text": str(s.hi)} for s in layout.symbols]


def _container_context(layout: InputLayout) -> List[Dict[str, object]]:
    out = []
    for c in layout.containers:
        kind = c.kind
        is_float = kind in "fc"
        part = {"complex64": "float", "complex128": "double"}.get(c.dtype, CTYPES[c.dtype])
        if kind in "fc":
            lo = ex.to_cpp(c.lo, as_float=True) if c.lo is not None else "-std::numeric_limits<double>::infinity()"
            hi = ex.to_cpp(c.hi, as_float=True) if c.hi is not None else "std::numeric_limits<double>::infinity()"
        elif kind in "iu":
            lo = ex.to_cpp(c.lo) if c.lo is not None else "INT64_MIN"
            hi = ex.to_cpp(c.hi) if c.hi is not None else "INT64_MAX"
        else:
            lo = hi = "0"
        out.append({
            "name": c.name, "ident": _ident(c.name), "kind": kind, "ctype": CTYPES[c.dtype],
            "part_ctype": part, "itemsize": np.dtype(c.dtype).itemsize, "count_cpp": ex.to_cpp(c.count),
            "lo_cpp": lo, "hi_cpp": hi, "is_float": is_float, "is_complex": kind == "c",
            "offset_choices": c.offset_choices, "pre_writes": c.pre_writes,
            "compare_type": part if kind != "b" else "uint8_t",
        })
    return out


def render_harness(instance_id: str, layout: InputLayout, pre: SideSource, post: SideSource,
                   tolerance: Tolerance, repeat: int = 1, more_posts: Sequence[SideSource] = ()) -> str:
    """The harness source; ``more_posts``: posts besides ``post`` (parameter variants), one
    picked per input by its first byte."""
    env = template_environment()
    pre_ctx = _render_side(pre, layout)
    posts = [_render_side(side, layout) for side in (post, *more_posts)]
    return env.get_template("harness.cpp.j2").render(
        version=__version__, instance_id=instance_id, sides=[pre_ctx, *posts], pre=pre_ctx, post=posts[0],
        posts=posts,
        symbols=_symbol_context(layout), containers=_container_context(layout),
        max_input_bytes=MAX_INPUT_BYTES, float_tiny=repr(float(layout.float_tiny)), offsets=layout.offsets,
        allow_nonfinite=layout.allow_nonfinite, guard_bytes=GUARD_BYTES,
        rtol=repr(float(tolerance.rtol)), atol=repr(float(tolerance.atol)), exact=tolerance.exact,
        rtol32=repr(float(tolerance.rtol32)), atol32=repr(float(tolerance.atol32)),
        cuda=post.on_gpu, repeat=repeat, **protocol.template_context())


# the templates a build is made of (the reproducer and report templates are not)
BUILD_TEMPLATES = ("harness.cpp.j2", "decoder.inc.j2", "expr_helpers.inc.j2", "kernel_side.cu.j2", "fresh_state.h")
# force-included into every side's generated code: each run starts from the same heap contents
FRESH_STATE_HEADER = TEMPLATES / "fresh_state.h"
# (cuda_build.py.inc.j2 belongs to the reproducers, not to builds)


def template_sources() -> str:
    """The build templates' text, for the build cache key."""
    return "".join((TEMPLATES / name).read_text() for name in BUILD_TEMPLATES)
