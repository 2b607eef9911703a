"""Stage: a user's own optimization, step by step (``harnessgen recipe``).

A *recipe* is a Python function that takes a program's SDFG and optimizes it in place, by any
mix of DaCe's entry points: ``simplify``, ``apply_transformations_repeated``, ``apply_to`` at
chosen nodes, ``auto_optimize``, passes and pipelines of its own. ``record`` runs it once with
those entry points instrumented and keeps every step it took (the transformation or pass, its
properties, its match, where in the recipe's calls it happened) and the program just before
each step. ``steps`` makes each step an instance the ordinary pipeline judges (cutout, harness,
proof, fuzz, triage, audit), on the program as it was just before that step, and the whole
recipe one more instance (the program before against the program after it).
"""
