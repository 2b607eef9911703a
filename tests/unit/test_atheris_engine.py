"""The atheris engine's process handling: the deadline, a target that fails at start, and the
script libFuzzer's fork mode runs again."""
import os
import select
import shlex
import sys
import time

import pytest

from harnessgen.core.errors import HarnessgenError
from harnessgen.engines import FuzzJob
from harnessgen.engines.atheris import AtherisEngine, PyFuzzTarget, _run_until
from harnessgen.pyfuzz.target import relaunch_script


def ends(pid: int, within_s: float = 10.0) -> bool:
    """The process terminates (a SIGKILL lands asynchronously): its pidfd turns readable."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], within_s)[0])
    finally:
        os.close(fd)


def test_a_process_past_the_deadline_is_stopped_with_what_it_started(tmp_path):
    pid_file = tmp_path / "child.pid"
    # the shell's background child ignores SIGINT: only the kill of the process group ends it
    command = ["sh", "-c", f"sleep 600 & echo $! > {pid_file}; wait"]
    with open(tmp_path / "log", "w") as log:
        status = _run_until(command, log, deadline=time.time() + 3)    # time to write its pid
    assert status is None
    assert pid_file.is_file() and ends(int(pid_file.read_text()))


def test_a_process_that_ends_in_time_gives_its_exit_status(tmp_path):
    with open(tmp_path / "log", "w") as log:
        assert _run_until([sys.executable, "-c", "raise SystemExit(3)"], log, deadline=float("inf")) == 3


def test_a_target_that_fails_before_its_first_program_is_an_error_that_shows_its_log(tmp_path):
    job = FuzzJob(build=PyFuzzTarget(["--compiler", "no-such-compiler"]), seeds_dir=None, out_dir=tmp_path,
                  time_s=60)
    with pytest.raises(HarnessgenError, match="before it judged a program") as error:
        AtherisEngine().run(job)
    assert "no-such-compiler" in str(error.value)


def test_fork_mode_restarts_the_target_with_the_same_options(tmp_path):
    script = relaunch_script(tmp_path, ["--compiler", "dace", "--out", str(tmp_path / "run dir")])
    assert os.access(script, os.X_OK)
    exec_line = script.read_text().splitlines()[1].split("&& exec ", 1)[1]
    words = shlex.split(exec_line)
    assert words[0] == sys.executable and words[1:4] == ["-m", "harnessgen.pyfuzz.target", "--compiler"]
    assert words[words.index("--out") + 1] == str(tmp_path / "run dir") and words[-2:] == ["--", "$@"]
