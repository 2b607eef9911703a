"""`harnessgen fuzz --jobs N` on one instance: one -M and N-1 -S afl-fuzz instances on one
sync directory, one of them with CMPLOG; the same command after an interruption continues the
session (-i -) for the time left instead of starting over."""
from __future__ import annotations

import shutil

import pytest

from tests.conftest import run_cli, summary_of

# these start several workers or afl-fuzz instances: never beside a test whose race needs a free core
pytestmark = pytest.mark.usefixtures("exclusive_cores")

INSTANCE = "MapFusion-79bac3e5"
# --prove off: the pair is PROVEN, which would leave afl-fuzz nothing to do
ARGS = ["fuzz", "--program", "kernels:elementwise_chain", "--transformation", "MapFusion", "--instance", INSTANCE,
        "--jobs", "2", "--prove", "off"]


def stats(path):
    from harnessgen.engines.afl import read_stats

    return read_stats(path / "fuzzer_stats")


def test_jobs_on_one_instance_run_main_and_secondaries_and_resume(tmp_path, build_cache):
    proc = run_cli(ARGS + ["--time", "4"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    sync = tmp_path / "out" / "afl" / INSTANCE
    main, s1 = stats(sync / "main"), stats(sync / "s1")
    assert " -M main " in main["command_line"] and " -c " not in main["command_line"]
    assert " -S s1 " in s1["command_line"] and " -c " in s1["command_line"]
    first = summary_of(tmp_path)["instances"][0]
    assert first["execs"] >= int(main["execs_done"]) + int(s1["execs_done"])
    queue_before = len(list((sync / "main" / "queue").glob("id:*")))

    # as if the first session had been killed before it recorded the instance's result
    (tmp_path / "out" / "campaign.db").unlink()
    shutil.rmtree(tmp_path / "out" / "results")
    proc = run_cli(ARGS + ["--time", "8"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    main_again = stats(sync / "main")
    command = main_again["command_line"].split()
    assert command[command.index("-i") + 1] == "-"
    left = int(command[command.index("-V") + 1])
    assert left <= 8 - int(main["run_time"])                    # the time the first session had not used
    assert int(main_again["run_time"]) >= int(main["run_time"])  # afl-fuzz counts on from the first session
    assert len(list((sync / "main" / "queue").glob("id:*"))) >= queue_before     # the corpus is kept
