"""pyfuzz's oracle: how each symptom of a compiler becomes a verdict, on valid programs and on
programs disruptive mode breaks on purpose."""
import random

import numpy as np
import pytest

from harnessgen.outcome import Outcome
from harnessgen.pyfuzz.choices import ByteChoices
from harnessgen.pyfuzz.compilers import DaceCompiler, torch_available
from harnessgen.pyfuzz.generator import GenOptions, generate
from harnessgen.pyfuzz.oracle import judge
from harnessgen.pyfuzz.replay import CompilerSpec, judge_isolated


class ScriptedDace(DaceCompiler):
    """NumPy reference as DaCe's, compiled modes replaced by a script: per mode an exception
    to raise, or a function of (compiler, program, inputs) that returns the outputs."""

    def __init__(self, work_dir, script):
        super().__init__(work_dir)
        self.script = script

    def run(self, program, mode, inputs):
        action = self.script[mode]
        if isinstance(action, BaseException):
            raise action
        return action(self, program, inputs)


def first_program(mode: str, rejected_by_reference=None, seed: int = 5):
    """The first generated program of ``mode`` (for disruptive: one the reference rejects or
    accepts, as asked)."""
    rng = random.Random(seed)
    reference = DaceCompiler.__new__(DaceCompiler)      # reference() needs no build folder
    while True:
        data = bytes(rng.randrange(256) for _ in range(160))
        program = generate(ByteChoices(data), GenOptions(compiler="dace", mode=mode, guided=False, max_stmts=3))
        if program is None or (mode == "disruptive" and program.valid):
            continue
        if rejected_by_reference is None:
            return program
        try:
            reference.reference(program, program.make_inputs())
            rejected = False
        except Exception:
            rejected = True
        if rejected == rejected_by_reference:
            return program


def same(compiler, program, inputs):
    return compiler.reference(program, inputs)


def nudged(compiler, program, inputs):
    return [o + (1 if o.dtype.kind == "i" else 1e-3) for o in compiler.reference(program, inputs)]


def silent(compiler, program, inputs):
    return [np.zeros(1)]


@pytest.fixture(scope="module")
def valid_program():
    return first_program("strict")


@pytest.fixture(scope="module")
def broken_program():
    return first_program("disruptive", rejected_by_reference=True)


def verdict(tmp_path, program, simplify, auto_optimize):
    compiler = ScriptedDace(tmp_path, {"simplify": simplify, "auto_optimize": auto_optimize})
    return judge(compiler, program, program.make_inputs())


def test_a_valid_program_passes_when_every_mode_agrees(tmp_path, valid_program):
    result = verdict(tmp_path, valid_program, same, same)
    assert result.outcome == Outcome.PASS and result.agreeing_modes == ["simplify", "auto_optimize"]


def test_a_mode_that_differs_is_a_mismatch_that_names_the_modes_that_agree(tmp_path, valid_program):
    result = verdict(tmp_path, valid_program, same, nudged)
    assert result.outcome == Outcome.MISMATCH
    assert (result.failing_modes, result.agreeing_modes) == (["auto_optimize"], ["simplify"])
    assert result.signature("dace") == ("dace", "MISMATCH", "auto_optimize")


def test_any_exception_on_a_valid_program_is_a_compiler_error_with_its_type(tmp_path, valid_program):
    result = verdict(tmp_path, valid_program, same, ValueError("bad"))
    assert result.outcome == Outcome.COMPILER_ERROR and result.mode == "auto_optimize"
    assert result.error_type == "ValueError" and result.is_finding


def test_an_invalid_program_rejected_clearly_is_no_finding(tmp_path, broken_program):
    result = verdict(tmp_path, broken_program, ValueError("shapes"), TypeError("dtype"))
    assert result.outcome == Outcome.PASS and not result.is_finding


def test_an_internal_error_on_an_invalid_program_is_an_unclear_error(tmp_path, broken_program):
    result = verdict(tmp_path, broken_program, ValueError("shapes"), KeyError("v3"))
    assert result.outcome == Outcome.UNCLEAR_ERROR and result.is_finding
    assert (result.mode, result.error_type) == ("auto_optimize", "KeyError")


def test_an_invalid_program_that_runs_compiled_is_accepted_invalid(tmp_path, broken_program):
    result = verdict(tmp_path, broken_program, silent, same)
    assert result.outcome == Outcome.ACCEPTED_INVALID and result.mode == "simplify" and result.is_finding


def test_nan_in_the_reference_discards_the_program_before_any_compile(tmp_path, valid_program):
    class NanReference(ScriptedDace):
        def reference(self, program, inputs):
            return [np.array([1.0, np.nan])]

    compiler = NanReference(tmp_path, {"simplify": ValueError("never compiled"), "auto_optimize": same})
    result = judge(compiler, valid_program, valid_program.make_inputs())
    assert result.outcome == Outcome.INVALID_INPUT and not result.is_finding


def test_real_dace_judges_disruptive_programs_only_by_the_disruptive_rules(tmp_path):
    """Programs NumPy rejects, compiled by DaCe 1.0.2 (in a child: its libraries flush
    subnormals to zero): a clear rejection (DaceSyntaxError, ValueError) is no finding; the
    same programs are never COMPILER_ERROR or MISMATCH, which belong to valid programs."""
    spec = CompilerSpec("dace", tmp_path)
    programs = [first_program("disruptive", rejected_by_reference=True, seed=seed) for seed in range(6)]
    verdicts = [judge_isolated(spec, program, program.make_inputs()) for program in programs]
    outcomes = [v.outcome for v in verdicts]
    assert set(outcomes) <= {Outcome.PASS, Outcome.UNCLEAR_ERROR, Outcome.ACCEPTED_INVALID}, outcomes
    clear = [v for v in verdicts if v.outcome == Outcome.PASS]
    assert len(clear) >= 3 and all(v.detail == "rejected with a clear error" for v in clear), outcomes


TORCH_MISSING = torch_available()


@pytest.mark.skipif(TORCH_MISSING is not None, reason=TORCH_MISSING or "")
def test_replay_works_in_a_process_whose_torch_threads_have_run(tmp_path, valid_program):
    """A plain fork of a process whose OpenMP pool has run leaves the child hanging in its
    first parallel region (every replay was POST_HANG); replays come from a fork server."""
    import torch

    matrix = torch.randn(300, 300)
    assert torch.isfinite(matrix @ matrix).all()
    verdict = judge_isolated(CompilerSpec("dace", tmp_path), valid_program, valid_program.make_inputs(), timeout_s=120)
    assert verdict.outcome == Outcome.PASS, verdict
