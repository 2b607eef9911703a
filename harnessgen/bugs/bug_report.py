"""``BUG.md`` per distinct bug: the report a developer files in the compiler's tracker.

Versions, the transformation with its properties and where it matched, the smallest program
and input that show the bug, expected and actual, and the one command that reproduces it
(``repro.py`` of the representative finding), written to ``<out>/bugs/<id>/BUG.md``.
"""
from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Dict, List, Tuple

from .. import __version__
from ..core.data import template_environment
from ..core.files import write_atomic
from ..harness.build import compiler_versions
from ..plan.instances import load_transformation
from .builder import python_builder
from .cluster import CODEGEN_FAILURE, STATIC_VERDICTS, Bug, load_json
from .signature import first_compiler_error

BUGS_DIR = "bugs"


def properties(spec: str, match: Dict) -> List[Tuple[str, str]]:
    """The transformation's declared properties, each with the value of this match (its default
    unless the match sets it)."""
    try:
        cls = load_transformation(spec)
    except Exception:  # noqa: BLE001 -- a report without the property table, not no report
        return sorted((k, json.dumps(v)) for k, v in match.items() if not k.startswith("_") and k not in
                      ("type", "transformation", "cfg_id", "sdfg_id", "state_id", "expr_index"))
    from dace.transformation.transformation import PatternTransformation

    bookkeeping = set(getattr(PatternTransformation, "__properties__", {}))    # where it matched, not how
    out = []
    for name, prop in sorted(getattr(cls, "__properties__", {}).items()):
        if name in bookkeeping or name.startswith("_"):
            continue
        value = match.get(name, getattr(prop, "default", None))
        out.append((name, json.dumps(value, default=str)))
    return out


def _versions(meta: Dict) -> Dict:
    import dace

    given = meta.get("versions") or {}
    compilers = given.get("compilers") or {}
    if not compilers:
        try:
            compilers = {k: v for k, v in compiler_versions(False).items() if v}
        except Exception:  # noqa: BLE001 -- no compiler found: the table says nothing of it
            compilers = {}
    return {"dace": given.get("dace", dace.__version__), "harnessgen": given.get("harnessgen", __version__),
            "compilers": compilers, "python": platform.python_version()}


def _expected_actual(bug: Bug, folder: Path, meta: Dict) -> List[str]:
    kind = bug.signature.kind
    if kind in STATIC_VERDICTS:
        error = (folder / "error.txt").read_text() if (folder / "error.txt").is_file() else ""
        first = error.strip().splitlines()[0] if error.strip() else kind
        expected = {"FAILED_TO_APPLY": "the transformation applies", "INVALID_SDFG": "a valid SDFG",
                    "BUILD_FAILURE": "code that compiles"}[kind]
        lines = [f"Expected {expected}; got:", "", "```", first[:2000], "```"]
        if kind == "BUILD_FAILURE":
            lines += ["", f"The compiler's first error: `{first_compiler_error(error) or '(none found)'}`"]
        return lines
    lines = ["Expected post to compute what pre computes on this input; got:", "", f"    {meta.get('summary', kind)}"]
    if meta.get("container") and meta.get("pre_value") is not None:
        lines += ["", f"`{meta['container']}[{', '.join(map(str, meta.get('index') or []))}]`: expected (pre) "
                      f"`{meta['pre_value']}`, actual (post) `{meta['post_value']}`; {meta.get('differing')} of "
                      f"{meta.get('total')} elements differ."]
    if (meta.get("divergence") or {}).get("container") and meta["divergence"].get("node"):
        d = meta["divergence"]
        lines += ["", f"First divergence along the dataflow: `{d['container']}` written by `{d['node']}` in state "
                      f"`{d['state']}`."]
    stack = load_json(folder / "stack.json") or {}
    if stack:
        lines += ["", f"Post dies of {stack.get('signal')} ({stack.get('fault')}) at `{stack.get('instruction')}` in "
                      + " < ".join(f"`{f}`" for f in stack.get("frames", [])) + "."]
    return lines


def shown_path(path: Path) -> str:
    """A path as a user types it from where they run harnessgen: relative below the working
    directory, absolute elsewhere."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative


# what each Python-level compiler is compared with, and what its reproducer needs
PY_REFERENCES = {"dace": ("the Python function run under NumPy", "DaCe"),
                 "torch": ("eager PyTorch (and float64 where the program is float)", "PyTorch")}


def _write_builder(sdfg_file: Path, target: Path, bug_id: str) -> str:
    """builder.py for the bug's program where one can be written; its source ("" where not)."""
    import dace

    if not sdfg_file.is_file():
        return ""
    source = python_builder(dace.SDFG.from_file(str(sdfg_file)), bug_id) or ""
    if source:
        write_atomic(target, source.encode())
    elif target.is_file():
        target.unlink()
    return source


def write_bug_report(bug: Bug, out_dir: Path) -> Path:
    """``<out_dir>/bugs/<id>/BUG.md`` for one bug."""
    rep = bug.representative
    folder = rep.path
    meta = load_json(folder / "meta.json") or {}
    if "compiler" in meta and "signature" in meta:
        return _write_py_report(bug, out_dir, folder, meta)
    if meta.get("outcome") == CODEGEN_FAILURE:
        return _copy_codegen_report(bug, out_dir, folder)
    instance = load_json(folder / "instance.json") or {}
    match = load_json(folder / "transformation.json") or instance.get("match", {})
    spec = instance.get("transformation_spec") or meta.get("transformation_spec") or bug.signature.transformation
    record = bug.to_json()
    reduced = bug.reduction or {}
    target = Path(out_dir) / BUGS_DIR / bug.id / "BUG.md"
    program_dir = Path(reduced["folder"]) if reduced.get("folder") else folder
    builder = _write_builder(program_dir / "pre.sdfg", target.with_name("builder.py"), bug.id)
    text = template_environment().get_template("bug.md.j2").render(
        bug={**record, "signature": record["signature"]}, headline=bug.signature.describe(),
        rep_dir=shown_path(folder), repro_dir=shown_path(Path(reduced["folder"])) if reduced.get("folder") else
        shown_path(folder), reduction=reduced, static=bug.signature.kind in STATIC_VERDICTS,
        versions=_versions(meta), spec=spec, properties=properties(spec, match),
        match=json.dumps(match, indent=1, default=str), has_post=(folder / "post.sdfg").is_file(),
        symbols=", ".join(f"{k}={v}" for k, v in (meta.get("symbols") or {}).items()),
        expected_actual=_expected_actual(bug, folder, meta),
        members=[{**m, "shown": shown_path(Path(m["path"]))} for m in record["members"]],
        builder=builder, builder_path=shown_path(target.with_name("builder.py")),
        confirm_dir=shown_path(target.with_name("confirm")),
        reapply=(load_json(program_dir / "meta.json") or {}).get("reapply") or {})
    write_atomic(target, text.encode())
    return target


def _copy_codegen_report(bug: Bug, out_dir: Path, folder: Path) -> Path:
    """A program DaCe cannot build: the BUG.md its finding carries (the reduced one's, once
    reduced), with the instances it blocked."""
    reduced = (bug.reduction or {}).get("folder")
    source = Path(reduced) / "BUG.md" if reduced and (Path(reduced) / "BUG.md").is_file() else folder / "BUG.md"
    text = source.read_text() + f"\nReproducer folder: `{shown_path(source.parent)}`.\n"
    target = Path(out_dir) / BUGS_DIR / bug.id / "BUG.md"
    write_atomic(target, text.encode())
    return target


def write_bug_reports(bugs: List[Bug], out_dir: Path) -> List[Path]:
    return [write_bug_report(bug, out_dir) for bug in bugs]


def _write_py_report(bug: Bug, out_dir: Path, folder: Path, meta: Dict) -> Path:
    """BUG.md of a Python-level compiler's bug (pyfuzz): the program, the comparison used."""
    reference, needs = PY_REFERENCES.get(meta["compiler"], (f"{meta['compiler']}'s reference", meta["compiler"]))
    source = (folder / "program.py").read_text().rstrip() if (folder / "program.py").is_file() else ""
    target = Path(out_dir) / BUGS_DIR / bug.id / "BUG.md"
    record = bug.to_json()
    text = template_environment().get_template("bug_py.md.j2").render(
        bug=record, headline=bug.signature.describe(), compiler=bug.signature.transformation,
        rep_dir=shown_path(folder), versions={k: v for k, v in (meta.get("versions") or {}).items()},
        tool=meta.get("tool", "").replace("harnessgen ", ""), python=platform.python_version(), reference=reference, needs=needs,
        tolerance=meta.get("tolerance") or {"rtol": "?", "atol": "?", "exact": False}, passes=meta.get("passes") or [],
        verdict=meta.get("verdict") or {}, statements=bug.representative.size[1], shrink=meta.get("shrink") or {},
        source=source, difference=json.dumps((meta.get("verdict") or {}).get("difference"), indent=1, default=str))
    write_atomic(target, text.encode())
    return target
