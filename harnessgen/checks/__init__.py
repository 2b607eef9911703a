"""Checks beside the pipeline: the whole-program audit of a cutout"s verdict (``audit``),
the bisection of a pipeline that changed a program (``pipeline_bisect``), and each program
against its reference (``reference_check``).
"""

__all__ = ["audit", "pipeline_bisect", "reference_check"]
