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
