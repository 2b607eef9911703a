"""A cutout keeps views of one container as one container (DESIGN: Fidelity).

DaCe's frontend passes a row of B to a loop in a map body through a read and a write
connector. Cut apart, the loop-carried dependency between them vanishes, and DaCe 1.0.2's
LoopToMap, which makes exactly that mistake, passed. With the views joined into one container
at the program's relative offsets, the cutout computes what the program computes and the bug
shows as a MISMATCH."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harnessgen.cutout.extract import extract
from harnessgen.plan.instances import enumerate_instances, load_transformation
from harnessgen.targets.loaders import load_python_program
from tests.conftest import PROGRAMS, run_cli, summary_of

PROGRAM = PROGRAMS / "aliased_rows.py"
# the shape is DaCe 1.0.2's frontend's: DaCe 2.0's passes the row through one in-and-out connector
# (no two connectors alias), and its LoopToMap refuses shift_rows' loop
pytestmark = pytest.mark.dace_102


def loop_to_map(name: str):
    target = load_python_program(PROGRAM, name)
    program = target.programs[name]
    sdfg = program.build()
    cls = load_transformation("LoopToMap")
    [inst] = enumerate_instances(target, [program], cls, "LoopToMap", {name: sdfg})
    return sdfg, cls, inst


def test_connectors_that_view_one_container_stay_one_container(monkeypatch):
    from dace import nodes

    sdfg, cls, inst = loop_to_map("shift_rows")
    pair = extract(sdfg, inst, cls)
    assert pair.ok, pair.error
    [group] = pair.aliases
    assert group["container"] == "B" and len(group["members"]) == 2 and len(group["written"]) == 1
    # one container of the row's five elements: the write view at 0, the read view at 1
    writes, = group["written"]
    [reads] = set(group["members"]) - {writes}
    assert group["joined_as"] == "B" and group["length"] == "5"
    assert group["offsets"] == {writes: 0, reads: 1} and group["spans"] == {writes: "4", reads: "4"}
    assert "B" in pair.input_config and "B" in pair.output_config and pair.pre.arrays["B"].shape == (5,)
    # without the map around it: the cutout is the loop, nested once in what joins its views
    assert pair.grown_for == ""
    assert not any(isinstance(n, nodes.MapEntry) for n, _ in pair.pre.all_nodes_recursive())
    assert pair.translated_match["cfg_id"] > 0

    monkeypatch.setenv("HARNESSGEN_CUT_ALIASES_APART", "1")
    apart = extract(sdfg, inst, cls)
    assert apart.ok and apart.aliases == []
    assert set(group["members"]) <= set(apart.input_config) | set(apart.output_config)


@pytest.mark.fuzz
@pytest.mark.parametrize("program", ["shift_rows", "shift_from_first_row"])
def test_a_loop_parallelized_across_aliased_views_is_a_mismatch_in_the_cutout(tmp_path, program):
    """Views joined at constant offsets, and views a map iteration apart kept whole by growing
    the cutout to the map: both show the carried dependency. (``shift_rows_sized`` does not
    serve here: with symbolic bounds LoopToMap keeps the loop's descending order, so the
    program itself differs only under a race.)"""
    proc = run_cli(["fuzz", "--program", f"{PROGRAM}:{program}", "--transformation", "LoopToMap", "--time", "30",
                    "--until-crash"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "MISMATCH", entry
    [finding] = entry["findings"]
    meta = json.loads((Path(finding["path"]) / "meta.json").read_text())
    assert meta["container"] == "B" and meta["aliases"][0]["container"] == "B"
    # the whole-program audit shows the same bug: observable
    assert entry["audit"]["verdict"] == "DIFFERS" and entry["audit"]["classification"] == "observable"
    # the instance's own inputs (its finding's first) ran in the program too
    assert entry["audit"]["from_instance"] >= 1
    assert meta["audit"]["classification"] == "observable" and finding["observable"] is True
    replay = subprocess.run([sys.executable, "repro.py"], cwd=finding["path"], capture_output=True, text=True,
                            timeout=600)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "MISMATCH in B" in replay.stdout


@pytest.mark.fuzz
def test_a_loop_without_a_carried_dependency_stays_silent_across_aliased_views(tmp_path):
    sdfg, cls, inst = loop_to_map("scale_rows")
    assert extract(sdfg, inst, cls).aliases, "the frontend no longer passes the row through two connectors"
    proc = run_cli(["fuzz", "--program", f"{PROGRAM}:scale_rows", "--transformation", "LoopToMap", "--time", "30"],
                   tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "PASS" and entry["execs"] > 10_000, entry


@pytest.mark.fuzz
def test_the_audit_reports_cutout_missed_when_aliased_views_are_cut_apart(tmp_path):
    """Cut apart, the views hide the bug: the audit says CUTOUT_MISSED (loudly, with a
    whole-program reproducer), and the instance is judged again in larger cutouts: the whole
    nested SDFG (still cut apart by the knob: PASS), then the whole program, which finds it."""
    proc = run_cli(["fuzz", "--program", f"{PROGRAM}:shift_rows", "--transformation", "LoopToMap", "--time", "10"],
                   tmp_path, env={"HARNESSGEN_CUT_ALIASES_APART": "1"})
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["audit"]["classification"] == "CUTOUT_MISSED" and entry["audit"]["outcome"] == "MISMATCH"
    assert "CUTOUT_MISSED" in proc.stdout + proc.stderr
    whole = Path(entry["audit"]["finding"])
    replay = subprocess.run([sys.executable, "repro.py"], cwd=whole, capture_output=True, text=True, timeout=600)
    assert replay.returncode == 1 and "MISMATCH in B" in replay.stdout, replay.stdout + replay.stderr
    assert [step["verdict"] for step in entry["audit"]["grown"]] == ["PASS", "MISMATCH"]
    assert entry["verdict"] == "MISMATCH" and entry["findings"] and "larger cutout" in entry["message"]
    replay = subprocess.run([sys.executable, "repro.py"], cwd=entry["findings"][0]["path"], capture_output=True,
                            text=True, timeout=600)
    assert replay.returncode == 1, replay.stdout + replay.stderr


@pytest.mark.fuzz
def test_a_bounded_run_audits_after_the_verdicts_and_still_finds_the_missed_difference(tmp_path):
    """With a bound, the PASS of the cut-apart cutout is given first and its whole-program
    audit waits in a queue of its own (every match before any audit); the audit, run after it,
    still shows CUTOUT_MISSED and the larger cutout finds the MISMATCH: deferring the audit
    loses nothing it finds."""
    proc = run_cli(["fuzz", "--program", f"{PROGRAM}:shift_rows", "--transformation", "LoopToMap", "--time", "5",
                    "--budget", "900"], tmp_path, env={"HARNESSGEN_CUT_ALIASES_APART": "1"})
    assert proc.returncode == 0, proc.stderr
    output = proc.stdout + proc.stderr
    assert "audit: whole program after every match has its verdict" in output
    assert "(audited)" in output and output.index("after every match") < output.index("(audited)")
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["audit"]["classification"] == "CUTOUT_MISSED" and entry["audit"]["outcome"] == "MISMATCH"
    assert [step["verdict"] for step in entry["audit"]["grown"]] == ["PASS", "MISMATCH"]
    assert entry["verdict"] == "MISMATCH" and entry["findings"] and "larger cutout" in entry["message"]
