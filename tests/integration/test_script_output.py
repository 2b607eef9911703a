"""Output a script can read: ``harnessgen instances --json`` prints only JSON on standard output
(DaCe's warnings and prints, even those written straight to the file descriptor, go to standard
error), and a run's opening line never says "0 instance(s) of all" while its transformations are
still being enumerated."""
import json

from harnessgen.cli.render import opening_line
from tests.conftest import PROGRAMS, run_cli


def test_instances_json_is_only_json_on_stdout(tmp_path):
    proc = run_cli(["instances", "--program", f"{PROGRAMS / 'gather.py'}:gather", "--transformation",
                    f"{PROGRAMS / 'noisy.py'}:NoisyMapTiling", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout)
    assert rows and all(r["transformation"].endswith(":NoisyMapTiling") for r in rows)
    assert "NoisyMapTiling: checking a match" in proc.stderr
    assert "straight to file descriptor 1" in proc.stderr


def test_the_opening_line_counts_what_is_still_being_enumerated():
    line = opening_line(0, ["MapFusion", "LoopToMap"], "all", "npbench")
    assert "0 instance(s) of all" not in line
    assert line == ("0 instance(s) planned so far in npbench; 2 transformation(s) of all still being enumerated "
                    "beside the run")
    assert opening_line(12, [], "all", "npbench") == "12 instance(s) of all in npbench"
