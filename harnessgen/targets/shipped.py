"""Write the parsed built-in programs that ship with harnessgen, for the running DaCe:
``python -m harnessgen.targets.shipped`` (``make shipped-parses`` runs it on every pinned DaCe).

A fresh machine then starts ``make fuzz TARGET=cloudsc`` from these files instead of a minute
of DaCe's frontend (``loaders._install_shipped``). Each file is what the program cache holds
after a parse, compressed; its name carries the cache key (the program's source, its preparation,
DaCe's version), so an edit to any of them makes it unused until it is written again
(``tests/unit/test_shipped_parses.py`` says when)."""
from __future__ import annotations

import lzma
import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import cloudsc
from .loaders import SHIPPED, shipped_parse

# label -> the builder that parses (and caches) both of its forms
SHIPPED_PROGRAMS = {"cloudsc": cloudsc.build_sdfg}


def write(out=sys.stdout) -> None:
    import dace

    folder = shipped_parse("x", dace.__version__).parent
    with tempfile.TemporaryDirectory(prefix="hg-parses-") as tmp:
        os.environ["HARNESSGEN_PROGRAM_CACHE"] = tmp
        os.environ["HARNESSGEN_SHIPPED_PARSES"] = "0"      # a parse of its own, never the old files
        for label, build in SHIPPED_PROGRAMS.items():
            print(f"parsing {label} on DaCe {dace.__version__} ...", file=out, flush=True)
            build(True)
            build(False)
        made = sorted(Path(tmp).glob("*.sdfg"))
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for path in made:
            target = shipped_parse(path.name, dace.__version__)
            with open(path, "rb") as src, lzma.open(target, "wb", preset=9) as dst:
                shutil.copyfileobj(src, dst)
            print(f"wrote {target.relative_to(SHIPPED.parents[2])} "
                  f"({target.stat().st_size // 1024} KiB)", file=out, flush=True)


if __name__ == "__main__":
    write()
