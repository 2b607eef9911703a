"""Write one finding as a directory a developer can take anywhere.

``crashes/<target>/<instance>/<finding>/``::

    repro.py            self-contained: rebuilds pre/post from the embedded SDFGs,
                        prints the difference, exits 1 while the bug is present
    input.bin           the minimized fuzzer bytes
    inputs.npz          the decoded inputs (symbols as sym:NAME, containers as arr:NAME)
    pre.sdfg post.sdfg  the cutout before and after the transformation
    transformation.json the transformation's match inside the cutout
    meta.json           the Finding record
    README.md           what differs, where it diverges first, how to run it

The directory is written next to its final place and renamed into it, so a
reader never sees half a finding.
"""
from __future__ import annotations

import base64
import io
import json
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Dict, List, Optional

import jinja2

from .. import __version__
from ..core import runtime
from ..core.procs import call_in_fork
from ..cutout import ordering
from ..core.data import template_environment
from ..cuda import toolkit
from ..cuda.toolkit import uses_gpu
from ..harness.emit import FRESH_STATE_HEADER
from ..inputs.layout import DecodedInput
from ..plan.params import describe as describe_params

RUNTIME_SOURCE = Path(runtime.__file__).resolve()


def pack_text(text: str) -> str:
    """zlib and base64: how a reproducer embeds a text file."""
    return base64.b64encode(zlib.compress(text.encode(), 9)).decode()


def _npz_bytes(decoded: DecodedInput) -> bytes:
    payload = {f"sym:{k}": v for k, v in decoded.symbols.items()}
    payload.update({f"arr:{k}": v for k, v in decoded.arrays.items()})
    payload.update({f"off:{k}": v for k, v in decoded.offsets.items()})
    return npz_bytes(payload)


def npz_bytes(arrays: Dict) -> bytes:
    """An .npz file's bytes (to embed in a reproducer)."""
    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    return buffer.getvalue()


def module_source(path: Path) -> str:
    """A module's source without its docstring (it sits in the middle of a repro.py)."""
    text = Path(path).read_text()
    if text.startswith('"""'):
        text = text[text.index('"""', 3) + 3:].lstrip("\n")
    return text


def runtime_source() -> str:
    return module_source(RUNTIME_SOURCE)


def sdfg_diff(pre, post) -> List[str]:
    """What the transformation changed, in a few readable lines (node labels, map ranges, code)."""
    import dace

    def inventory(sdfg) -> Dict[str, str]:
        items = {}

        def add(key: str, value: str) -> None:
            # several nodes may share a label (a tiled map keeps it for both levels): number them
            n, unique = 1, key
            while unique in items:
                n += 1
                unique = f"{key} #{n}"
            items[unique] = value

        for node, parent in sdfg.all_nodes_recursive():
            if isinstance(node, dace.nodes.MapEntry):
                add(f"map {node.map.label}", ", ".join(
                    f"{p}={b}:{e}:{s}" for p, (b, e, s) in zip(node.map.params, node.map.range.ndrange())))
            elif isinstance(node, dace.nodes.Tasklet):
                add(f"tasklet {node.label}", node.code.as_string.strip().replace("\n", " ")[:160])
            elif isinstance(node, dace.nodes.AccessNode):
                key = f"access {node.data}"
                items[key] = str(int(items.get(key, "0")) + 1)
            elif isinstance(node, dace.sdfg.SDFGState):
                items[f"state {node.label}"] = ""
        return items

    a, b = inventory(pre), inventory(post)
    lines = []
    for key in sorted(set(a) | set(b)):
        if key not in b:
            lines.append(f"- {key}" + (f"  [{a[key]}]" if a[key] and not key.startswith("access") else ""))
        elif key not in a:
            lines.append(f"+ {key}" + (f"  [{b[key]}]" if b[key] and not key.startswith("access") else ""))
        elif a[key] != b[key]:
            what = "accesses" if key.startswith("access") else ""
            lines.append(f"~ {key}: {a[key]} -> {b[key]} {what}".rstrip())
    return lines


def repro_environment() -> jinja2.Environment:
    """The reproducers' templates (rendered as written: Python, whitespace matters)."""
    return template_environment(verbatim=True)


def render_repro(meta: Dict, pre_text: str, post_text: str, decoded: DecodedInput, dtypes: Dict[str, str],
                 cxx: str, cxxflags: List[str], summary: str, reapply: Optional[Dict] = None) -> str:
    """repro.py; ``reapply``: whether applying the transformation again to pre makes the recorded
    post's code (``{"reapplies", "why"}``, what ``check_reapply`` found; not yet asked: no)."""
    reapply = reapply or {"reapplies": False, "why": "not yet checked"}
    spec = meta.get("transformation_spec") or meta["transformation"]
    return repro_environment().get_template("repro.py.j2").render(
        match=repr(json.dumps(meta.get("transformation_json") or {}, default=str)), spec_literal=repr(spec),
        reapplies=bool(reapply["reapplies"]), reapply_why=reapply["why"], reapply_why_literal=repr(reapply["why"]),
        outcome=meta["outcome"], container=meta.get("container"), transformation=meta["transformation"],
        instance=meta["instance"], target=meta["target"], program=meta["program"],
        params=describe_params(meta["params"]) if meta.get("params") else "",
        summary=summary, dace_version=meta["versions"]["dace"], harnessgen_version=meta["versions"]["harnessgen"],
        pre_sdfg=pack_text(pre_text), post_sdfg=pack_text(post_text),
        inputs_npz=base64.b64encode(_npz_bytes(decoded)).decode(), dtypes=repr(dtypes),
        tolerance=repr(meta["tolerance"]), cxx=repr(cxx), cxxflags=repr(cxxflags),
        expected=repr({k: meta.get(k) for k in ("outcome", "container", "index")}), timeout_s=60,
        threads=int(meta.get("threads") or 1), repeat=int(meta.get("repro_runs") or meta.get("runs") or 1),
        runtime_source=runtime_source(), fresh_state=pack_text(FRESH_STATE_HEADER.read_text()),
        **_cuda_context(bool(meta.get("versions", {}).get("cuda"))))


def _cuda_context(gpu: bool) -> Dict:
    """What a reproducer needs to build a GPU side itself (nothing for a CPU-only cutout)."""
    if not gpu or not toolkit.available():
        return {"cuda": None, "cuda_compat": ""}
    return {"cuda": repr({"nvcc_flags": toolkit.dace_nvcc_base_flags(), "built_with": toolkit.find().version}),
            "cuda_compat": pack_text(toolkit.COMPAT_HEADER.read_text())}


def _uses_gpu(sdfg) -> bool:
    try:
        return uses_gpu(sdfg)
    except Exception:   # noqa: BLE001 -- an invalid post may not even be walkable: then no CUDA to build
        return False


def write_static_finding(folder: Path, pair, outcome: str, message: str, cxx: str, cxxflags: List[str]) -> Path:
    """A finding without an input (FAILED_TO_APPLY, INVALID_SDFG, BUILD_FAILURE): the cutout the
    transformation was applied to, what it made (when it made something), and a repro.py that
    applies it again and exits 1 while it still fails. Written atomically, like every finding."""
    import dace

    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    (tmp / "error.txt").write_text(message + "\n")
    (tmp / "transformation.json").write_text(json.dumps(pair.translated_match, indent=1, default=str) + "\n")
    (tmp / "instance.json").write_text(json.dumps(pair.instance.to_json(), indent=1) + "\n")
    # what the cutout takes and gives, and the nested-SDFG connectors it kept as one container
    (tmp / "cutout.json").write_text(json.dumps({"input_config": pair.input_config, "output_config": pair.output_config,
                                                 "aliases": pair.aliases, "grown_for": pair.grown_for},
                                                indent=1) + "\n")
    pair.pre.save(str(tmp / "pre.sdfg"))
    if pair.post is not None:
        try:
            pair.post.save(str(tmp / "post.sdfg"))
        except Exception as exc:  # an invalid post may not even serialize: the error says why
            (tmp / "error.txt").write_text(f"{message}\npost.sdfg not saved: {exc}\n")
    inst = pair.instance
    first_line = message.strip().splitlines()[0] if message.strip() else outcome
    repro = tmp / "repro.py"
    repro.write_text(repro_environment().get_template("static_repro.py.j2").render(
        outcome=outcome, outcome_literal=repr(outcome), transformation=inst.transformation, instance=inst.id,
        params=describe_params(inst.params) if inst.params else "",
        target=inst.target, program=inst.program, summary=first_line[:300], spec=inst.transformation_spec,
        spec_literal=repr(inst.transformation_spec), dace_version=dace.__version__, harnessgen_version=__version__,
        pre_sdfg=pack_text((tmp / "pre.sdfg").read_text()),
        match=repr(json.dumps(pair.translated_match, default=str)), cxx=repr(cxx), cxxflags=repr(cxxflags),
        ordering_literal=ordering.embedded(), unordered_prefix=ordering.UNORDERED,
        **_cuda_context(pair.post is not None and _uses_gpu(pair.post))))
    repro.chmod(0o755)
    publish(tmp, folder)
    return folder


def write_codegen_finding(folder: Path, sdfg, cause, log: str, instance: str, target: str, reduction: str,
                          cxx: str, cxxflags: List[str]) -> Path:
    """A program DaCe cannot build (``codegen_causes.Cause``): program.sdfg, error.txt,
    meta.json, a repro.py that needs only DaCe and a compiler, and BUG.md. Atomic."""
    import dace

    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    sdfg.save(str(tmp / "program.sdfg"))
    (tmp / "error.txt").write_text(log + "\n")
    context = dict(message=cause.message, line=cause.line, first_instance=instance, target=target,
                   dace_version=dace.__version__, harnessgen_version=__version__, cxx=cxx, reduction=reduction,
                   program=getattr(cause, "program", ""))
    meta = {**cause.to_json(), "instance": instance, "outcome": "CODEGEN_FAILURE", "target": target, "dace": dace.__version__,
            "harnessgen": __version__, "compiler": cxx, "flags": cxxflags, "reduction": reduction}
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    env = repro_environment()
    repro = tmp / "repro.py"
    repro.write_text(env.get_template("codegen_repro.py.j2").render(
        summary=f"{cause.message}", program_sdfg=pack_text((tmp / "program.sdfg").read_text()),
        cxxflags=repr(cxxflags), message_literal=repr(cause.message), **{**context, "cxx": repr(cxx)}))
    repro.chmod(0o755)
    (tmp / "BUG.md").write_text(env.get_template("codegen_bug.md.j2").render(log=log[-3000:], **context))
    publish(tmp, folder)
    return folder


# how long asking a reproducer whether the transformation applied again makes the recorded post
# may take (DaCe's import, one apply, two code generations)
REAPPLY_CHECK_S = 300


def check_reapply(repro: Path) -> Dict:
    """Ask ``repro`` (not yet published) whether the transformation, applied again to its pre with
    this DaCe, makes the recorded post's very code: only then may the reproducer make post again
    under another DaCe and stand for the bug ({"reapplies": bool, "why": str})."""
    out = repro.with_name(".reapply.json")
    answered, answer = _check_reapply_in_fork(repro, out)
    if answered:
        return answer
    try:
        proc = subprocess.run([sys.executable, repro.name, "--check-reapply", out.name], cwd=repro.parent,
                              capture_output=True, text=True, timeout=REAPPLY_CHECK_S)
        if proc.returncode == 0 and out.is_file():
            return json.loads(out.read_text())
        said = (proc.stderr or proc.stdout).strip().splitlines() or [f"exit status {proc.returncode}"]
        return {"reapplies": False, "why": f"asking whether it applies again failed ({said[-1][:200]})"}
    except subprocess.TimeoutExpired:
        return {"reapplies": False, "why": f"applying it again took longer than {REAPPLY_CHECK_S} s"}
    finally:
        out.unlink(missing_ok=True)


def _check_reapply_in_fork(repro: Path, out: Path):
    """``check_reapply`` asked of the reproducer's own code in a child forked from this process,
    which holds DaCe already: a new interpreter spent most of the second it took importing it,
    once per finding. DaCe's configuration here is its default, as in the new interpreter
    (harnessgen changes none of it in the processes that triage). (False, None) where the
    child gave no answer: the caller asks a new interpreter."""
    def ask() -> Dict:
        namespace = runpy.run_path(str(repro.resolve()), run_name="harnessgen_reapply_check")
        out_path = out.resolve()
        namespace["check_reapply"](str(out_path))
        return json.loads(out_path.read_text())

    try:
        return call_in_fork(ask, timeout=REAPPLY_CHECK_S)
    finally:
        out.unlink(missing_ok=True)


def publish(tmp: Path, folder: Path) -> None:
    """Move a finished finding directory into place, replacing an older one."""
    if folder.exists():
        old = folder.with_name(f".{folder.name}.old-{os.getpid()}")
        os.rename(folder, old)
        os.rename(tmp, folder)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, folder)


def staging_dir(folder: Path, data: bytes) -> Optional[Path]:
    """A new empty sibling of ``folder`` to fill and ``publish``; None when ``folder`` already
    holds the same finding with a smaller input (it is kept)."""
    existing = folder / "input.bin"
    if existing.is_file() and len(existing.read_bytes()) < len(data):
        return None
    folder.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))


def write_finding(folder: Path, meta: Dict, build_dir: Path, data: bytes, decoded: DecodedInput,
                  dtypes: Dict[str, str], cxx: str, cxxflags: List[str], summary: str, readme: str) -> Path:
    """Write the finding directory atomically; an existing one with a smaller input is kept."""
    folder = Path(folder)
    tmp = staging_dir(folder, data)
    if tmp is None:
        return folder
    pre_text = (Path(build_dir) / "pre.sdfg").read_text()
    post_text = (Path(build_dir) / "post.sdfg").read_text()
    (tmp / "input.bin").write_bytes(data)
    decoded.to_npz(tmp / "inputs.npz")
    (tmp / "pre.sdfg").write_text(pre_text)
    (tmp / "post.sdfg").write_text(post_text)
    shutil.copy(Path(build_dir) / "transformation.json", tmp / "transformation.json")
    repro = tmp / "repro.py"
    repro.write_text(render_repro(meta, pre_text, post_text, decoded, dtypes, cxx, cxxflags, summary))
    meta = {**meta, "reapply": check_reapply(repro)}
    repro.write_text(render_repro(meta, pre_text, post_text, decoded, dtypes, cxx, cxxflags, summary, meta["reapply"]))
    repro.chmod(0o755)
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    (tmp / "README.md").write_text(readme)
    publish(tmp, folder)
    return folder
