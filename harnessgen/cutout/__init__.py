"""Stage 2, the smallest sub-program around an instance, before and after the change
(``extract``), grown past aliased views (``aliasing``); the kinds of change DaCe makes, each
behind one interface (``changes``: pattern transformations, passes).
"""

__all__ = ["aliasing", "changes", "extract"]
