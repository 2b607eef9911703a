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


def test_one_parse_makes_both_forms_the_frontends_written_beside_simplify(tmp_path, monkeypatch):
    """A program whose parse gives the frontend's form (CLOUDSC's) is parsed once for both forms:
    the frontend's form is written by a process of its own while this one simplifies, and each
    form is what a copy through JSON gives, read back alike from its file."""
    import json

    import dace

    from harnessgen.dacecompat import sdfg_json
    from harnessgen.targets.kernels import PROGRAMS
    from harnessgen.targets.loaders import cached_program, program_key

    monkeypatch.setenv("HARNESSGEN_PROGRAM_CACHE", str(tmp_path))
    parses = []

    def parse():
        parses.append(1)
        return PROGRAMS["clip_small"].to_sdfg(simplify=False)

    simplified = cached_program("forms", b"source", parse, simplify=True, frontend_form=True)
    key = program_key(b"source")
    # (each published file's pickle, which later reads take, lies beside it)
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".sdfg") == [f"forms-{key}-unsimplified.sdfg",
                                                                                  f"forms-{key}.sdfg"]
    as_written = cached_program("forms", b"source", parse, simplify=False, frontend_form=True)
    assert len(parses) == 1
    text = lambda sdfg: json.dumps(sdfg_json(sdfg), sort_keys=True, default=str)   # noqa: E731
    assert text(simplified) == text(dace.SDFG.from_file(str(tmp_path / f"forms-{key}.sdfg")))
    assert len(as_written.nodes()) > len(simplified.nodes())       # simplify fused the frontend's states

