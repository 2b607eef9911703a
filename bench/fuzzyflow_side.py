"""One side of one trial of the FuzzyFlow-style baseline, in a fresh process.

    python bench/fuzzyflow_side.py BUILD_DIR pre|post INPUT.npz OUTPUT.npz

Loads the side's plain shared library through cffi, runs it once on the
inputs of ``INPUT.npz`` (the layout ``DecodedInput.to_npz`` writes) inside
guard zones and writes every container to ``OUTPUT.npz``. This is what a
per-trial grey-box loop pays for every input: interpreter start, NumPy and
cffi import, library load, files in and out. Only numpy and cffi are
imported (``harnessgen/__init__`` imports nothing), as in a reproducer.
"""
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harnessgen.core.runtime import GuardedBuffer, SideLibrary


def main(build_dir: str, side: str, src: str, dst: str) -> int:
    build = Path(build_dir)
    manifest = json.loads((build / "manifest.json").read_text())[side]
    layout = json.loads((build / "layout.json").read_text())
    dtypes = {s["name"]: s["dtype"] for s in layout["symbols"] + layout["containers"]}
    lib = SideLibrary(build / f"lib{side}.so", manifest["name"], manifest["init_args"], manifest["program_args"],
                      dtypes)
    with np.load(src) as data:
        symbols = {k[4:]: int(data[k]) for k in data.files if k.startswith("sym:")}
        offsets = {k[4:]: int(data[k]) for k in data.files if k.startswith("off:")}
        buffers = {k[4:]: GuardedBuffer(data[k], offsets.get(k[4:], 0)) for k in data.files if k.startswith("arr:")}
    if not lib.run(symbols, buffers):
        return 3
    np.savez(dst, **{name: buf.data for name, buf in buffers.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
