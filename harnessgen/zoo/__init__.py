"""Transformations that prove the tool's power.

``planted``  transformations with a deliberate bug, one per bug class that
             FuzzyFlow reported in real optimization pipelines; each must be
             found and its reproducer must replay.
``correct``  transformations that are correct (some only up to rounding);
             they must stay silent under the default tolerance.

Use them like any custom transformation, e.g.
``harnessgen fuzz --program kernels:trisolve --transformation harnessgen.zoo.planted:UnrollDropsIterations``.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PlantedBug:
    """What tests, bench and the README know about one planted bug."""

    program: str                 # the kernel it is meant for
    outcome: str                 # the verdict that finding it gives
    race: bool = False           # shows only on several threads: fuzz with --race
    size_dependent: bool = False  # shows only at some sizes: a boundary seed should find it at once
    # smallest failing sizes where they lie above the sizes' declared lower bounds
    least_failing: dict = field(default_factory=dict)


PLANTED = {
    "OffByOneTiling": PlantedBug("reduction", "OOB_WRITE", size_dependent=True),
    "TilingWithoutRemainder": PlantedBug("elementwise_chain", "MISMATCH", size_dependent=True),
    "UnrollDropsIterations": PlantedBug("trisolve", "MISMATCH", size_dependent=True),
    "RedundantCopyRemoval": PlantedBug("two_phase", "MISMATCH"),
    "OffloadCopiesWholeArray": PlantedBug("column_window", "MISMATCH", size_dependent=True),
    "FastExpBand": PlantedBug("sigmoid", "MISMATCH"),
    # one element is no vector: the first failing size is two
    "AlignedVectorize": PlantedBug("elementwise_chain", "POST_CRASH", size_dependent=True, least_failing={"N": 2}),
    "ParallelizeCarriedLoop": PlantedBug("prefix_sum", "RACE", race=True),
    # the stale value matters only when a trip runs two iterations
    "UnrollLosesEntryLoad": PlantedBug("clip_small", "MISMATCH", size_dependent=True, least_failing={"N": 2}),
    # reads a transient nobody wrote: the same MISMATCH on every run, because every run starts
    # from the same heap contents
    "PrivateCopyWithoutValues": PlantedBug("elementwise_chain", "MISMATCH"),
    # a pass, not a pattern: softmax reads the row maximum through a view in the state after it
    "FuseStatesMissingViews": PlantedBug("softmax", "MISMATCH"),
}

# planted bugs that only generated programs expose: no built-in kernel has their shape
PLANTED_GENERATED = {
    # a strided map whose span is no multiple of its step: 0:5:2 loses its last trip
    "StrideCountFloors": PlantedBug("generated", "MISMATCH", size_dependent=True),
}

# planted bugs that show only with a transformation parameter other than its default (--params)
PLANTED_PARAMS = {
    # tile sizes that divide no extent: 3 at N = 16 drops the 16th element
    "TileCountFloors": PlantedBug("elementwise_chain", "MISMATCH", size_dependent=True),
}

# planted bugs that run on a GPU: they build anywhere (make setup-cuda), they are found where a GPU is
PLANTED_GPU = {
    "GPUOffloadCopiesWholeArray": PlantedBug("column_window", "MISMATCH", size_dependent=True),
}


__all__ = ["PLANTED", "PLANTED_GENERATED", "PLANTED_GPU", "PLANTED_PARAMS", "PlantedBug"]
