"""The harness protocol has one owner: protocol.py. The template renders its exit codes,
markers and variable names from there, no other module spells them, and runs decode as the
harness reports."""
import re

from harnessgen.core import envs, protocol
from harnessgen.core.protocol import Exit, HarnessEnv, Marker, NativeRun
from harnessgen.core.runtime import Tolerance
from tests.conftest import REPO


def test_every_variable_a_harness_reads_is_a_declared_knob():
    assert set(protocol.ENVIRONMENT.values()) <= set(envs.KNOBS)


def test_a_harness_env_writes_the_tolerance_threads_and_stages_it_is_given():
    assert HarnessEnv().variables() == {"HARNESSGEN_THREADS": "1", "HARNESSGEN_REPEAT": "1", "HARNESSGEN_STAGES": "0"}
    given = HarnessEnv(Tolerance(rtol=1e-3, atol=0.0, exact=True, rtol32=2e-3), threads=4, repeat=10,
                       stages=True).variables()
    assert given == {"HARNESSGEN_THREADS": "4", "HARNESSGEN_REPEAT": "10", "HARNESSGEN_STAGES": "1",
                     "HARNESSGEN_RTOL": "0.001", "HARNESSGEN_ATOL": "0.0", "HARNESSGEN_EXACT": "1",
                     "HARNESSGEN_RTOL32": "0.002", "HARNESSGEN_ATOL32": "1e-06"}
    assert HarnessEnv(threads=3).environ({"EXTRA": "x"})["EXTRA"] == "x"


def test_runs_decode_statuses_and_marker_fields():
    mismatch = NativeRun(-6, "HARNESSGEN: PRE_DONE\nHARNESSGEN: MISMATCH container=B index=3 pre=1 post=2\n")
    assert mismatch.crashed and mismatch.exit is None and not mismatch.judged_fine
    assert mismatch.reported(Marker.PRE_DONE) and not mismatch.reported(Marker.OOB_WRITE)
    assert mismatch.fields(Marker.MISMATCH) == {"container": "B", "index": "3", "pre": "1", "post": "2"}
    no_gpu = NativeRun(69, "HARNESSGEN: NO_GPU reason=CUDA driver version is insufficient\n")
    assert no_gpu.exit == Exit.NO_GPU and not no_gpu.crashed and not no_gpu.judged_fine
    assert no_gpu.fields(Marker.NO_GPU) == {"reason": "CUDA driver version is insufficient"}
    assert NativeRun(3, "").judged_fine and NativeRun(2, "").judged_fine and NativeRun(0, "").judged_fine
    hang = NativeRun(None, "HARNESSGEN: PRE_DONE\n")
    assert hang.timed_out and hang.crashed and hang.exit is None
    assert NativeRun(17, "").exit is None and NativeRun(17, "").fields(Marker.MISMATCH) is None


def test_the_templates_render_the_protocol_and_spell_none_of_it():
    harness = (REPO / "templates" / "harness.cpp.j2").read_text()
    assert "{{ markers." in harness and "HG_{{ name }} = {{ code }}" in harness
    for template in (REPO / "templates").glob("*.j2"):
        text = template.read_text()
        assert not re.search(r"HARNESSGEN: [A-Z_]+", text), template.name
        if template.name in ("harness.cpp.j2", "kernel_side.cu.j2"):
            assert not re.search(r'getenv\("HARNESSGEN_', text), template.name
            assert not re.search(r"\breturn (2|3|4|64|66|69);|exit\((4|69)\)", text), template.name


def test_no_module_but_protocol_spells_the_markers_or_the_harness_variables():
    spelled = re.compile(r'HARNESSGEN: |"HARNESSGEN_(RTOL|ATOL|EXACT|STAGES|THREADS|REPEAT)"|HARNESSGEN_(THREADS|REPEAT)=')
    offenders = [str(path.relative_to(REPO)) for path in sorted((REPO / "harnessgen").rglob("*.py"))
                 if path.name not in ("protocol.py", "envs.py") and spelled.search(path.read_text())]
    assert offenders == []



def test_openmp_threads_spin_briefly_unless_the_caller_says_otherwise(monkeypatch):
    monkeypatch.delenv("KMP_BLOCKTIME", raising=False)
    env = HarnessEnv(threads=4).environ()
    assert env["KMP_BLOCKTIME"] == "1" and env["HARNESSGEN_THREADS"] == "4" and env["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("KMP_BLOCKTIME", "200")
    assert HarnessEnv(threads=4).environ()["KMP_BLOCKTIME"] == "200"
