"""Stage 5, pre and post as native code and the harness that compares them: the sources
(``emit``), the builds (``build``), what DaCe cannot build (``codegen_causes``), post"s parallel
code (``parallel_code``), the cffi replay (``replay``), and the one sequence that judges a pair on
inputs (``judge``).
"""

__all__ = ["build", "built", "codegen_causes", "emit", "judge", "parallel_code", "replay"]
