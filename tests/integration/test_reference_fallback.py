"""The reference check of a program written in DaCe's own dialect: run as plain Python where
it has a plain meaning; where not (a C++ tasklet), the simplified form judged against the
frontend's form, so that a pipeline bug still shows."""
import dataclasses

from harnessgen.checks.reference_check import (AGAINST_FRONTEND, AGREES, CHECK_MAX_SIZE, DIFFERS, CheckOptions,
                                               check_program)
from harnessgen.harness.judge import JudgeOptions
from harnessgen.targets.loaders import load_python_program
from tests.conftest import PROGRAMS


def _check(tmp_path, name: str, build_cache, program=None):
    target = load_python_program(PROGRAMS / f"{name}.py", name)
    program = program or target.programs[name]
    return check_program(name, program, CheckOptions(crashes_root=tmp_path / "crashes", judge=JudgeOptions(work_dir=build_cache, max_size=CHECK_MAX_SIZE)))


def test_a_dialect_program_gets_its_reference(tmp_path, build_cache):
    check = _check(tmp_path, "dialect", build_cache)
    assert [(f.form, f.verdict) for f in check.forms] == [("unsimplified", AGREES), ("simplified", AGREES)], check


def test_without_a_plain_meaning_the_forms_are_judged_against_each_other(tmp_path, build_cache):
    check = _check(tmp_path, "cpp_tasklet", build_cache)
    assert [f.verdict for f in check.forms[:2]] == ["SKIPPED", "SKIPPED"]
    assert "another language" in check.forms[0].reason
    last = check.forms[-1]
    assert (last.form, last.verdict) == (AGAINST_FRONTEND, AGREES) and last.inputs > 0, check


def test_a_simplified_form_that_computes_something_else_is_a_finding_against_simplify(tmp_path, build_cache):
    """A planted pipeline defect: the simplified form's tasklet computes 3a + 1 instead of 3a - 1."""
    target = load_python_program(PROGRAMS / "cpp_tasklet.py", "cpp_tasklet")
    original = target.programs["cpp_tasklet"]

    def broken(simplify: bool = True):
        sdfg = original.build(simplify)
        import dace

        for node, _ in sdfg.all_nodes_recursive():
            if isinstance(node, dace.nodes.Tasklet) and "3.0 * a - 1.0" in node.code.as_string:
                node.code = dace.properties.CodeBlock(node.code.as_string.replace("- 1.0", "+ 1.0"),
                                                      dace.Language.CPP)
        return sdfg

    program = dataclasses.replace(original, build=broken)
    check = _check(tmp_path, "cpp_tasklet", build_cache, program)
    last = check.forms[-1]
    assert last.form == AGAINST_FRONTEND and last.verdict == DIFFERS and check.blame == "simplify", check
    assert last.first["container"] == "B" and last.finding
