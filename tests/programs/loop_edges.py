"""A correct transformation that touches nothing but a loop's increment edge: ``i = i + s``
becomes ``i = s + i``. Its match reads the interstate edges around the loop guard, which a
cutout of the loop body alone does not keep."""
import dace
from dace.properties import make_properties
from dace.transformation import transformation as xf
from dace.transformation.interstate.loop_detection import DetectLoop


@make_properties
class CommuteIncrement(DetectLoop, xf.MultiStateTransformation):
    def can_be_applied(self, graph, expr_index, sdfg, permissive=False):
        if not super().can_be_applied(graph, expr_index, sdfg, permissive) or expr_index > 1:
            return False
        info = self.loop_information()
        return bool(info) and info[0] in self.loop_increment_edge().data.assignments

    def apply(self, graph, sdfg):
        itervar, (_, _, step), _ = self.loop_information()
        edge = self.loop_increment_edge()
        edge.data.assignments[itervar] = f"({dace.symbolic.symstr(step)}) + {itervar}"
