"""Build once, at setup, what every later build shares: the precompiled headers of DaCe's
runtime and of the harness, for the plain (at -O2 and, replay only, -O0), the AFL and the
CMPLOG compilers (``build.header_pch``). ``make setup`` runs ``python -m harnessgen.harness.warm``.

Without it, the first instances of a fresh clone's first run build those headers themselves,
each worker its own copy at once (about 10 s on two cores), and the first verdict waits on
them. A small kernel's cutout, built as an instance is, makes every one of them. Warming
only saves time: any failure is printed and setup goes on, and a build finds out itself
whatever is missing."""
from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

# a pattern transformation with a match in a small kernel: one map, one state
PROGRAM, TRANSFORMATION = "elementwise_chain", "MapTiling"


def warm(work_dir: Path) -> float:
    """Build the kernel's first instance (for replay only, and with the AFL and CMPLOG
    harnesses) under ``work_dir``; its seconds."""
    from ..cutout.changes import load_change
    from ..cutout.extract import extract
    from ..plan.params import ParamOptions
    from ..targets import resolve
    from .judge import JudgeOptions, prepare

    started = time.monotonic()
    target, _ = resolve("kernels")
    program = target.programs[PROGRAM]
    change = load_change(TRANSFORMATION)
    [first, *_] = change.instances(target, [program], lambda name, simplified: target.programs[name].sdfg(simplified),
                                   None, ParamOptions())
    pair = extract(program.sdfg(True), first, change.cls)
    # a pair a proof settles is built for replay only, its harness at -O0: a PCH of its own
    # (the first instances of CLOUDSC are such pairs)
    for afl in (False, True):
        prepare(pair, JudgeOptions(work_dir=work_dir, afl=afl, cmplog=afl))
    return time.monotonic() - started


# the README's first command judges this target: its program read once at setup (its shipped
# parse, JSON, takes seconds; every later read is of a pickle kept beside it); and NPBench's
# programs where a checkout is there (parsing its 41 takes about 20 s, which the first verdict
# of ``make fuzz TARGET=npbench`` would otherwise wait for)
MAIN_TARGET = "cloudsc"
READ_AHEAD = (MAIN_TARGET, "npbench")


def warm_main_target(name: str = MAIN_TARGET) -> float:
    """Read a target's programs once (``targets.loaders.read_cached`` keeps their pickles);
    their seconds. A program that cannot be read is left to the run, which says why."""
    from ..targets import resolve

    started = time.monotonic()
    target, _ = resolve(name)
    for program in target.programs.values():
        try:
            program.sdfg(True)
        except Exception:  # noqa: BLE001 -- only saves time: the run reads it itself and says what fails
            continue
    return time.monotonic() - started


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    work_dir = Path(argv[0]) if argv else Path(".harnessgen")
    warnings.simplefilter("ignore")      # DaCe's, about modules this setup does not use
    try:
        seconds = warm(work_dir)
    except Exception as exc:  # noqa: BLE001 -- warming only saves time; the first real build says what fails
        print(f"warming the build cache failed ({type(exc).__name__}: {str(exc)[:300]}); the first builds "
              "will make what it would have", file=sys.stderr)
        return 0
    print(f"build cache warm (precompiled headers for every compiler) in {seconds:.1f} s")
    for name in READ_AHEAD:
        try:
            print(f"{name} read once (its parse kept for every run) in {warm_main_target(name):.1f} s")
        except Exception as exc:  # noqa: BLE001 -- only saves time: the first run reads it itself
            print(f"reading {name} ahead: not done ({type(exc).__name__}: {str(exc)[:300]})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
