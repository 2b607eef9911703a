"""The pytest plugin, as a DaCe developer's test file uses it: one line fuzzes a transformation
on a program; a wrong transformation fails the test with its reproducer in the message, a
correct one passes, a finding the test expects is reported and does not fail it, and
--harnessgen-time 0 skips the fuzzing."""
import sys

import pytest

pytest_plugins = ["pytester"]

DEVELOPERS_TEST = '''
import dace
from dace.transformation.dataflow import MapTiling

from harnessgen.zoo.planted import TilingWithoutRemainder

N = dace.symbol("N")


@dace.program
def scale(A: dace.float64[N], B: dace.float64[N]):
    B[:] = A * 2.0 + 1.0


def test_tiling_without_remainder(harnessgen):
    harnessgen.check(scale, TilingWithoutRemainder)


def test_tiling(harnessgen):
    report = harnessgen.check(scale, MapTiling)
    assert report is None or report.verdicts


def test_known_bug(harnessgen):
    harnessgen.check(scale, TilingWithoutRemainder, expected=["MISMATCH"])
'''


@pytest.fixture
def developers_tests(pytester):
    pytester.makepyfile(test_tiling=DEVELOPERS_TEST)
    return pytester


@pytest.mark.fuzz
def test_a_wrong_transformation_fails_with_its_reproducer_and_a_correct_one_passes(developers_tests):
    result = developers_tests.runpytest_subprocess("--harnessgen-time", "2", "--harnessgen-budget", "300",
                                                   "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    failure = "\n".join(result.outlines)
    assert "test_tiling_without_remainder" in failure and "MISMATCH" in failure
    assert "first unexpected finding: MISMATCH" in failure and "/repro.py" in failure
    # the expected finding is reported at the end, not failed
    assert "harnessgen: expected findings (not failures)" in failure and "test_known_bug" in failure
    # nothing was written outside pytest's own folders (the inner session's basetemp, its output)
    written = sorted(p.name for p in developers_tests.path.iterdir() if not p.name.startswith("runpytest-")
                     and p.name not in ("stdout", "stderr"))
    assert written == ["test_tiling.py"], written
    reproducer = next(line.split("python ", 1)[1].strip().rstrip(")") for line in result.outlines
                      if "first unexpected finding" in line)
    replayed = developers_tests.run(sys.executable, reproducer)
    assert replayed.ret == 1 and "MISMATCH" in "\n".join(replayed.outlines), replayed.outlines[-20:]

def test_time_zero_skips_the_fuzzing(developers_tests):
    result = developers_tests.runpytest_subprocess("--harnessgen-time", "0", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
