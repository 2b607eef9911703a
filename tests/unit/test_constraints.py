"""Derived ranges keep pre valid; user files narrow them and name what to fix."""
import json

import pytest

from harnessgen.core import expr as ex
from harnessgen.core.errors import ConfigError
from harnessgen.inputs.constraints import derive, program_analysis
from tests.conftest import make_pair


def ranges(c):
    return {k: (str(v.lo), str(v.hi)) for k, v in c.symbols.items()}


def test_sizes_are_between_one_and_max_size():
    pair = make_pair("gemm", "MapTiling")
    c = derive(pair, max_size=7)
    assert all(r == ("1", "7") for r in ranges(c).values())


def test_index_arrays_stay_within_the_extents_they_index():
    pair = make_pair("spmv", "LoopToMap")
    c = derive(pair)
    assert (str(c.values["col"].lo), str(c.values["col"].hi)) == ("0", "(N - 1)")
    assert (str(c.values["rowptr"].lo), str(c.values["rowptr"].hi)) == ("0", "NNZ")


def test_window_symbols_keep_the_window_inside_the_array():
    c = derive(make_pair("column_window", "MapTiling"))
    r = ranges(c)
    assert r["KIDIA"] == ("1", "(KLON + 1)")
    assert r["KFDIA"] == ("0", "KLON")


def test_loop_variable_of_the_enclosing_program_gets_the_loop_bounds():
    # trisolve's loops, whether DaCe writes them as states (1.0.2) or as LoopRegions (2.0):
    # for i in range(N - 1, -1, -1) and for j in range(i + 1, N)
    from harnessgen.targets import resolve

    target, _ = resolve("kernels")
    analysis = program_analysis(target.programs["trisolve"].sdfg())
    loops = {(i.name, str(i.low), str(i.high)) for its in analysis.iterators.values() for i in its if i.origin == "loop"}
    assert ("i", "0", "N - 1") in loops, loops
    assert ("j", "i + 1", "N - 1") in loops, loops
    # and a cutout inside the loops that keeps a loop variable gets its bounds
    pair = make_pair("trisolve", "harnessgen.zoo.correct:ReciprocalDivision")
    c = derive(pair)
    if "i" in c.symbols:
        assert ranges(c)["i"] == ("0", "(N - 1)"), ranges(c)


def test_user_file_narrows_safety_ranges_and_replaces_defaults(tmp_path):
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"KIDIA": ["2", "KLON"], "KLON": ["3", "40"], "T": ["150", "350"]}))
    c = derive(make_pair("column_window", "MapTiling"), user_file=f)
    assert ranges(c)["KLON"] == ("3", "40")                       # default replaced
    kidia = c.symbols["KIDIA"]
    assert ex.evaluate(kidia.lo, {"KLON": 10}) == 2                  # narrowed...
    assert ex.evaluate(kidia.hi, {"KLON": 10}) == 10                 # ...within the safety range
    assert (str(c.values["T"].lo), str(c.values["T"].hi)) == ("150", "350")


@pytest.mark.parametrize("content,message", [
    ("{not json", "not valid JSON"),
    ('{"KIDIA": [1]}', "'KIDIA' must map to \\[lo, hi\\]"),
    ('{"NOPE": [1, 2]}', "'NOPE' is neither a symbol nor a container"),
    ('{"KIDIA": ["1", "KLON +"]}', "KIDIA upper bound"),
])
def test_bad_user_files_name_the_file_and_key(tmp_path, content, message):
    f = tmp_path / "bad.json"
    f.write_text(content)
    with pytest.raises(ConfigError, match=message) as info:
        derive(make_pair("column_window", "MapTiling"), user_file=f)
    assert "bad.json" in str(info.value)


def test_missing_user_file_names_the_flag(tmp_path):
    with pytest.raises(ConfigError, match="--constraints"):
        derive(make_pair("column_window", "MapTiling"), user_file=tmp_path / "missing.json")


def test_index_array_read_inside_a_map_through_a_nested_sdfg():
    from harnessgen.cutout.extract import whole_program_pair
    from harnessgen.targets.loaders import load_python_program
    from tests.conftest import PROGRAMS

    program = load_python_program(PROGRAMS / "gather.py", "gather").programs["gather"].build()
    c = derive(whole_program_pair(program, "gather"))
    assert (str(c.values["idx"].lo), str(c.values["idx"].hi)) == ("0", "(M - 1)")


def test_derived_ranges_do_not_depend_on_what_was_derived_before():
    """Symbol ranges are derived once per program and free-symbol set; a cutout derived
    after others gets what a fresh analysis gives it."""
    from harnessgen.inputs import constraints

    spmv = make_pair("spmv", "LoopToMap")
    tiled = make_pair("spmv", "TaskletFusion")
    constraints._ANALYSES.clear()
    fresh = json.dumps(derive(spmv).to_json(), sort_keys=True)
    derive(tiled)
    again = json.dumps(derive(spmv).to_json(), sort_keys=True)
    constraints._ANALYSES.clear()
    derive(tiled)
    after_other = json.dumps(derive(spmv).to_json(), sort_keys=True)
    assert fresh == again == after_other


def test_a_cycle_of_derived_bounds_is_cut_at_its_last_symbol_and_the_relation_kept():
    """KIDIA <= KFDIA + 1 and KFDIA >= KIDIA - 1 are one relation, derived for each symbol
    (a cutout with a KFDIA - KIDIA + 1 extent and no KLON). KIDIA, last in the order, is
    derived again without KFDIA; KFDIA keeps the relation; the user's KIDIA >= 1 survives."""
    from harnessgen.core.errors import Unsupported
    from harnessgen.inputs.constraints import Range, _drop_unresolvable, _merge, _within_cutout

    def rng(lo, hi, kind="safety"):
        return Range(ex.parse(lo), ex.parse(hi), "test", kind)

    derived = {"KFDIA": rng("KIDIA - 1", "16"), "KIDIA": rng("0", "KFDIA + 1")}
    user = {"KIDIA": rng("1", "KLON", "user")}
    symbols = dict(derived, KIDIA=_merge(derived["KIDIA"], _within_cutout(user["KIDIA"], derived["KIDIA"],
                                                                          {"KFDIA", "KIDIA"})))
    asked = []

    def rederive(sym, without):
        asked.append((sym, sorted(without)))
        return rng("0", "16")

    out = _drop_unresolvable(symbols, ["KFDIA", "KIDIA"], dict(derived), user, rederive)
    assert asked == [("KIDIA", ["KFDIA"])]
    assert ranges_of(out) == {"KFDIA": ("(KIDIA - 1)", "16"), "KIDIA": ("1", "16")}
    with pytest.raises(Unsupported, match="cycle through KIDIA"):
        _drop_unresolvable(dict(derived), ["KFDIA", "KIDIA"], dict(derived), {},
                           lambda sym, without: rng("0", "KFDIA"))


def ranges_of(symbols):
    return {k: (str(ex.simplify(v.lo)), str(ex.simplify(v.hi))) for k, v in symbols.items()}


def test_a_cycle_with_a_loop_variable_is_cut_at_the_other_symbol():
    """A loop variable's range is what the program gives it (``i`` in ``[0, H - 1]``); a size's
    bound naming it was derived from index uses and only approximates the relation. resnet's
    conv2d cutouts had the cycle cut at ``i``, last in the order: ``i`` ran up to --max-size with
    ``H`` at 1, and pre wrote far outside its containers. The cut is now made at ``H``."""
    from harnessgen.inputs.constraints import Range, _drop_unresolvable

    derived = {"H": Range(ex.parse("max(1, -i)"), ex.parse("16"), "size (--max-size)", "default"),
               "i": Range(ex.parse("0"), ex.parse("H - 1"), "loop variable of the program", "safety")}
    asked = []

    def rederive(sym, without):
        asked.append((sym, sorted(without)))
        return Range(ex.parse("1"), ex.parse("16"), "size (--max-size)", "default")

    out = _drop_unresolvable(dict(derived), ["H", "i"], dict(derived), {}, rederive)
    assert asked == [("H", ["i"])]
    assert ranges_of(out) == {"H": ("1", "16"), "i": ("0", "(H - 1)")}
