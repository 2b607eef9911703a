"""Instances: stable ids, transformations from names, files and modules."""
import json
import textwrap

import pytest

from harnessgen.core.errors import ConfigError, Unsupported
from harnessgen.plan.instances import Instance, load_transformation
from harnessgen.targets import resolve
from tests.conftest import instances_of


def test_ids_are_stable_and_unique():
    _, first = instances_of("gemm", "MapTiling")
    _, second = instances_of("gemm", "MapTiling")
    assert [i.id for i in first] == [i.id for i in second]
    assert len({i.id for i in first}) == len(first) == 5
    assert all(i.id.startswith("MapTiling-") for i in first)


def test_instance_json_round_trip():
    _, insts = instances_of("gemm", "MapTiling")
    again = Instance.from_json(json.loads(json.dumps(insts[0].to_json())))
    assert again == insts[0]


def test_settings_change_the_match_and_its_id():
    _, plain = instances_of("gemm", "MapTiling")
    _, small = instances_of("gemm", "MapTiling", {"tile_sizes": (4, 4, 4)})
    assert {i.id for i in plain}.isdisjoint({i.id for i in small})
    assert [int(v) for v in small[0].match["tile_sizes"]] == [4, 4, 4]


def test_builtin_custom_file_and_module_transformations(tmp_path):
    assert load_transformation("MapTiling").__name__ == "MapTiling"
    assert load_transformation("harnessgen.zoo.planted:OffByOneTiling").__name__ == "OffByOneTiling"
    f = tmp_path / "mine.py"
    f.write_text("from harnessgen.zoo.correct import ReciprocalDivision as Mine\n")
    assert load_transformation(f"{f}:Mine").__name__ == "ReciprocalDivision"


@pytest.mark.parametrize("spec,message", [
    ("MapTilling", "did you mean MapTiling"),
    ("no.such.module:X", "cannot import module"),
    ("harnessgen.zoo.planted:Nope", "has no class 'Nope'"),
    ("harnessgen.zoo.planted:TILE", "not a DaCe transformation"),
])
def test_bad_transformation_names_say_what_to_fix(spec, message):
    with pytest.raises(ConfigError, match=message):
        load_transformation(spec)


def test_program_and_transformation_in_one_file_load_it_once(tmp_path):
    f = tmp_path / "both.py"
    f.write_text(textwrap.dedent("""
        import dace
        from harnessgen.zoo.correct import ReciprocalDivision
        LOADS = globals().setdefault("LOADS", [])
        LOADS.append(1)
        N = dace.symbol("N")

        @dace.program
        def ratio(A: dace.float64[N], B: dace.float64[N], C: dace.float64[N]):
            C[:] = A / B

        class Recip(ReciprocalDivision):
            pass
    """))
    target, _ = resolve(f"{f}:ratio")
    cls = load_transformation(f"{f}:Recip")
    assert target.source_module.LOADS == [1]
    assert cls.__module__ == target.source_module.__name__


def test_unknown_targets_and_programs_are_config_errors():
    with pytest.raises(ConfigError, match="unknown target"):
        resolve("cloudy")
    target, prog = resolve("kernels:nope")
    with pytest.raises(ConfigError, match="no program 'nope'"):
        target.select(prog)


def test_subgraph_transformations_are_reported_unsupported():
    from harnessgen.plan.instances import enumerate_instances
    from tests.conftest import kernels

    cls = load_transformation("SubgraphFusion")
    with pytest.raises(Unsupported, match="subgraph transformation"):
        enumerate_instances(kernels(), [kernels().programs["gemm"]], cls, "SubgraphFusion")


def test_a_matcher_that_fails_on_one_program_keeps_the_others_matches(monkeypatch):
    from harnessgen.plan import instances

    real = instances.pattern_matches

    def failing_on_gemm(sdfg, cls, settings):
        if "gemm" in sdfg.name:
            raise RuntimeError("the matcher's own bug")
        return real(sdfg, cls, settings)

    monkeypatch.setattr(instances, "pattern_matches", failing_on_gemm)
    target, _ = resolve("kernels")
    cls = load_transformation("MapTiling")
    both = [target.programs["gemm"], target.programs["sigmoid"]]
    with pytest.warns(UserWarning, match="matching failed on program gemm"):
        found = instances.enumerate_instances(target, both, cls, "MapTiling")
    assert found and {i.program for i in found} == {"sigmoid"}
    with pytest.raises(RuntimeError, match="the matcher's own bug"):
        instances.enumerate_instances(target, both[:1], cls, "MapTiling")


def _classes_in_dace_sources():
    """Every class DaCe's transformation sources define whose bases name a transformation kind,
    read from the files themselves (what a registry that relies on imports could miss)."""
    import ast
    from pathlib import Path

    import dace

    root = Path(dace.__file__).parent / "transformation"
    kinds = ("Transformation", "DetectLoop", "MapFusion", "LoopToMap", "StripMining", "MapTiling")
    found = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            abstract = any(ast.unparse(base) in ("abc.ABC", "ABC") for base in node.bases)
            if not abstract and any(
                    any(kind in ast.unparse(base) for kind in kinds) for base in node.bases):
                found[node.name] = path.relative_to(root)
    return found


def test_every_transformation_dace_defines_is_listed_or_excluded_with_a_reason():
    from dace.transformation.transformation import PatternTransformation

    from harnessgen.plan.instances import (UNIMPORTABLE, builtin_transformations, cpu_builtin_transformations,
                                           exclusion_reason)

    registry = builtin_transformations(optional=True)
    listed = set(cpu_builtin_transformations())
    defined = _classes_in_dace_sources()
    # the kinds themselves, and abstract bases DaCe only registers through their subclasses
    bases = {b.__name__ for cls in registry.values() for b in cls.__mro__[1:]}
    # a module that does not import here (torch or onnx missing) is known with its reason
    unimportable = {"/".join(m.split(".")[2:]) + ".py" for m in UNIMPORTABLE}
    missing = {name: str(path) for name, path in defined.items()
               if name not in registry and not name.startswith("_") and str(path) != "transformation.py"
               and name not in bases and str(path) not in unimportable}
    assert not missing, f"defined in DaCe but not registered: {missing}"
    for name, cls in registry.items():
        if issubclass(cls, PatternTransformation) or name in defined:
            assert name in listed or exclusion_reason(cls), name
    assert "LoopLifting" in listed        # its package's __init__ does not import it
