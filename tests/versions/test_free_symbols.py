"""A symbol a transformation leaves free in the program is a finding, never a free input.

The program after the change must be callable with the program's own arguments. A
transformation that names a symbol where nothing defines it (DaCe 1.0.2's ``BufferTiling``:
its tile symbol outside the tile's scope) gives a program that takes an argument no caller can
give: harnessgen must file it (INVALID_SDFG, confirmed on the whole program, with a reproducer
that replays), and must not decode the symbol as an input that lets post agree, nor prove the
pair over it. A cutout whose post reads a symbol the program defines outside the cutout is grown
until the symbol has the program's value, and a correct transformation stays silent."""
import subprocess
import sys
from pathlib import Path

import dace
import pytest

from tests.conftest import PROGRAMS, run_cli, summary_of

PROGRAM = f"{PROGRAMS / 'tile_pairs.py'}:square_pairs"
TILE_LEFT_FREE = "takes symbol argument(s) ['tile_i']"
ON_102 = dace.__version__.startswith("1.")


def _fuzz(tmp_path, program: str, transformation: str):
    proc = run_cli(["fuzz", "--program", program, "--transformation", transformation, "--all", "--time", "2",
                    "--params", "default", "--no-reference-check"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return summary_of(tmp_path)["instances"]


def _assert_filed_and_replays(entries, left_free: str = TILE_LEFT_FREE, symbol: str = "tile_i"):
    told = [(e["id"], e["verdict"], e["message"][:300]) for e in entries]
    assert entries and all(e["verdict"] == "INVALID_SDFG" for e in entries), told
    for entry in entries:
        assert left_free in entry["message"] and "changed the program's interface" in entry["message"], told
        assert not any("decoded as inputs" in note for note in entry.get("notes", [])), entry["notes"]
        assert entry["audit"].get("classification") == "observable", entry["audit"]
        [folder] = entry["crashes"]
        replay = subprocess.run([sys.executable, str(Path(folder) / "repro.py")], capture_output=True, text=True)
        assert replay.returncode == 1, replay.stdout + replay.stderr
        assert "INVALID_SDFG" in replay.stdout and symbol in replay.stdout, replay.stdout


def _assert_passes(entries):
    told = [(e["id"], e["verdict"], e["message"][:300], e.get("notes")) for e in entries]
    assert entries and all(e["verdict"] == "PASS" for e in entries), told
    assert not [e for e in entries if any("decoded as inputs" in n for n in e.get("notes", []))], told


def test_an_unrolled_loop_variable_left_in_an_inner_init_is_filed_with_a_reproducer(tmp_path):
    """DaCe's LoopUnroll with its March 2026 fix reverted (``UnrollLeavesInnerInit``): the inner
    loop's init reads ``jn`` after the outer loop is gone. DaCe 2.0's own LoopUnroll is right."""
    if ON_102:
        pytest.skip("loops as LoopRegions only: DaCe 1.0.2 has none, UnrollLeavesInnerInit matches nothing there")
    program = f"{PROGRAMS / 'tile_pairs.py'}:triangle_updates"
    entries = _fuzz(tmp_path, program, "harnessgen.zoo.planted:UnrollLeavesInnerInit")
    _assert_filed_and_replays(entries, "takes symbol argument(s) ['jn']", "jn")
    _assert_passes(_fuzz(tmp_path / "right", program, "LoopUnroll"))


def test_buffer_tiling_is_judged_by_the_program_it_leaves(tmp_path):
    """DaCe 1.0.2's own BufferTiling leaves ``tile_i`` free here (a real bug: DaCe's compile of
    the changed program fails); DaCe 2.0's does not, and its pair is proven equal."""
    entries = _fuzz(tmp_path, PROGRAM, "BufferTiling")
    if ON_102:
        _assert_filed_and_replays(entries)
    else:
        _assert_passes(entries)


def test_a_symbol_the_program_defines_is_never_a_finding(tmp_path):
    """The correct strip-mining, on a map inside a loop whose variable its range reads: whatever
    cutout judges it, the loop variable has the program's value and nothing is filed."""
    _assert_passes(_fuzz(tmp_path, f"{PROGRAMS / 'tile_pairs.py'}:shifted_sums", "StripMining,LoopUnroll"))


def test_a_local_buffer_shaped_by_a_map_parameter_is_judged_by_the_program_it_leaves(tmp_path):
    """DaCe's OutLocalStorage on ``strided_copy`` shapes a transient by the outer map's parameter.
    On DaCe 2.0 the program after it takes ``i`` as an argument, and DaCe's own call of it fails
    (``Missing program argument "i"``): filed as that, never as a MISMATCH on a value of ``i``
    harnessgen chose. DaCe 1.0.2 counts ``i`` as defined by the map (no new argument), and the
    program it builds writes B wrongly: a finding of the run itself there."""
    entries = _fuzz(tmp_path, f"{PROGRAMS / 'strided_copy.py'}:strided_copy", "OutLocalStorage")
    if not ON_102:
        _assert_filed_and_replays(entries, "takes symbol argument(s) ['i']", "'i'")
        return
    told = [(e["id"], e["verdict"], e["message"][:300]) for e in entries]
    assert entries and all(e["verdict"] in ("MISMATCH", "OOB_WRITE") for e in entries), told
    assert not [e for e in entries if "symbol argument" in e["message"]], told
