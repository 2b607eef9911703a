"""afl-fuzz's time limit per execution follows the measured seed runs."""
from harnessgen.campaign.runner import exec_timing


def test_fast_runs_keep_afl_fuzz_s_own_calibration():
    timing = exec_timing([0.01, 0.02, 0.015])
    assert timing["afl_timeout_ms"] is None and timing["runs"] == 3 and timing["slowest_run_ms"] == 20.0


def test_a_slow_first_execution_raises_the_limit_above_it():
    timing = exec_timing([1.4, 0.05, 0.05])         # a device's start-up paid by each process
    assert timing["afl_timeout_ms"] == 4200 and timing["median_run_ms"] == 50.0


def test_the_limit_is_capped_and_nothing_measured_says_nothing():
    assert exec_timing([500.0])["afl_timeout_ms"] == 60000
    assert exec_timing([]) == {}
