"""A planted bug must be found within 60 s, and its crash must replay through cffi."""
import json
from pathlib import Path

import numpy as np
import pytest

from harnessgen.zoo import PLANTED
from tests.conftest import instances_of, run_cli, summary_of

FINDINGS = {"MISMATCH", "OOB_WRITE", "POST_CRASH", "POST_HANG"}
# these two have their own tests, with assertions on threads and alignment
DEDICATED = {"AlignedVectorize", "ParallelizeCarriedLoop"}      # tests/quality/test_races_alignment.py


def replay_cli(crash: Path, tmp: Path):
    proc = run_cli(["replay", str(crash)], tmp)
    return proc.returncode, proc.stdout


@pytest.mark.fuzz
@pytest.mark.parametrize("name", sorted(set(PLANTED) - DEDICATED))
def test_planted_bug_is_found_and_replays(tmp_path, name):
    program, expected = PLANTED[name].program, PLANTED[name].outcome
    # the first match (every planted bug shows there: tests/quality/test_triage_zoo.py); each
    # further one was a whole finding's analysis more, and the same bug
    _, insts = instances_of(program, f"harnessgen.zoo.planted:{name}")
    proc = run_cli(["fuzz", "--program", f"kernels:{program}", "--transformation",
                    f"harnessgen.zoo.planted:{name}", "--instance", insts[0].id, "--time", "60", "--until-crash"],
                   tmp_path)
    assert proc.returncode == 0, proc.stderr
    entries = summary_of(tmp_path)["instances"]
    found = [e for e in entries if e["verdict"] in FINDINGS]
    assert found, [(e["id"], e["verdict"]) for e in entries]
    first = found[0]
    assert first["verdict"] == expected
    assert first["seconds_to_first_finding"] is not None and first["seconds_to_first_finding"] <= 60
    finding = Path(first["findings"][0]["path"])
    code, out = replay_cli(finding, tmp_path)
    assert code == 1, out
    assert expected in out and ("pre=" in out or "wrote outside" in out), out
    meta = json.loads((finding / "meta.json").read_text())
    assert meta["outcome"] == expected
    if expected == "MISMATCH":    # triage says where pre and post first diverge (post aborts on an OOB write)
        assert meta["divergence"] and meta["divergence"]["container"], meta.get("localize_error")


# From one input on which the transformation is still right, AFL++'s own mutations
# must reach the bug: a size that is not a multiple of the tile, an odd trip count,
# a value inside a band 1/32 wide.
PASSING_START = {
    "TilingWithoutRemainder": ("elementwise_chain", {"N": 4}),
    "UnrollDropsIterations": ("trisolve", {"N": 4}),
    "FastExpBand": ("sigmoid", {"N": 4}),
}


@pytest.mark.fuzz
@pytest.mark.parametrize("name", sorted(PASSING_START))
def test_afl_mutations_find_the_bug_from_a_passing_input(tmp_path, name):
    program, symbols = PASSING_START[name]
    _, insts = instances_of(program, f"harnessgen.zoo.planted:{name}")
    inst = insts[0]
    corpus = tmp_path / "corpus" / "kernels" / inst.id
    corpus.mkdir(parents=True)
    # symbols first (little-endian int32 each), then all-zero data: N = 4 is a passing input
    (corpus / "start.bin").write_bytes(np.array([symbols["N"]], dtype="<i4").tobytes() + bytes(4096))
    proc = run_cli(["fuzz", "--program", f"kernels:{program}", "--transformation",
                    f"harnessgen.zoo.planted:{name}", "--instance", inst.id, "--time", "60", "--until-crash",
                    "--seed-mode", "none", "--prove", "off"], tmp_path)    # AFL++ alone: no counterexample
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "MISMATCH", entry
    assert entry["findings"][0]["kind"] == "crash"        # found by afl-fuzz, not by a seed
    assert entry["seconds_to_first_finding"] <= 60
    assert replay_cli(Path(entry["findings"][0]["path"]), tmp_path)[0] == 1
