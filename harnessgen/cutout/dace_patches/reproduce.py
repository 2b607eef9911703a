"""DaCe 2.0's SDFGCutout.from_transformation on a match inside a LoopRegion.

    python reproduce.py                 # the installed DaCe: AttributeError ('LoopRegion' ... 'parent')
    python reproduce.py PATCHED_CUTOUT  # a patched cutout.py loaded beside it: a cutout the match applies to

Exit status 0 where the cutout is made and the transformation applies to it, 1 where it fails."""
import importlib.util
import sys

import dace
import dace.sdfg.analysis.cutout as installed
from dace.transformation.dataflow import MapTiling
from dace.transformation.optimizer import Optimizer


def cutout_module():
    if len(sys.argv) < 2:
        return installed
    spec = importlib.util.spec_from_file_location("patched_cutout", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dace.program
def rows(A: dace.float64[10, 20]):
    for i in range(1, 10):                  # a LoopRegion after simplify
        for j in dace.map[0:20]:            # MapTiling matches this map, inside the loop's body
            A[i, j] = A[i - 1, j] + 1


def main() -> int:
    sdfg = rows.to_sdfg(simplify=True)
    match = next(iter(Optimizer(sdfg).get_pattern_matches(patterns=[MapTiling])))
    print(f"match in {type(sdfg.cfg_list[match.cfg_id]).__name__} (cfg_id {match.cfg_id}), state {match.state_id}")
    try:
        cut = cutout_module().SDFGCutout.from_transformation(sdfg, match)
    except AttributeError as error:
        print(f"from_transformation fails: {error}")
        return 1
    ok = match.can_be_applied(cut.start_block, 0, cut)
    print(f"cutout {[type(b).__name__ for b in cut.nodes()]}, inputs {sorted(cut.input_config)}, "
          f"outputs {sorted(cut.output_config)}; the translated match applies: {ok}")
    if not ok:
        return 1
    match.apply(cut.start_block, cut)
    cut.validate()
    print("applied to the cutout, which validates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
