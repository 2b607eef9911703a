"""Transformations that prove the tool's power.

``planted``  transformations with a deliberate bug, one per bug class that
             FuzzyFlow reported in real optimization pipelines; each must be
             found and its reproducer must replay.
``correct``  transformations that are correct (some only up to rounding);
             they must stay silent under the default tolerance.

Use them like any custom transformation, e.g.
``harnessgen fuzz --program kernels:trisolve --transformation harnessgen.zoo.planted:UnrollDropsIterations``.
"""

# which kernel each planted bug is meant for (tests, bench and the README use this table)
PLANTED = {
    "OffByOneTiling": "reduction",
    "TilingWithoutRemainder": "elementwise_chain",
    "UnrollDropsIterations": "trisolve",
    "RedundantCopyRemoval": "two_phase",
    "OffloadCopiesWholeArray": "column_window",
    "FastExpBand": "sigmoid",
    "AlignedVectorize": "elementwise_chain",
    "ParallelizeCarriedLoop": "prefix_sum",
}
