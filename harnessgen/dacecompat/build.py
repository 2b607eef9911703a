"""The C++ standard generated code needs: what the installed DaCe configures (2.0's runtime uses
C++20), and C++17 where DaCe configures none (1.0.2 compiles its own code with C++14 flags, but
harnessgen's harness and headers need 17)."""
from __future__ import annotations

import dace

OLDEST = 17


def cpp_standard() -> int:
    """The ``-std=c++N`` every library, harness and reproducer is compiled with."""
    try:
        configured = dace.Config.get("compiler", "cpp_standard")
    except KeyError:
        return OLDEST
    try:
        return max(OLDEST, int(str(configured).strip()))
    except ValueError:
        return OLDEST
