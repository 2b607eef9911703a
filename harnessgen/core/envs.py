"""Every environment variable harnessgen reads, declared once.

The README's "Environment" section lists the same names (a unit test checks).
"""
from __future__ import annotations

import os
from typing import Dict

KNOBS: Dict[str, str] = {
    "HARNESSGEN_CXX": "C++ compiler for the plain libraries and the replay binary (default clang++)",
    "HARNESSGEN_AFL_CXX": "AFL++ compiler wrapper for the fuzzing harness (default afl-clang-fast++)",
    "HARNESSGEN_AFL_FUZZ": "afl-fuzz executable (default afl-fuzz)",
    "HARNESSGEN_ARCHER": "LLVM's OpenMP ThreadSanitizer tool libarcher.so (default: found beside the compiler)",
    "HARNESSGEN_PROGRAM_CACHE": "where built-in targets cache their parsed SDFGs (default .harnessgen/programs)",
    "HARNESSGEN_NPBENCH": "the NPBench checkout the npbench target runs (default ../shared/npbench where it exists)",
    "HARNESSGEN_DACE_TREE": "the git tree id of the DaCe package that runs (set by harnessgen ci for each revision): "
                            "caches of programs, plans and builds are keyed by it",
    "HARNESSGEN_SHIPPED_PARSES": "1 (default) starts a built-in program's cache from the parse shipped for this "
                                 "source and DaCe (harnessgen/targets/parsed/); 0 always parses",
    "HARNESSGEN_CUT_ALIASES_APART": "tests only: 1 cuts aliased nested-SDFG connectors apart again (an unfaithful "
                                    "cutout, which the whole-program audit must catch)",
    "HARNESSGEN_RTOL": "read by a built harness at start-up: overrides the relative tolerance it was built with",
    "HARNESSGEN_ATOL": "read by a built harness at start-up: overrides the absolute tolerance",
    "HARNESSGEN_EXACT": "read by a built harness at start-up: 1 compares floats bit for bit, 0 uses the tolerance",
    "HARNESSGEN_RTOL32": "read by a built harness at start-up: overrides the relative tolerance's floor for float32 "
                         "values",
    "HARNESSGEN_ATOL32": "read by a built harness at start-up: overrides the absolute tolerance's floor for float32 "
                         "values",
    "HARNESSGEN_STAGES": "read by a built harness at start-up: 1 reports on stderr when pre has finished (triage)",
    "HARNESSGEN_THREADS": "read by a built harness at start-up: OpenMP threads for post (race mode when above 1)",
    "HARNESSGEN_REPEAT": "read by a built harness at start-up: how many times race mode runs post per input",
    "HARNESSGEN_SETUP_DELAY_MS": "read by a built harness at start-up: milliseconds it waits before its first input, "
                                 "as a device's start-up does (to check that afl-fuzz's -t follows the measured "
                                 "first execution)",
    "HARNESSGEN_CUDA_HOME": "a CUDA toolkit to build GPU code with (default: the one `make setup-cuda` puts in the venv)",
    "HARNESSGEN_CUDA_ARCH": "compute capabilities GPU code is built for, e.g. 90 or 80,90 (default 90)",
    "HARNESSGEN_COMPUTE_SANITIZER": "compute-sanitizer executable for GPU race and barrier checks (default: on PATH, "
                                    "then beside nvcc)",
}

DEFAULTS = {
    "HARNESSGEN_CXX": "clang++",
    "HARNESSGEN_AFL_CXX": "afl-clang-fast++",
    "HARNESSGEN_AFL_FUZZ": "afl-fuzz",
    "HARNESSGEN_PROGRAM_CACHE": ".harnessgen/programs",
    "HARNESSGEN_SHIPPED_PARSES": "1",
    "HARNESSGEN_CUDA_ARCH": "90",
}


def get(name: str) -> str:
    """The value of a declared knob (its default when unset)."""
    if name not in KNOBS:
        raise KeyError(f"undeclared environment knob {name}; declare it in harnessgen/envs.py")
    return os.environ.get(name, DEFAULTS.get(name, ""))
