"""Built-in programs are parsed once and always read back from their cache file: DaCe's
frontend is not deterministic, and instance ids hash the match, so a run that parses and a run
that reads the cache must enumerate the same instances."""
from harnessgen.plan.instances import enumerate_instances, load_transformation
from harnessgen.targets import resolve


def ids(program):
    target, _ = resolve("kernels")
    cls = load_transformation("MapTiling")
    return [i.id for i in enumerate_instances(target, [target.programs[program]], cls, "MapTiling")]


def test_a_parse_and_a_cache_hit_enumerate_the_same_instances(tmp_path, monkeypatch):
    import dace

    monkeypatch.setenv("HARNESSGEN_PROGRAM_CACHE", str(tmp_path))
    parses = []
    original = dace.frontend.python.parser.DaceProgram.to_sdfg

    def counting(self, *args, **kwargs):
        parses.append(self.name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(dace.frontend.python.parser.DaceProgram, "to_sdfg", counting)
    first = ids("gemm")
    assert len(list(tmp_path.glob("kernels-gemm-*.sdfg"))) == 1
    assert len(parses) == 1
    second = ids("gemm")
    assert len(parses) == 1 and second == first and first
