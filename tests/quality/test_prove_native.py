"""Proofs end to end, natively. Every planted tiling, remainder and out-of-bounds bug is
DISPROVEN before any fuzzing: its counterexample, encoded as an input, fails natively and is an
ordinary finding whose reproducer replays. Correct tilings, interchanges, fusions and local
buffers are PROVEN and need no fuzzing. And no instance that fuzzing finds wrong is PROVEN."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harnessgen.inputs.layout import InputLayout
from harnessgen.prove import prove_build
from tests.conftest import instances_of, run_cli, summary_of

# (program, planted bug, its settings, the verdict its counterexample gives)
PLANTED = [
    ("kernels:elementwise_chain", "TilingWithoutRemainder", {}, "MISMATCH"),
    ("kernels:elementwise_chain", "TileCountFloors", {"tile_size": 3}, "MISMATCH"),
    ("kernels:reduction", "OffByOneTiling", {}, "OOB_WRITE"),
    ("kernels:trisolve", "UnrollDropsIterations", {}, "MISMATCH"),
    ("kernels:two_phase", "RedundantCopyRemoval", {}, "MISMATCH"),
    ("kernels:column_window", "OffloadCopiesWholeArray", {}, "MISMATCH"),
    ("kernels:elementwise_chain", "PrivateCopyWithoutValues", {}, "MISMATCH"),
    ("generated:7+map_nest+temp", "StrideCountFloors", {}, "MISMATCH"),
]


def first_instances(program: str, spec: str, settings=None, count: int = 2) -> str:
    """The first instances of ``spec`` in a kernel (every instance elsewhere)."""
    if not program.startswith("kernels:"):
        return ""
    _, insts = instances_of(program.split(":")[1], spec, settings or None)
    return ",".join(i.id for i in insts[:count])


def replays(finding: Path) -> bool:
    proc = subprocess.run([sys.executable, "repro.py"], cwd=finding, capture_output=True, text=True, timeout=300)
    return proc.returncode == 1


@pytest.mark.fuzz
@pytest.mark.parametrize("program,name,settings,outcome", PLANTED, ids=[p[1] for p in PLANTED])
def test_planted_bug_is_disproven_before_any_fuzzing(tmp_path, program, name, settings, outcome):
    spec = f"harnessgen.zoo.planted:{name}"
    wanted = first_instances(program, spec, settings)
    sets = [arg for k, v in settings.items() for arg in ("--set", f"{k}={json.dumps(v)}")]
    proc = run_cli(["fuzz", "--program", program, "--transformation", spec, "--prove", "only", "--time", "5",
                    "--no-audit", "--no-reference-check", *sets, *(["--instance", wanted] if wanted else [])],
                   tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    entries = summary_of(tmp_path)["instances"]
    disproven = [e for e in entries if e["proof"].get("verdict") == "DISPROVEN"]
    assert disproven, [(e["id"], e["verdict"], e["proof"].get("reason")) for e in entries]
    for entry in disproven:
        assert entry["verdict"] == outcome, entry
        finding = entry["findings"][0]
        assert finding["kind"] == "proof"                     # the counterexample, replayed: no fuzzing ran
        assert entry["execs"] <= 40 and entry["proof"]["counterexamples"]
    assert not [e for e in entries if e["proof"].get("verdict") == "PROVEN" and e["findings"]]
    assert replays(Path(disproven[0]["findings"][0]["path"]))


CORRECT = [
    ("kernels:elementwise_chain", "harnessgen.zoo.correct:TilingWithRemainder"),
    ("kernels:jacobi2d", "harnessgen.zoo.correct:TileCountCeils"),
    ("kernels:sigmoid", "MapFusion"),
    ("kernels:transpose_scale", "MapInterchange"),
    ("kernels:transpose_scale", "InLocalStorage"),
]


@pytest.mark.fuzz
@pytest.mark.parametrize("program,spec", CORRECT, ids=[c[1].split(":")[-1] for c in CORRECT])
def test_correct_transformation_is_proven_and_needs_no_fuzzing(tmp_path, program, spec):
    wanted = first_instances(program, spec)
    proc = run_cli(["fuzz", "--program", program, "--transformation", spec, "--time", "30", "--instance", wanted,
                    "--no-reference-check"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    entries = summary_of(tmp_path)["instances"]
    assert entries
    for entry in entries:
        assert entry["proof"]["verdict"] == "PROVEN" and entry["proof"]["arithmetic"].startswith("IEEE"), entry
        assert entry["verdict"] == "PASS" and "not fuzzed" in entry["message"]
        assert entry["execs"] <= 40                  # the seeds only: afl-fuzz never started
        assert entry["audit"].get("verdict") in ("AGREES", "SKIPPED"), entry["audit"]


# transformations fuzzing finds wrong: planted ones, and DaCe's MapFission, whose post allocates
# a transient of negative extent where a column window is empty (POST_CRASH); None: the first two
FOUND_WRONG = [
    ("elementwise_chain", "harnessgen.zoo.planted:TilingWithoutRemainder", None),
    ("trisolve", "harnessgen.zoo.planted:UnrollDropsIterations", None),
    ("two_phase", "harnessgen.zoo.planted:RedundantCopyRemoval", None),
    ("elementwise_chain", "harnessgen.zoo.planted:PrivateCopyWithoutValues", None),
    ("sigmoid", "harnessgen.zoo.planted:FastExpBand", None),
    ("column_window", "MapFission", "MapFission-451dc5ca"),
]


@pytest.mark.fuzz
@pytest.mark.parametrize("program,spec,wanted", FOUND_WRONG, ids=[c[1].split(":")[-1] for c in FOUND_WRONG])
def test_no_instance_fuzzing_finds_wrong_is_proven(tmp_path, program, spec, wanted):
    """Fuzzed with the prover off; then every instance with a finding is proved on its own
    build: none may come out PROVEN."""
    wanted = wanted or first_instances(f"kernels:{program}", spec)
    proc = run_cli(["fuzz", "--program", f"kernels:{program}", "--transformation", spec, "--prove", "off",
                    "--time", "20", "--until-crash", "--instance", wanted, "--no-reference-check"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    entries = summary_of(tmp_path)["instances"]
    wrong = [e for e in entries if e["findings"] or e["audit"].get("verdict") == "CUTOUT_MISSED"]
    assert wrong, [(e["id"], e["verdict"]) for e in entries]
    for entry in wrong:
        build = Path(entry["build_dir"])
        proof = prove_build(build, InputLayout.load(build / "layout.json"))
        assert proof.verdict != "PROVEN", (entry["id"], entry["verdict"], proof.summary())
        json.dumps(proof.to_json())            # it serializes as the summary stores it
