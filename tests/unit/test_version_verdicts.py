"""What counts as the same bug on another DaCe: an exception's type and message or a
compiler's error, wherever in DaCe's source it now comes from; another error is 'fails
otherwise', never 'still present'."""
from harnessgen.bugs.cluster import CODE_GENERATOR, CODEGEN_FAILURE
from harnessgen.bugs.signature import Signature, exception_signature, normalise, version_stable
from harnessgen.bugs.version_verdicts import FAILS_OTHERWISE, FIXED, STILL_PRESENT, versions_line
from harnessgen.bugs.versions import _codegen_verdict


def traceback(file: str, func: str, message: str) -> str:
    """A pair's error as extraction writes it: the exception's line, then its innermost frames."""
    return f'{message}\n  File "/x/site-packages/dace/{file}", line 12, in {func}\n    raise ValueError(...)\n'



def test_an_exception_raised_from_another_place_in_dace_is_the_same_bug():
    old = exception_signature("FAILED_TO_APPLY", "MapTiling",
                              traceback("transformation/dataflow/strip_mining.py", "_stripmine",
                                        "ValueError: Strip-mining all dimensions of the map with empty tiles"), [])
    moved = exception_signature("FAILED_TO_APPLY", "MapTiling",
                                traceback("transformation/dataflow/tiling.py", "apply",
                                          "ValueError: Strip-mining all dimensions of the map with empty tiles"), [])
    other = exception_signature("FAILED_TO_APPLY", "MapTiling",
                                traceback("transformation/dataflow/tiling.py", "apply",
                                          "TypeError: Context must contain version information"), [])
    assert old.key != moved.key                                 # the reducer keeps them apart
    assert version_stable(old) == version_stable(moved)         # across versions they are one bug
    assert version_stable(old) != version_stable(other)


def test_a_code_generator_bug_is_still_present_only_with_its_own_compiler_error():
    bug = Signature(CODEGEN_FAILURE, CODE_GENERATOR,
                    (normalise("invalid operands to binary expression ('double[1]' and 'double')"), "if"))
    same = "building hg_pre failed\nhg_pre.cpp:7892:18: error: invalid operands to binary expression " \
           "('double[1]' and 'double')\n"
    other = "building hg_pre failed\nhg_pre.cpp:12:3: error: use of undeclared identifier 'zdqs'\n"
    assert _codegen_verdict(bug, same)[0] == STILL_PRESENT
    assert _codegen_verdict(bug, other)[0] == FAILS_OTHERWISE
    assert _codegen_verdict(bug, None)[0] == FIXED
    assert versions_line({"2.0.0b1": {"verdict": FAILS_OTHERWISE}}) == "2.0.0b1 fails otherwise"
