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
