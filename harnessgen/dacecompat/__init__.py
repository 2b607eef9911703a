"""What differs between the DaCe versions harnessgen runs on (1.0.2, and 2.0 with its control-flow
regions), behind one small interface per concern; no stage asks for a version number.

``names``: small renamed helpers; ``build``: the C++ standard the runtime needs; ``loops``: the
for-loops of a program, as state machines or as ``LoopRegion``s; ``regions``: where a block
sits among the control-flow regions, and the blocks around it; ``kept_analyses``: what
DaCe infers about an unchanged program (symbol types, state reachability, the substitutions
of its input reduction), inferred once while cutouts are made."""
from .build import cpp_standard
from .copies import copy_sdfg, keep_template, sdfg_json, spare_copy, template_identity
from .loops import ForLoop, for_loops
from .names import add_nested, dace_identity, dace_version, find_new_name, json_context, node_schedule, settled
from .passes import NEWER_PASSES, NEWER_TRANSFORMATIONS, newer_defaults, present, simplify_defaults, simplify_members
from .regions import (BlockPath, block_at, block_path, control_flow_code, enclosing_blocks, has_regions, is_region,
                      raise_control_flow, region_kind, regions_of)

__all__ = ["NEWER_PASSES", "NEWER_TRANSFORMATIONS", "BlockPath", "add_nested", "ForLoop", "block_at", "block_path", "control_flow_code", "copy_sdfg", "cpp_standard", "dace_identity", "dace_version", "enclosing_blocks",
           "find_new_name", "for_loops", "has_regions", "is_region", "json_context", "keep_template", "newer_defaults", "node_schedule", "present", "raise_control_flow", "region_kind", "regions_of", "sdfg_json", "settled", "simplify_defaults", "spare_copy", "template_identity",
           "simplify_members"]
