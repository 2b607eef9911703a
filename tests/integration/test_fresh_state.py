"""Every run starts from the same state (templates/fresh_state.h, -ftrivial-auto-var-init):
a transient read before it is written is the same MISMATCH on every run, never FLAKY."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harnessgen.harness.build import SIDE_FLAGS
from harnessgen.harness.compiler import CXX, CXXFLAGS
from tests.conftest import instances_of, run_cli, summary_of

READS_FRESH_MEMORY = r"""
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
int main() {
    for (int round = 0; round < 3; ++round) {
        double *earlier = new double[64];
        for (int i = 0; i < 64; ++i) earlier[i] = 1.5 * i;     // what a previous run leaves behind
        delete[] earlier;
        double *fresh = new double[64];                          // most likely the same block
        long long *counts = new long long[8];
        double local;
        asm volatile("" : "+m"(local));                          // read before any write
        bool ok = std::isnan(fresh[7]) && counts[3] == -1 && std::isnan(local);
        delete[] fresh;
        delete[] counts;
        if (!ok) { std::printf("stale\n"); return 1; }
    }
    std::printf("fresh\n");
    return 0;
}
"""


def test_every_allocation_and_local_starts_from_the_same_bytes(tmp_path):
    source = tmp_path / "fresh.cpp"
    source.write_text(READS_FRESH_MEMORY)
    binary = tmp_path / "fresh"
    subprocess.run([CXX, *CXXFLAGS, *SIDE_FLAGS, str(source), "-o", str(binary)], check=True)
    assert subprocess.run([str(binary)], capture_output=True, text=True).stdout.strip() == "fresh"


PLANTED = "harnessgen.zoo.planted:PrivateCopyWithoutValues"


@pytest.mark.fuzz
def test_a_transient_read_before_it_is_written_is_a_mismatch_on_every_run(tmp_path):
    _, insts = instances_of("elementwise_chain", PLANTED)
    inst = insts[0]
    proc = run_cli(["fuzz", "--program", "kernels:elementwise_chain", "--transformation", PLANTED,
                    "--instance", inst.id, "--time", "20"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert entry["verdict"] == "MISMATCH", entry
    assert entry["triage"]["flaky"] == 0, entry["triage"]
    finding = Path(entry["findings"][0]["path"])
    assert json.loads((finding / "meta.json").read_text())["outcome"] == "MISMATCH"
    for _ in range(3):
        replay = subprocess.run([sys.executable, "repro.py"], cwd=finding, capture_output=True, text=True, timeout=600)
        assert replay.returncode == 1 and "MISMATCH" in replay.stdout, replay.stdout + replay.stderr
