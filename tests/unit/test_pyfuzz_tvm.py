"""pyfuzz --compiler tvm: every operator of its pool lowers to Relax with NumPy's meaning, and
TVM 0.27's pipelines agree with NumPy on generated programs (correct compilation is silent)."""
import random

import pytest

from harnessgen.core.outcome import Outcome
from harnessgen.pyfuzz.choices import ByteChoices
from harnessgen.pyfuzz.generator import Coverage, GenOptions, generate
from harnessgen.pyfuzz.ops import POOLS
from harnessgen.pyfuzz.oracle import judge

pytestmark = pytest.mark.other_compiler


@pytest.fixture(autouse=True, scope="module")
def tvm():
    """TVM, imported when a test runs: a run that deselects other compilers (the other DaCe's
    bounded set) never meets the import."""
    return pytest.importorskip("tvm", reason="apache-tvm is not installed; `make setup-tvm` installs it")


def test_every_operator_of_the_pool_agrees_with_numpy_in_two_pipelines(tmp_path):
    from harnessgen.pyfuzz.compilers import TvmCompiler

    compiler = TvmCompiler(tmp_path, modes=["default", "unfused"])
    wanted = {op.name for op in POOLS["tvm"]}
    seen, outcomes, coverage = set(), [], Coverage()
    rng = random.Random(3)
    for _ in range(400):
        program = generate(ByteChoices(bytes(rng.randrange(256) for _ in range(160))),
                           GenOptions(compiler="tvm", max_stmts=4), coverage)
        if program is None:
            continue
        verdict = judge(compiler, program, program.make_inputs())
        outcomes.append(verdict.outcome)
        assert verdict.outcome in (Outcome.PASS, Outcome.INVALID_INPUT), (verdict, program.source())
        if verdict.outcome == Outcome.PASS:
            seen.update(s.op for s in program.stmts)
        if seen >= wanted:
            break
    assert seen >= wanted, sorted(wanted - seen)
    assert outcomes.count(Outcome.PASS) >= 0.9 * len(outcomes)
    # HIRGEN's criteria are what guided generation counts: operator x dtype, x shape, pairs
    assert all(coverage.summary()[k] > 20 for k in ("op_dtype", "op_shape", "edges")), coverage.summary()


def test_a_relax_program_differs_from_numpy_when_an_operator_is_lowered_wrong(tmp_path, monkeypatch):
    """The oracle sees a wrong lowering: ``maximum`` built as ``minimum`` is a MISMATCH in
    every pipeline."""
    from harnessgen.pyfuzz import relax
    from harnessgen.pyfuzz.compilers import TvmCompiler
    from harnessgen.pyfuzz.program_record import Program, Stmt, Value

    a, b = Value("a0", (3, 4), "float32"), Value("a1", (3, 4), "float32")
    program = Program("tvm", [a, b], [Stmt(Value("v0", (3, 4), "float32"), "maximum", ["a0", "a1"])], ["v0"], 5)
    compiler = TvmCompiler(tmp_path, modes=["default"])
    assert judge(compiler, program, program.make_inputs()).outcome == Outcome.PASS
    monkeypatch.setitem(relax.LOWER, "maximum", relax.LOWER["minimum"])
    assert judge(compiler, program, program.make_inputs()).outcome == Outcome.MISMATCH


def test_a_tvm_finding_replays_from_the_relax_module_tvm_compiled(tmp_path, monkeypatch):
    """The reproducer builds relax_module.py (TVMScript) with the same pipeline code the fuzzer
    used and compares with the NumPy program: a wrong lowering replays as a mismatch."""
    import subprocess
    import sys

    from harnessgen.core.runtime import Tolerance
    from harnessgen.pyfuzz import relax
    from harnessgen.pyfuzz.compilers import TvmCompiler
    from harnessgen.pyfuzz.findings import RawFinding, write_finding
    from harnessgen.pyfuzz.judge_server import CompilerSpec
    from harnessgen.pyfuzz.program_record import Program, Stmt, Value

    a, b = Value("a0", (3, 4), "float32"), Value("a1", (3, 4), "float32")
    program = Program("tvm", [a, b], [Stmt(Value("v0", (3, 4), "float32"), "maximum", ["a0", "a1"])], ["v0"], 5)
    inputs = program.make_inputs()
    monkeypatch.setitem(relax.LOWER, "maximum", relax.LOWER["minimum"])
    verdict = judge(TvmCompiler(tmp_path / "work", modes=["default"]), program, inputs)
    assert verdict.outcome == Outcome.MISMATCH
    spec = CompilerSpec("tvm", tmp_path / "work", modes=("default",))
    folder = write_finding(tmp_path / "finding", spec, program, inputs, verdict, verdict.signature("tvm"),
                           RawFinding(program, inputs, b"", None, "test"), None, Tolerance())
    assert "R.minimum" in (folder / "relax_module.py").read_text()
    replay = subprocess.run([sys.executable, str(folder / "repro.py")], capture_output=True, text=True, cwd=folder,
                            timeout=300)
    assert replay.returncode == 1 and "default: output 0 differs" in replay.stdout, replay.stdout + replay.stderr
