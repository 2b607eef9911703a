"""Campaign pieces without running one: budgets, the SQLite state's transitions, what `all` selects."""
import json

import pytest

from harnessgen.campaign import Budget
from harnessgen.campaign.state import CampaignState
from harnessgen.core.errors import ConfigError


@pytest.mark.parametrize("text, seconds, execs", [
    ("30", 30, None), ("30s", 30, None), ("5m", 300, None), ("2h", 7200, None),
    ("200000x", 3600, 200000), ("2e5execs", 3600, 200000), ("60s,1000x", 60, 1000),
])
def test_budget_parses_time_and_executions(text, seconds, execs):
    assert Budget.parse(text) == Budget(seconds, execs)


@pytest.mark.parametrize("text", ["", "soon", "0", "10 minutes", "-5", "0x"])
def test_bad_budget_names_the_flag(text):
    with pytest.raises(ConfigError, match="--budget"):
        Budget.parse(text)


def _planned(tmp_path, n=3):
    state = CampaignState(tmp_path / "campaign.db")
    rows = [{"id": f"X-{i}", "position": i, "spec": "X", "transformation": "X", "program": "p",
             "instance": {"id": f"X-{i}", "program": "p"}} for i in range(n)]
    state.record_plan({"program": "p", "transformations": "X"},
                      [{"spec": "X", "position": 0, "class_name": "X", "instances": n, "status": "ok", "message": ""}],
                      rows)
    return state


def test_state_transitions_and_recovery_after_a_kill(tmp_path):
    state = _planned(tmp_path)
    assert [r["id"] for r in state.pending()] == ["X-0", "X-1", "X-2"]
    run = state.start_run("local", 1, "cmd")
    assert state.start("X-0", run) == 1
    state.finish("X-0", {"verdict": "PASS", "attempt": 1})
    state.start("X-1", run)
    state.start("X-2", run)
    state.close()
    # killed here: X-1's worker had written its result file, X-2's had not
    results = tmp_path / "results"
    results.mkdir()
    (results / "X-1.json").write_text(json.dumps({"verdict": "MISMATCH", "attempt": 1}))
    state = CampaignState(tmp_path / "campaign.db")
    assert state.recover(lambda i: results / f"{i}.json") == {"recorded": 1, "requeued": 1}
    assert [r["id"] for r in state.pending()] == ["X-2"]
    by_id = {r["id"]: r for r in state.instances()}
    assert by_id["X-1"]["verdict"] == "MISMATCH" and by_id["X-1"]["completions"] == 1
    assert by_id["X-0"]["completions"] == 1 and by_id["X-2"]["attempts"] == 1
    assert state.start("X-2", state.start_run("local", 1, "cmd")) == 2


def test_stale_result_file_of_an_earlier_attempt_is_not_taken(tmp_path):
    state = _planned(tmp_path, 1)
    run = state.start_run("local", 1, "cmd")
    state.start("X-0", run)
    state.requeue("X-0")
    state.start("X-0", run)           # attempt 2 was running when the campaign was killed
    stale = tmp_path / "r.json"
    stale.write_text(json.dumps({"verdict": "PASS", "attempt": 1}))
    assert state.recover(lambda i: stale) == {"recorded": 0, "requeued": 1}


def test_redo_sends_chosen_verdicts_back(tmp_path):
    state = _planned(tmp_path, 2)
    run = state.start_run("local", 1, "cmd")
    for i, verdict in enumerate(("ERROR", "PASS")):
        state.start(f"X-{i}", run)
        state.finish(f"X-{i}", {"verdict": verdict})
    assert state.redo(("ERROR",)) == 1
    assert [r["id"] for r in state.pending()] == ["X-0"]


def test_a_campaign_directory_keeps_its_identity(tmp_path):
    state = _planned(tmp_path)
    state.check_same({"program": "p", "transformations": "X"})
    with pytest.raises(ConfigError, match="--fresh"):
        state.check_same({"program": "p", "transformations": "Y"})


def test_all_selects_cpu_builtins_only():
    from harnessgen.plan.instances import cpu_builtin_transformations

    names = cpu_builtin_transformations()
    assert {"MapFusion", "MapTiling", "LoopToMap", "StateFusion", "Vectorization"} <= set(names)
    assert not [n for n in names if n.startswith(("GPU", "FPGA", "MPI", "Hbm")) or "Warp" in n]
    assert names == sorted(names)


def test_report_lists_static_findings_and_unfinished_instances(tmp_path):
    """A BUILD_FAILURE has no triaged finding but a kept folder: the report links it; pending
    instances are listed as such; every plot that has data is drawn."""
    from harnessgen.campaign import run_report as report

    state = _planned(tmp_path, 3)
    run = state.start_run("local", 1, "cmd")
    kept = tmp_path / "crashes" / "t" / "X-0" / "build_failure"
    kept.mkdir(parents=True)
    state.start("X-0", run)
    state.finish("X-0", {"id": "X-0", "verdict": "BUILD_FAILURE", "crashes": [str(kept)], "message": "post: error\nlog",
                         "verdict_seconds": 2.5, "findings": [], "execs_per_sec": 0.0})
    state.start("X-1", run)
    state.finish("X-1", {"id": "X-1", "verdict": "PASS", "findings": [], "execs_per_sec": 1234.0,
                         "verdict_seconds": 3.0, "input_config_before": "N", "input_config_after": "N"})
    state.finish_run(run, 2)
    path = report.write(tmp_path, state)
    summary = json.loads((tmp_path / "summary.json").read_text())
    [finding] = summary["findings"]
    assert finding["outcome"] == "BUILD_FAILURE" and (tmp_path / finding["path"]) == kept
    assert summary["counts"] == {"pending": 1, "running": 0, "done": 2}
    assert [i["verdict"] for i in summary["instances"]] == ["BUILD_FAILURE", "PASS", "PENDING"]
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == ["execs.png", "time_to_finding.png",
                                                                       "verdicts.png"]
    assert path.read_text().count("data:image/png;base64,") == 3
    # --no-plots: the same report without them, and none an earlier report drew is left beside it
    report.write(tmp_path, state, plots=False)
    assert "data:image/png" not in path.read_text() and "report/" not in (tmp_path / "report.md").read_text()
    assert not list((tmp_path / "report").glob("*.png"))
    assert json.loads((tmp_path / "summary.json").read_text())["counts"] == summary["counts"]


def test_a_worker_gets_its_next_instance_before_the_driver_reports_the_last_one(tmp_path, monkeypatch):
    """The report after each result (the terminal, summary.json) grows with the run: a free
    worker must not wait for it."""
    import harnessgen.campaign as campaign

    state = _planned(tmp_path, n=4)
    monkeypatch.setattr(campaign, "run_task", lambda task, live: {"id": task.instance["id"], "verdict": "PASS"})
    running_when_reported = []

    class Progress:
        def finished(self, result):
            running_when_reported.append(state.counts()["running"])

        def update(self, running):
            pass

    ran = _drive_one_thread(tmp_path, state, Progress())
    assert ran == 4 and state.counts()["done"] == 4
    assert running_when_reported[:3] == [1, 1, 1] and running_when_reported[3] == 0


def test_a_follower_waits_for_its_representative_and_takes_its_verdict(tmp_path, monkeypatch):
    """X-0 is X-2's equal and reaches the pair after X-2 claimed it: it takes X-2's verdict
    once X-2 has one. X-1's equal X-3 ends in ERROR (a verdict about the run, not the pair):
    X-1 is judged alone after all."""
    import harnessgen.campaign as campaign
    from harnessgen.core import shared_pairs

    state = _planned(tmp_path, n=4)
    verdicts = {"X-2": "MISMATCH", "X-3": "ERROR"}
    equal_to = {"X-0": "X-2", "X-1": "X-3"}
    judged_alone = []

    def run_task(task, live):
        instance_id = task.instance["id"]
        if instance_id in equal_to and task.options.share_pairs:
            return {"id": instance_id, "verdict": shared_pairs.PENDING, "same_pair_as": equal_to[instance_id],
                    "pair_key": "k", "findings": [], "crashes": []}
        if instance_id in equal_to:
            judged_alone.append(instance_id)
        return {"id": instance_id, "verdict": verdicts.get(instance_id, "PASS"), "pair_key": "k",
                "message": "MISMATCH in B[0]", "findings": [{"path": "f"}], "audit": {"verdict": "SKIPPED"}}

    monkeypatch.setattr(campaign, "run_task", run_task)
    _drive_one_thread(tmp_path, state, None)
    assert state.counts()["done"] == 4
    follower = state.result("X-0")
    assert follower["verdict"] == "MISMATCH" and follower["same_pair_as"] == "X-2"
    assert follower["message"].startswith("same pair as X-2") and follower["findings"] == []
    assert json.loads((tmp_path / "results" / "X-0.json").read_text())["verdict"] == "MISMATCH"
    assert judged_alone == ["X-1"] and state.result("X-1")["verdict"] == "PASS"
    assert not state.result("X-1").get("same_pair_as")


def _drive_one_thread(tmp_path, state, progress) -> int:
    """The driver over ``state``'s pending instances, one worker thread, the run's budget 1 s:
    what ``campaign.run_task`` (patched by the test) returns is what the workers judged."""
    import concurrent.futures as cf
    import time

    import harnessgen.campaign as campaign
    from harnessgen.campaign.executors import Opened
    from harnessgen.campaign.schedule import Scheduler
    from harnessgen.core.records import FuzzOptions

    scheduler = Scheduler(lambda row: "main", 0.25, 0.15)
    scheduler.add(state.pending())
    feed = type("Feed", (), {"scheduler": scheduler, "planning": False, "poll": lambda self: None, "suspects": {},
                             "pairs": campaign._Followers(), "audit_later": lambda self, results: None,
                             "measured": lambda self, results: None, "costs": lambda self: (0.0, 1.0)})()
    config = campaign.CampaignConfig(program="p", transformations="X", directory=tmp_path,
                                     budget=Budget(1.0), options=FuzzOptions(out_dir=tmp_path))
    with cf.ThreadPoolExecutor(max_workers=1) as pool:
        return campaign._drive(config, Opened(pool, 1, "one thread"), state, state.start_run("local", 1, "cmd"),
                               feed, progress, time.monotonic())


def test_a_bound_shares_its_rest_among_the_queued_instances_that_fuzz(tmp_path):
    """Each instance gets --time where the bound's rest covers every queued instance's cost
    besides fuzzing plus --time for the part of them that fuzzes; less where it does not, and
    nothing (its seeds alone) where the rest cannot even pay for judging them."""
    import time

    import harnessgen.campaign as campaign
    from harnessgen.core.records import FuzzOptions

    def time_given(queued: int, costs: tuple) -> tuple:
        feed = type("Feed", (), {"scheduler": type("S", (), {"queued_in_phase": lambda self: queued - 1})(),
                                 "costs": lambda self: costs})()
        config = campaign.CampaignConfig(program="p", transformations="X", directory=tmp_path,
                                         budget=Budget(2.0), options=FuzzOptions(out_dir=tmp_path), run_budget_s=100.0)
        options = campaign._within_bound(FuzzOptions(out_dir=tmp_path, time_s=2.0), config, feed, time.monotonic(), 2)
        return options.time_s, options.time_cut_by_bound

    assert time_given(50, (0.5, 0.1)) == (2.0, False)        # (200 - 25) s for 5 fuzzing: plenty
    seconds, cut = time_given(200, (0.5, 0.5))                # (200 less the reserve, 180, - 100) s for 100 fuzzing
    assert cut and 0.7 < seconds <= 0.8
    assert time_given(500, (0.5, 0.5)) == (0.0, True)        # judging them alone takes more than the rest


def test_a_tight_bound_keeps_the_findings_audits_for_after_the_matches(tmp_path):
    """A finding's audit runs beside the matches only while the bound has room for both: where
    judging the queued matches would take what is left, every match's verdict comes first."""
    import time

    import harnessgen.campaign as campaign
    from harnessgen.core.records import FuzzOptions

    def tight(queued: int, overhead: float) -> bool:
        feed = type("Feed", (), {"scheduler": type("S", (), {"queued_matches": lambda self: queued})(),
                                 "costs": lambda self: (overhead, 1.0)})()
        config = campaign.CampaignConfig(program="p", transformations="X", directory=tmp_path,
                                         budget=Budget(2.0), options=FuzzOptions(out_dir=tmp_path), run_budget_s=100.0)
        return campaign._matches_tight(config, feed, time.monotonic(), 2)

    assert not tight(100, 0.5)        # 50 s of 200: room for the audits
    assert tight(400, 0.5)            # 200 s of 200: none
    assert tight(340, 0.5)            # 170 s: more than the 162 s the audits' share and the reserve leave
    assert not tight(400, 0.0)        # costs not measured yet: nothing is known to be tight


def test_a_bound_share_that_could_fuzz_fuzzes_even_after_slow_seeds(tmp_path):
    """A share of the bound of MIN_ENGINE_S or more gives the engine at least that much, though
    the seeds took the rest; a share below it, or a --time the user chose, is kept as given."""
    import time

    from harnessgen.campaign.runner import _engine_seconds
    from harnessgen.core.records import MIN_ENGINE_S, FuzzOptions

    seeds_took_two_seconds = time.monotonic() - 2.0
    cut = FuzzOptions(out_dir=tmp_path, time_s=1.5, time_cut_by_bound=True)
    assert _engine_seconds(cut, seeds_took_two_seconds) == MIN_ENGINE_S
    assert _engine_seconds(FuzzOptions(out_dir=tmp_path, time_s=0.5, time_cut_by_bound=True),
                           seeds_took_two_seconds) < MIN_ENGINE_S
    assert _engine_seconds(FuzzOptions(out_dir=tmp_path, time_s=1.5), seeds_took_two_seconds) < 0
