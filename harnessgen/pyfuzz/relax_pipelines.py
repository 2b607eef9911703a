"""TVM's pipelines that pyfuzz --compiler tvm judges, one mode each.

Standalone (it imports only tvm): a TVM finding's ``repro.py`` carries this
module's source, so that the reproducer builds its Relax module exactly as the
fuzzer did.
"""


def _relax_passes(tvm, names):
    from tvm.relax import transform

    return tvm.transform.Sequential([getattr(transform, name)() for name in names])


def build(mod, mode):
    """The VM executable of ``mod`` under pipeline ``mode``."""
    import tvm
    from tvm import relax

    target = tvm.target.Target("llvm")
    if mode == "default":
        return tvm.compile(mod, target=target)
    if mode == "unfused":
        # legalization alone: every operator its own kernel, no FuseOps/FuseTIR, no constant folding
        from tvm.relax.backend.cpu_generic import pipeline as cpu

        passes = [relax.transform.LegalizeOps()] + cpu.dataflow_lower_passes(target) + cpu.finalize_passes(target)
        with target:
            lowered = tvm.transform.Sequential(passes)(mod)
        return tvm.compile(lowered, target=target, relax_pipeline=None)
    if mode == "relax-opt":
        # graph-level rewrites before the default pipeline
        rewritten = _relax_passes(tvm, ["CanonicalizeBindings", "EliminateCommonSubexpr", "FoldConstant",
                                        "DeadCodeElimination", "CanonicalizeBindings"])(mod)
        return tvm.compile(rewritten, target=target)
    if mode == "tir-unroll":
        # the default pipelines with TIR's loop unrolling pushed and vectorization off
        config = {"tirx.UnrollLoop": {"auto_max_step": 64, "explicit_unroll": True}, "tirx.disable_vectorize": True}
        with tvm.transform.PassContext(opt_level=3, config=config):
            return tvm.compile(mod, target=target)
    raise ValueError(mode)


PIPELINES = ("default", "unfused", "relax-opt", "tir-unroll")
