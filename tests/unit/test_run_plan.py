"""How a run over several transformations is planned and summarised."""
import dataclasses

from harnessgen.campaign.state import CampaignState
from harnessgen.core.records import InstanceResult, per_transformation
from harnessgen.subjects import interleave
from harnessgen.subjects.sdfg import transformation_specs
from harnessgen.targets import Target


def test_specs_default_to_the_target_set_and_split_on_commas():
    target = Target("t", {}, default_transformations=["A", "B"])
    assert transformation_specs(target, None) == ["A", "B"]
    assert transformation_specs(target, "C, m.py:D ,") == ["C", "m.py:D"]
    # a program of the user's own has no defaults: every built-in that matches, as ``all`` says
    assert transformation_specs(Target("bare", {}), "") == transformation_specs(Target("bare", {}), "all")
    assert len(transformation_specs(Target("bare", {}), None)) > 20


def test_interleave_takes_one_instance_per_transformation_in_turn():
    planned = [("A", 1), ("A", 2), ("A", 3), ("B", 4), ("C", 5), ("C", 6)]
    assert interleave(planned) == [("A", 1), ("B", 4), ("C", 5), ("A", 2), ("C", 6), ("A", 3)]


def result(xform, verdict, wall, first=None, setup=1.0, build_dir="b", findings=(), crashes=()):
    return InstanceResult(id=f"{xform}-{wall}", transformation=xform, program="p", target="t", verdict=verdict,
                          wall_seconds=wall, seconds_to_first_finding=first, setup_seconds=setup,
                          build_dir=build_dir, findings=[{"path": f} for f in findings], crashes=list(crashes))


def test_summary_rows_count_verdicts_findings_and_time_to_verdict():
    rows = per_transformation([
        result("X", "PASS", 10.0),
        result("X", "MISMATCH", 9.0, first=2.0, findings=["crashes/t/X-9.0/mismatch-1"]),
        result("X", "PASS", 12.0),
        result("Y", "FAILED_TO_APPLY", 0.5, first=0.4, build_dir=None, crashes=["crashes/t/Y/failed_to_apply"]),
    ])
    x, y = rows
    assert x["instances"] == 3 and x["verdicts"] == {"MISMATCH": 1, "PASS": 2} and x["findings"] == 1
    assert x["median_verdict_seconds"] == 10.0          # 3.0 (setup + first finding), 10.0, 12.0
    assert x["reproducers"] == ["crashes/t/X-9.0/mismatch-1"]
    assert y["findings"] == 1 and y["median_verdict_seconds"] == 0.4   # static: timed from the start
    assert y["reproducers"] == ["crashes/t/Y/failed_to_apply"]


def test_a_resumed_run_keeps_finished_instances_except_errors_and_redone_verdicts(tmp_path):
    """What `harnessgen fuzz` continues: its state keeps every finished instance; it always
    redoes ERROR (fuzz.fuzz adds it to --redo), and --redo names verdicts or transformations."""
    verdicts = ["PASS", "UNSUPPORTED", "ERROR", "MISMATCH"]
    identity = {"program": "p", "transformations": "X"}

    def kept(redo=(), fresh=False):
        path = tmp_path / ("fresh" if fresh else "resumed") / f"{'-'.join(redo) or 'none'}.db"
        state = CampaignState(path)
        rows = [{"id": f"X-{i}", "position": i, "spec": "X", "transformation": "X", "program": "p",
                 "instance": {"id": f"X-{i}"}} for i in range(len(verdicts))]
        state.record_plan(identity, [], rows)
        if not fresh:
            for i, verdict in enumerate(verdicts):
                state.finish(f"X-{i}", dataclasses.asdict(result("X", verdict, float(i))))
        state.redo(tuple(redo) + ("ERROR",))
        done = sorted(r["verdict"] for r in state.instances() if r["state"] == "done")
        state.close()
        return done

    assert kept() == ["MISMATCH", "PASS", "UNSUPPORTED"]
    assert kept(redo=("UNSUPPORTED", "MISMATCH")) == ["PASS"]
    assert kept(redo=("X",)) == []                      # every instance of transformation X
    assert kept(fresh=True) == []
    state = CampaignState(tmp_path / "other.db")
    state.record_plan(identity, [], [])
    assert state.is_same(identity) and not state.is_same({"program": "p", "transformations": "another"})


def test_summary_json_is_rewritten_as_results_come_but_at_most_a_tenth_of_the_drivers_time():
    from harnessgen.campaign.fuzz_run import SummaryWriter

    now = [0.0]
    writes = []

    def write():                       # a rewrite that takes one second of the driver's time
        writes.append(now[0])
        now[0] += 1.0

    summary = SummaryWriter(share=0.1, clock=lambda: now[0])
    summary.changed(write)             # the first result: written at once
    for _ in range(5):                 # results one second apart: the next rewrite waits 9 s
        now[0] += 1.0
        summary.changed(write)
    assert writes == [0.0]
    now[0] = 10.0
    summary.changed(write)
    assert writes == [0.0, 10.0]
    now[0] += 1.0
    summary.changed(write)             # not yet due ...
    summary.flush(write)               # ... the end of the run writes what came since
    summary.flush(write)               # and nothing twice
    assert writes == [0.0, 10.0, 12.0]
