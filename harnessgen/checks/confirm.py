"""Whether DaCe alone shows a finding on the whole program: ``confirm.py``, a script a DaCe
maintainer runs with DaCe and NumPy only.

Where the whole program shows what a cutout found (the audit's difference, or a static verdict
the whole program fails alike), the finding keeps what that script needs beside it
(``<finding>/confirm/``): the program as DaCe made it (``program.sdfgz``), the transformation
at its place in the program (``transformation.json``), the whole program's inputs on which it
differed (``inputs.npz``, none for a static verdict) and ``confirm.py``. The bug analysis runs
the script (``run``): exit 1 is CONFIRMED, DaCe alone shows the bug; anything else leaves the
bug CUTOUT ONLY, with the reason.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

from .. import __version__
from ..core.data import template_environment
from ..core.files import write_atomic, write_json
from ..core.runtime import Tolerance
from ..cutout import ordering

CONFIRM_DIR = "confirm"
CONFIRMED, CUTOUT_ONLY = "CONFIRMED", "CUTOUT ONLY"
# no verdict on the bug yet: the whole program was not judged (no time left, a script that could
# not judge). Never CUTOUT ONLY, which says the whole program was judged and did not show it: a
# maintainer reads that as "not DaCe's", and most such bugs are DaCe's
NOT_JUDGED = "NOT JUDGED"
# how long one confirmation may take (two compilations of the whole program and two runs)
CONFIRM_TIMEOUT_S = 600.0


@dataclasses.dataclass
class Confirmation:
    """What running a finding's ``confirm.py`` said."""

    verdict: str                 # CONFIRMED, CUTOUT ONLY or NOT JUDGED
    reason: str                  # the script's last line, or why it did not run
    exit: Optional[int] = None
    seconds: float = 0.0

    def to_json(self) -> Dict:
        return dataclasses.asdict(self)


# how many of the whole program's differing inputs a confirm.py runs (the minimized one first)
CONFIRM_INPUTS = 4


def write(finding: Path, program_sdfg, match: Dict, spec: str, whole: Optional[Path] = None,
          tolerance: Tolerance = Tolerance(), saved_programs: Optional[Path] = None) -> Path:
    """``<finding>/confirm/`` for a finding the whole program shows (``whole``: the whole
    program's own finding folder, whose inputs it differs on; None for a static verdict).
    ``saved_programs``: where this program, saved once, is kept for every finding of it (a
    folder named after the program's identity, ``saved_program_dir``)."""
    import dace

    folder = Path(finding) / CONFIRM_DIR
    tmp = Path(tempfile.mkdtemp(prefix=".confirm.tmp-", dir=finding))
    if saved_programs is None:
        _save_program(program_sdfg, tmp)
    else:
        for saved in _kept_program(program_sdfg, saved_programs):
            _link_or_copy(saved, tmp / saved.name)
    write_json(tmp / "transformation.json", match)
    if whole is not None:
        _keep_inputs(Path(whole), tmp)
    user_file = spec.rpartition(":")[0] if spec.rpartition(":")[0].endswith(".py") else ""
    if user_file:
        shutil.copyfile(user_file, tmp / Path(user_file).name)
    from ..plan.instances import load_transformation

    text = template_environment().get_template("confirm.py.j2").render(
        transformation_module=load_transformation(spec).__module__ if not user_file else Path(user_file).stem,
        transformation=spec.rpartition(":")[2] or spec, program=program_sdfg.name, harnessgen_version=__version__,
        dace_version=dace.__version__, symbols="{}", rtol=tolerance.rtol, atol=tolerance.atol,
        rtol32=tolerance.rtol32, atol32=tolerance.atol32,
        transformation_file=Path(user_file).stem if user_file else "", ordering_literal=ordering.embedded())
    write_atomic(tmp / "confirm.py", text.encode())
    (tmp / "confirm.py").chmod(0o755)
    if folder.exists():
        shutil.rmtree(folder)
    tmp.rename(folder)
    return folder


def saved_program_dir(work_dir: Path, program_key: str) -> Optional[Path]:
    """Where a program whose content is named ``program_key`` is kept as ``confirm.py`` reads
    it, for this harnessgen and this DaCe (None: a program without an identity, saved per
    finding)."""
    from ..dacecompat import dace_identity

    if not program_key:
        return None
    key = hashlib.sha256(f"{__version__}\0{dace_identity()}\0{program_key}".encode()).hexdigest()[:24]
    return Path(work_dir) / "confirm-programs" / key


def _save_program(program_sdfg, folder: Path) -> None:
    """The program as ``confirm.py`` reads it: ``program.sdfgz``, and ``program.pickle`` where
    DaCe's reading back breaks it."""
    program_sdfg.save(str(folder / "program.sdfgz"), compress=True)
    if _reads_back_invalid(folder / "program.sdfgz", program_sdfg):
        (folder / "program.pickle").write_bytes(pickle.dumps(program_sdfg, protocol=pickle.HIGHEST_PROTOCOL))


def _kept_program(program_sdfg, kept: Path) -> List[Path]:
    """``_save_program``'s files, saved into ``kept`` once: CLOUDSC takes seconds to save and
    read back, for each of its findings."""
    if not (kept / "program.sdfgz").is_file():
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".program.tmp-", dir=kept.parent))
        _save_program(program_sdfg, tmp)
        try:
            tmp.rename(kept)           # the first to publish wins; another's copy is dropped
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    return sorted(kept.glob("program.*"))


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:                # another file system
        shutil.copyfile(source, target)


def _reads_back_invalid(saved: Path, program_sdfg) -> bool:
    """Whether the program as saved no longer validates once DaCe reads it back, where the
    program itself does (``copies.json_broke_connectors``'s case)."""
    import dace

    try:
        dace.SDFG.from_file(str(saved)).validate()
        return False
    except Exception:  # noqa: BLE001 -- DaCe's validation raises several kinds
        try:
            program_sdfg.validate()
        except Exception:  # noqa: BLE001
            return False
        return True


def _keep_inputs(whole: Path, into: Path) -> None:
    """The whole program's inputs a finding of it differs on: its minimized input, then the raw
    ones it was found on (shrinking may carry a wrong result into another kind: a division's
    wrong value into an infinity against a NaN, which DaCe's own fast-math build may round
    alike), decoded by its build's layout."""
    import json

    from ..inputs.layout import InputLayout

    if (whole / "inputs.npz").is_file():
        shutil.copyfile(whole / "inputs.npz", into / "inputs-0.npz")
    try:
        meta = json.loads((whole / "meta.json").read_text())
        layout = InputLayout.load(Path(meta["build_dir"]) / "layout.json")
    except (OSError, ValueError, KeyError):
        return
    for number, raw in enumerate(meta.get("raw_crashes", [])[:CONFIRM_INPUTS - 1], 1):
        decoded = layout.decode(Path(raw).read_bytes()) if Path(raw).is_file() else None
        if decoded is not None:
            decoded.to_npz(into / f"inputs-{number}.npz")


def run(folder: Path, timeout_s: float = CONFIRM_TIMEOUT_S) -> Confirmation:
    """Run ``folder/confirm.py`` with the DaCe this process runs: CONFIRMED where it exits 1."""
    script = Path(folder).resolve() / "confirm.py"     # absolute: it runs inside its own folder
    if not script.is_file():
        return Confirmation(CUTOUT_ONLY, "no confirm.py: the whole program did not show the finding")
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=timeout_s,
                              cwd=folder)
    except subprocess.TimeoutExpired:
        return Confirmation(NOT_JUDGED, f"confirm.py did not finish in {timeout_s:g} s", None,
                            round(time.monotonic() - started, 1))
    said = (proc.stdout.strip().splitlines() or proc.stderr.strip().splitlines() or [""])[-1][:500]
    seconds = round(time.monotonic() - started, 1)
    if proc.returncode == 1:
        return Confirmation(CONFIRMED, said, 1, seconds)
    if proc.returncode == 0:
        return Confirmation(CUTOUT_ONLY, f"DaCe alone, on the whole program, does not show it: {said}", 0, seconds)
    return Confirmation(NOT_JUDGED, f"confirm.py could not judge (exit {proc.returncode}): {said}",
                        proc.returncode, seconds)


def content_key(folder: Path) -> str:
    """What a confirmation depends on: the files of ``folder`` and the DaCe that runs it."""
    from ..dacecompat import dace_identity

    digest = hashlib.sha256(dace_identity().encode())
    for path in sorted(p for p in Path(folder).iterdir() if p.is_file() and p.name != "confirmation.json"):
        digest.update(path.name.encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:24]


def copy(source: Path, target: Path) -> None:
    """A finding's confirm folder into a bug's (its files replaced, nothing else kept)."""
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target)


def kept(finding: Path) -> Optional[Path]:
    """The finding's confirm folder, where one was written."""
    folder = Path(finding) / CONFIRM_DIR
    return folder if (folder / "confirm.py").is_file() else None


