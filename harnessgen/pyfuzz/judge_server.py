"""Judge one program in a child process: a compiled program that dies or hangs
takes only the child with it.

Children come from a judge server: a process of the compiler's own interpreter
(``--python``: another torch, another Python) that imported the compiler's
package once and forks a child per program, so a replay costs the compile, not
the import. Not a plain fork of the caller: a caller that has run threads
(torch's and OpenMP's pools; a test process that ran eager torch) can leave a
lock held in the child, which then hangs in its first parallel region; and the
caller may not be able to import the compiler at all. A child killed by a
signal is ``POST_CRASH``, one that outlives the timeout ``POST_HANG``.

The server speaks JSON lines on its stdin and stdout: a request names the
program, the files of its inputs and of the verdict; the server answers the
child's pid, then its wait status.
"""
from __future__ import annotations

import atexit
import dataclasses
import io
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from ..core.errors import ConfigError
from ..core.outcome import Outcome
from ..core.procs import interpreter_environment
from ..core.runtime import Tolerance
from .compilers import Compiler, get_compiler
from .oracle import Verdict
from .program_record import Program

DEFAULT_TIMEOUT_S = 300.0
# the packages the server imports before it forks any child
PRELOAD = {"dace": ["dace"], "torch": ["torch", "torch._dynamo", "torch._inductor"], "tvm": ["tvm", "tvm.relax"]}
# how long a new server may take to import its compiler and say it is ready
START_TIMEOUT_S = 300.0


@dataclasses.dataclass(frozen=True)
class CompilerSpec:
    """What it takes to make the same compiler again in another process."""

    name: str
    work_dir: Path
    passes: Tuple[str, ...] = ()
    modes: Tuple[str, ...] = ()            # empty: every mode of the compiler
    python: Optional[str] = None           # the interpreter the compiler runs in (None: this one)

    def make(self) -> Compiler:
        return get_compiler(self.name, self.work_dir, self.passes, self.modes)

    def to_json(self) -> Dict:
        return {"name": self.name, "work_dir": str(self.work_dir), "passes": list(self.passes),
                "modes": list(self.modes), "python": self.python}

    @classmethod
    def from_json(cls, data: Dict) -> "CompilerSpec":
        return cls(data["name"], Path(data["work_dir"]), tuple(data["passes"]), tuple(data["modes"]), data["python"])


# ---------------------------------------------------------------- the server (the compiler's interpreter)
def _serve(name: str) -> None:
    from ..core.procs import die_with_parent

    die_with_parent()
    for module in PRELOAD.get(name, []):
        __import__(module)
    __import__("harnessgen.pyfuzz.compilers")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _judge_child(request)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"status": status}), flush=True)


def _judge_child(request: Dict) -> None:
    from ..core.files import write_json
    from ..core.procs import die_with_parent
    from .oracle import judge

    code = 0
    os.dup2(2, 1)          # what the compiler prints must not reach the server's answers
    try:
        die_with_parent()
        compiler = CompilerSpec.from_json(request["spec"]).make()
        if request.get("describe"):
            write_json(Path(request["verdict"]), {"versions": compiler.versions(), "modes": compiler.modes()})
        else:
            with np.load(request["inputs"]) as stored:
                inputs = {k: stored[k] for k in stored.files}
            verdict = judge(compiler, Program.from_json(request["program"]), inputs,
                            Tolerance.from_json(request["tolerance"]), request["modes"])
            write_json(Path(request["verdict"]), verdict.to_json())
    except BaseException:          # noqa: B036 -- the child must exit whatever happened
        import traceback

        traceback.print_exc()
        code = 70
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


# ---------------------------------------------------------------- the client (harnessgen's interpreter)
class JudgeServer:
    def __init__(self, spec: CompilerSpec):
        self.spec = spec
        self.folder = Path(tempfile.mkdtemp(prefix="hg-judge-"))
        spec.work_dir.mkdir(parents=True, exist_ok=True)
        self.log = open(spec.work_dir / "judge-server.log", "ab")
        python = spec.python or sys.executable
        try:
            self.process = subprocess.Popen([python, "-m", "harnessgen.pyfuzz.judge_server", spec.name],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                            env=interpreter_environment(spec.python), cwd=os.getcwd())
        except OSError as error:
            raise ConfigError(f"--python {python}: cannot start it ({error})") from error
        if self._reply(START_TIMEOUT_S) is None:
            self.close()
            raise ConfigError(f"the {spec.name} judge process of {python} did not start; its log is "
                              f"{spec.work_dir / 'judge-server.log'}")
        self.serial = 0

    def _reply(self, timeout_s: float) -> Optional[Dict]:
        ready, _, _ = select.select([self.process.stdout], [], [], max(0.0, timeout_s))
        if not ready:
            return None
        line = self.process.stdout.readline()
        return json.loads(line) if line else None

    def alive(self) -> bool:
        return self.process.poll() is None

    def judge(self, program: Program, inputs: Dict[str, np.ndarray], tolerance: Tolerance,
              modes: Optional[Sequence[str]], timeout_s: float) -> Verdict:
        self.serial += 1
        inputs_path = self.folder / f"{self.serial}.npz"
        verdict_path = self.folder / f"{self.serial}.json"
        buffer = io.BytesIO()
        np.savez(buffer, **inputs)
        inputs_path.write_bytes(buffer.getvalue())
        request = {"spec": self.spec.to_json(), "program": program.to_json(), "inputs": str(inputs_path),
                   "tolerance": tolerance.to_json(), "modes": list(modes) if modes else None,
                   "verdict": str(verdict_path)}
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
            pid = self._reply(START_TIMEOUT_S)["pid"]
            started = time.time()
            done = self._reply(timeout_s)
            if done is None:
                os.kill(pid, signal.SIGKILL)
                self._reply(START_TIMEOUT_S)
                return Verdict(Outcome.POST_HANG, detail=f"no verdict within {timeout_s:.0f} s")
            return _verdict(verdict_path, done["status"], time.time() - started)
        finally:
            inputs_path.unlink(missing_ok=True)
            verdict_path.unlink(missing_ok=True)

    def describe(self) -> Dict:
        """The compiler's versions and modes, as its own interpreter sees them."""
        self.serial += 1
        path = self.folder / f"{self.serial}.json"
        request = {"spec": self.spec.to_json(), "describe": True, "verdict": str(path)}
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()
        self._reply(START_TIMEOUT_S)
        self._reply(START_TIMEOUT_S)
        if not path.is_file():
            raise ConfigError(f"{self.spec.name} cannot be made in {self.spec.python or sys.executable}; see "
                              f"{self.spec.work_dir / 'judge-server.log'}")
        described = json.loads(path.read_text())
        path.unlink()
        return described

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        for leftover in self.folder.glob("*"):
            leftover.unlink()
        self.folder.rmdir()


def _verdict(path: Path, status: int, seconds: float) -> Verdict:
    if path.is_file():
        return Verdict.from_json(json.loads(path.read_text()))
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        return Verdict(Outcome.POST_CRASH, detail=f"the process died of {name}", error_type=name)
    code = os.WEXITSTATUS(status)
    return Verdict(Outcome.POST_CRASH, detail=f"the process exited with status {code} without a verdict",
                   error_type=f"exit {code}")


_SERVERS: Dict[CompilerSpec, JudgeServer] = {}


def _server(spec: CompilerSpec) -> JudgeServer:
    server = _SERVERS.get(spec)
    if server is None or not server.alive():
        server = _SERVERS[spec] = JudgeServer(spec)
    return server


@atexit.register
def close_servers() -> None:
    while _SERVERS:
        _SERVERS.popitem()[1].close()


def describe(spec: CompilerSpec) -> Dict:
    """{"versions": ..., "modes": ...} of the compiler ``spec`` makes, from its interpreter."""
    return _server(spec).describe()


def judge_isolated(spec: CompilerSpec, program: Program, inputs: Dict[str, np.ndarray],
                   tolerance: Tolerance = Tolerance(), modes: Optional[Sequence[str]] = None,
                   timeout_s: float = DEFAULT_TIMEOUT_S) -> Verdict:
    return _server(spec).judge(program, inputs, tolerance, modes, timeout_s)


if __name__ == "__main__":
    _serve(sys.argv[1])
