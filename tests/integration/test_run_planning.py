"""Planning a run: cached per transformation, and slow enumerations beside the run."""
import dataclasses
from pathlib import Path

from harnessgen.campaign import Budget, CampaignConfig, plan
from harnessgen.campaign.planning import DeferredPlanner, PlanProgress
from harnessgen.core.records import FuzzOptions


class Recorder(PlanProgress):
    def __init__(self):
        self.rows, self.deferred_specs = [], []

    def enumerated(self, row, seconds, cached):
        self.rows.append((row["spec"], row["instances"], cached))

    def deferred(self, specs):
        self.deferred_specs = list(specs)


def config(tmp_path: Path, transformations: str) -> CampaignConfig:
    options = FuzzOptions(work_dir=tmp_path / "work", out_dir=tmp_path / "out")
    return CampaignConfig(program="kernels:gemm", transformations=transformations, directory=tmp_path / "out",
                          budget=Budget(1.0), options=options)


def test_a_plan_cache_hit_enumerates_the_same_instances(tmp_path):
    first, again = Recorder(), Recorder()
    planned = plan(config(tmp_path, "MapTiling,FuseStates"), first)
    replanned = plan(config(tmp_path, "MapTiling,FuseStates"), again)
    assert [row["id"] for row in replanned.rows] == [row["id"] for row in planned.rows] and planned.rows
    assert [cached for *_, cached in first.rows] == [False, False]
    assert [cached for *_, cached in again.rows] == [True, True]
    assert [count for _, count, _ in again.rows] == [count for _, count, _ in first.rows]
    # other planning options are another plan
    other = dataclasses.replace(config(tmp_path, "MapTiling"), settings=["tile_sizes=[2]"])
    fresh = Recorder()
    plan(other, fresh)
    assert fresh.rows[0][2] is False


def test_passes_are_enumerated_beside_the_run_and_then_cached(tmp_path):
    progress = Recorder()
    cfg = config(tmp_path, "MapTiling,FuseStates,simplify")
    planned = plan(cfg, progress, defer=True)
    assert planned.deferred == ["FuseStates", "simplify"] == progress.deferred_specs
    assert {row["spec"] for row in planned.rows} == {"MapTiling"}
    planner = DeferredPlanner(planned, cfg, first_position=len(planned.rows))
    try:
        done = []
        while planner.busy:
            import concurrent.futures as cf

            cf.wait(list(planner.futures), timeout=60)
            done += planner.ready()
    finally:
        planner.close()
    by_spec = {row["spec"]: rows for row, rows, _ in done}
    assert set(by_spec) == {"FuseStates", "simplify"}
    positions = [r["position"] for rows in by_spec.values() for r in rows]
    assert sorted(positions) == list(range(len(planned.rows), len(planned.rows) + len(positions)))
    # the same plan again: the passes come from the cache, nothing is deferred
    assert plan(cfg, Recorder(), defer=True).deferred == []


def test_the_transformation_enumerated_before_the_run_is_one_quick_to_judge(tmp_path):
    """A loop transformation listed first is left beside the run: the workers start on a
    single-state one, whose small cutouts give the first verdicts within seconds."""
    planned = plan(config(tmp_path, "LoopToMap,MapTiling,FuseStates"), Recorder(), defer=True)
    assert {row["spec"] for row in planned.rows} == {"MapTiling"}
    assert planned.deferred == ["LoopToMap", "FuseStates"]
    # with none quick to judge, the first pattern transformation still gives the workers a start
    planned = plan(config(tmp_path / "loops", "LoopToMap,FuseStates"), Recorder(), defer=True)
    assert planned.deferred == ["FuseStates"]


def test_a_first_transformation_that_matches_nowhere_does_not_hold_back_the_first_verdict(tmp_path):
    """The transformation enumerated before the run matches nothing (NPBench's first,
    AddThreadBlockMap, on CPU programs): the next pattern transformation is enumerated before
    the run too, so the workers have instances from the start."""
    progress = Recorder()
    planned = plan(config(tmp_path, "AddThreadBlockMap,MapTiling,FuseStates"), progress, defer=True)
    assert [spec for spec, *_ in progress.rows] == ["AddThreadBlockMap", "MapTiling"]
    assert {row["spec"] for row in planned.rows} == {"MapTiling"} and planned.rows
    assert planned.deferred == ["FuseStates"]
