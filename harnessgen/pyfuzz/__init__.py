"""pyfuzz: Python-level compilers (DaCe's Python frontend, torch.compile, TVM's Relax) under Atheris.

The pipeline, one module per stage, the ``Program`` record (``program_record``) between them:

``choices``       the fuzzer's bytes as a sequence of choices
``generator``     strict / disruptive program generation over an operator pool
                  (``ops``; torch's shape, view and in-place statements in
                  ``shapes``), steered by three coverage criteria
``mutations``     semantics-preserving rewrites (TorchProbe's families)
``compilers``     the compilers under test and their modes, behind a registry
                  (TVM: ``relax`` builds the program as Relax, ``relax_pipelines``
                  holds the pipelines)
``oracle``        reference vs every compile mode; argument states, a float64
                  reference, a second call; crashes and clear errors
``session``       one fuzzing process (Atheris' entry point: ``target``)
``judge_server``  judge server in the compiler's interpreter (``interpreters``
                  finds or builds it)
``findings``      replay, de-duplicate, delta-debug (``minimize``), reproducer
``planted_passes`` graph passes for --torch-pass: a planted bug and its twin
"""

__all__ = ["choices", "compilers", "findings", "generator", "interpreters", "judge_server", "minimize", "mutations", "ops", "oracle", "planted_passes", "program_record", "relax", "relax_pipelines", "rendering", "run", "session", "shapes", "target"]
