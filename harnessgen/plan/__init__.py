"""Stage 1, what is tested and where: every match of a transformation (``instances``), the
parameter variants of a match (``params``), DaCe"s passes and pipelines as subjects (``passes``).
"""

__all__ = ["instances", "params", "passes"]
