"""The program generator: deterministic, every access in bounds for every size, and its NumPy
reference computing what the @dace.program's source means in Python; the guide makes programs
for the transformations that matched least."""
import collections
import importlib.util
import subprocess
import sys
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from harnessgen.core.errors import ConfigError
from harnessgen.progen.generate import BLOCK_KINDS, generate
from harnessgen.progen.generated_program import parse_name
from harnessgen.progen.guide import stream


class Checked(np.ndarray):
    """An array whose integer indices and slice bounds must lie inside it (NumPy would wrap a
    negative index and clamp a slice: in the compiled program both are out of bounds)."""

    def _check(self, key):
        key = key if isinstance(key, tuple) else (key,)
        for extent, part in zip(self.shape, key):
            if isinstance(part, slice):
                start = 0 if part.start is None else part.start
                stop = extent if part.stop is None else part.stop
                assert 0 <= start and stop <= extent and start <= stop + 1, (key, self.shape)
            elif isinstance(part, (int, np.integer)):
                assert 0 <= part < extent, (key, self.shape)

    def __getitem__(self, key):
        self._check(key)
        return super().__getitem__(key)

    def __setitem__(self, key, value):
        self._check(key)
        super().__setitem__(key, value)


def _load(program, tmp_path):
    path = tmp_path / f"{program.function}.py"
    path.write_text(program.source())
    spec = importlib.util.spec_from_file_location(program.function, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _as_python(program, module, sizes):
    """The @dace.program's own function run as Python, its size symbols bound to numbers."""
    function = getattr(module, program.function).f
    names = {**function.__globals__, **sizes}
    return types.FunctionType(function.__code__, names, function.__name__)


def _arrays(module, sizes, seed):
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(-2, 2, shape).view(Checked) for name, shape in module.shapes(**sizes).items()}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10 ** 6), emphasis=st.lists(st.sampled_from(sorted(BLOCK_KINDS)), max_size=2),
       n=st.integers(1, 7), m=st.integers(1, 7))
def test_the_reference_computes_what_the_source_means_and_stays_in_bounds(tmp_path, seed, emphasis, n, m):
    program = generate(seed, tuple(emphasis))
    module = _load(program, tmp_path)
    sizes = {k: v for k, v in {"N": n, "M": m}.items() if k in program.symbols}
    as_written, expected = _arrays(module, sizes, seed), _arrays(module, sizes, seed)
    with np.errstate(all="ignore"):
        _as_python(program, module, sizes)(**as_written)
        module.reference(**expected, **sizes)
    for name in expected:
        np.testing.assert_allclose(np.asarray(as_written[name]), np.asarray(expected[name]), rtol=1e-12,
                                   equal_nan=True, err_msg=f"{program.name}: {name}")


def test_the_same_seed_gives_the_same_program_in_every_process():
    script = ("from harnessgen.progen.generate import generate; import hashlib; "
              "print(hashlib.sha256(''.join(generate(s).source() for s in range(30)).encode()).hexdigest())")
    digests = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                              env={"PYTHONHASHSEED": str(h), "PATH": ""}).stdout for h in (1, 2)}
    assert len(digests) == 1
    assert generate(7).source() == generate(7).source() != generate(8).source()


def test_a_name_regenerates_its_program_and_emphasis_comes_first():
    program = generate(11, ("reduce", "view"))
    assert program.name == "11+reduce+view" and parse_name(program.name) == (11, ("reduce", "view"))
    assert [b.kind for b in program.blocks[:2]] == ["reduce", "view"]
    with pytest.raises(ConfigError, match="generated:11"):
        parse_name("11+")
    with pytest.raises(ConfigError, match="no block kind nonsense"):
        generate(11, ("nonsense",))


def test_every_block_kind_and_the_shapes_the_issue_asks_for_are_generated():
    tags = collections.Counter(t for seed in range(200) for t in generate(seed).tags)
    kinds = collections.Counter(b.kind for seed in range(200) for b in generate(seed).blocks)
    assert set(kinds) == set(BLOCK_KINDS)
    for shape in ("map.strided", "map.triangular", "map.nested", "access.offset", "access.transposed",
                  "loop.negative", "loop.carried", "loop.nested", "map.loop.recurrence", "map.loop.accumulate",
                  "map.cond", "branch.data", "branch.symbol", "reduce.sum", "reduce.max", "wcr", "temp", "slice",
                  "view", "loop.time", "interstate.assign"):
        assert tags[shape] > 0, shape


def test_the_guide_makes_programs_for_a_rarely_matched_transformation():
    """A transformation that matches only programs with a reduction: the guided stream holds
    more reductions than the unguided one with the same seeds."""
    def matcher(program):
        kinds = {b.kind for b in program.blocks}
        return {"Common": ["MapEntry"], "NeedsReduce": ["MapEntry"] if "reduce" in kinds else []}

    guided, coverage = stream(0, 40, ["Common", "NeedsReduce"], matcher)
    unguided, _ = stream(0, 40, ["Common", "NeedsReduce"], matcher, guided=False)

    def with_reduce(programs):
        return sum("reduce" in {b.kind for b in p.blocks} for p in programs)

    assert with_reduce(guided) > with_reduce(unguided) + 5
    assert coverage.to_json()["never_matched"] == [] and coverage.matches["NeedsReduce"] > 0
    assert [p.name for p in stream(0, 40, ["Common", "NeedsReduce"], matcher)[0]] == [p.name for p in guided]


def test_a_program_dace_cannot_take_is_left_out_of_the_stream_and_said():
    def matcher(program):
        if program.seed == 2:
            raise ValueError("the frontend failed")
        return {"T": ["MapEntry"]}

    programs, coverage = stream(0, 4, ["T"], matcher)
    assert [p.seed for p in programs] == [0, 1, 3]
    assert "the frontend failed" in next(iter(coverage.rejected.values()))


def test_every_size_symbol_a_program_uses_is_declared_by_its_arrays():
    import re

    for seed, kind in ((s, k) for s in range(200) for k in ("", *sorted(BLOCK_KINDS))):
        program = generate(seed, (kind,) if kind else ())
        used = {s for b in program.blocks for line in b.dace for s in re.findall(r"\b[NM]\b", line)}
        assert used <= set(program.symbols), (program.name, used, program.symbols)
