"""``confirm.run`` runs a bug's confirm.py inside its own folder, whatever path names the folder."""
import os

from harnessgen.checks import confirm


def test_a_confirm_script_named_by_a_relative_folder_runs(tmp_path, monkeypatch):
    """A run directory given relatively (``make fuzz`` passes ``--out .harnessgen/runs/...``) once
    made the script's path relative to its own folder twice: exit 2, "can't open file"."""
    folder = tmp_path / "runs" / "bug" / "confirm"
    folder.mkdir(parents=True)
    (folder / "confirm.py").write_text("import sys\nprint('differs')\nsys.exit(1)\n")
    monkeypatch.chdir(tmp_path)
    result = confirm.run(folder.relative_to(tmp_path))
    assert os.getcwd() == str(tmp_path)
    assert result.verdict == confirm.CONFIRMED, result


def test_a_confirmation_that_could_not_judge_is_tried_again(tmp_path, monkeypatch):
    """A kept confirmation is reused for the same content, but one whose script could not judge
    (exit 2: harnessgen's failure, no verdict on the bug) runs again."""
    import types

    from harnessgen.bugs import analysis
    from harnessgen.core.files import write_json

    runs = []
    monkeypatch.setattr(analysis, "reduction_order", lambda bugs: list(bugs))
    monkeypatch.setattr(confirm, "kept", lambda path: tmp_path / "source")
    monkeypatch.setattr(confirm, "content_key", lambda folder: "same")
    monkeypatch.setattr(confirm, "copy", lambda source, target: None)
    monkeypatch.setattr(confirm, "run", lambda target: runs.append(target) or confirm.Confirmation(confirm.CONFIRMED,
                                                                                                  "shows", 1, 0.1))
    bug = types.SimpleNamespace(id="b", findings=[types.SimpleNamespace(path=tmp_path, rank=0)], confirmation=None,
                                signature=types.SimpleNamespace(transformation="T", kind="MISMATCH"))
    target = tmp_path / analysis.BUGS_DIR / "b" / confirm.CONFIRM_DIR
    write_json(target / "confirmation.json", {"key": "same", "confirmation": confirm.Confirmation(
        confirm.CUTOUT_ONLY, "confirm.py could not judge (exit 2)", 2, 0.1).to_json()})
    analysis.confirm_bugs([bug], tmp_path, None)
    assert len(runs) == 1 and bug.confirmation["verdict"] == confirm.CONFIRMED
    analysis.confirm_bugs([bug], tmp_path, None)          # now kept: not run again
    assert len(runs) == 1 and bug.confirmation["verdict"] == confirm.CONFIRMED


def _bug(tmp_path, audit=None):
    import types

    from harnessgen.core.files import write_json

    folder = tmp_path / "finding"
    write_json(folder / "meta.json", {"audit": audit} if audit else {})
    finding = types.SimpleNamespace(path=folder, rank=0)
    return types.SimpleNamespace(id="b", findings=[finding], representative=finding, confirmation=None,
                                 signature=types.SimpleNamespace(transformation="T", kind="MISMATCH"))


def test_a_bug_whose_whole_program_was_not_judged_is_never_cutout_only(tmp_path, monkeypatch):
    """CUTOUT ONLY says the whole program was judged and did not show the bug: a maintainer
    reads it as "not DaCe's". A bug whose audit did not run, or whose turn came after the
    analysis's time, is NOT JUDGED; one the audit judged latent is CUTOUT ONLY."""
    from harnessgen.bugs import analysis

    monkeypatch.setattr(analysis, "reduction_order", lambda bugs: list(bugs))
    deferred = _bug(tmp_path, {"verdict": "DEFERRED", "reason": "after every match"})
    analysis.confirm_bugs([deferred], tmp_path, None)
    assert deferred.confirmation["verdict"] == confirm.NOT_JUDGED, deferred.confirmation
    latent = _bug(tmp_path, {"classification": "latent", "whole_program": {"inputs": 3}})
    analysis.confirm_bugs([latent], tmp_path, None)
    assert latent.confirmation["verdict"] == confirm.CUTOUT_ONLY
    monkeypatch.setattr(confirm, "kept", lambda path: tmp_path / "source")
    monkeypatch.setattr(confirm, "content_key", lambda folder: "key")
    late = _bug(tmp_path)
    analysis.confirm_bugs([late], tmp_path, deadline=0.0)
    assert late.confirmation["verdict"] == confirm.NOT_JUDGED and "harnessgen bugs" in late.confirmation["reason"]


def test_a_program_is_saved_once_for_every_finding_confirm_keeps_of_it(tmp_path, monkeypatch):
    """Saving a whole program and reading it back took seconds per finding on CLOUDSC: each
    finding's confirm folder gets the program saved once per identity, and the script runs."""
    import dace

    from tests.conftest import program_sdfg

    program = program_sdfg("elementwise_chain")
    saves = []
    real_save = dace.SDFG.save
    monkeypatch.setattr(dace.SDFG, "save", lambda self, *a, **k: (saves.append(a[0]), real_save(self, *a, **k))[1])
    kept = confirm.saved_program_dir(tmp_path / "work", "elementwise_chain-simplified")
    folders = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        folders.append(confirm.write(tmp_path / name, program, {"transformation": "MapTiling"}, "MapTiling",
                                     saved_programs=kept))
    assert len(saves) == 1
    for folder in folders:
        assert dace.SDFG.from_file(str(folder / "program.sdfgz")).name == program.name
        assert (folder / "confirm.py").is_file() and (folder / "transformation.json").is_file()
    assert confirm.saved_program_dir(tmp_path / "work", "") is None
    assert confirm.saved_program_dir(tmp_path / "work", "other") != kept
