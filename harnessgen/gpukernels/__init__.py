"""The ``gpukernels`` subject: hand-written CUDA kernels fuzzed against their references.

``spec`` reads a kernel's manifest (its inputs, launch geometry and reference), ``kernel_build``
makes its harness, ``kernel_triage`` and ``kernel_reproducer`` turn its crashes into findings, ``barriers`` judges
each ``__syncthreads()`` and ``subject`` plugs it into the pipeline. The shipped kernels are in
``shipped/``. It uses the CUDA toolchain in ``harnessgen.cuda``.
"""

__all__ = ["barriers", "kernel_build", "kernel_reproducer", "kernel_triage", "spec", "subject"]
