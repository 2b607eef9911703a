"""pyfuzz: Python-level compilers (DaCe's Python frontend, torch.compile) under Atheris.

The pipeline, one module per stage, the ``Program`` record between them:

``choices``     the fuzzer's bytes as a sequence of choices
``generator``   strict / disruptive program generation over an operator pool
                (``ops``), steered by three coverage criteria
``mutations``   semantics-preserving rewrites (TorchProbe's families)
``compilers``   the compilers under test and their modes, behind a registry
``oracle``      reference vs every compile mode; crashes and clear errors
``session``     one fuzzing process (Atheris' entry point: ``target``)
``triage``      replay in a child process, de-duplicate, delta-debug, reproducer
"""
