"""Stage 7, raw crashes into findings: classified, de-duplicated and minimal (``classify``),
inputs shrunk (``shrink``), the first divergence located (``localize``), races confirmed by
ThreadSanitizer (``tsan``), post's stack where it dies taken under gdb (``stack``), and each finding written with its reproducer (``reproducer``).
"""

__all__ = ["classify", "localize", "reproducer", "shrink", "stack", "tsan"]
