"""Who judges an equal pair, and which verdicts another instance may take (core/shared_pairs.py)."""
from harnessgen.core import shared_pairs


def test_the_first_claim_wins_and_later_ones_learn_its_owner(tmp_path):
    assert shared_pairs.claim(tmp_path, "k1", "A") == "A"
    assert shared_pairs.claim(tmp_path, "k1", "B") == "A"
    assert shared_pairs.claim(tmp_path, "k1", "A") == "A"        # the owner again (a resumed run)
    assert shared_pairs.claim(tmp_path, "k2", "B") == "B"


def test_only_a_verdict_of_the_pair_alone_is_shared():
    judged = {"id": "A", "verdict": "MISMATCH", "pair_key": "k", "audit": {"verdict": "SKIPPED"}}
    assert shared_pairs.shareable(judged)
    assert shared_pairs.shareable({**judged, "audit": {}, "params": {"values": {"x": 1}, "match": "M"}})
    # what rests on the instance's place, or on the run
    assert not shared_pairs.shareable({**judged, "audit": {"verdict": "SAME", "classification": "latent"}})
    assert not shared_pairs.shareable({**judged, "audit": {"verdict": "SKIPPED", "grown": [1]}})
    assert not shared_pairs.shareable({**judged, "params": {"values": {"x": 1}, "simplest": {"x": 0}}})
    assert not shared_pairs.shareable({**judged, "pair_key": ""})            # judged in a larger cutout
    assert not shared_pairs.shareable({**judged, "verdict": "ERROR"})
    assert not shared_pairs.shareable({**judged, "same_pair_as": "Z"})


def test_a_follower_takes_the_verdict_and_says_whose_it_is():
    follower = {"id": "B", "verdict": shared_pairs.PENDING, "same_pair_as": "A", "wall_seconds": 0.4,
                "phases": {"cutout": 0.3}, "findings": [], "crashes": []}
    judged = {"id": "A", "verdict": "MISMATCH", "message": "MISMATCH in B[0]", "pair_key": "k",
              "findings": [{"path": "crashes/x"}], "crashes": ["crashes/x"], "evidence": {"kind": "FUZZED"}}
    out = shared_pairs.shared_result(follower, judged)
    assert out["verdict"] == "MISMATCH" and out["same_pair_as"] == "A" and out["evidence"] == {"kind": "FUZZED"}
    assert out["message"] == "same pair as A (equal up to names): its verdict MISMATCH: MISMATCH in B[0]"
    assert out["findings"] == [] and out["crashes"] == [] and out["phases"] == {"cutout": 0.3}
    assert not shared_pairs.is_pending(out)


def test_what_preparing_an_instance_gave_is_kept_beside_the_claims(tmp_path):
    """A static finding's parameter simplification reads a simpler variant's outcome the run
    has seen instead of preparing it again; a claim of a pair key never meets it."""
    assert shared_pairs.prepared(tmp_path, "X-1234abcd") is None
    shared_pairs.record_prepared(tmp_path, "X-1234abcd", "FAILED_TO_APPLY")
    shared_pairs.record_prepared(tmp_path, "X-1234abcd-p42", shared_pairs.BUILT)
    assert shared_pairs.prepared(tmp_path, "X-1234abcd") == "FAILED_TO_APPLY"
    assert shared_pairs.prepared(tmp_path, "X-1234abcd-p42") == "BUILT"
    assert shared_pairs.claim(tmp_path, "X-1234abcd", "Y") == "Y"
