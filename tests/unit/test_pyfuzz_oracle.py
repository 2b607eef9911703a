"""pyfuzz's oracle: how each symptom of a compiler becomes a verdict, on valid programs and on
programs disruptive mode breaks on purpose."""
import random

import numpy as np
import pytest

from harnessgen.core.outcome import Outcome
from harnessgen.pyfuzz.choices import ByteChoices
from harnessgen.pyfuzz.compilers import DaceCompiler, torch_available
from harnessgen.pyfuzz.generator import GenOptions, generate
from harnessgen.pyfuzz.judge_server import CompilerSpec, describe, judge_isolated
from harnessgen.pyfuzz.oracle import judge


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


# DaCe 2.0.0b1 rejects three of these six with IndexError: a broadcast mismatch (NumPy raises
# ValueError) and, inside its mean replacement, an axis out of range ("tuple index out of range")
@pytest.mark.dace_102
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


@pytest.mark.other_compiler
@pytest.mark.skipif(TORCH_MISSING is not None, reason=TORCH_MISSING or "")
def test_replay_works_in_a_process_whose_torch_threads_have_run(tmp_path, valid_program):
    """A plain fork of a process whose OpenMP pool has run leaves the child hanging in its
    first parallel region (every replay was POST_HANG); replays come from a judge server."""
    import torch

    matrix = torch.randn(300, 300)
    assert torch.isfinite(matrix @ matrix).all()
    verdict = judge_isolated(CompilerSpec("dace", tmp_path), valid_program, valid_program.make_inputs(), timeout_s=120)
    assert verdict.outcome == Outcome.PASS, verdict


class Recompiling(ScriptedDace):
    """A compiler that keeps what it compiled (as torch does), scripted per mode: a function
    of (compiler, program, list of input sets, fresh) -> one result per set, where ``fresh``
    says the compile was made for those inputs alone."""

    reuses_compiled = True

    def run_calls(self, program, mode, calls):
        return self.script[mode](self, program, calls, len(calls) == 1)


def agreeing(compiler, program, calls, fresh):
    return [compiler.reference(program, inputs) for inputs in calls]


def stale_graph(compiler, program, calls, fresh):
    """Right for the inputs it was compiled for, wrong for any later ones."""
    results = [compiler.reference(program, calls[0])]
    return results + [nudged(compiler, program, inputs) for inputs in calls[1:]]


def wrong_for_second_values(compiler, program, calls, fresh):
    """Wrong for the second input set however it was compiled (a plain miscompile that the
    first values happen not to show)."""
    return [compiler.reference(program, inputs) if number == 0 and not fresh else nudged(compiler, program, inputs)
            for number, inputs in enumerate(calls)]


def scripted(tmp_path, program, behaviour):
    compiler = Recompiling(tmp_path, {"simplify": behaviour, "auto_optimize": agreeing})
    return judge(compiler, program, program.make_inputs())


def test_a_kept_graph_wrong_for_other_values_is_a_guard_failure(tmp_path, valid_program):
    result = scripted(tmp_path, valid_program, stale_graph)
    assert result.outcome == Outcome.GUARD_FAILURE and result.call == 1 and result.mode == "simplify"
    assert "a compile for these values alone agrees" in result.detail


def test_other_values_that_a_fresh_compile_gets_wrong_too_are_a_mismatch(tmp_path, valid_program):
    result = scripted(tmp_path, valid_program, wrong_for_second_values)
    assert result.outcome == Outcome.MISMATCH and result.call == 1
    assert "on the second inputs" in result.detail


def test_the_final_state_of_an_argument_is_compared_too(tmp_path, valid_program):
    """A compiled program that returns the right values but leaves an input in another state
    than the reference does is a mismatch named after that input."""
    def clobbers_an_input(compiler, program, inputs):
        results = compiler.reference(program, inputs)
        results[-1] = results[-1] + 1
        return results

    result = verdict(tmp_path, valid_program, same, clobbers_an_input)
    last = valid_program.inputs[-1].name
    assert result.outcome == Outcome.MISMATCH and f"input {last} after the call" in result.detail


def test_float32_rounding_the_float64_reference_explains_is_no_mismatch(tmp_path):
    """Beyond float32's tolerance, yet closer to the float64 value than the reference itself:
    rounding. More than three times the reference's own error is a mismatch."""
    from harnessgen.core.runtime import Tolerance
    from harnessgen.pyfuzz.oracle import _first_difference

    want = np.array([1.0, 2.0], np.float32)
    truth = [np.array([1.001, 2.0])]
    closer = np.array([1.0008, 2.0], np.float32)
    away = np.array([0.995, 2.0], np.float32)
    assert _first_difference([want], [closer], Tolerance(), lambda: truth) is None
    assert _first_difference([want], [away], Tolerance(), lambda: truth) is not None
    assert _first_difference([want], [closer], Tolerance(exact=True), lambda: truth) is not None


def test_a_clear_rejection_of_another_type_than_eager_is_an_exception_mismatch(tmp_path, broken_program):
    """Where the reference is the same library (torch), rejecting an invalid program with
    another error type than eager does is a finding of its own; a wrapper is looked through."""
    class SameLibrary(ScriptedDace):
        same_errors_as_reference = True

        def root_error(self, error):
            return error.__cause__ if isinstance(error, LookupError) and error.__cause__ else error

    reference_error = None
    try:
        ScriptedDace(tmp_path, {}).reference(broken_program, broken_program.make_inputs())
    except Exception as error:
        reference_error = error
    wrapped = LookupError("wrapped")
    wrapped.__cause__ = type(reference_error)("same type inside")
    compiler = SameLibrary(tmp_path, {"simplify": wrapped, "auto_optimize": TypeError("another type")})
    compiler.clear_errors = compiler.clear_errors + (LookupError,)
    result = judge(compiler, broken_program, broken_program.make_inputs())
    assert result.outcome == Outcome.EXCEPTION_MISMATCH and result.mode == "auto_optimize"
    assert result.error_type == "TypeError" and type(reference_error).__name__ in result.detail


def test_the_judge_server_runs_in_the_interpreter_it_is_given(tmp_path, valid_program):
    """--python: the compiler's own interpreter runs the judge (here this one, named as another
    would be); versions and modes come from it."""
    import sys

    spec = CompilerSpec("dace", tmp_path, python=sys.executable)
    assert describe(spec)["modes"] == ["simplify", "auto_optimize"]
    assert judge_isolated(spec, valid_program, valid_program.make_inputs(), timeout_s=300).outcome == Outcome.PASS
