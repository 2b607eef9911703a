"""An instance ``harnessgen ci`` could not judge at head is never a quiet pass: where the base
judges it, the check fails with a JUnit error and says so first in its summary; where the base
cannot judge it either, it is shown and does not fail the check."""
from xml.etree import ElementTree

from harnessgen import ci

CHANGED = [ci.Changed("dace.transformation.interstate.loop_unroll", "LoopUnroll", "changed")]
RUN = {"program": "kernels", "folder": "head/0-kernels", "verdicts": {"ERROR": 1, "PASS": 3}, "instances": 4}
REASON = "InternalError: hg_post takes argument 'jn', which the input layout does not provide"


def _result(base_verdict: str) -> ci.CiResult:
    error = ci.CiError(id="kernels/LoopUnroll-1234abcd", transformation="LoopUnroll", program="kernels",
                       reason=REASON, base_verdict=base_verdict)
    return ci.CiResult("a" * 40, "b" * 40, CHANGED, [RUN], [], 1.0, [error])


def test_an_error_the_base_does_not_have_fails_the_check():
    result = _result("PASS")
    assert result.exit_code == 1 and result.new_errors
    suite = ElementTree.fromstring(ci.junit(result))
    assert suite.get("errors") == "1" and suite.get("failures") == "0"
    [case] = list(suite.iter("testcase"))
    error = case.find("error")
    assert error is not None and "LoopUnroll-1234abcd" in error.get("message") and REASON in error.text
    report = ci.markdown(result).splitlines()
    assert "1 instance(s) not judged (new ERROR)" in report[0]
    assert any(REASON[:60] in line for line in report[:8]), report


def test_an_instance_the_base_does_not_plan_is_a_new_error():
    assert _result("NOT_PLANNED").exit_code == 1


def test_an_error_at_base_too_does_not_fail_the_check():
    result = _result("ERROR")
    assert result.exit_code == 0 and not result.new_errors
    assert ElementTree.fromstring(ci.junit(result)).get("errors") == "0"
    assert result.to_json()["errors"][0]["new"] is False
