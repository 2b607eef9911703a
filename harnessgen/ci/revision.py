"""A DaCe revision made runnable: its ``dace/`` package exported from git, the packages it
requires that this environment lacks installed beside it, and the check that it builds a
trivial program at all (a checkout without its submodules builds nothing).

Everything a revision's processes need is in ``Revision.env``: its tree first on
``PYTHONPATH``, then its overlay of requirements, and ``HARNESSGEN_DACE_TREE`` (its ``dace/``
git tree id), which keys every cache of programs, plans and builds: two revisions that share a
version string never share an entry."""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Callable, Dict, List, Optional

from ..core.errors import ConfigError
from ..core.files import write_atomic
from ..core.versions import EXPORTED_REVISION

PACKAGE = "dace"
COMPLETE = ".complete"
BUILDS = ".builds-trivial-program"


@dataclasses.dataclass
class Revision:
    side: str                        # head, base
    commit: str
    tree_id: str                     # the git tree id of its dace/ folder
    root: Path                       # holds dace/
    overlay: Optional[Path] = None   # the requirements this environment lacked, installed for it

    @property
    def env(self) -> Dict[str, str]:
        parts = [str(self.root)] + ([str(self.overlay)] if self.overlay else [])
        inherited = os.environ.get("PYTHONPATH", "")
        return {"PYTHONPATH": os.pathsep.join(parts + ([inherited] if inherited else [])),
                "HARNESSGEN_DACE_TREE": self.tree_id}

    @property
    def name(self) -> str:
        return f"{self.side} {self.commit[:10]}"


# ---------------------------------------------------------------- git
def git(repo: Path, *args: str, binary: bool = False):
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=not binary)
    if proc.returncode != 0:
        err = proc.stderr if not binary else proc.stderr.decode(errors="replace")
        raise ConfigError(f"--dace {repo}: git {' '.join(args)} failed: {err.strip()[:300]}")
    return proc.stdout


def commit_of(repo: Path, rev: str) -> str:
    """The commit ``rev`` names (an error naming the checkout and the revision where it names none)."""
    return git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}").strip()


def prepare(repo: Path, side: str, rev: str, out: Path, python: Path, say=print) -> Revision:
    """The revision ``rev`` of the checkout, exported, with its requirements, checked to build."""
    commit = commit_of(repo, rev)
    tree_id = git(repo, "rev-parse", f"{commit}:{PACKAGE}").strip()
    revision = Revision(side, commit, tree_id, export_tree(repo, commit, out / "trees"))
    revision.overlay = requirements_overlay(repo, revision, python, out / "overlays", say)
    check_builds(revision, python)
    return revision


def export_tree(repo: Path, commit: str, dest: Path) -> Path:
    """The package at ``commit`` under ``dest`` (``dest/<commit>/dace``), made once per commit."""

    def finish(folder: Path) -> None:
        _fill_submodules(repo, folder)
        (folder / EXPORTED_REVISION).write_text(f"revision {commit[:12]} of {repo}\n")

    return export_paths(repo, commit, [PACKAGE], dest, finish)


def export_paths(repo: Path, commit: str, paths: List[str], dest: Path,
                 finish: Optional[Callable[[Path], None]] = None) -> Path:
    """Files and folders of ``commit`` (those of ``paths`` it has) under ``dest/<commit>``, made once;
    ``finish`` completes the folder before it counts as made."""
    folder = dest / commit[:12]
    if (folder / COMPLETE).is_file():
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    present = [p for p in paths if subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{commit}:{p}"],
                                                   capture_output=True).returncode == 0]
    if present:
        archive = git(repo, "archive", "--format=tar", commit, *present, binary=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
    if finish is not None:
        finish(folder)
    (folder / COMPLETE).write_text(commit + "\n")
    return folder


def _fill_submodules(repo: Path, folder: Path) -> None:
    """Folders ``git archive`` leaves empty (submodules: DaCe's ``external/``) from the
    checkout's working tree."""
    for empty in sorted(p for p in (folder / PACKAGE).rglob("*") if p.is_dir() and not any(p.iterdir())):
        source = repo / empty.relative_to(folder)
        if source.is_dir() and any(source.iterdir()):
            shutil.copytree(source, empty, dirs_exist_ok=True)


# ---------------------------------------------------------------- its requirements
def declared_requirements(repo: Path, commit: str) -> List[str]:
    """What the revision's ``pyproject.toml`` (``[project] dependencies``) or ``setup.py``
    (``install_requires``, a literal list) requires."""
    found: List[str] = []
    pyproject = _show(repo, commit, "pyproject.toml")
    if pyproject:
        try:
            found += list(_toml(pyproject).get("project", {}).get("dependencies", []) or [])
        except ValueError:       # TOMLDecodeError is one
            pass
    setup = _show(repo, commit, "setup.py")
    if setup and not found:
        found += _install_requires(setup)
    return found


def _toml(text: str) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the reader pip carries
        from pip._vendor import tomli as tomllib
    return tomllib.loads(text)


def _show(repo: Path, commit: str, path: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else ""


def _install_requires(setup_py: str) -> List[str]:
    try:
        tree = ast.parse(setup_py)
    except SyntaxError:
        return []
    # names a module assigns a literal list to (DaCe's ``cmake_requires``), which the value joins
    lists = {target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
             for target in node.targets if isinstance(target, ast.Name) and isinstance(node.value, ast.List)}
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "install_requires":
            return _strings_of(node.value, lists)
    return []


def _strings_of(value, lists) -> List[str]:
    """The strings of literal lists, and of the named ones, joined with ``+``, in order."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return _strings_of(value.left, lists) + _strings_of(value.right, lists)
    if isinstance(value, ast.Name) and value.id in lists:
        return _strings_of(lists[value.id], lists)
    if isinstance(value, ast.List):
        return [item.value for item in value.elts if isinstance(item, ast.Constant) and isinstance(item.value, str)]
    return []


MISSING = r"""
import json, sys
from importlib.metadata import PackageNotFoundError, version
from packaging.requirements import Requirement
missing = []
for text in json.loads(sys.argv[1]):
    try:
        req = Requirement(text)
    except Exception:
        continue
    if req.marker is not None and not req.marker.evaluate():
        continue
    try:
        have = version(req.name)
    except PackageNotFoundError:
        missing.append(text)
        continue
    if req.specifier and not req.specifier.contains(have, prereleases=True):
        missing.append(text)
print(json.dumps(missing))
"""


def missing_requirements(python: Path, requirements: List[str], env: Optional[Dict[str, str]] = None) -> List[str]:
    """The requirements the environment of ``python`` (with ``env``'s path) does not satisfy."""
    if not requirements:
        return []
    proc = subprocess.run([str(python), "-c", MISSING, json.dumps(requirements)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)
    if proc.returncode != 0:
        raise ConfigError(f"could not read which packages {python} has: {proc.stderr.strip()[-300:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def requirements_overlay(repo: Path, revision: Revision, python: Path, dest: Path, say=print) -> Optional[Path]:
    """The packages the revision requires and this environment lacks, installed for it alone
    (``pip install --target``, without their own dependencies) in a folder of its own that
    goes on its ``PYTHONPATH`` after its tree; None where nothing is lacking. Where pip cannot
    install them, the check stops naming them."""
    wanted = missing_requirements(python, declared_requirements(repo, revision.commit),
                                  {"PYTHONPATH": str(revision.root)})
    if not wanted:
        return None
    folder = dest / hashlib.sha256(json.dumps(sorted(wanted)).encode()).hexdigest()[:16]
    if not (folder / COMPLETE).is_file():
        say(f"harnessgen ci: the {revision.name} requires what this environment lacks: {', '.join(wanted)}; "
            f"installing it for that revision alone ({folder})")
        if folder.exists():
            shutil.rmtree(folder)
        proc = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check",
                               "--target", str(folder), *wanted], capture_output=True, text=True)
        if proc.returncode != 0:
            raise ConfigError(f"the {revision.name} of --dace requires {', '.join(wanted)}, which this environment "
                              f"lacks, and pip could not install them ({proc.stderr.strip()[-300:]}); install them "
                              f"({python} -m pip install {' '.join(repr(w) for w in wanted)}) and run again")
        (folder / COMPLETE).write_text("\n".join(wanted) + "\n")
    still = missing_requirements(python, wanted, {"PYTHONPATH": os.pathsep.join([str(revision.root), str(folder)])})
    if still:
        raise ConfigError(f"the {revision.name} of --dace requires {', '.join(still)}, which is still not satisfied "
                          f"after installing it beside that revision; install it into {python}'s environment")
    return folder


# ---------------------------------------------------------------- does it build at all
TRIVIAL = r"""
import sys, tempfile
import numpy as np
import dace
sdfg = dace.SDFG("harnessgen_ci_trivial")
sdfg.add_array("A", [4], dace.float64)
state = sdfg.add_state()
state.add_mapped_tasklet("add_one", {"i": "0:4"}, {"a": dace.Memlet("A[i]")}, "b = a + 1",
                         {"b": dace.Memlet("A[i]")}, external_edges=True)
with tempfile.TemporaryDirectory() as build:
    sdfg.build_folder = build
    A = np.arange(4, dtype=np.float64)
    sdfg(A=A)
    if not np.array_equal(A, np.arange(1, 5, dtype=np.float64)):
        sys.exit(f"the program ran and computed {A}")
print("built")
"""


def check_builds(revision: Revision, python: Path) -> None:
    """Stop the check unless the revision builds and runs a four-element map (once per tree):
    a checkout without its submodules (``dace/external``) builds nothing, and a check where
    nothing builds would pass every change."""
    done = revision.root / BUILDS
    if done.is_file():
        return
    proc = subprocess.run([str(python), "-c", TRIVIAL], capture_output=True, text=True, timeout=900,
                          env={**os.environ, **revision.env}, cwd=revision.root)
    if proc.returncode != 0 or "built" not in proc.stdout:
        said = (proc.stderr or proc.stdout).strip().splitlines()
        raise ConfigError(f"the {revision.name} of --dace cannot build a trivial program, so nothing it judges "
                          f"could mean anything: {' | '.join(said[-3:])[:600]}; {_what_to_do(said, revision.root)}")
    write_atomic(done, revision.commit.encode())


def _what_to_do(said: List[str], root: Path) -> str:
    missing = next((line.split("No module named", 1)[1].strip(" '\"") for line in said
                    if "No module named" in line), "")
    empty = _empty_externals(root)
    if empty and (not missing or missing.startswith(f"{PACKAGE}.")):
        return (f"{', '.join(empty)} of the checkout are empty (its submodules): run `git submodule update --init` "
                "in the checkout")
    if missing:
        return (f"it imports {missing}, which neither this environment nor the requirements it declares provide: "
                f"install {missing}")
    return "the error above says why"


def _empty_externals(root: Path) -> List[str]:
    external = root / PACKAGE / "external"
    if not external.is_dir():
        return []
    return [f"{PACKAGE}/external/{p.name}" for p in sorted(external.iterdir()) if p.is_dir() and not any(p.iterdir())]

