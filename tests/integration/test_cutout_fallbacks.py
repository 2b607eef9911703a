"""Where the smallest cutout cannot judge a match: DaCe's own cutout raising, and a static
verdict the cutout alone shows. Both grow to a larger cutout and are judged there."""
import json

import pytest

from harnessgen import subjects
from harnessgen.plan.params import ParamOptions
from tests.conftest import PROGRAMS, run_cli, summary_of


# DaCe 1.0.2's SDFGCutout raising on LoopLifting's matches; 2.0 has no LoopLifting match in prefix_sum
@pytest.mark.dace_102
def test_a_cutout_dace_cannot_make_grows_and_is_judged():
    """DaCe 1.0.2's SDFGCutout raises KeyError on LoopLifting's matches (a pattern node it cannot
    translate): the whole program holds the match and judges it instead of UNSUPPORTED."""
    subject = subjects.load("kernels:prefix_sum")
    change = subject.change("LoopLifting")
    pairs = [change.extract(subject.program_of(inst), inst, 0)
             for inst in subject.instances("LoopLifting", None, ParamOptions("default"))]
    grown = [p for p in pairs if p.grown_for.startswith("DaCe's own cutout failed (DaCe could not cut out")]
    assert grown, [p.grown_for for p in pairs]
    for pair in grown:
        assert "KeyError" in pair.grown_for and "the whole" in pair.grown_for
        # judged there (1.0.2's LoopLifting then fails on the whole program too: a verdict, not UNSUPPORTED)
        assert pair.ok or pair.verdict.name in ("FAILED_TO_APPLY", "INVALID_SDFG"), pair.error


@pytest.mark.parametrize("bound", [[], ["--budget", "600"]], ids=["unbounded", "bounded"])
def test_a_static_verdict_of_the_cutout_alone_is_not_dace_s_and_the_wrong_result_is_found(tmp_path, bound):
    """The planted transformation needs the state after its tasklet's: it raises in a one-state
    cutout (FAILED_TO_APPLY there) but applies to the whole program, where it negates a value.
    Where no state follows the tasklet's in the whole program either (on DaCe 2.0, the loop's
    body is one state inside its LoopRegion), it raises there too: FAILED_TO_APPLY, the
    transformation's own verdict. A bounded run asks the whole program after the matches'
    verdicts (a deferred audit), to the same end."""
    program = PROGRAMS / "scaled.py"
    proc = run_cli(["fuzz", "--program", f"{program}:scaled", "--transformation",
                    "harnessgen.zoo.planted:NegateBeforeNextState", "--time", "3", *bound], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = summary_of(tmp_path)
    entries = summary["instances"]
    wrong = [e for e in entries if e["verdict"] == "MISMATCH"]
    assert wrong, [(e["id"], e["verdict"], e["message"]) for e in entries]
    for entry in wrong:
        assert entry["audit"]["classification"] == "cutout-only" and entry["audit"]["grown"]
        assert entry["message"].startswith("FAILED_TO_APPLY in the cutout only")
        assert all(f["observable"] for f in entry["findings"])
        assert all("failed_to_apply" not in path for path in entry["crashes"])
    for entry in entries:
        if entry["verdict"] != "MISMATCH":
            assert entry["verdict"] == "FAILED_TO_APPLY" and "no state follows" in entry["message"], entry
            assert not entry["audit"] or entry["audit"]["classification"] != "cutout-only", entry
    assert {b["kind"] for b in summary["distinct_bugs"]} == {e["verdict"] for e in entries}
    for entry in entries:      # the whole program asked after the matches' verdicts in a bounded run only
        phases = list(json.loads((tmp_path / "out" / "results" / f"{entry['id']}.json").read_text())["phases"])
        assert (phases.index("whole_program_static") > phases.index("bisect")) == bool(bound), phases
