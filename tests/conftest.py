"""Shared fixtures. Builds go to one content-addressed cache shared by every test and
xdist worker (``.harnessgen/test-builds``), so each cutout is compiled once per machine."""
from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import pytest

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = Path(__file__).resolve().parent / "programs"
BUILD_CACHE = REPO / ".harnessgen" / "test-builds"


def pytest_collection_modifyitems(config, items):
    """A test marked ``dace_102`` asserts what DaCe 1.0.2 itself does: on another DaCe it is
    skipped with that reason, never silently; ``make test`` runs it on 1.0.2 (test-other-dace)."""
    import dace

    if dace.__version__ == "1.0.2":
        return
    skip = pytest.mark.skip(reason=f"asserts what DaCe 1.0.2 itself does (this is {dace.__version__}); "
                                   f"make test-other-dace runs it on 1.0.2")
    for item in items:
        if item.get_closest_marker("dace_102"):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def fresh_cuts():
    """A worker keeps the cutouts of its last places for the next variant there: a test that
    patches how cutouts are made must not get one made before it."""
    from harnessgen.cutout import extract

    extract._CUTS_AT.clear()
    yield
    extract._CUTS_AT.clear()


@pytest.fixture(autouse=True)
def subnormals_survive():
    """Fail the test that leaves this worker flushing subnormals to zero (a library built with
    -ffast-math does that on load): every NumPy oracle that runs after it would be wrong."""
    yield
    tiny = float.fromhex("0x0.0000000000001p-1022")
    assert tiny > 0.0 and tiny * 2.0 > tiny, "this test loaded code that sets flush-to-zero"


@contextlib.contextmanager
def cores_to_myself():
    """Tests that take both cores (campaigns, parallel afl-fuzz) and tests whose races need a
    free core take turns: they hold one lock file, whichever xdist worker runs them."""
    lock = REPO / ".harnessgen" / "cores.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture
def exclusive_cores():
    with cores_to_myself():
        yield


QUIET_TURNSTILE = REPO / ".harnessgen" / "quiet.turnstile"
QUIET_LOCK = REPO / ".harnessgen" / "quiet.lock"


@contextlib.contextmanager
def _flocked(path: Path, mode: int):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def quiet_machine_when_marked(request):
    """A test marked ``quiet_machine`` runs with no other test beside it, on any xdist worker: a
    race shows only where the threads of a parallel region really run at once, which a test on
    the other core prevents. Every other test holds the machine shared; a quiet test waiting
    holds the turnstile, so tests that start later wait behind it instead of starving it."""
    quiet = request.node.get_closest_marker("quiet_machine") is not None
    turnstile = _flocked(QUIET_TURNSTILE, fcntl.LOCK_EX)
    turnstile.__enter__()
    try:
        with _flocked(QUIET_LOCK, fcntl.LOCK_EX if quiet else fcntl.LOCK_SH):
            if not quiet:      # a quiet test keeps the turnstile: nothing starts until it ends
                turnstile.__exit__(None, None, None)
                turnstile = None
            yield
    finally:
        if turnstile is not None:
            turnstile.__exit__(None, None, None)


@pytest.fixture(scope="session")
def build_cache() -> Path:
    from harnessgen.core.files import clear_stale_omp_registrations

    clear_stale_omp_registrations()      # earlier runs' aborts must not make this one's processes die
    BUILD_CACHE.mkdir(parents=True, exist_ok=True)
    return BUILD_CACHE


@functools.lru_cache(maxsize=None)
def kernels():
    from harnessgen.targets import resolve

    target, _ = resolve("kernels")
    return target


@functools.lru_cache(maxsize=None)
def program_sdfg(name: str):
    return kernels().programs[name].build()


def instances_of(program: str, spec: str, settings=None):
    """(the class, its instances in a kernel): a pattern transformation's matches, or the SDFGs
    a pass changes."""
    from harnessgen.cutout.changes import Patterns, load_change
    from harnessgen.plan.params import ParamOptions

    change = load_change(spec)
    target = kernels()
    if isinstance(settings, dict):      # {name: value} as --set NAME=VALUE would give them
        settings = [f"{k}={json.dumps(list(v) if isinstance(v, tuple) else v)}" for k, v in settings.items()]
    insts = change.instances(target, [target.programs[program]],
                             lambda name, simplified: target.programs[name].sdfg(simplified), settings, ParamOptions())
    return (change.cls if isinstance(change, Patterns) else change.pspec.cls), insts


def make_pair(program: str, spec: str, pick=lambda inst: True, settings=None):
    """The cutout pair of the first instance of ``spec`` in ``program`` that ``pick`` accepts."""
    from harnessgen.cutout.extract import extract

    cls, insts = instances_of(program, spec, settings)
    inst = next(i for i in insts if pick(i))
    return extract(program_sdfg(program), inst, cls)


def layout_of(pair, **kwargs):
    from harnessgen.inputs.constraints import derive
    from harnessgen.inputs.layout import build_layout

    return build_layout(pair, derive(pair, **kwargs))


def run_cli(args: List[str], tmp: Path, timeout: float = 900, env: Optional[dict] = None,
            work_dir: Path = BUILD_CACHE):
    """Run the ``harnessgen`` console script with every output directory under ``tmp`` (builds
    in the shared cache unless ``work_dir`` says where)."""
    cmd = [str(Path(sys.executable).with_name("harnessgen")), *args]
    if args and args[0] in ("fuzz", "recipe"):
        cmd += ["--out", str(tmp / "out"), "--work-dir", str(work_dir),
                "--corpus-dir", str(tmp / "corpus"), "--crashes-dir", str(tmp / "crashes"), "--no-progress"]
        if "--reduce-time" not in args:      # reducing the bugs' programs is tested where it is asked for
            cmd += ["--reduce-time", "0"]
        cmd += ["--no-plots"]                  # the report's plots: tests/unit/test_campaign_state.py, test_campaign
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env={**os.environ, **(env or {})})
    return proc


def summary_of(tmp: Path) -> dict:
    return json.loads((tmp / "out" / "summary.json").read_text())


def scatter_missing_constraint(cache: Path):
    """y[idx[i]] = ... built as if the analysis had missed that idx indexes y: pre can fail on its own."""
    from harnessgen.core import expr as ex
    from harnessgen.cutout.extract import whole_program_pair
    from harnessgen.harness.build import build
    from harnessgen.inputs.constraints import Range, derive
    from harnessgen.inputs.layout import build_layout
    from harnessgen.targets.loaders import load_python_program

    program = load_python_program(PROGRAMS / "scatter.py", "scatter").programs["scatter"].build()
    pair = whole_program_pair(program, "scatter-missing-constraint")
    constraints = derive(pair)
    constraints.values["idx"] = Range(ex.parse("0"), ex.parse("M + 40"), "missing constraint", "default")
    layout = build_layout(pair, constraints)
    return layout, build(pair, layout, cache, afl=False)


def in_a_fresh_process(function):
    """``function()`` (a module-level function, its result picklable) in a fresh interpreter:
    one thread, as a campaign worker is. A test process may hold threads other tests left
    (Dask's, for one), and ``call_in_fork`` never forks such a process."""
    import concurrent.futures as cf
    import multiprocessing

    with cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(function).result()
