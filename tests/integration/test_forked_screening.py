"""A pair proven equal has its inputs screened through cffi before its replay binary is
compiled; whatever does not pass there is judged natively, exactly as without the screening."""
from harnessgen.harness.build import build
from harnessgen.harness.forked import RacePass, Screening
from harnessgen.inputs import seeds
from tests.conftest import PROGRAMS, layout_of, make_pair

BROKEN = str(PROGRAMS / "broken_xforms.py")


def _deferred(pair, cache):
    layout = layout_of(pair)
    return layout, build(pair, layout, cache, afl=False, replay_binary=False)


def _seeds(layout, folder, count=12, seed=3):
    return seeds.write(seeds.sample(layout, count=count, seed=seed), folder)


def test_inputs_that_pass_through_cffi_need_no_replay_binary_until_it_is_asked_for(tmp_path):
    from harnessgen.core import protocol

    layout, harness = _deferred(make_pair("elementwise_chain", "MapTiling"), tmp_path)
    assert harness.replay_deferred and not harness.replay_compiled
    paths = _seeds(layout, tmp_path / "seeds")
    timings = []
    screening = Screening(harness, RacePass(threads=2, repeat=3))
    assert screening.seeds(paths, timings=timings) == (paths, [])
    assert screening.race(paths) == (paths, [])
    assert len(timings) == len(paths) and not harness.replay_compiled       # answered by the child
    # whatever runs the build natively gets the binary, compiled when first asked for
    assert protocol.run_native(harness.harness_replay, bytes(256)).exit == protocol.Exit.PASS
    assert harness.replay_compiled


def test_a_failing_input_is_judged_natively_as_without_the_screening(tmp_path):
    # a wrong tiling fails only for sizes that are not a multiple of the tile
    pair = make_pair("elementwise_chain", "harnessgen.zoo.planted:TilingWithoutRemainder")
    layout, harness = _deferred(pair, tmp_path / "deferred")
    paths = _seeds(layout, tmp_path / "seeds")
    passing, crashing = Screening(harness).seeds(paths)
    eager = build(pair, layout, tmp_path / "eager", afl=False)
    assert crashing and (passing, crashing) == seeds.screen_seeds(eager, paths)
    assert harness.replay_compiled


def test_a_post_that_crashes_the_child_is_judged_natively(tmp_path):
    layout, harness = _deferred(make_pair("sigmoid", f"{BROKEN}:NullWrite"), tmp_path)
    paths = _seeds(layout, tmp_path / "seeds", count=3, seed=0)
    passing, crashing = Screening(harness).seeds(paths)
    assert passing == [] and [p for p, _ in crashing] == paths


def test_a_race_check_that_fails_in_the_child_is_found_natively(tmp_path):
    """Post right on one thread and wrong on several: the child's seeds pass, its race pass
    does not, so both passes run natively and the race check finds every input."""
    layout, harness = _deferred(make_pair("sigmoid", f"{BROKEN}:WrongOnSeveralThreads"), tmp_path)
    paths = _seeds(layout, tmp_path / "seeds", count=4, seed=0)
    screening = Screening(harness, RacePass(threads=2, repeat=2))
    passing, crashing = screening.seeds(paths)
    assert crashing == [] and passing == paths and harness.replay_compiled
    checked, racing = screening.race(passing)
    assert checked == [] and [p for p, _ in racing] == paths


def test_a_build_made_without_its_binary_is_completed_in_place_and_one_that_lost_it_is_built_again(tmp_path):
    pair = make_pair("elementwise_chain", "MapTiling")
    layout, deferred = _deferred(pair, tmp_path)
    again = build(pair, layout, tmp_path, afl=False)          # asked for with its binary: compiled there
    assert again.dir == deferred.dir and again.replay_compiled
    eager = build(pair, layout, tmp_path / "eager", afl=False)
    assert not eager.replay_deferred
    eager.harness_replay.unlink()       # a build made with its binary that lost it is incomplete
    rebuilt = build(pair, layout, tmp_path / "eager", afl=False)
    assert rebuilt.dir == eager.dir and rebuilt.replay_compiled
    assert list((tmp_path / "eager" / "builds").glob("*.incomplete-*")) == []
