"""The verdicts an instance or a replayed input can get, ordered by severity."""
from __future__ import annotations

import enum


class Outcome(enum.IntEnum):
    """Ordered like Hypothesis' Status: a larger value is a stronger verdict.

    PASS is the only silent outcome. INVALID_INPUT means pre itself failed on
    the input: a constraint is missing, never a bug of the transformation.
    """

    PASS = 0
    INVALID_INPUT = 1
    FLAKY = 2
    # the replay could not judge the input: its worker failed to load the build or answered
    # something unreadable (a harnessgen or environment problem, never the transformation's)
    REPLAY_ERROR = 3
    MISMATCH = 10
    RACE = 11
    OOB_WRITE = 12
    POST_HANG = 13
    POST_CRASH = 14
    # Python-level compilers (pyfuzz): the compiler itself fails
    COMPILER_ERROR = 15     # raised on a valid program
    UNCLEAR_ERROR = 16      # an invalid program made it fail with an internal error, not a clear rejection
    ACCEPTED_INVALID = 17   # it ran a program the reference rejects, without a word
    # called again with other values of the same shapes, a compiled function raised or computed
    # something else: its guards let a graph run that does not fit the new inputs
    GUARD_FAILURE = 19
    # the reference and the compiled program reject an invalid program with different errors
    EXCEPTION_MISMATCH = 23
    # CUDA kernels: a barrier that not every thread of a block reaches (compute-sanitizer synccheck)
    BARRIER_DIVERGENCE = 18
    BUILD_FAILURE = 20
    INVALID_SDFG = 21
    FAILED_TO_APPLY = 22

    @property
    def is_finding(self) -> bool:
        """True when the outcome blames the transformation."""
        return self not in (Outcome.PASS, Outcome.INVALID_INPUT, Outcome.FLAKY, Outcome.REPLAY_ERROR)

    @classmethod
    def parse(cls, name: str) -> "Outcome":
        return cls[name.upper()]


# the whole program differs where the cutout passed: the cutout computed something else than its
# place in the program (a harnessgen defect; the whole-program audit's verdict)
CUTOUT_MISSED = "CUTOUT_MISSED"

# the verdicts a transformation gets before anything runs (its finding has no input, only the
# cutout it failed on)
STATIC_OUTCOMES = (Outcome.FAILED_TO_APPLY.name, Outcome.INVALID_SDFG.name, Outcome.BUILD_FAILURE.name)
