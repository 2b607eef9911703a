"""An input on which pre itself reads outside its containers is invalid, never a finding.

NPBench's spmv gathers ``x[cols]`` inside a tasklet: no memlet says which element is read, so no
constraint keeps the index values within ``x``, and pre reads whatever lies past it. A post
that reads otherwise there (here: one that clamps the index, equal to pre on every valid input)
then "differs" on bytes no program holds. harnessgen filed such MISMATCHes (on spmv and
conv2d_bias) whose reproducers did not replay; the replay now runs pre amid two fillings of
the bytes around its containers, and a pre whose result changes with them makes the input
INVALID_INPUT (a missing constraint, said as such)."""
import numpy as np
import dace
from dace.properties import CodeBlock

from harnessgen.core.outcome import Outcome
from harnessgen.cutout.extract import whole_program_pair
from harnessgen.harness import judge
from harnessgen.harness.replay import replay
from tests.programs.lookup import lookup


def _clamped(post) -> None:
    for node, _ in post.all_nodes_recursive():
        if isinstance(node, dace.nodes.Tasklet) and "t[j]" in node.code.as_string:
            node.code = CodeBlock("out = t[min(j, M - 1)]")


def _built(tmp_path):
    pair = whole_program_pair(lookup.to_sdfg(simplify=True), "lookup", transform=_clamped)
    return judge.prepare(pair, judge.JudgeOptions(work_dir=tmp_path))


def _input(layout, k, table):
    symbols = {"N": len(k), "M": len(table)}
    arrays = {"k": np.array(k, dtype=np.int64), "table": np.array(table, dtype=np.float64), "y": np.zeros(len(k))}
    return layout.encode(symbols, {c.name: arrays[c.name] for c in layout.containers})


def test_pre_reading_past_a_container_is_an_invalid_input_not_a_mismatch(tmp_path):
    prepared = _built(tmp_path)
    result = replay(prepared.harness.dir, _input(prepared.layout, [0, 1, 2, 3], [1.0, 2.0]))
    assert result.outcome == Outcome.INVALID_INPUT, result.describe()
    assert "reads outside its containers" in result.message and result.container == "y", result.message


def test_the_same_pair_on_an_input_within_its_containers_agrees(tmp_path):
    prepared = _built(tmp_path)
    result = replay(prepared.harness.dir, _input(prepared.layout, [1, 0, 1, 1], [1.0, 2.0]))
    assert result.outcome == Outcome.PASS, result.describe()
