"""harnessgen installed as a user would (a wheel, not an editable checkout) finds its templates
and afl_configs as package data and runs an instance from any directory."""
import importlib.util
import json
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.conftest import REPO

INSTANCE = "MapFusion-79bac3e5"


def _wheel(tmp_path):
    # the environment's own setuptools where it has one (no download), else pip's isolated build
    flags = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *flags, "-w", str(tmp_path / "dist"),
                    str(REPO)], check=True, capture_output=True, text=True)
    [wheel] = (tmp_path / "dist").glob("harnessgen-*.whl")
    return wheel


def test_a_non_editable_install_runs_one_instance_outside_the_checkout(tmp_path, build_cache):
    wheel = _wheel(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [site] = (venv / "lib").glob("python*/site-packages")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", str(site),
                    str(wheel)], check=True, capture_output=True, text=True)
    # the dependencies come from the test environment; its editable harnessgen does not (its .pth
    # files are not read from a directory a .pth line adds)
    (site / "zz-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    python = str(venv / "bin" / "python")
    where = subprocess.run([python, "-c", "import harnessgen.core.data as d; from harnessgen.targets import resolve; "
                                          "print(d.__file__, d.TEMPLATES, d.AFL_CONFIGS); "
                                          "print(resolve('kernels')[0].constraints_file); "
                                          "from harnessgen.gpukernels.spec import resolve as kernels; "
                                          "print(kernels('gpukernels')[1][0].source)"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert all(line.startswith(str(site)) for line in where.stdout.split()), where.stdout
    run = tmp_path / "run"
    proc = subprocess.run([python, "-m", "harnessgen", "fuzz", "--program", "kernels:elementwise_chain",
                           "--transformation", "MapFusion", "--instance", INSTANCE, "--time", "2", "--no-audit",
                           "--out", str(run / "out"), "--work-dir", str(build_cache), "--corpus-dir",
                           str(run / "corpus"), "--crashes-dir", str(run / "crashes"), "--no-progress"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [entry] = json.loads((run / "out" / "summary.json").read_text())["instances"]
    assert entry["id"] == INSTANCE and entry["verdict"] == "PASS" and entry["execs"] > 0
    assert (run / "out" / "report.html").is_file()
    manifest = json.loads((Path(entry["build_dir"]) / "manifest.json").read_text())
    assert manifest["subject"] == "sdfg"


def test_pip_install_into_an_environment_with_dace_keeps_its_dace(tmp_path):
    """A user's environment that has DaCe already (in harnessgen's range): installing this
    repository installs harnessgen alone, never another DaCe over theirs."""
    report = tmp_path / "report.json"
    subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-build-isolation", "--quiet",
                    "--report", str(report), str(REPO)], check=True, capture_output=True, text=True, timeout=600)
    planned = {entry["metadata"]["name"].lower() for entry in json.loads(report.read_text())["install"]}
    assert planned == {"harnessgen"}, planned
