"""Replay an input through cffi: decode with NumPy, run libpre/libpost, compare.

``replay(build_dir, data)`` runs the replay in a child process, so a post that
segfaults or hangs cannot take the tool down, and classifies the result:
``PASS``, ``MISMATCH``, ``OOB_WRITE``, ``POST_CRASH``, ``POST_HANG`` or
``INVALID_INPUT`` (pre itself failed: a missing constraint, not a bug of the
transformation). ``ReplayWorker`` keeps one child for many inputs (triage).
The child reports its progress on stdout, one JSON object a line, so the
parent knows whether pre had finished when it died.

``python -m harnessgen.harness.replay --serve BUILD_DIR`` is the child.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from ..core.errors import Unsupported
from ..core.outcome import Outcome
from ..core.procs import die_with_parent
from ..core.runtime import GuardedBuffer, SideLibrary, Tolerance, compare, first_corrupted, set_threads
from ..inputs.layout import DecodedInput, InputLayout
from .built import HarnessBuild

DEFAULT_TIMEOUT_S = 20.0
# the server's line where the child that answered a request died before its result
DIED = "died"


@dataclasses.dataclass
class ReplayResult:
    outcome: Outcome
    satisfiable: bool = True
    container: Optional[str] = None
    detail: Dict = dataclasses.field(default_factory=dict)
    symbols: Dict[str, int] = dataclasses.field(default_factory=dict)
    message: str = ""

    def to_json(self):
        out = dataclasses.asdict(self)
        out["outcome"] = self.outcome.name
        return out

    def describe(self) -> str:
        if self.outcome == Outcome.RACE:
            d = self.detail
            where = ", ".join(str(i) for i in d.get("multi_index", [d.get("index")]))
            return (f"RACE in {self.container}[{where}]: post differs from pre in {d.get('differing_runs')} of "
                    f"{d.get('runs')} runs on {d.get('threads')} threads (pre={d.get('pre')!r}, post={d.get('post')!r}) "
                    "and agrees on one thread")
        if self.outcome == Outcome.MISMATCH:
            d = self.detail
            where = ", ".join(str(i) for i in d.get("multi_index", [d.get("index")]))
            return (f"MISMATCH in {self.container}[{where}]: pre={d.get('pre')!r} "
                    f"post={d.get('post')!r} ({d.get('differing')} of {d.get('total')} elements differ, "
                    f"max |diff| {d.get('max_abs_diff')!r})")
        if self.outcome == Outcome.OOB_WRITE:
            return (f"OOB_WRITE: post wrote outside {self.container} (byte offset {self.detail.get('offset')} "
                    f"of a {self.detail.get('bytes')}-byte buffer)")
        if not self.satisfiable:
            return "input is unsatisfiable under the constraints (never run)"
        return f"{self.outcome.name}{': ' + self.message if self.message else ''}"


# ---------------------------------------------------------------- parent side
class ReplayWorker:
    """A child process that loads libpre/libpost once and replays input after input, each in
    a child of its own that it forks.

    When post kills that child (a crash) or does not return (a hang), the parent attributes
    that to the input being replayed -- the child reports when decoding and pre are
    done; after a hang the server is killed, and the next input gets a fresh one.
    """

    def __init__(self, build_dir: Path, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.build_dir = Path(build_dir)
        self.timeout_s = timeout_s
        self.proc: Optional[subprocess.Popen] = None
        self._buffer = b""
        self.replays = 0

    def __enter__(self) -> "ReplayWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)     # the server and the child it waits for
                except (ProcessLookupError, PermissionError):
                    self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                stream.close()
            self.proc = None

    def _start(self) -> None:
        self.close()
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "harnessgen.harness.replay", "--serve", str(self.build_dir)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, start_new_session=True)
        self._buffer = b""

    def run(self, data: bytes, tolerance: Optional[Tolerance] = None, threads: int = 1,
            repeat: int = 1) -> ReplayResult:
        """Replay one input and classify the outcome (race mode when threads > 1). Post dying or
        hanging on an input on which pre reads outside its containers is INVALID_INPUT."""
        result = self._request(data, tolerance, threads, repeat)
        if result.outcome in (Outcome.POST_CRASH, Outcome.POST_HANG):
            probed = self._request(data, None, 1, 1, probe=True)
            if probed.outcome == Outcome.INVALID_INPUT:
                return probed
        return result

    def _request(self, data: bytes, tolerance: Optional[Tolerance], threads: int, repeat: int,
                 probe: bool = False) -> ReplayResult:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.replays += 1
        request = {"data": base64.b64encode(bytes(data)).decode(), "threads": threads, "repeat": repeat,
                   "probe": probe}
        if tolerance is not None:
            request.update(tolerance=tolerance.to_json())
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:         # the child died since it last answered: a fresh one
            self._start()
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        stages: Dict[str, Dict] = {}
        noise: List[str] = []         # what else reached the protocol: said, never parsed as an answer
        deadline = time.monotonic() + self.timeout_s
        while True:
            line = self._read_line(deadline)
            if line is None:  # timed out: kill it, the next input gets a fresh child
                self.close()
                if "pre_done" in stages:
                    return ReplayResult(Outcome.POST_HANG, message=f"post ran longer than {self.timeout_s:g} s",
                                        symbols=stages["pre_done"].get("symbols", {}))
                return ReplayResult(Outcome.INVALID_INPUT, message=f"pre ran longer than {self.timeout_s:g} s")
            if line == b"":  # the server died (it loads the build and forks a child per input)
                died = _signal_name(self.proc.wait())
                self.close()
                return self._died(died, stages, noise)
            obj = _protocol_line(line)
            if obj is None:
                noise.append(line.decode(errors="replace")[:300])
                continue
            if obj["stage"] == DIED:        # the child that ran this input died; the server goes on
                return self._died(obj["how"], stages, noise)
            stages[obj["stage"]] = obj
            if obj["stage"] == "result":
                return _from_json(obj)

    def _died(self, died: str, stages: Dict[str, Dict], noise: List[str]) -> ReplayResult:
        """What it means that the replay of an input died (``died``: how) after ``stages``."""
        if "pre_done" in stages:
            return ReplayResult(Outcome.POST_CRASH, message=f"post died ({died})",
                                symbols=stages["pre_done"].get("symbols", {}))
        if "decoded" in stages:
            return ReplayResult(Outcome.INVALID_INPUT, message=f"pre died ({died})")
        return ReplayResult(Outcome.REPLAY_ERROR, message=f"the replay worker for {self.build_dir} died "
                            f"before running anything ({died})" + _said(noise))

    def _read_line(self, deadline: float) -> Optional[bytes]:
        """The next line from the child; b"" at end of file, None when the deadline passes."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return b""
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line


def replay(build_dir: Path, data: bytes, tolerance: Optional[Tolerance] = None,
           timeout_s: float = DEFAULT_TIMEOUT_S, threads: int = 1, repeat: int = 1) -> ReplayResult:
    """Replay ``data`` against the build in a fresh child process and classify the outcome."""
    with ReplayWorker(build_dir, timeout_s) as worker:
        return worker.run(data, tolerance, threads, repeat)


def _stages(stdout: str) -> Dict[str, Dict]:
    out = {}
    for line in (stdout or "").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "stage" in obj:
            out[obj["stage"]] = obj
    return out


def _protocol_line(line: bytes) -> Optional[Dict]:
    """One answer of the worker, or None for anything else (a library printing to its output)."""
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) and "stage" in obj else None


def _said(noise: List[str]) -> str:
    return f"; it said: {' | '.join(noise[-3:])}" if noise else ""


def _signal_name(returncode: int) -> str:
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


def _from_json(obj: Dict) -> ReplayResult:
    return ReplayResult(outcome=Outcome[obj["outcome"]], satisfiable=obj["satisfiable"], container=obj["container"],
                        detail=obj["detail"], symbols=obj["symbols"], message=obj["message"])


# ---------------------------------------------------------------- child side
def side_library(build, side: str) -> SideLibrary:
    """The cffi handle on ``libpre.so`` or ``libpost.so`` of a build."""
    spec = build.manifest[side]
    dtypes = {s.name: s.dtype for s in build.layout.symbols}
    dtypes.update({c.name: c.dtype for c in build.layout.containers})
    try:
        return SideLibrary(build.libpre if side == "pre" else build.libpost, spec["name"], spec["init_args"],
                           spec["program_args"], dtypes)
    except NotImplementedError as exc:
        raise Unsupported(str(exc)) from exc


def _run_side(side: SideLibrary, decoded: DecodedInput, threads: int, canary: Optional[int] = None):
    """One run on fresh guarded copies: (buffers, ok). ``canary``: the containers lie in wide
    zones of that byte (``PROBE_GUARD_BYTES``), which are not checked."""
    probe = {} if canary is None else {"canary": canary, "guard": PROBE_GUARD_BYTES}
    buffers = {name: GuardedBuffer(values, decoded.offsets.get(name, 0), **probe)
               for name, values in decoded.arrays.items()}
    set_threads(threads)
    ok = side.run(decoded.symbols, buffers)
    return buffers, ok


# how far around each container the probe of pre's reads reaches, and the two bytes it fills
# that room with (a float read of them is 0 or NaN; an index read of them, 0 or -1)
PROBE_GUARD_BYTES = 1 << 16
PROBE_CANARIES = (0x00, 0xFF)


def pre_reads_outside(layout: InputLayout, pre_side: SideLibrary, decoded: DecodedInput) -> Optional[str]:
    """Whether pre's result on this input depends on the bytes around its containers: pre run
    twice, its containers amid zeros and amid ones; where its containers differ, pre read
    outside one of them (an index or a size the constraints let go too far), and the input is
    invalid (a missing constraint), never a finding against post. The container whose result
    differs, or None."""
    symbols = {k: int(v) for k, v in decoded.symbols.items()}
    runs = []
    for canary in PROBE_CANARIES:
        buffers, ok = _run_side(pre_side, decoded, 1, canary=canary)
        if not ok:
            return "(pre's initialization)"
        runs.append(buffers)
    container, _ = _first_difference(layout, symbols, runs[0], runs[1], Tolerance(exact=True))
    return container


def _first_difference(layout: InputLayout, symbols, ref, out, tolerance: Tolerance):
    for slot in layout.containers:
        diff = compare(slot.name, ref[slot.name].data, out[slot.name].data, tolerance)
        if diff is not None:
            detail = diff.to_json()
            detail["multi_index"] = _multi_index(layout, slot, symbols, diff.index)
            detail["max_multi_index"] = _multi_index(layout, slot, symbols, diff.max_index)
            return slot.name, detail
    return None, None


def _replay_loaded(layout: InputLayout, pre_side: SideLibrary, post_side: SideLibrary, data: bytes,
                   tolerance: Tolerance, progress=None, threads: int = 1, repeat: int = 1) -> ReplayResult:
    """Pre on one thread (the reference); with threads > 1 pre again on that many (the control)
    and post ``repeat`` times on that many, then post once on one thread to tell a RACE from a
    plain MISMATCH."""
    progress = progress or (lambda stage, info: None)
    decoded = layout.decode(data)
    if decoded is None:
        return ReplayResult(Outcome.PASS, satisfiable=False)
    symbols = {k: int(v) for k, v in decoded.symbols.items()}
    progress("decoded", {"symbols": symbols})
    ref, ok = _run_side(pre_side, decoded, 1)
    if not ok:
        return ReplayResult(Outcome.INVALID_INPUT, symbols=symbols, message="pre's initialization failed")
    name, offset = first_corrupted(ref)
    if name is not None:
        return ReplayResult(Outcome.INVALID_INPUT, container=name, symbols=symbols,
                            detail={"offset": offset}, message=f"pre wrote outside {name}")
    changed = _unwritten_changed(layout, decoded, ref)
    if changed is not None:
        return ReplayResult(Outcome.INVALID_INPUT, container=changed, symbols=symbols,
                            message=f"pre changed {changed}, which it never writes: it wrote outside another "
                                    "container on this input (a missing constraint), never a finding against post")
    if threads > 1:
        control, ok = _run_side(pre_side, decoded, threads)
        if not ok or first_corrupted(control)[0] or _first_difference(layout, symbols, ref, control, tolerance)[0]:
            return ReplayResult(Outcome.INVALID_INPUT, symbols=symbols,
                                message=f"pre's result depends on the thread count ({threads} threads)")
    progress("pre_done", {"symbols": symbols})
    first, differing = None, 0
    for _ in range(max(1, repeat)):
        post, ok = _run_side(post_side, decoded, threads)
        if not ok:
            return ReplayResult(Outcome.POST_CRASH, symbols=symbols, message="post's initialization failed")
        name, offset = first_corrupted(post)
        if name is not None:
            outside = pre_reads_outside(layout, pre_side, decoded)
            if outside is not None:
                return _pre_read_outside(outside, symbols)
            return ReplayResult(Outcome.OOB_WRITE, container=name, symbols=symbols,
                                detail={"offset": offset, "bytes": post[name].nbytes})
        container, detail = _first_difference(layout, symbols, ref, post, tolerance)
        if container is not None:
            differing += 1
            first = first or (container, detail)
    if first is None:
        return ReplayResult(Outcome.PASS, symbols=symbols)
    container, detail = first
    outside = pre_reads_outside(layout, pre_side, decoded)
    if outside is not None:
        return _pre_read_outside(outside, symbols)
    outcome = Outcome.MISMATCH
    if threads > 1:
        single, _ = _run_side(post_side, decoded, 1)
        if _first_difference(layout, symbols, ref, single, tolerance)[0] is None:
            outcome = Outcome.RACE        # right on one thread, wrong on several
    if threads > 1 or repeat > 1:         # how often post was wrong (a GPU race: some runs only)
        detail.update(threads=threads, runs=max(1, repeat), differing_runs=differing)
    return ReplayResult(outcome, container=container, symbols=symbols, detail=detail)


def _unwritten_changed(layout: InputLayout, decoded: DecodedInput, ref) -> Optional[str]:
    """The first container pre never writes whose bytes pre's run changed, or None."""
    for slot in layout.containers:
        if not slot.pre_writes and ref[slot.name].data.tobytes() != np.asarray(decoded.arrays[slot.name]).tobytes():
            return slot.name
    return None


def _pre_read_outside(container: str, symbols: Dict[str, int]) -> ReplayResult:
    return ReplayResult(Outcome.INVALID_INPUT, container=container, symbols=symbols,
                        message=f"pre itself reads outside its containers on this input (its {container} changes with "
                                "the bytes around them): a constraint is missing (an index array's values, or a size "
                                "relation; give it in --constraints), never a finding against post")


def execute(build_dir: Path, decoded: DecodedInput, side: str = "pre", threads: int = 1) -> Dict[str, np.ndarray]:
    """Run one side in this process on decoded inputs and return every container after it
    (for checking programs against references; crashes take the caller down)."""
    build = HarnessBuild.open(build_dir)
    runner = side_library(build, side)
    buffers, ok = _run_side(runner, decoded, threads)
    if not ok:
        raise RuntimeError(f"{side}'s initialization failed")
    return {name: buf.data.copy() for name, buf in buffers.items()}


def _multi_index(layout: InputLayout, slot, symbols, flat: int):
    element = flat // 2 if slot.kind == "c" else flat
    shape = layout.shape(slot.name, symbols)
    if shape and int(np.prod(shape)) == layout.counts(symbols)[slot.name]:
        return [int(i) for i in np.unravel_index(element, shape)]
    return [element]


class _Replayer:
    """Child side: the build's layout and both libraries, loaded once."""

    def __init__(self, build_dir: Path):
        self.build = HarnessBuild.open(build_dir)
        self.layout = self.build.layout
        self.pre = side_library(self.build, "pre")
        self.post = side_library(self.build, "post")
        self.default_tolerance = self.build.tolerance

    def run(self, data: bytes, tolerance: Tolerance, progress, threads: int = 1, repeat: int = 1) -> ReplayResult:
        return _replay_loaded(self.layout, self.pre, self.post, data, tolerance, progress, threads, repeat)

    def probe(self, data: bytes, progress) -> ReplayResult:
        """Only ``pre_reads_outside``: INVALID_INPUT where pre reads outside its containers (pre
        dying amid the probe's bytes is that too: the parent hears it died after decoding)."""
        decoded = self.layout.decode(data)
        if decoded is None:
            return ReplayResult(Outcome.PASS, satisfiable=False)
        progress("decoded", {"symbols": {k: int(v) for k, v in decoded.symbols.items()}})
        outside = pre_reads_outside(self.layout, self.pre, decoded)
        symbols = {k: int(v) for k, v in decoded.symbols.items()}
        return _pre_read_outside(outside, symbols) if outside is not None else ReplayResult(Outcome.PASS,
                                                                                            symbols=symbols)


def _serve(build_dir: Path) -> int:
    """Answer each request with JSON lines on the protocol, a copy of the original standard
    output; the libraries' own prints (a CUDA runtime's error, a printf in generated code) go to
    standard error instead, so that they can never be taken for an answer. A failure to load
    the build or to replay is answered as REPLAY_ERROR with its reason.

    Each request runs in a child forked from this server, which loaded the build once: a post
    that crashes takes down its child alone (the server says ``died``, and how), so a finding
    replayed again and again costs a fork each time instead of a new interpreter that loads
    the build, and a post that corrupts memory without crashing cannot change the next replay."""
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    def progress(stage, info):
        protocol.write(json.dumps({"stage": stage, **info}) + "\n")
        protocol.flush()

    try:
        replayer, failure = _Replayer(build_dir), ""
    except Exception as exc:  # noqa: BLE001 -- every request gets the reason as its answer
        replayer, failure = None, f"the build does not load: {type(exc).__name__}: {exc}"
    for line in sys.stdin:
        request = json.loads(line)
        if replayer is None:
            progress("result", ReplayResult(Outcome.REPLAY_ERROR, message=failure).to_json())
            continue
        pid = os.fork()
        if pid == 0:
            _answer_in_child(replayer, request, progress)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            progress(DIED, {"how": _signal_name(os.waitstatus_to_exitcode(status))})
    return 0


def _answer_in_child(replayer: "_Replayer", request: Dict, progress) -> None:
    """One request, answered by a forked child of the server; never returns (exit 0 once the
    result is said)."""
    status = 1
    try:
        die_with_parent()
        tol = replayer.default_tolerance
        if "tolerance" in request:
            tol = Tolerance.from_json(request["tolerance"])
        try:
            data = base64.b64decode(request["data"])
            result = replayer.probe(data, progress) if request.get("probe") else replayer.run(
                data, tol, progress, request.get("threads", 1), request.get("repeat", 1))
        except Exception as exc:  # noqa: BLE001 -- the replay's own failure, said as a verdict
            result = ReplayResult(Outcome.REPLAY_ERROR, message=f"the replay failed: {type(exc).__name__}: {exc}")
        progress("result", result.to_json())
        status = 0
    finally:             # never back into the server's loop
        os._exit(status)


def _main(argv: List[str]) -> int:
    if len(argv) != 2 or argv[0] != "--serve":
        sys.stderr.write("usage: python -m harnessgen.harness.replay --serve BUILD_DIR (the replay worker; "
                         "use `harnessgen replay` instead)\n")
        return 64
    return _serve(Path(argv[1]))


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
