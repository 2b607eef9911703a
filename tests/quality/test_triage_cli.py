"""`harnessgen triage` re-triages a run directory or a bare AFL++ output directory;
`harnessgen replay <finding>` runs the reproducer."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import instances_of, run_cli, summary_of

SPEC = "harnessgen.zoo.planted:TilingWithoutRemainder"


@pytest.mark.fuzz
def test_triage_of_a_run_directory_and_of_an_afl_directory(tmp_path):
    _, insts = instances_of("elementwise_chain", SPEC)
    inst = insts[0]
    corpus = tmp_path / "corpus" / "kernels" / inst.id
    corpus.mkdir(parents=True)
    (corpus / "start.bin").write_bytes(np.array([4], dtype="<i4").tobytes() + bytes(256))   # N = 4 passes
    proc = run_cli(["fuzz", "--program", "kernels:elementwise_chain", "--transformation", SPEC, "--instance",
                    inst.id, "--time", "5", "--seed-mode", "none", "--prove", "off"], tmp_path)   # afl-fuzz finds it
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    [finding] = entry["findings"]
    shutil.rmtree(finding["path"])                      # lose the finding, keep the raw crashes

    proc = run_cli(["triage", str(tmp_path / "out"), "--crashes-dir", str(tmp_path / "crashes"),
                    "--work-dir", str(Path(entry["build_dir"]).parents[1])], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "1 finding(s)" in proc.stderr
    [again] = summary_of(tmp_path)["instances"][0]["findings"]
    assert again["path"] == finding["path"] and Path(again["path"], "repro.py").is_file()
    # the run's state has the new triage too: a report drawn again keeps it
    retriaged = summary_of(tmp_path)["instances"][0]["triage"]
    assert retriaged != entry["triage"]
    proc = run_cli(["report", str(tmp_path / "out")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert summary_of(tmp_path)["instances"][0]["triage"] == retriaged

    afl_out = tmp_path / "out" / "afl" / inst.id
    assert list((afl_out / "default" / "crashes").glob("id:*")), "afl-fuzz saved no crash"
    elsewhere = tmp_path / "elsewhere"
    proc = run_cli(["triage", str(afl_out), "--crashes-dir", str(elsewhere)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [made] = list((elsewhere / "kernels" / inst.id).glob("mismatch-*"))
    meta = json.loads((made / "meta.json").read_text())
    assert meta["symbols"] == {"N": 1}

    proc = run_cli(["replay", str(made)], tmp_path)
    assert proc.returncode == 1 and "MISMATCH" in proc.stdout
    raw = sorted((tmp_path / "crashes" / "kernels" / inst.id / "raw").glob("*.bin"))
    proc = run_cli(["replay", str(raw[0])], tmp_path)          # a raw crash finds its build
    assert proc.returncode == 1 and proc.stdout.startswith("MISMATCH"), proc.stdout + proc.stderr


def test_triage_refuses_a_directory_it_cannot_read(tmp_path):
    proc = run_cli(["triage", str(tmp_path)], tmp_path)
    assert proc.returncode == 2 and "neither a harnessgen run directory" in " ".join(proc.stderr.split())
