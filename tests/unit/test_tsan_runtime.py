"""A missing ThreadSanitizer runtime is a named ToolMissing that names the Debian package,
and triage still writes the finding without the ThreadSanitizer section."""
from types import SimpleNamespace

import pytest

from harnessgen.core.errors import ToolMissing
from harnessgen.harness.compiler import CXX
from harnessgen.triage.tsan import check_sanitizer_runtime


def test_the_installed_runtime_links():
    check_sanitizer_runtime(CXX)


def test_a_compiler_without_its_runtime_is_a_named_missing_tool(tmp_path):
    # an empty resource folder is exactly a clang whose libclang_rt.tsan was never installed
    with pytest.raises(ToolMissing) as caught:
        check_sanitizer_runtime(CXX, ("-resource-dir", str(tmp_path)))
    message = str(caught.value)
    assert "ThreadSanitizer runtime" in message and "libclang-rt-" in message and "make setup" in message


def test_an_absent_compiler_is_a_named_missing_tool():
    with pytest.raises(ToolMissing, match="HARNESSGEN_CXX"):
        check_sanitizer_runtime("no-such-clang++")


def test_triage_keeps_the_finding_when_the_runtime_is_missing(monkeypatch):
    from harnessgen.triage import classify

    def missing(*_):
        raise ToolMissing("the ThreadSanitizer runtime of clang++ is not installed: install libclang-rt-14-dev")

    monkeypatch.setattr(classify, "run_tsan", missing)
    evidence = classify.Triage._tsan(SimpleNamespace(build=None), b"", 4)
    assert evidence == {"tsan_error": "ToolMissing: the ThreadSanitizer runtime of clang++ is not installed: "
                                      "install libclang-rt-14-dev"}
