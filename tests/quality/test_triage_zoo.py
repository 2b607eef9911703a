"""Every planted bug: many raw crashes, exactly one finding, minimal, and a reproducer
that travels alone and goes quiet once post is replaced by pre."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harnessgen import expr as ex
from harnessgen.layout import InputLayout
from harnessgen.zoo import PLANTED
from tests.conftest import instances_of, run_cli, summary_of


def run_repro(folder: Path, post_from_pre: bool = False) -> subprocess.CompletedProcess:
    alone = folder.parent / f"alone-{folder.name}-{int(post_from_pre)}"
    alone.mkdir()
    shutil.copy(folder / "repro.py", alone / "repro.py")
    if post_from_pre:
        shutil.copy(folder / "pre.sdfg", alone / "post.sdfg")
    return subprocess.run([sys.executable, "repro.py"], cwd=alone, capture_output=True, text=True, timeout=600)


@pytest.mark.fuzz
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_bug_becomes_exactly_one_minimal_reproducer(tmp_path, name):
    program = PLANTED[name]
    _, insts = instances_of(program, f"harnessgen.zoo.planted:{name}")
    proc = run_cli(["fuzz", "--program", f"kernels:{program}", "--transformation", f"harnessgen.zoo.planted:{name}",
                    "--instance", insts[0].id, "--time", "20"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    [entry] = summary_of(tmp_path)["instances"]
    assert len(entry["findings"]) == 1, entry["findings"]               # one bug, one finding
    assert entry["verdict"] == entry["findings"][0]["outcome"]
    folder = Path(entry["findings"][0]["path"])
    meta = json.loads((folder / "meta.json").read_text())
    assert len(meta["raw_crashes"]) == entry["triage"]["raw"] >= 1
    assert meta["minimized_bytes"] <= meta["raw_bytes"]
    # the smallest failing sizes: for every planted bug these are the lower bounds of the sizes
    layout = InputLayout.load(Path(entry["build_dir"]) / "layout.json")
    env = {}
    for slot in layout.symbols:
        env[slot.name] = meta["symbols"][slot.name]
        assert meta["symbols"][slot.name] == ex.evaluate(slot.lo, env), (slot.name, meta["symbols"])
    assert (folder / "README.md").read_text().count("## ") == 3
    failing = run_repro(folder)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    fixed = run_repro(folder, post_from_pre=True)
    assert fixed.returncode == 0 and "agree" in fixed.stdout, fixed.stdout + fixed.stderr
