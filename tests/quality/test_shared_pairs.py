"""Equivalent pairs are judged once: an instance whose cutout pair equals a judged one's up to
names takes its verdict ("same pair as <id>"). Both ways: the pairs merged really are equal
(judged each alone, the planted bug is found in every one of them), and a pair that differs in
one constant is judged itself."""
import pytest

from tests.conftest import run_cli, summary_of

PROGRAM = "tests/programs/twins.py:twins"
PLANTED = "harnessgen.zoo.planted:TilingWithoutRemainder"


def judged(tmp_path, *flags):
    # --no-audit: a whole-program audit makes a verdict its place's, never shared (tested below)
    proc = run_cli(["fuzz", "--program", PROGRAM, "--transformation", PLANTED, "--time", "10", "--no-audit",
                    "--jobs", "1", *flags], tmp_path)
    assert proc.returncode == 0, proc.stderr
    return summary_of(tmp_path)


@pytest.mark.fuzz
def test_equal_pairs_take_one_verdict_and_each_alone_shows_the_bug(tmp_path):
    alone = judged(tmp_path / "alone", "--no-share-pairs")
    assert {e["id"]: e["verdict"] for e in alone["instances"]} == dict.fromkeys(
        (e["id"] for e in alone["instances"]), "MISMATCH")
    assert len(alone["instances"]) == 3 and alone["same_pair"] == 0
    assert all(not e["pair_key"] for e in alone["instances"])       # nothing claimed: no key computed

    shared = judged(tmp_path / "shared")
    by_id = {e["id"]: e for e in shared["instances"]}
    assert {i: e["verdict"] for i, e in by_id.items()} == {e["id"]: e["verdict"] for e in alone["instances"]}
    followers = [e for e in by_id.values() if e["same_pair_as"]]
    assert len(followers) == 1 and shared["distinct_pairs"] == 2 and shared["same_pair"] == 1
    follower = followers[0]
    representative = by_id[follower["same_pair_as"]]
    assert follower["pair_key"] == representative["pair_key"] != ""
    assert not follower["findings"] and representative["findings"]
    assert f"same pair as {representative['id']}" in follower["message"]
    # the map that scales by 3.0 is another pair: judged itself, with its own finding
    [other] = [e for e in by_id.values() if e["id"] not in (follower["id"], representative["id"])]
    assert other["pair_key"] != representative["pair_key"] and other["findings"]
    # the bug counts all three instances, one of them as an equal pair
    [bug] = shared["distinct_bugs"]
    assert bug["kind"] == "MISMATCH" and bug["instances"] == 3, bug


@pytest.mark.fuzz
def test_an_audited_verdict_is_never_shared(tmp_path):
    """Where the whole-program audit runs (a small program), each instance's verdict rests on
    its own place in the program: every instance is judged itself."""
    proc = run_cli(["fuzz", "--program", PROGRAM, "--transformation", PLANTED, "--time", "5", "--jobs", "1"],
                   tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = summary_of(tmp_path)
    assert summary["same_pair"] == 0 and summary["distinct_pairs"] == 3
    assert all(e["audit"].get("verdict") not in (None, "SKIPPED") for e in summary["instances"])
