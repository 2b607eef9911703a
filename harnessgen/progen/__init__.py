"""Random DaCe programs for the ``generated`` target: a seeded generator of programs rich in
the shapes transformations match (``generate``), each with a NumPy reference of what it
computes (``generated_program``), the guidance that makes programs for the transformations
that matched least so far (``guide``), and the ``generated`` target itself (``target``)."""

__all__ = ["generate", "generated_program", "guide", "target"]
