"""A program DaCe cannot build, recognised by its cause: the compiler's first error and the
generated line it points at, whatever the side is called or how the line is laid out."""
import dace

from harnessgen.harness.codegen_causes import (Cause, CauseRegistry, all_from_compiler_output, diagnostics,
                                               from_compiler_output, line_context)

LOG = """clang++ -std=c++17 -O2 /home/user/project/.harnessgen/builds/abc.tmp-1/src/cpu/hg_pre.cpp -shared -o libpre.so
/home/user/project/.harnessgen/builds/abc.tmp-1/src/cpu/hg_pre.cpp:7892:18: error: invalid operands to binary expression ('double[1]' and 'double')
    if ((! (zdqs > 0.0))) {
            ~~~~ ^ ~~~
1 error generated.
"""


def test_the_cause_is_the_first_error_and_its_line_without_position_or_name():
    cause = from_compiler_output(LOG, "hg_pre")
    assert cause.message == "invalid operands to binary expression ('double[1]' and 'double')"
    assert cause.line == "if ((! (zdqs > 0.0))) {"
    moved = LOG.replace("7892:18", "12:4").replace("abc.tmp-1", "other")
    assert from_compiler_output(moved, "hg_pre").id == cause.id
    assert from_compiler_output("ld: cannot find -lfoo\n", "hg_pre") is None


def test_a_generated_file_holding_the_line_matches_in_any_layout():
    cause = from_compiler_output(LOG, "hg_pre")
    assert cause.matches_source("void f() {\n        if ((!   (zdqs > 0.0)))   {\n}\n", "hg_pre")
    assert not cause.matches_source("if ((! (zdqs >= 0.0))) {\n", "hg_pre")


def test_the_registry_keeps_the_first_record_per_versions(tmp_path):
    first = Cause("m", "l", first_instance="A-1", program="p (simplified)")
    registry = CauseRegistry(tmp_path, "dace 1.0.2")
    assert registry.record(first) == first
    assert registry.record(Cause("m", "l", first_instance="B-2", program="p")).first_instance == "A-1"
    assert registry.match("l\n", "hg_pre").first_instance == "A-1"
    assert CauseRegistry(tmp_path, "dace 2.0.0").known() == []     # another DaCe meets it afresh


def test_only_a_cause_met_in_a_program_dace_made_blocks_without_compiling(tmp_path):
    registry = CauseRegistry(tmp_path, "dace 1.0.2")
    registry.record(Cause("m", "l", first_instance="A-1"))          # not confirmed against the program
    assert registry.match("l\n", "hg_pre") is None
    registry.record(Cause("m", "l", first_instance="B-2", program="p"))  # confirmed: it replaces the first
    assert registry.match("l\n", "hg_pre").first_instance == "B-2"


def _with_lo(as_array: bool):
    sdfg = dace.SDFG("side")
    if as_array:
        sdfg.add_array("lo", [1], dace.float64)
    else:
        sdfg.add_scalar("lo", dace.float64)
    sdfg.add_symbol("x_index", dace.float64)
    return sdfg


def test_the_same_line_with_its_names_of_other_kinds_is_another_construct(tmp_path):
    line = "if ((x_index < lo)) {"
    context = line_context(line, _with_lo(as_array=True))
    assert set(context) == {"x_index", "lo"} and "Array" in context["lo"]
    cause = Cause("invalid operands", line, program="p", context=context)
    assert cause.matches_source(f"  {line}\n", "hg_pre", _with_lo(as_array=True))
    # a scalar lo compiles: the line alone does not say it fails
    assert not cause.matches_source(f"  {line}\n", "hg_pre", _with_lo(as_array=False))


def test_every_error_of_a_log_is_read_with_its_line():
    second = LOG.replace("1 error generated.", "/x/hg_pre.cpp:9:1: error: use of undeclared identifier 'q'\n"
                                               "    q = 1;\n2 errors generated.")
    causes = all_from_compiler_output(second, "hg_pre")
    assert [c.line for c in causes] == ["if ((! (zdqs > 0.0))) {", "q = 1;"]


def test_a_whole_program_recorded_as_blocked_names_its_cause_per_content_and_versions(tmp_path):
    registry = CauseRegistry(tmp_path, "dace 1.0.2")
    cause = registry.record(Cause("m", "l", first_instance="simplify-1"))
    assert registry.blocking_program("abc-as-given") is None
    registry.record_program("abc-as-given", cause)
    assert registry.blocking_program("abc-as-given") == cause
    assert registry.blocking_program("abc-simplified") is None                  # the other form builds
    assert CauseRegistry(tmp_path, "dace 2.0.0").blocking_program("abc-as-given") is None


def test_diagnostics_drop_the_command_and_this_machines_folders():
    text = diagnostics(LOG)
    assert text.splitlines()[0].startswith("hg_pre.cpp:7892:18: error:") and "/home/user/" not in text


def test_a_long_diagnostic_keeps_its_first_error():
    from harnessgen.core.errors import BuildError
    from harnessgen.harness.compiler import compiler_log
    # an overload resolution that lists hundreds of candidates after the error
    candidates = "".join(f"note: candidate function not viable: no known conversion #{i}\n" for i in range(2000))
    log = compiler_log(LOG.splitlines(keepends=True)[1] + candidates + "1 error generated.\n")
    error = BuildError("building libpost.so failed", side="hg_post", log=log)
    assert "invalid operands to binary expression" in error.first_error
    assert error.of_the_code and log.rstrip().endswith("1 error generated.")
    assert len(log) < 10_000
