"""CUDA: the toolchain that builds GPU code (``toolkit``), and the ``cuda-kernels`` target's
hand-written kernels, their manifests and the synchronization oracle (``kernels``,
``sanitizer``)."""
