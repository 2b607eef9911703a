"""A user's scalars never become a finding of harnessgen's own making. Every built-in that
applies to a program whose control flow reads scalars by name (``tests/programs/
scalar_reads.py``: a read-only scalar in a branch condition, a scalar loop bound, a scalar
written and then tested) is judged: nothing is BLOCKED, nothing is filed against DaCe's code
generator, no INVALID_SDFG is an interface check of harnessgen's, no cutout fails to build,
and every finding shows in the whole program (DaCe made it). On DaCe 2.0 these conditions
and bounds live in ``ConditionalBlock``s and ``LoopRegion``s."""
from pathlib import Path

import dace
import pytest

from tests.conftest import PROGRAMS, run_cli, summary_of

OURS = ("did not compile", "does not build", "changed the cutout's interface", "changed the program's interface")


@pytest.mark.parametrize("name", ["clip_below", "smooth_steps", "flagged", "counted"])
def test_every_builtin_on_a_users_scalars_is_judged_and_every_finding_is_the_programs(tmp_path, name):
    proc = run_cli(["fuzz", "--program", f"{PROGRAMS / 'scalar_reads.py'}:{name}", "--transformation", "all",
                    "--all", "--time", "1", "--params", "default", "--no-reference-check", "--audit"], tmp_path)
    if name == "counted" and "Cannot create symbol" in proc.stdout + proc.stderr:
        pytest.skip(f"DaCe {dace.__version__}'s frontend cannot parse {name} (a scalar argument assigned in a "
                    "while loop)")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    entries = summary_of(tmp_path)["instances"]
    assert len(entries) >= 5, [e["id"] for e in entries]
    told = [(e["id"], e["verdict"], e["message"][:300]) for e in entries]
    assert not [e for e in entries if e["verdict"] in ("BLOCKED", "ERROR", "CUTOUT_MISSED")], told
    assert not [e for e in entries if any(text in e["message"] for text in OURS)], told
    assert not [e for e in entries if e["verdict"] == "UNSUPPORTED"], told
    assert not (tmp_path / "crashes" / name / "dace-codegen").exists(), told
    # a finding stands where the same change makes the whole program differ or fail alike
    for entry in entries:
        if entry["verdict"] != "PASS":
            assert entry["audit"].get("classification") == "observable", (entry["id"], entry["verdict"],
                                                                         entry["audit"])
            assert entry["findings"] or entry["crashes"], entry["id"]
            assert all(Path(path).exists() for path in entry["crashes"]), entry["crashes"]
