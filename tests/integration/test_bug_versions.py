"""A bug judged again on a DaCe version: still present where the transformation still breaks
the program, fixed where the transformation there is right, not judgeable where the program
does not load; BUG.md says so, and a bug on the newest version is marked."""
import json
import shutil
from pathlib import Path

import pytest

from harnessgen.bugs.version_verdicts import CANNOT_APPLY, FIXED, STILL_PRESENT, newest_showing, versions_line
from harnessgen.bugs.versions import dace_python
from harnessgen.core.errors import ConfigError
from harnessgen.dacecompat import dace_version
from tests.conftest import BUILD_CACHE, run_cli, summary_of

PLANTED = "harnessgen.zoo.planted:TilingWithoutRemainder"
CORRECT = "harnessgen.zoo.correct:TilingWithRemainder"     # the same match, the remainder kept


def rejudge(folder: Path, tmp: Path) -> dict:
    proc = run_cli(["rejudge", str(folder), "--work-dir", str(BUILD_CACHE)], tmp)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_bug_is_still_present_fixed_or_not_judgeable_and_its_report_says_which(tmp_path):
    proc = run_cli(["fuzz", "--program", "kernels:elementwise_chain", "--transformation", PLANTED, "--time", "5",
                    "--params", "default", "--until-crash", "--no-reference-check", "--no-audit"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    finding = next(Path(f["path"]) for e in summary_of(tmp_path)["instances"] for f in e["findings"]
                   if e["verdict"] == "MISMATCH")
    here = dace_version()

    present = rejudge(finding, tmp_path)
    assert present["verdict"] == STILL_PRESENT and present["dace"] == here and "MISMATCH" in present["reason"]

    # the same finding, as if the DaCe judged had the transformation fixed
    fixed_folder = tmp_path / "fixed" / finding.name
    shutil.copytree(finding, fixed_folder)
    meta = json.loads((fixed_folder / "meta.json").read_text())
    meta["transformation_spec"] = CORRECT
    meta["build_dir"] = None
    (fixed_folder / "meta.json").write_text(json.dumps(meta))
    fixed = rejudge(fixed_folder, tmp_path)
    assert fixed["verdict"] == FIXED, fixed

    broken = tmp_path / "broken" / finding.name
    shutil.copytree(finding, broken)
    (broken / "pre.sdfg").write_text("{ not an SDFG")
    unreadable = rejudge(broken, tmp_path)
    assert unreadable["verdict"] == CANNOT_APPLY and "does not load" in unreadable["reason"], unreadable

    # the analysis records it per bug, and the bug's report leads with it
    proc = run_cli(["bugs", str(tmp_path / "out"), "--reduce-time", "0", "--work-dir", str(BUILD_CACHE),
                    "--on-dace", here], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [bug] = json.loads((tmp_path / "out" / "bugs.json").read_text())["bugs"]
    assert bug["versions"][here]["verdict"] == STILL_PRESENT and bug["shows_on_newest"] == here
    report = (tmp_path / "out" / "bugs" / bug["id"] / "BUG.md").read_text()
    assert f"**Still present on DaCe {here}, the newest version it was judged on.**" in report
    assert f"{here} still present" in proc.stdout + proc.stderr
    assert f"{here} still present" in (tmp_path / "out" / "report.md").read_text()     # the run's report too


def test_versions_order_by_release_and_the_newest_decides():
    versions = {"2.0.0b1": {"verdict": FIXED}, "1.0.2": {"verdict": STILL_PRESENT}}
    assert versions_line(versions) == "1.0.2 still present, 2.0.0b1 fixed"
    assert newest_showing(versions) is None
    assert newest_showing({**versions, "2.0.0b1": {"verdict": STILL_PRESENT}}) == "2.0.0b1"


def test_an_environment_that_is_not_there_names_the_command_that_makes_it(tmp_path):
    with pytest.raises(ConfigError, match=r"make setup-dace DACE=0\.9\.9"):
        dace_python("0.9.9", tmp_path, tmp_path)
