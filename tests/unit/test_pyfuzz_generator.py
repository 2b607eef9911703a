"""pyfuzz's generator and mutations, checked on the reference alone (no compile)."""
import random

import numpy as np
import pytest

from harnessgen.pyfuzz.choices import ByteChoices
from harnessgen.pyfuzz.compilers import Compiler, DaceCompiler, TorchCompiler, torch_available
from harnessgen.pyfuzz.generator import Coverage, GenOptions, generate
from harnessgen.pyfuzz.mutations import FAMILIES, TORCH_ONLY, mutate
from harnessgen.pyfuzz.oracle import all_finite, profile
from harnessgen.pyfuzz.program_record import Program

PROGRAMS = 1000


def byte_strings(n, seed=7, length=160):
    rng = random.Random(seed)
    return [bytes(rng.randrange(256) for _ in range(length)) for _ in range(n)]


def test_choices_are_a_pure_function_of_the_bytes_and_run_out_into_zeros():
    data = bytes([200, 7, 255, 1, 3])
    first = ByteChoices(data)
    a = [first.integer(0, 9), first.integer(-5, 300), first.boolean(), first.choice("abc"), first.integer(0, 9)]
    second = ByteChoices(data)
    assert a == [second.integer(0, 9), second.integer(-5, 300), second.boolean(), second.choice("abc"),
                 second.integer(0, 9)]
    empty = ByteChoices(b"")
    assert (empty.integer(3, 9), empty.choice("xyz"), empty.boolean()) == (3, "x", True) or empty.integer(3, 9) == 3


def test_unguided_generation_is_deterministic_and_round_trips_through_json():
    for data in byte_strings(50):
        one = generate(ByteChoices(data), GenOptions(guided=False))
        two = generate(ByteChoices(data), GenOptions(guided=False))
        if one is None:
            assert two is None
            continue
        assert one.source() == two.source()
        assert Program.from_json(one.to_json()).source() == one.source()
        assert all(np.array_equal(one.make_inputs()[k], v) for k, v in two.make_inputs().items())


def _reference(compiler: Compiler, program, inputs):
    with np.errstate(all="ignore"):
        return compiler.reference(program, inputs)


@pytest.fixture(scope="module")
def dace_reference(tmp_path_factory):
    return DaceCompiler(tmp_path_factory.mktemp("dace"))


def test_strict_programs_are_valid_at_least_99_percent(dace_reference):
    coverage = Coverage()
    valid = made = 0
    for data in byte_strings(PROGRAMS, seed=11):
        program = generate(ByteChoices(data), GenOptions(compiler="dace"), coverage)
        if program is None:
            continue
        made += 1
        try:
            valid += all_finite(_reference(dace_reference, program, program.make_inputs()))
        except Exception:
            pass
    assert made >= 0.95 * PROGRAMS
    assert valid >= 0.99 * made, f"{valid} of {made} strict programs run finite under NumPy"


def test_disruptive_programs_break_a_rule_the_reference_rejects(dace_reference):
    rejected = broken = 0
    for data in byte_strings(300, seed=5):
        program = generate(ByteChoices(data), GenOptions(compiler="dace", mode="disruptive", guided=False))
        if program is None or program.valid:
            continue
        broken += 1
        try:
            _reference(dace_reference, program, program.make_inputs())
        except Exception:
            rejected += 1
    assert broken >= 100
    assert rejected >= 0.9 * broken


def mutated_programs(compiler: str, family: str, seed: int):
    """(program, mutated program, inputs) for generated programs that ``family`` rewrites."""
    for data in byte_strings(PROGRAMS * 2, seed=seed):
        choices = ByteChoices(data)
        program = generate(choices, GenOptions(compiler=compiler, guided=False))
        if program is None:
            continue
        inputs = program.make_inputs()
        values = profile(program, inputs)
        if not all_finite(values.values()):
            continue
        mutated = mutate(program, choices, values, families=(family,), max_mutations=3)
        if mutated.mutations:
            yield program, mutated, inputs


def assert_outputs_kept(reference: Compiler, family: str, seed: int) -> None:
    applied = 0
    for program, mutated, inputs in mutated_programs(reference.name, family, seed):
        applied += 1
        for want, have in zip(_reference(reference, program, inputs), _reference(reference, mutated, inputs)):
            assert want.dtype == have.dtype and want.shape == have.shape
            assert np.array_equal(want, have), f"{family} changed the outputs of\n{mutated.source()}"
        if applied == PROGRAMS:
            break
    assert applied == PROGRAMS, f"{family} applied to only {applied} programs"


@pytest.mark.parametrize("family", [f for f in FAMILIES if f not in TORCH_ONLY])
def test_each_mutation_keeps_the_reference_outputs_on_1000_programs(dace_reference, family):
    assert_outputs_kept(dace_reference, family, seed=3)


def test_guidance_covers_more_than_unguided_generation_in_as_many_programs():
    guided, unguided = Coverage(), Coverage()
    for count, data in enumerate(byte_strings(300, seed=13), 1):
        generate(ByteChoices(data), GenOptions(compiler="dace", guided=True), guided)
        program = generate(ByteChoices(data), GenOptions(compiler="dace", guided=False))
        if program is not None:
            unguided.record(program)
        if count == 25:        # operator x dtype saturates early: compare it before it does
            assert guided.summary()["op_dtype"] > unguided.summary()["op_dtype"], (guided.summary(), unguided.summary())
    g, u = guided.summary(), unguided.summary()
    assert g["op_shape"] > u["op_shape"] and g["edges"] > u["edges"], (g, u)


TORCH_MISSING = torch_available()


@pytest.mark.other_compiler
@pytest.mark.skipif(TORCH_MISSING is not None, reason=TORCH_MISSING or "")
@pytest.mark.parametrize("family", FAMILIES)
def test_each_mutation_keeps_eager_torch_outputs(tmp_path, family):
    assert_outputs_kept(TorchCompiler(tmp_path), family, seed=17)


@pytest.mark.other_compiler
@pytest.mark.skipif(TORCH_MISSING is not None, reason=TORCH_MISSING or "")
def test_strict_torch_programs_run_finite_in_eager_and_reach_the_aliasing_space(tmp_path):
    """Views, writes through them, shape statements and casts are generated, and strict
    programs stay valid: eager torch runs them without an error, finite."""
    reference = TorchCompiler(tmp_path)
    kinds, valid, made = set(), 0, 0
    writes_through_views = 0
    for data in byte_strings(PROGRAMS, seed=23, length=200):
        program = generate(ByteChoices(data), GenOptions(compiler="torch"))
        if program is None:
            continue
        made += 1
        kinds.update(s.op for s in program.stmts)
        roots = program.alias_roots()
        writes_through_views += any(s.operator.mutates and roots[s.args[0]] != s.args[0] for s in program.stmts)
        try:
            valid += all_finite(_reference(reference, program, program.make_inputs()))
        except Exception as error:
            raise AssertionError(f"{type(error).__name__}: {error}\n{program.source()}") from error
    assert valid >= 0.99 * made >= 0.95 * 0.99 * PROGRAMS
    assert {"slice", "select", "view", "reshape", "squeeze", "unsqueeze", "expand", "cat", "stack", "pad",
            "add_", "copy_", "setitem", "index_put_", "scatter_add_", "cast", "masked"} <= kinds
    assert writes_through_views >= 0.1 * made
