"""Transformations that break in every way the pipeline must classify (tests only)."""
import dace
from dace import nodes, properties
from dace.sdfg import utils as sdutil
from dace.transformation import pass_pipeline  # noqa: F401 (dace.transformation.pass_pipeline below)
from dace.transformation import transformation as xf


class _TaskletRewrite(xf.SingleStateTransformation):
    tasklet = xf.PatternNode(nodes.Tasklet)
    body = ""

    @classmethod
    def expressions(cls):
        return [sdutil.node_path_graph(cls.tasklet)]

    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        return len(self.tasklet.out_connectors) == 1 and "exp(" in self.tasklet.code.as_string

    def apply(self, graph, sdfg):
        out = next(iter(self.tasklet.out_connectors))
        self.tasklet.code = properties.CodeBlock(self.body.format(out=out), dace.Language.CPP)


@properties.make_properties
class NullWrite(_TaskletRewrite):
    body = "{{ volatile double *hg_null = nullptr; *hg_null = 1.0; }} {out} = 0;"


@properties.make_properties
class SpinForever(_TaskletRewrite):
    body = "{{ volatile int hg_spin = 1; while (hg_spin) {{ }} }} {out} = 0;"


@properties.make_properties
class DoesNotCompile(_TaskletRewrite):
    body = "{out} = hg_no_such_function_anywhere(1);"


@properties.make_properties
class RaisesOnApply(_TaskletRewrite):
    def apply(self, graph, sdfg):
        raise RuntimeError("the transformation gave up half way")


@properties.make_properties
class RaisesWhenStrict(_TaskletRewrite):
    """Fails to apply with ``strict`` set, whatever ``wide`` is; otherwise changes nothing."""

    strict = properties.Property(dtype=bool, default=False, desc="gives up")
    wide = properties.Property(dtype=bool, default=False, desc="changes nothing")

    def apply(self, graph, sdfg):
        if self.strict:
            raise RuntimeError("the strict variant gave up half way")


@properties.make_properties
class LeavesInvalidSDFG(_TaskletRewrite):
    def apply(self, graph, sdfg):
        for edge in list(graph.in_edges(self.tasklet)):
            graph.remove_edge(edge)
        self.tasklet.add_in_connector("hg_dangling")


@properties.make_properties
class Flaky(_TaskletRewrite):
    """Right in a fresh process, wrong once earlier runs' state leaks in (after a million calls
    in one process, as under a fuzzer that runs input after input in one process): a crash of
    the fuzzer that a replay, which runs each input as a fresh process does, never shows."""

    body = "{{ static long hg_calls = 0; {out} = exp(__in1) * ((++hg_calls > 1000000) ? 1.5 : 1.0); }}"


@properties.make_properties
class WrongOnEveryOtherCall(_TaskletRewrite):
    """Wrong on every other call, from the first: every run in a fresh process is wrong."""

    body = "{{ static int hg_calls = 0; {out} = exp(__in1) * ((hg_calls++ % 2) ? 1.0 : 1.5); }}"


@properties.make_properties
class WrongInPythonOnly(_TaskletRewrite):
    """Wrong inside a Python process (the replay's), right in the native harness: the stand-in,
    deterministic, for a post whose stray access lands elsewhere in a heap laid out as a loaded
    interpreter lays it out than in a fresh native process."""

    body = "{out} = exp(__in1) * (strstr(program_invocation_short_name, \"python\") ? 1.5 : 1.0);"

    def apply(self, graph, sdfg):
        super().apply(graph, sdfg)
        self.tasklet.code_global = properties.CodeBlock("#include <errno.h>\n#include <cstring>", dace.Language.CPP)


@properties.make_properties
class WrongOnSeveralThreads(_TaskletRewrite):
    """Right on one thread, wrong on several, every time: a race's signature, deterministic."""

    body = "{out} = exp(__in1) * (omp_get_max_threads() > 1 ? 1.5 : 1.0);"

    def apply(self, graph, sdfg):
        super().apply(graph, sdfg)
        self.tasklet.code_global = properties.CodeBlock("#include <omp.h>", dace.Language.CPP)


@properties.make_properties
class LeavesTaskletAlone(_TaskletRewrite):
    """The "fixed" version of every transformation above: matches the same, changes nothing."""

    def apply(self, graph, sdfg):
        pass


class PassThatRaises(dace.transformation.pass_pipeline.Pass):
    """A pass that changes the SDFG and then raises: FAILED_TO_APPLY, for a pass."""

    def modifies(self):
        return dace.transformation.pass_pipeline.Modifies.Everything

    def should_reapply(self, modified):
        return False

    def apply_pass(self, sdfg, _):
        sdfg.add_symbol("hg_never_used", dace.int32)
        raise RuntimeError("PassThatRaises: the pass gave up half-way")


@properties.make_properties
class KillsItsProcess(_TaskletRewrite):
    """Kills the process that applies it (as a crash in DaCe, a compiler or the OOM killer does)."""

    def apply(self, graph, sdfg):
        import os
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
