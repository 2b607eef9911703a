"""The Python API: the same verdicts as ``harnessgen fuzz`` on the same instances, everything
under the directory it is given, records a caller can act on."""
import pytest

import harnessgen
from harnessgen.api import transformation_spec
from harnessgen.core.errors import ConfigError
from harnessgen.plan.instances import load_transformation
from harnessgen.zoo.planted import TilingWithoutRemainder
from tests.conftest import PROGRAMS, run_cli, summary_of

PROGRAM = f"{PROGRAMS / 'scaled.py'}:scaled"


@pytest.mark.fuzz
def test_the_api_and_fuzz_give_the_same_verdicts_on_the_same_instances(tmp_path, monkeypatch):
    proc = run_cli(["fuzz", "--program", PROGRAM, "--transformation", "harnessgen.zoo.planted:TilingWithoutRemainder", "--time", "2",
                    "--params", "default"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    by_cli = {r["id"]: r["verdict"] for r in summary_of(tmp_path)["instances"]}
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    report = harnessgen.check(PROGRAM, TilingWithoutRemainder, time=2, params="default", in_process=True,
                              directory=tmp_path / "api")
    assert {v.instance: v.verdict for v in report.verdicts} == by_cli and "MISMATCH" in by_cli.values()
    assert not report.ok and report.findings and not report.errors
    [bug] = report.bugs
    assert bug.kind == "MISMATCH" and (bug.reproducer / "repro.py").is_file() and bug.report.is_file()
    assert bug.replay_command in report.describe()
    assert list(here.iterdir()) == []          # nothing outside the directory it was given


def test_a_class_is_named_so_a_worker_loads_it_again():
    assert transformation_spec(TilingWithoutRemainder) == "harnessgen.zoo.planted:TilingWithoutRemainder"
    from dace.transformation.dataflow import MapTiling

    assert transformation_spec([MapTiling, "MapFusion"]) == "MapTiling,MapFusion"

    class Mine(MapTiling):         # defined where no module names it: kept by the API
        pass

    assert load_transformation(transformation_spec(Mine)) is Mine


def test_an_unknown_option_names_the_options():
    with pytest.raises(ConfigError, match="no option 'tme'.*time_s"):
        harnessgen.check("kernels:gemm", "MapTiling", tme=3)
