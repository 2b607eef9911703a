"""The ``gpukernels`` subject: hand-written CUDA kernels fuzzed against their references.

``spec`` reads a kernel's manifest (its inputs, launch geometry and reference), ``build`` makes
its harness, ``triage`` and ``reproducer`` turn its crashes into findings, ``barriers`` judges
each ``__syncthreads()`` and ``subject`` plugs it into the pipeline. The shipped kernels are in
``shipped/``. It uses the CUDA toolchain in ``harnessgen.cuda``.
"""
