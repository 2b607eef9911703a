"""A kernel finding as a directory a developer can take to any machine with a GPU::

    repro.py      pycuda replay: the kernel's source, inputs and reference outputs embedded;
                  launches with the recorded geometry, exits 1 while the bug is present
    input.bin     the fuzzer bytes (``harness_replay input.bin`` in the build replays it too)
    inputs.npz    the decoded inputs;  expected.npz  the reference's outputs
    kernel/       the kernel's sources and manifest
    meta.json     the finding record (with the synchronization evidence)
    README.md
"""
from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Dict

import numpy as np

from .. import __version__
from ..core import expr as ex
from ..core.data import template_environment
from ..core.runtime import Tolerance
from ..inputs.layout import DecodedInput
from ..triage.reproducer import npz_bytes, pack_text, publish, runtime_source, staging_dir


def _manifest(build_dir: Path) -> Dict:
    return json.loads((Path(build_dir) / "transformation.json").read_text())


def launch_geometry(build_dir: Path, symbols: Dict[str, int]) -> Dict:
    """Grid, block and shared bytes of the launch for these symbol values."""
    manifest = _manifest(build_dir)
    env = {k: int(v) for k, v in symbols.items()}

    def dims(key):
        values = [int(ex.evaluate(ex.parse(d), env)) for d in manifest[key]]
        return values + [1] * (3 - len(values))

    return {"grid": dims("grid"), "block": dims("block"),
            "shared_bytes": int(ex.evaluate(ex.parse(manifest.get("shared_bytes", 0)), env))}


def render_repro(meta: Dict, build_dir: Path, decoded: DecodedInput, expected: Dict[str, np.ndarray]) -> str:
    manifest = _manifest(build_dir)
    kernel_dir = Path(build_dir) / "kernel"
    files = {p.name: pack_text(p.read_text()) for p in sorted(kernel_dir.iterdir()) if p.suffix != ".json"}
    symbols = {k: int(v) for k, v in decoded.symbols.items()}
    args = [[a["name"], a["role"], a["dtype"],
             int(ex.evaluate(ex.parse(a["value"]), symbols)) if a["role"] == "value" else None]
            for a in manifest["args"]]
    outputs = {a["name"]: expected[a["name"]] for a in manifest["args"] if a["role"] in ("out", "inout")}
    launch = meta["launch"]
    env = template_environment()
    env.filters["pyrepr"] = repr        # Python literals (tojson would write null and true)
    return env.get_template("kernel_repro.py.j2").render(
        summary=meta["summary"], version=__version__, instance=meta["instance"], kernel=manifest["kernel"],
        source=manifest["source"], files=files, grid=launch["grid"], block=launch["block"],
        shared=launch["shared_bytes"], args=args, outcome=meta["outcome"],
        inputs_npz=base64.b64encode(npz_bytes({f"arr:{k}": v for k, v in decoded.arrays.items()})).decode(),
        expected_npz=base64.b64encode(npz_bytes(outputs)).decode(),
        tolerance=Tolerance.from_json(meta["tolerance"]).to_json(), runtime_source=runtime_source(),
        runs=meta["synchronization"]["repeated_runs"]["runs"])


def _readme(meta: Dict) -> str:
    sync = meta["synchronization"]
    lines = [f"# {meta['outcome']} in CUDA kernel `{meta['kernel']['kernel']}`", "", meta["summary"], "",
             f"- launch: grid {tuple(meta['launch']['grid'])}, block {tuple(meta['launch']['block'])}, "
             f"{meta['launch']['shared_bytes']} bytes of dynamic shared memory",
             f"- symbols: {', '.join(f'{k}={v}' for k, v in meta['symbols'].items())}",
             f"- repeated runs: {sync['repeated_runs']['differing']} of {sync['repeated_runs']['runs']} differ "
             f"from the reference"]
    for report in sync.get("sanitizer") or []:
        lines.append(f"- compute-sanitizer {report['tool']}: {report['errors']} error(s)"
                     + (f" at {', '.join(report['locations'])}" if report["locations"] else ""))
    if sync.get("sanitizer_missing"):
        lines.append(f"- compute-sanitizer: {sync['sanitizer_missing']}")
    lines += ["", "Replay: `python3 repro.py` (needs a GPU and pycuda; exits 1 while the bug is present).", ""]
    return "\n".join(lines)


def write_kernel_finding(folder: Path, meta: Dict, build_dir: Path, data: bytes, decoded: DecodedInput,
                         expected: Dict[str, np.ndarray]) -> Path:
    """Written next to its place and renamed into it; an existing finding with a smaller input stays."""
    folder = Path(folder)
    tmp = staging_dir(folder, data)
    if tmp is None:
        return folder
    (tmp / "input.bin").write_bytes(data)
    decoded.to_npz(tmp / "inputs.npz")
    (tmp / "expected.npz").write_bytes(npz_bytes(expected))
    shutil.copytree(Path(build_dir) / "kernel", tmp / "kernel")
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    repro = tmp / "repro.py"
    repro.write_text(render_repro(meta, build_dir, decoded, expected))
    repro.chmod(0o755)
    (tmp / "README.md").write_text(_readme(meta))
    publish(tmp, folder)
    return folder
