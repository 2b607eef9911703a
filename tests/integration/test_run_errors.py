"""No failure of one instance ends a run, and no build is taken for one it is not.

Faults injected where a run meets them: afl-fuzz missing, afl-fuzz that does not start, a
build artifact deleted from the cache, a worker process killed. Each ends in that instance's
recorded verdict (ERROR with its stage, reason and log where nothing could judge it), the run
finishes, the other instances keep their verdicts, and a finding the seed inputs made stands.

Also on DaCe 2.0 (``make test-other-dace`` runs this file): the program whose instance's build
once came out of the reference check's cache entry (the same sources, without an AFL harness)
is judged, and a wrong result is found."""
import os
import stat
from pathlib import Path

import pytest

from tests.conftest import PROGRAMS, run_cli, summary_of

STRIDED = f"{PROGRAMS / 'strided_copy.py'}:strided_copy"
# tiles that assume the tile divides the range: the outer map's two iterations are no whole tile
WRONG = "harnessgen.zoo.planted:TilingWithoutRemainder"
BROKEN = PROGRAMS / "broken_xforms.py"
FINDINGS = {"MISMATCH", "OOB_WRITE"}


def fuzz(tmp: Path, program: str, specs: str, *extra: str, env=None):
    proc = run_cli(["fuzz", "--program", program, "--transformation", specs, "--params", "default", "--time", "4",
                    "--no-audit", *extra], tmp, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc, summary_of(tmp)


def by_transformation(summary: dict) -> dict:
    out: dict = {}
    for entry in summary["instances"]:
        out.setdefault(entry["transformation"], []).append(entry)
    return out


def test_the_instance_sharing_the_reference_checks_sources_is_fuzzed_and_its_wrong_result_found(tmp_path):
    """The reference check builds the one-state program for replay; the instance's pre is the
    same program. The instance's build has its AFL harness, and the wrong tiling is a finding
    that replays, seen in the whole program."""
    proc, summary = fuzz(tmp_path, STRIDED, WRONG, "--audit")
    assert [c["verdict"] for c in summary["reference_checks"][0]["forms"]] == ["AGREES", "AGREES"], \
        summary["reference_checks"]
    entry = summary["instances"][0]
    outcomes = {f["outcome"] for f in entry["findings"]}
    assert "MISMATCH" in outcomes and entry["verdict"] in FINDINGS, (entry["verdict"], entry["message"])
    assert entry["audit"]["verdict"] == "DIFFERS", entry["audit"]
    finding = next(f for f in entry["findings"] if f["outcome"] == "MISMATCH")
    replay = run_cli(["replay", finding["path"]], tmp_path)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert summary["errors"]["count"] == 0 and summary["not_judged"] == []


def test_without_afl_fuzz_each_instance_is_an_error_and_a_seed_finding_stands(tmp_path):
    """afl-fuzz missing: the correct transformation's instances are ERROR (never a PASS on less
    than was meant), the broken one keeps the finding its seeds made, and the run finishes."""
    proc, summary = fuzz(tmp_path, STRIDED, f"{WRONG},MapTiling", "--prove", "off", "--no-reference-check",
                         env={"HARNESSGEN_AFL_FUZZ": "no-such-afl-fuzz"})
    rows = by_transformation(summary)
    assert {f["outcome"] for e in rows["TilingWithoutRemainder"] for f in e["findings"]} & FINDINGS, \
        rows["TilingWithoutRemainder"]
    assert rows["MapTiling"] and all(e["verdict"] == "ERROR" and e["error"]["stage"] == "setup"
                                     for e in rows["MapTiling"]), rows["MapTiling"]
    assert summary["errors"]["count"] == len(rows["MapTiling"])
    assert "afl-fuzz is not installed" in summary["errors"]["reasons"][0]["reason"]
    assert f"{len(rows['MapTiling'])} ERROR" in proc.stderr
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Not judged: ERROR" in report and rows["MapTiling"][0]["id"] in report.split("## Per instance")[0]
    # and first, before the bugs: an instance not judged may hide one
    opening = report.split("## Distinct bugs")[0]
    assert f"{len(rows['MapTiling'])} instance(s) not judged (ERROR)" in opening
    assert "afl-fuzz is not installed" in opening


def test_an_afl_fuzz_that_does_not_start_is_the_instances_error_with_its_log(tmp_path):
    fake = tmp_path / "afl-fuzz"
    fake.write_text("#!/bin/sh\necho '[-] PROGRAM ABORT : the fork server did not come up'\n"
                    "echo '         Location : fake(), fake.c:1'\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    proc, summary = fuzz(tmp_path, STRIDED, "MapTiling", "--prove", "off", "--no-reference-check",
                         env={"HARNESSGEN_AFL_FUZZ": str(fake)})
    entries = summary["instances"]
    assert entries and all(e["verdict"] == "ERROR" and e["error"]["stage"] == "engine" for e in entries), entries
    assert all("fork server did not come up" in e["error"]["reason"] for e in entries)
    log = Path(entries[0]["error"]["log"])
    assert log.is_file() and "PROGRAM ABORT" in log.read_text()
    assert summary["finished"] == summary["planned"] == len(entries)


def test_a_deleted_build_artifact_is_built_again(tmp_path):
    """A cached build missing its AFL harness (a cleaned disk, an interrupted copy) is rebuilt
    where it is needed, never run as if it were there."""
    work = tmp_path / "work"          # its own cache: the shared one's builds are other tests' too
    args = ["fuzz", "--program", STRIDED, "--transformation", "MapTiling", "--params", "default", "--time", "3",
            "--prove", "off", "--no-audit", "--no-reference-check"]
    first = run_cli([*args, "--build-only"], tmp_path / "first", work_dir=work)
    assert first.returncode == 0, first.stderr[-3000:]
    built = [Path(e["build_dir"]) for e in summary_of(tmp_path / "first")["instances"]]
    assert built and all((b / "harness_afl").is_file() for b in built)
    for b in built:
        (b / "harness_afl").unlink()
    again = run_cli(args, tmp_path / "again", work_dir=work)
    assert again.returncode == 0, again.stderr[-3000:]
    entries = summary_of(tmp_path / "again")["instances"]
    assert entries and all(e["verdict"] == "PASS" and e["evidence"]["engine_execs"] > 0 for e in entries), \
        [(e["id"], e["verdict"], e["message"]) for e in entries]
    assert all((Path(e["build_dir"]) / "harness_afl").is_file() for e in entries)


def test_a_compiler_killed_while_building_post_is_an_error_never_a_finding(tmp_path):
    """post's compiler killed (the OOM killer, a timeout) says nothing of the transformation: the
    instance is ERROR at its build, with the build's output in its log, and nothing is filed."""
    compiler = tmp_path / "clang++"
    compiler.write_text('#!/bin/sh\ncase "$*" in *hg_post.cpp*) kill -9 $$;; esac\nexec clang++ "$@"\n')
    compiler.chmod(compiler.stat().st_mode | stat.S_IXUSR)
    proc = run_cli(["fuzz", "--program", STRIDED, "--transformation", "MapTiling", "--params", "default", "--time",
                    "3", "--prove", "off", "--no-audit", "--no-reference-check"], tmp_path,
                   env={"HARNESSGEN_CXX": str(compiler)}, work_dir=tmp_path / "work")   # its own cache: no build reused
    assert proc.returncode == 0, proc.stderr[-3000:]
    entries = summary_of(tmp_path)["instances"]
    assert entries and all(e["verdict"] == "ERROR" and e["error"]["stage"] == "build" for e in entries), \
        [(e["id"], e["verdict"], e["message"]) for e in entries]
    assert "killed by signal 9" in entries[0]["error"]["reason"]
    assert "hg_post.cpp" in Path(entries[0]["error"]["log"]).read_text()
    assert not list((tmp_path / "crashes").rglob("meta.json"))


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_worker_killed_by_its_instance_ends_only_that_instance(tmp_path, jobs):
    """A transformation that kills the process applying it, with one worker (the default) or two:
    its instance is ERROR (its worker died each time it ran alone), the instance beside it is
    judged, and the run finishes."""
    proc, summary = fuzz(tmp_path, "kernels:sigmoid", f"{BROKEN}:KillsItsProcess,{BROKEN}:LeavesTaskletAlone",
                         "--jobs", jobs, "--no-reference-check")
    rows = by_transformation(summary)
    killed, alone = rows["KillsItsProcess"], rows["LeavesTaskletAlone"]
    assert killed and all(e["verdict"] == "ERROR" and e["error"]["stage"] == "worker" for e in killed), killed
    assert "died each of the 2 times" in killed[0]["error"]["reason"]
    assert alone and all(e["verdict"] == "PASS" for e in alone), [(e["id"], e["verdict"], e["message"]) for e in alone]
    assert summary["finished"] == summary["planned"]
    assert os.path.isfile(killed[0]["error"]["log"])


def test_an_instance_on_which_no_input_runs_pre_to_completion_is_not_a_pass(tmp_path):
    """Every seed input fails in pre itself (the program aborts) and triage finds no finding
    among them: nothing was judged, so the verdict is INVALID_INPUT (a constraint is missing),
    never a PASS resting on no input. The transformation changes nothing and cannot be blamed."""
    program = f"{PROGRAMS / 'pre_always_fails.py'}:pre_always_fails"
    proc, summary = fuzz(tmp_path, program, f"{BROKEN}:LeavesTaskletAlone", "--prove", "off", "--no-reference-check")
    [entry] = summary["instances"]
    assert entry["verdict"] == "INVALID_INPUT", entry
    assert entry["findings"] == [] and "no input passed" in entry["message"], entry["message"]
