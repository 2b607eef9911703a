"""Findings of known bugs cluster into one bug each, across instances, programs and runs, and
each bug's BUG.md names a command that reproduces it."""
import contextlib
import json
import re
import subprocess
import sys
from pathlib import Path

from harnessgen.bugs.analysis import analyse
from harnessgen.bugs.reduce import ReduceOptions
from tests.conftest import PROGRAMS, REPO, run_cli

BROKEN = PROGRAMS / "broken_xforms.py"
# the ground truth: each transformation has exactly one bug, whatever it is applied to
KINDS = {"RaisesOnApply": "FAILED_TO_APPLY", "LeavesInvalidSDFG": "INVALID_SDFG", "DoesNotCompile": "BUILD_FAILURE",
         "NullWrite": "POST_CRASH"}
XFORMS = ",".join(f"{BROKEN}:{name}" for name in KINDS)


def fuzz(program: str, tmp: Path) -> subprocess.CompletedProcess:
    proc = run_cli(["fuzz", "--program", program, "--transformation", XFORMS, "--time", "2", "--no-audit",
                    "--no-reference-check", "--reduce-time", "60"], tmp)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def instances_per_transformation(run: Path):
    summary = json.loads((run / "summary.json").read_text())
    counts = {}
    for entry in summary["instances"]:
        counts[entry["transformation"]] = counts.get(entry["transformation"], 0) + 1
    return counts


def test_known_bugs_cluster_one_each_and_merge_across_runs(tmp_path):
    first, second = tmp_path / "sigmoid", tmp_path / "softmax"
    proc = fuzz("kernels:sigmoid", first)       # two instances of each: its tasklets that call exp
    run = first / "out"
    counts = instances_per_transformation(run)
    assert set(counts) == set(KINDS) and all(n >= 2 for n in counts.values()), counts
    summary = json.loads((run / "summary.json").read_text())
    rows = summary["distinct_bugs"]
    # one bug per transformation, holding every instance of it: none merged, none split
    assert sorted((r["transformation"], r["kind"], r["instances"]) for r in rows) == \
        sorted((name, KINDS[name], counts[name]) for name in KINDS)
    assert list(summary).index("distinct_bugs") < list(summary).index("instances")   # it leads
    # an instance whose pair equals a judged one's (the two exp tasklets) takes its verdict, not a finding
    assert f"distinct bugs: {sum(counts.values()) - summary['same_pair']} finding(s) in 4" in proc.stderr
    crash = next(r for r in rows if r["kind"] == "POST_CRASH")
    assert crash["description"].startswith("null pointer")          # gdb's siginfo, not a guess
    html = (run / "report.html").read_text()
    assert "Distinct bugs" in html and all(r["id"] in html for r in rows)

    for row in rows:
        if row["kind"] != "POST_CRASH":        # reduced without running anything: never larger
            assert row["reduced"] and row["reduced_nodes"] <= row["nodes"], row
        report = (run / row["report"]).read_text()
        command = re.search(r"^python (\S+/repro\.py)$", report, re.M)
        assert command, report
        assert f"Seen in {row['instances']} instance(s)" in report and "## Versions" in report
        replay = subprocess.run([sys.executable, command.group(1)], capture_output=True, text=True, cwd=REPO,
                                timeout=300)
        assert replay.returncode == 1, (row, replay.stdout, replay.stderr)

    # another program, another run: the same four bugs, now with the instances of both
    fuzz("kernels:softmax", second)
    more = instances_per_transformation(second / "out")
    merged = run_cli(["bugs", str(run), str(second / "out")], tmp_path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    document = json.loads((run / "bugs.json").read_text())
    assert document["distinct_bugs"] == 4
    assert sorted((b["id"], b["instances"]) for b in document["bugs"]) == \
        sorted((r["id"], r["instances"] + more[r["transformation"]]) for r in rows)
    assert all(set(b["programs"]) == {"softmax", "sigmoid"} for b in document["bugs"])
    # clustering again without naming the second run keeps what bugs.json had
    again = run_cli(["bugs", str(run)], tmp_path)
    assert again.returncode == 0 and json.loads((run / "bugs.json").read_text())["findings"] == document["findings"]

    # no time left for reductions: what was reduced is kept, nothing new is started, each
    # step is told
    steps = []

    def step(label):
        steps.append(label)
        return contextlib.nullcontext()

    bugs = analyse([run], run, ReduceOptions(), seconds=0, step=step)
    assert steps == ["clustering the findings into distinct bugs"]
    for bug in bugs:
        reduced = bug.reduction
        assert reduced["folder"] or reduced["reason"].startswith(("not reduced", "no smaller", "a generated")), reduced


def test_a_pass_bug_on_a_whole_program_is_reduced_and_the_reduced_program_reproduces(tmp_path):
    """The planted state fusion (zoo k) is judged on all of softmax: reduction removes states
    while post, built and replayed, still differs from pre the same way (a fixed number of
    programs judged, so the result does not depend on the machine's speed)."""
    proc = run_cli(["fuzz", "--program", "kernels:softmax", "--transformation",
                    "harnessgen.zoo.planted:FuseStatesMissingViews", "--time", "2", "--no-reference-check",
                    "--reduce-time", "600", "--reduce-candidates", "6"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (bug,) = json.loads((tmp_path / "out" / "bugs.json").read_text())["bugs"]
    reduction = bug["reduction"]
    assert bug["kind"] == "MISMATCH" and reduction["candidates"] == 6 and reduction["kept"] >= 1
    assert sum(reduction["after"]) < sum(reduction["before"]), reduction
    replay = subprocess.run([sys.executable, str(Path(reduction["folder"]) / "repro.py")], capture_output=True,
                            text=True, cwd=REPO, timeout=300)
    assert replay.returncode == 1 and "MISMATCH" in replay.stdout, replay.stdout + replay.stderr
    report = (tmp_path / "out" / "bugs" / bug["id"] / "BUG.md").read_text()
    assert re.search(r"^python \S+/reduced/\S+/repro\.py$", report, re.M), report     # the reduced one
