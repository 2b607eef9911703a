"""Races show only on several threads; aligned vector accesses fail only on misaligned views."""

import os

import numpy as np
import pytest

from harnessgen.core.outcome import Outcome
from harnessgen.harness.build import build
from harnessgen.harness.replay import ReplayWorker
from harnessgen.inputs.constraints import derive
from harnessgen.inputs.layout import build_layout
from harnessgen.triage.tsan import run_tsan
from tests.conftest import REPO, layout_of, make_pair

CONSTRAINTS = REPO / "afl_configs" / "kernels.constraints.json"


@pytest.fixture(scope="module")
def race_build(build_cache):
    pair = make_pair("prefix_sum", "harnessgen.zoo.planted:ParallelizeCarriedLoop")
    layout = build_layout(pair, derive(pair, user_file=CONSTRAINTS, strict_names=False))
    return layout, build(pair, layout, build_cache, afl=False)


@pytest.mark.quiet_machine     # a race shows only where its threads run at once
def test_carried_dependency_made_parallel_is_a_race(race_build):
    layout, harness = race_build
    # long enough that the threads' chunks overlap in time even on a loaded machine
    data = layout.encode({"NSCAN": 4096}, {"A": np.ones(4096), "B": np.ones(4096)})
    with ReplayWorker(harness.dir) as worker:
        assert worker.run(data).outcome == Outcome.PASS                        # one thread: right
        # many cheap runs: when the threads share one CPU they run one after the other in
        # most of them (measured: a batch of 200 runs shows the race about one time in three
        # there, on two free CPUs nearly always), so try batches until one does, boundedly
        for _ in range(50):
            result = worker.run(data, threads=4, repeat=200)
            if result.outcome != Outcome.PASS:
                break
        assert result.outcome == Outcome.RACE and result.container == "A", \
            f"{result.outcome.name} after 50 batches on CPUs {sorted(os.sched_getaffinity(0))}"
        assert 1 <= result.detail["differing_runs"] <= 200 and result.detail["threads"] == 4
        assert "agrees on one thread" in result.describe()


def test_thread_sanitizer_names_the_racing_statement_of_post(race_build):
    layout, harness = race_build
    data = layout.encode({"NSCAN": 16}, {"A": np.ones(16), "B": np.ones(16)})
    report = run_tsan(harness, data, threads=4)
    assert report.reports >= 1
    assert any(loc["file"] == "hg_post.cpp" and "A[i]" in (loc["code"] or "") for loc in report.locations), report


def test_thread_sanitizer_is_silent_on_a_correct_parallel_map(build_cache):
    pair = make_pair("gemm", "MapTiling", pick=lambda inst: "gemm_map" in inst.description)
    layout = layout_of(pair)
    harness = build(pair, layout, build_cache, afl=False)
    symbols = {s.name: 9 for s in layout.symbols}
    arrays = {c.name: np.ones(layout.counts(symbols)[c.name]) for c in layout.containers}
    report = run_tsan(harness, layout.encode(symbols, arrays), threads=4)
    assert report.reports == 0 and report.locations == [], report


def test_post_wrong_on_every_thread_count_is_a_mismatch_not_a_race(build_cache):
    pair = make_pair("elementwise_chain", "harnessgen.zoo.planted:TilingWithoutRemainder")
    layout = layout_of(pair)
    harness = build(pair, layout, build_cache, afl=False)
    data = layout.encode({"N": 5}, {c.name: np.arange(1.0, 6.0) for c in layout.containers})
    with ReplayWorker(harness.dir) as worker:
        assert worker.run(data, threads=4, repeat=3).outcome == Outcome.MISMATCH


def test_aligned_vector_loads_crash_only_on_misaligned_views(build_cache):
    pair = make_pair("elementwise_chain", "harnessgen.zoo.planted:AlignedVectorize")
    layout = layout_of(pair)
    harness = build(pair, layout, build_cache, afl=False)
    symbols = {s.name: 7 for s in layout.symbols}
    arrays = {c.name: np.arange(1.0, layout.counts(symbols)[c.name] + 1) for c in layout.containers}
    with ReplayWorker(harness.dir) as worker:
        for offset in (0, 16, 32, 48):          # 16-byte aligned starts: right
            data = layout.encode(symbols, arrays, {c.name: offset for c in layout.containers})
            assert worker.run(data).outcome == Outcome.PASS, offset
        for offset in (8, 24, 56):              # aligned only to the element size: SIGSEGV
            data = layout.encode(symbols, arrays, {c.name: offset for c in layout.containers})
            result = worker.run(data)
            assert result.outcome == Outcome.POST_CRASH and "SIGSEGV" in result.message, offset
