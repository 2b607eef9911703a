"""The command line: the fuzz contract, static verdicts, and errors that say what to fix."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROGRAMS, REPO, run_cli, summary_of

CONTRACT = {"id", "transformation", "verdict", "execs", "execs_per_sec", "seconds_to_first_finding", "crashes"}
BROKEN = str(PROGRAMS / "broken_xforms.py")


def test_fuzz_writes_the_summary_contract(tmp_path):
    ratio = PROGRAMS / "ratio.py"
    proc = run_cli(["fuzz", "--program", f"{ratio}:ratio", "--transformation", f"{ratio}:Recip", "--all",
                    "--time", "3"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = summary_of(tmp_path)
    [entry] = summary["instances"]
    assert CONTRACT <= set(entry)
    assert entry["verdict"] == "PASS" and entry["transformation"] == "Recip"
    assert entry["execs"] > 100 and entry["execs_per_sec"] > 0
    assert entry["seconds_to_first_finding"] is None and entry["crashes"] == []
    # the PASS says what it rests on: afl-fuzz's own executions, apart from the seed inputs
    assert entry["evidence"]["kind"] == "FUZZED" and entry["evidence"]["engine_execs"] > 100
    assert summary["per_transformation"][0]["pass_evidence"] == {"FUZZED": 1}
    assert "FUZZED (afl-fuzz" in proc.stdout + proc.stderr
    seeds = list((tmp_path / "corpus" / "ratio" / entry["id"]).glob("hg-seed-*.bin"))
    assert len(seeds) >= 8
    # the main command writes the report as a campaign does, from its run's state
    assert (tmp_path / "out" / "report.html").is_file() and (tmp_path / "out" / "campaign.db").is_file()
    assert summary["executor"] == "local" and entry["id"] in (tmp_path / "out" / "report.html").read_text()


def test_fuzz_runs_on_a_dask_cluster_with_the_same_summary_contract(tmp_path):
    """One driver: --dask-local works for fuzz, and its summary.json is fuzz's contract."""
    pytest.importorskip("distributed", reason="Dask is the optional extra harnessgen[dask]; `make setup` installs it")
    ratio = PROGRAMS / "ratio.py"
    proc = run_cli(["fuzz", "--program", f"{ratio}:ratio", "--transformation", f"{ratio}:Recip", "--all",
                    "--time", "2", "--no-audit", "--dask-local", "1"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = summary_of(tmp_path)
    [entry] = summary["instances"]
    assert CONTRACT <= set(entry) and entry["verdict"] == "PASS" and entry["execs"] > 100
    assert summary["executor"] == "dask-local" and summary["finished"] == summary["planned"] == 1
    assert (tmp_path / "out" / "report.html").is_file()


def test_library_warnings_go_to_the_runs_log_not_between_the_verdict_lines(tmp_path):
    ratio = PROGRAMS / "ratio.py"
    proc = run_cli(["fuzz", "--program", f"{ratio}:ratio", "--transformation", f"{ratio}:RecipThatWarns", "--all",
                    "--time", "1", "--no-audit"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "a library warning while applying" not in proc.stdout + proc.stderr
    assert "library warning(s) (DaCe's) in" in proc.stdout + proc.stderr
    # one second per instance leaves afl-fuzz no time: a PASS on the seeds alone, said so
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "PASS" and entry["evidence"]["kind"] == "SEEDS_ONLY"
    assert entry["evidence"]["engine_execs"] == 0 and entry["evidence"]["meant_to_fuzz"]
    assert summary_of(tmp_path)["per_transformation"][0]["not_fuzzed_as_meant"] == 1
    assert "rest on the seed inputs only" in proc.stderr and "SEEDS ONLY (" in proc.stderr
    log = summary_of(tmp_path)["warnings"]
    assert log["count"] >= 1 and "a library warning while applying" in Path(log["log"]).read_text()
    proc = run_cli(["fuzz", "--program", f"{ratio}:ratio", "--transformation", f"{ratio}:RecipThatWarns", "--all",
                    "--time", "1", "--no-audit", "--fresh", "-v"], tmp_path)
    assert "a library warning while applying" in proc.stderr


@pytest.mark.parametrize("xform,verdict", [("RaisesOnApply", "FAILED_TO_APPLY"),
                                           ("LeavesInvalidSDFG", "INVALID_SDFG"),
                                           ("DoesNotCompile", "BUILD_FAILURE")])
def test_broken_transformations_are_findings_not_tracebacks(tmp_path, xform, verdict):
    proc = run_cli(["fuzz", "--program", "kernels:sigmoid", "--transformation", f"{BROKEN}:{xform}",
                    "--time", "2"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    entries = summary_of(tmp_path)["instances"]
    assert entries and all(e["verdict"] == verdict for e in entries)
    kept = tmp_path / "crashes" / "kernels" / entries[0]["id"] / verdict.lower()
    assert {"error.txt", "pre.sdfg", "transformation.json", "instance.json"} <= {p.name for p in kept.iterdir()}
    if verdict == "BUILD_FAILURE":
        assert "hg_no_such_function_anywhere" in (kept / "error.txt").read_text()
    if verdict != "FAILED_TO_APPLY":    # what the transformation made is kept for inspection
        assert (kept / "post.sdfg").is_file()
    # runs the finding's repro.py; given relative to where the command runs, as `make replay` does
    replayed = run_cli(["replay", os.path.relpath(kept, REPO)], tmp_path)
    assert replayed.returncode == 1 and replayed.stdout.startswith(f"{verdict}: "), replayed.stdout
    fixed = subprocess.run([sys.executable, str(kept / "repro.py"), "--transformation", f"{BROKEN}:LeavesTaskletAlone"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert fixed.returncode == 0 and "fixed" in fixed.stdout, fixed.stdout + fixed.stderr


def test_sdfg_file_program_and_single_instance(tmp_path):
    from tests.conftest import instances_of, program_sdfg

    path = tmp_path / "gemm.sdfg"
    program_sdfg("gemm").save(str(path))
    _, insts = instances_of("gemm", "MapTiling")
    # a saved SDFG is tested as given by default; --simplify meets the (already simplified) program's matches
    proc = run_cli(["fuzz", "--program", str(path), "--transformation", "MapTiling", "--instance", insts[0].id,
                    "--time", "2", "--simplify"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["id"] == insts[0].id and entry["verdict"] == "PASS"


@pytest.mark.parametrize("args,message", [
    (["fuzz", "--program", "cloudy", "--transformation", "MapTiling"], "unknown target 'cloudy'"),
    (["fuzz", "--program", "kernels:gemm", "--transformation", "MapTilling"], "did you mean MapTiling"),
    (["fuzz", "--program", "kernels:gemm", "--transformation", "MapTiling", "--constraints", "nope.json"],
     "--constraints: no such file"),
    (["fuzz", "--program", "kernels:gemm", "--transformation", "MapTiling", "--instance", "MapTiling-00000000"],
     "no such instance"),
    (["replay", "missing.bin"], "no such input file"),
    (["fuzz", "--program", "kernels:gemm", "--transformation", "MapTiling", "--redo", "UNSUPORTED"],
     "unknown verdict(s) UNSUPORTED"),
])
def test_errors_name_what_to_fix(tmp_path, args, message):
    proc = run_cli(args, tmp_path)
    assert proc.returncode == 2
    assert message in " ".join(proc.stderr.split()), proc.stderr


def test_instances_lists_input_configuration_sizes():
    proc = run_cli(["instances", "--program", "kernels:jacobi2d", "--transformation", "MapTiling", "--json",
                    "--params", "default"], PROGRAMS)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) == 10
    assert all({"id", "before", "after", "before_at_20", "after_at_20"} <= set(r) for r in rows)
    # the minimum input-flow cut shrinks some cutouts' input configurations
    assert any(r["after_at_20"] < r["before_at_20"] for r in rows)
    assert all(r["after_at_20"] <= r["before_at_20"] for r in rows)


def test_instances_table_lists_the_declined_parameter_variants():
    """The table (not --json): each instance, and the parameter variants the transformation
    declines at their match, which the plan leaves out."""
    proc = run_cli(["instances", "--program", "kernels:gemm", "--transformation", "MapTiling"], PROGRAMS)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    planned = json.loads(run_cli(["instances", "--program", "kernels:gemm", "--transformation", "MapTiling",
                                  "--json"], PROGRAMS).stdout)
    assert f"MapTiling in kernels:gemm: {len(planned)} instance(s)" in text


def test_several_transformations_in_parallel_with_a_budget_then_resumed(tmp_path):
    """--budget 0 starts nothing; the same command without it fuzzes every instance of both
    transformations two at a time; once more, it finds everything done and repeats nothing."""
    args = ["fuzz", "--program", "kernels:column_window", "--transformation",
            "MapTiling,harnessgen.targets.cloudsc_xforms:OffloadMap", "--time", "1", "--jobs", "2"]
    first = run_cli(args + ["--budget", "0"], tmp_path)
    assert first.returncode == 0, first.stderr
    assert "not started within the budget" in first.stderr
    assert summary_of(tmp_path)["finished"] == 0
    second = run_cli(args, tmp_path)
    assert second.returncode == 0, second.stderr
    summary = summary_of(tmp_path)
    assert summary["finished"] == summary["planned"] >= 2 and summary["not_run"] == 0
    assert {e["transformation"] for e in summary["instances"]} == {"MapTiling", "OffloadMap"}
    assert all(e["verdict"] == "PASS" for e in summary["instances"])
    rows = {r["transformation"]: r for r in summary["per_transformation"]}
    assert sum(r["instances"] for r in rows.values()) == summary["planned"]
    assert "verdicts per transformation" in second.stderr
    third = run_cli(args, tmp_path)
    assert f"{summary['planned']} of them done by an earlier run" in third.stderr
    assert [e["id"] for e in summary_of(tmp_path)["instances"]] == [e["id"] for e in summary["instances"]]


SCALE = """import dace
import numpy as np


@dace.program
def scale(A: dace.float64[16]):
    for i in dace.map[0:16]:
        A[i] = np.exp(A[i]) * {factor}
"""


def test_a_run_over_an_edited_program_judges_it_again(tmp_path):
    """The same command after the program's file changed: its instances are the same by id,
    but the verdicts of the old program are not the new one's (a PASS of the old code would
    stand for code never judged). Unchanged, the run repeats nothing."""
    program = tmp_path / "scale.py"
    program.write_text(SCALE.format(factor="2.0"))
    args = ["fuzz", "--program", f"{program}:scale", "--transformation", f"{BROKEN}:RaisesOnApply", "--time", "1",
            "--no-reference-check", "--no-audit"]     # a verdict without a build: the resume is what is tested
    for factor, repeated in (("2.0", False), ("2.0", True), ("3.0", False)):
        program.write_text(SCALE.format(factor=factor))
        proc = run_cli(args, tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert ("done by an earlier run" in proc.stderr) == repeated, (factor, proc.stderr)
        summary = summary_of(tmp_path)
        assert summary["finished"] == summary["planned"] >= 1


# DaCe 1.0.2's code generator bug (a branch on a returned scalar kept as double d[1]); 2.0 builds the program
@pytest.mark.dace_102
def test_a_program_dace_cannot_build_is_one_finding_and_blocks_every_instance_it_holds(tmp_path):
    """DaCe 1.0.2 emits `if (d > 0.0)` for a branch on a returned scalar it keeps as `double
    d[1]`: the first instance writes that cause as a finding against DaCe's code generator;
    every other instance holding the construct is BLOCKED without being compiled, and an instance
    judged on the whole program after the program itself was found blocked (two passes at the
    top level, one after the other) without even applying its change; the run's bug analysis
    reduces the program and writes its BUG.md."""
    program = PROGRAMS / "scalar_branch.py"
    proc = run_cli(["fuzz", "--program", f"{program}:scalar_branch", "--transformation", "MapTiling,simplify,FuseStates",
                    "--time", "1", "--reduce-time", "60", "--jobs", "1"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = summary_of(tmp_path)
    assert {e["verdict"] for e in summary["instances"]} == {"BLOCKED"} and len(summary["instances"]) >= 3
    [cause] = summary["codegen_causes"]
    assert cause["instances"] == len(summary["instances"])
    messages = [e["message"] for e in summary["instances"]]
    assert sum("a known cause, first met in" in m for m in messages) == len(messages) - 1
    assert any("the change was not applied" in m for m in messages), messages
    assert all(row["findings"] == 0 for row in summary["per_transformation"])   # not the transformations' bug
    [bug] = summary["distinct_bugs"]
    assert bug["kind"] == "CODEGEN_FAILURE" and bug["transformation"] == "DaCe code generator"
    assert bug["reduced"] and bug["reduced_nodes"] < bug["nodes"], bug
    reduced = tmp_path / "out" / bug["reduced"]
    meta = json.loads((reduced / "meta.json").read_text())
    assert "double[1]" in meta["message"] and meta["reduction"].startswith("reduced from")
    report = (tmp_path / "out" / bug["report"]).read_text()
    assert "does not compile" in report and str(REPO) not in report.split("## Compiler output")[1]
    # the construct is DaCe's: its own code for the program fails alike
    assert "the program **scalar_branch (" in report, report
    repro = subprocess.run([sys.executable, "repro.py"], cwd=reduced, capture_output=True, text=True, timeout=600)
    assert repro.returncode == 1 and "STILL PRESENT: the same error" in repro.stdout, repro.stdout + repro.stderr


def test_a_harness_whose_first_execution_is_slow_is_fuzzed_with_a_limit_above_it(tmp_path):
    """Each harness process waits 1.2 s before its first input (as a GPU's context creation
    does): afl-fuzz's default limit (1000 ms) would abort its dry run; the limit measured on the
    seed runs lets it fuzz."""
    ratio = PROGRAMS / "ratio.py"
    proc = run_cli(["fuzz", "--program", f"{ratio}:ratio", "--transformation", f"{ratio}:Recip", "--all",
                    "--time", "30", "--no-audit", "--prove", "off"], tmp_path,
                   env={"HARNESSGEN_SETUP_DELAY_MS": "1200"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    [entry] = summary_of(tmp_path)["instances"]
    timing = entry["exec_timing"]
    assert timing["slowest_run_ms"] >= 1200 and timing["afl_timeout_ms"] >= 3600, timing
    assert entry["verdict"] == "PASS" and entry["evidence"]["kind"] == "FUZZED", entry["evidence"]


def test_a_program_daces_frontend_refuses_is_named_with_what_it_raised(tmp_path):
    """Slices of different lengths (the odd and even elements of N): DaCe's frontend raises
    while parsing. The user gets a named error, not a traceback of harnessgen's."""
    program = tmp_path / "uneven.py"
    program.write_text("import dace\nN = dace.symbol('N')\n\n\n@dace.program\n"
                       "def uneven(A: dace.float64[N], B: dace.float64[N]):\n    B[0:N:2] = A[1:N:2]\n")
    proc = run_cli(["fuzz", "--program", f"{program}:uneven", "--transformation", "MapTiling", "--time", "1"], tmp_path)
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "DaCe could not make an SDFG of uneven.py:uneven" in said and "[ceiling(N/2" in said, said[-1500:]
    assert "Traceback" not in said.split("error: --program")[-1]
