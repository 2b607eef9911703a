"""The process Atheris runs: ``python -m harnessgen.pyfuzz.target [options] -- [libFuzzer flags]``.

The engine (``engines/atheris.py``) starts it; users start ``harnessgen pyfuzz``.
Only the compiler's own passes are instrumented (``--instrument``), after a
warm-up compile has imported what the compiler imports lazily.

libFuzzer's ``-fork`` and ``-jobs`` start its own argv[0] again with its flags;
argv[0] is therefore ``<out>/target.sh``, which runs this module with the same
options (each such process warms up and instruments on its own).
"""
from __future__ import annotations

import argparse
import gc
import os
import shlex
import stat
import sys
import time
import types
from pathlib import Path
from typing import List, Sequence

from ..core.files import write_atomic
from ..core.runtime import Tolerance
from .compilers import get_compiler
from .generator import MODES, GenOptions
from .mutations import FAMILIES
from .session import Session, SessionOptions


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harnessgen.pyfuzz.target")
    p.add_argument("--compiler", required=True)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--mode", choices=MODES, default="strict")
    p.add_argument("--unguided", action="store_true")
    p.add_argument("--max-stmts", type=int, default=8)
    p.add_argument("--dims", default="1-8")
    p.add_argument("--mutations", default=",".join(FAMILIES))
    p.add_argument("--max-mutations", type=int, default=3)
    p.add_argument("--pass", dest="passes", action="append", default=[])
    p.add_argument("--compile-modes", default="")
    p.add_argument("--instrument", default=None)
    p.add_argument("--rtol", type=float, default=Tolerance.rtol)
    p.add_argument("--atol", type=float, default=Tolerance.atol)
    return p


def dims(text: str):
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


def instrument(prefixes: Sequence[str]) -> int:
    """Atheris instrumentation for every function already imported from ``prefixes``."""
    import atheris

    prefixes = tuple(prefixes)
    if not prefixes:
        return 0
    # type(), not isinstance(): gc also holds weak proxies, and isinstance() on a dead one raises
    functions = [o for o in gc.get_objects() if type(o) is types.FunctionType
                 and (getattr(o, "__module__", None) or "").startswith(prefixes)]
    count = 0
    for function in functions:
        try:
            atheris.instrument_func(function)
            count += 1
        except Exception:        # builtins and functions atheris cannot patch stay uninstrumented
            pass
    return count


def session_options(args) -> SessionOptions:
    lo, hi = dims(args.dims)
    families = tuple(f for f in args.mutations.split(",") if f)
    return SessionOptions(
        generation=GenOptions(compiler=args.compiler, mode=args.mode, guided=not args.unguided,
                              max_stmts=args.max_stmts, min_dim=lo, max_dim=hi),
        families=families, max_mutations=args.max_mutations,
        tolerance=Tolerance(rtol=args.rtol, atol=args.atol))


def relaunch_script(out: Path, ours: List[str]) -> Path:
    """An executable that runs this target again with ``ours`` and the flags it is given."""
    command = [sys.executable, "-m", "harnessgen.pyfuzz.target", *ours]
    script = out / "target.sh"
    write_atomic(script, (f"#!/bin/sh\ncd {shlex.quote(os.getcwd())} && exec "
                          f"{' '.join(shlex.quote(c) for c in command)} -- \"$@\"\n").encode())
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def main(argv: List[str]) -> None:
    ours, libfuzzer = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = parser().parse_args(ours)
    import atheris

    compiler = get_compiler(args.compiler, args.out / "work", args.passes,
                            [m for m in args.compile_modes.split(",") if m])
    compiler.warm_up()
    prefixes = compiler.instrument_prefixes() if args.instrument is None else [p for p in args.instrument.split(",") if p]
    started = time.time()
    count = instrument(prefixes)
    print(f"harnessgen: instrumented {count} functions of {', '.join(prefixes) or 'nothing'} "
          f"in {time.time() - started:.1f} s", file=sys.stderr, flush=True)
    session = Session(compiler, args.out, session_options(args))
    atheris.Setup([str(relaunch_script(args.out, ours))] + libfuzzer, session.test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv[1:])
