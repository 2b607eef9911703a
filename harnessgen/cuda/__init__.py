"""The CUDA toolchain, which lower stages use: the compiler and runtime that build GPU code
(``toolkit``) and compute-sanitizer (``sanitizer``). Nothing here imports a pipeline stage; the
``gpukernels`` feature (hand-written kernels against their references) lives in
``harnessgen.gpukernels``."""

__all__ = ["sanitizer", "toolkit"]
