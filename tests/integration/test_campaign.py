"""Campaigns: a planted bug is found and reported, a correct transformation stays silent; a
campaign killed with SIGKILL continues where it stopped (nothing finished runs again, no
finding is lost, no afl-fuzz is left behind); the same campaign runs on a Dask LocalCluster;
the report says what happened."""
from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import BUILD_CACHE, REPO, cores_to_myself

# these start several workers or afl-fuzz instances: never beside a test whose race needs a free core
pytestmark = pytest.mark.usefixtures("exclusive_cores")

PROGRAM = "kernels:trisolve"
# one planted bug (1 instance, MISMATCH), a correct built-in (3 instances) and one that does not apply
XFORMS = "harnessgen.zoo.planted:UnrollDropsIterations,TaskletFusion,MapTiling"
EXPECTED = {"UnrollDropsIterations": {"MISMATCH": 1}, "TaskletFusion": {"PASS": 3}}


def campaign_cmd(tmp: Path, name: str, *extra: str):
    return [str(Path(sys.executable).with_name("harnessgen")), "campaign", "--program", PROGRAM,
            "--transformation", XFORMS, "--budget", "3s", "--out", str(tmp / name), "--work-dir", str(BUILD_CACHE),
            "--corpus-dir", str(tmp / f"{name}-corpus"), "--crashes-dir", str(tmp / f"{name}-crashes"),
            "--no-progress", "--reduce-time", "0", *extra]


def run_campaign_cli(tmp: Path, name: str, *extra: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(campaign_cmd(tmp, name, *extra), capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def rows(directory: Path):
    db = sqlite3.connect(f"file:{directory / 'campaign.db'}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        return {r["id"]: dict(r) for r in db.execute("SELECT * FROM instances")}
    finally:
        db.close()


def verdicts_by_transformation(directory: Path):
    summary = json.loads((directory / "summary.json").read_text())
    return {t["name"]: t["verdicts"] for t in summary["per_transformation"] if t["instances"]}


def findings(directory: Path):
    summary = json.loads((directory / "summary.json").read_text())
    return sorted((f["instance"], f["outcome"]) for f in summary["findings"])


@pytest.fixture(scope="module")
def reference(tmp_path_factory, build_cache):
    """The campaign run once, uninterrupted, on two local workers."""
    tmp = tmp_path_factory.mktemp("campaign")
    with cores_to_myself():
        # fuzzed, not proved: the report's execs/s plot needs instances that ran afl-fuzz
        run_campaign_cli(tmp, "reference", "--jobs", "2", "--prove", "off")
    return tmp / "reference"


def test_campaign_finds_planted_bug_and_stays_silent_on_correct(reference):
    assert verdicts_by_transformation(reference) == EXPECTED
    [(instance, outcome)] = findings(reference)
    assert instance.startswith("UnrollDropsIterations-") and outcome == "MISMATCH"
    summary = json.loads((reference / "summary.json").read_text())
    reproducer = reference / summary["findings"][0]["path"]
    assert (reproducer / "repro.py").is_file()
    replay = subprocess.run([sys.executable, "repro.py"], cwd=reproducer, capture_output=True, text=True, timeout=300)
    assert replay.returncode != 0, replay.stdout + replay.stderr      # the bug is still there
    not_applying = [t for t in summary["per_transformation"] if t["name"] == "MapTiling"]
    assert not_applying and not_applying[0]["instances"] == 0 and not_applying[0]["status"] == "ok"
    assert all(r["completions"] == 1 and r["attempts"] == 1 for r in rows(reference).values())


def test_report_is_self_contained_and_links_reproducers(reference):
    html = (reference / "report.html").read_text()
    assert len(re.findall(r'src="data:image/png;base64,', html)) == 3     # verdicts, execs/s, time to finding
    assert "UnrollDropsIterations" in html and "MISMATCH" in html
    links = re.findall(r'<a href="([^"]+)">MISMATCH</a>', html)
    assert links and all((reference / link / "repro.py").is_file() for link in links)
    markdown = (reference / "report.md").read_text()
    for image in re.findall(r"\]\((report/[^)]+\.png)\)", markdown):
        assert (reference / image).is_file()
    assert "| TaskletFusion | 3 | 3 | 3 | 0 | PASS 3 |" in markdown     # instances, done, matches, variants
    for row in json.loads((reference / "summary.json").read_text())["instances"]:
        assert row["config_before"] and row["config_after"], row     # input configuration before/after reduction


def _afl_processes_under(directory: Path):
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "afl-fuzz" in cmdline and str(directory) in cmdline:
            found.append(proc.name)
    return found


def _wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)      # polling a condition, not waiting a fixed time
    raise AssertionError(f"timed out waiting for {what}")


def test_sigkill_then_resume_repeats_nothing_and_loses_nothing(reference, tmp_path):
    directory = tmp_path / "killed"
    proc = subprocess.Popen(campaign_cmd(tmp_path, "killed", "--jobs", "1"), cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def one_done_one_running():
        if not (directory / "campaign.db").exists():
            return False
        try:
            states = [r["state"] for r in rows(directory).values()]
        except sqlite3.Error:      # being written: look again
            return False
        return states.count("done") >= 1 and states.count("running") >= 1

    try:
        _wait_for(one_done_one_running, 300, "one finished and one running instance")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = rows(directory)
    done_before = {i: r for i, r in before.items() if r["state"] == "done"}
    found_before = [r["result"] for r in done_before.values() if json.loads(r["result"])["findings"]]
    # the workers and their afl-fuzz die with the campaign process
    _wait_for(lambda: not _afl_processes_under(directory), 60, "afl-fuzz of the killed campaign to exit")

    run_campaign_cli(tmp_path, "killed", "--jobs", "1")
    after = rows(directory)
    assert all(r["state"] == "done" for r in after.values())
    for instance_id, row in done_before.items():       # finished before the kill: never run again
        assert after[instance_id]["completions"] == 1 and after[instance_id]["attempts"] == row["attempts"]
        assert after[instance_id]["result"] == row["result"]
    assert all(r["completions"] == 1 for r in after.values())
    assert verdicts_by_transformation(directory) == verdicts_by_transformation(reference)
    assert findings(directory) == findings(reference)
    for result in found_before:                          # a finding made before the kill is still there
        for finding in json.loads(result)["findings"]:
            assert (Path(finding["path"]) / "repro.py").is_file()
    runs = json.loads((directory / "summary.json").read_text())["runs"]
    assert len(runs) == 2 and runs[1]["instances_done"] == len(after) - len(done_before)


@pytest.mark.parametrize("how", ["dask-local", "scheduler"])
def test_same_campaign_on_dask(reference, tmp_path, how):
    """Through a LocalCluster the campaign starts itself (--dask-local) and through the address
    of a running one (--scheduler): the same verdicts and findings as local processes."""
    distributed = pytest.importorskip("distributed", reason="Dask is the optional extra harnessgen[dask]; "
                                                            "`make setup` installs it")
    if how == "dask-local":
        run_campaign_cli(tmp_path, "dask", "--dask-local", "2")
    else:
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
            run_campaign_cli(tmp_path, "dask", "--scheduler", cluster.scheduler_address)
    directory = tmp_path / "dask"
    assert verdicts_by_transformation(directory) == verdicts_by_transformation(reference)
    assert findings(directory) == findings(reference)
    runs = json.loads((directory / "summary.json").read_text())["runs"]
    assert [r["executor"] for r in runs] == ["dask-local" if how == "dask-local" else "dask"]
    assert all(r["completions"] == 1 for r in rows(directory).values())


def test_slurm_executor_writes_the_batch_script_asked_for():
    """--slurm goes through the same Dask path; without a Slurm here, its batch script is checked."""
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is the optional extra harnessgen[dask]")
    from harnessgen.campaign.executors import SlurmOptions, slurm_cluster

    cluster = slurm_cluster(SlurmOptions(queue="debug", account="proj42", walltime="00:30:00", cores=4,
                                         memory="8GB", extra=("--constraint=mc",)))
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    for line in ("#SBATCH -p debug", "#SBATCH -A proj42", "#SBATCH -t 00:30:00", "#SBATCH --cpus-per-task=4",
                 "#SBATCH --constraint=mc"):
        assert line in script, script
    assert "--nthreads 1" in script and "--nworkers 4" in script      # one instance per core


def test_campaign_directory_belongs_to_one_campaign(reference, tmp_path):
    """The same --out with other transformations is refused with the flags to fix it."""
    cmd = [str(Path(sys.executable).with_name("harnessgen")), "campaign", "--program", PROGRAM,
           "--transformation", "TaskletFusion", "--out", str(reference), "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 2
    assert "--out" in proc.stderr and "--fresh" in proc.stderr
