"""A program DaCe cannot build, recognised by its cause: the compiler's first error and the
generated line it points at, whatever the side is called or how the line is laid out."""
from harnessgen.harness.codegen_causes import Cause, CauseRegistry, diagnostics, from_compiler_output

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
    first = Cause("m", "l", first_instance="A-1")
    registry = CauseRegistry(tmp_path, "dace 1.0.2")
    assert registry.record(first) == first
    assert registry.record(Cause("m", "l", first_instance="B-2")).first_instance == "A-1"
    assert registry.match("l\n", "hg_pre").first_instance == "A-1"
    assert CauseRegistry(tmp_path, "dace 2.0.0").known() == []     # another DaCe meets it afresh


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
