"""The programs a DaCe checkout's own tests give a changed class: each test that uses the class
is run (with the head's DaCe) up to the moment DaCe applies it, and the whole program it meets
there is kept (``harvest_plugin``). A pull request's own test is the best program there is,
and the test a revert removes is still at base: both revisions' tests are read.

Which tests: those that name the class or a transformation that applies it (``MapTiling``'s
for ``StripMining``). First the test functions the pull request added, changed or removed,
at either revision; then the other tests of the files it touched; then the rest, the files
named after the class first (``loop_unroll_test.py`` for ``LoopUnroll``). A test already
harvested is not run again."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Sequence

from ..core.files import write_json
from .revision import COMPLETE, Revision, export_paths, git
from .harvest_plugin import INDEX

TESTS = "tests"
NPBENCH_TESTS = "tests/npbench"
# what a test run needs beside its files: the checkout's pytest settings and root conftest
TEST_SUPPORT = ("tests", "conftest.py", "pytest.ini", "setup.cfg", "pyproject.toml")
RULES = 3                     # which tests are run in which order: a harvest of other rules is not reused
PER_CLASS = 8                 # programs per class from the tests the pull request did not touch
TOUCHED_PER_CLASS = 16        # ... and in all, from those it touched first
TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")


@dataclasses.dataclass
class Harvest:
    folder: Path                      # the SDFG files, and index.jsonl: which test gave each
    files: Dict[str, List[str]]       # the test files run, per source label
    seconds: float

    def programs_of(self) -> Dict[str, List[Dict]]:
        """class -> the index entries of its programs."""
        found: Dict[str, List[Dict]] = {}
        index = self.folder / INDEX
        for line in index.read_text().splitlines() if index.is_file() else ():
            entry = json.loads(line)
            if (self.folder / entry["file"]).is_file():
                found.setdefault(entry["class"], []).append(entry)
        return found


def test_files(repo: Path, commit: str, names: Sequence[str], touched: Sequence[str], under: str = TESTS,
               limit: int = 16) -> List[str]:
    """The test files of ``commit`` under ``under`` that name one of ``names`` as a word, in
    the order they are worth running."""
    if not names:
        return []
    patterns = [arg for name in names for arg in ("-e", name)]
    proc = subprocess.run(["git", "-C", str(repo), "grep", "-l", "-w", *patterns, commit, "--", under],
                          capture_output=True, text=True)
    paths = sorted({line.split(":", 1)[1] for line in proc.stdout.splitlines() if ":" in line})
    paths = [p for p in paths if TEST_FILE.search(p)]
    snakes = [_snake(n) for n in names]

    def worth(path: str):
        return (path not in touched, not any(s in Path(path).name for s in snakes), path)

    return sorted(paths, key=worth)[:limit]


def changed_tests(repo: Path, path: str, commit: str, other) -> List[str]:
    """The test functions of ``path`` at ``commit`` (as pytest node ids) whose code differs from
    ``other``'s, or that ``other`` does not have."""
    import ast

    def functions(rev) -> Dict[str, str]:
        if rev is None:
            return {}
        proc = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True, text=True)
        try:
            tree = ast.parse(proc.stdout) if proc.returncode == 0 else ast.Module([], [])
        except SyntaxError:
            return {}
        return {node.name: ast.dump(node) for node in tree.body
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")}

    mine, theirs = functions(commit), functions(other)
    return [f"{path}::{name}" for name in sorted(mine) if mine[name] != theirs.get(name)]


def callers(repo: Path, commit: str, names: Sequence[str]) -> List[str]:
    """The transformations that name one of ``names`` in their own code (``MapTiling`` applies
    ``StripMining``): a test of a caller runs the changed class too."""
    if not names:
        return []
    patterns = [arg for name in names for arg in ("-e", name)]
    proc = subprocess.run(["git", "-C", str(repo), "grep", "-l", "-w", *patterns, commit, "--", "dace/transformation"],
                          capture_output=True, text=True)
    found = set()
    for line in proc.stdout.splitlines():
        path = line.split(":", 1)[1]
        source = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True,
                                text=True).stdout
        for cls, body in _class_bodies(source):
            if cls not in names and any(re.search(rf"\b{re.escape(n)}\b", body) for n in names):
                found.add(cls)
    return sorted(found)


def _class_bodies(source: str):
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [(node.name, ast.get_source_segment(source, node) or "") for node in tree.body
            if isinstance(node, ast.ClassDef)]


def all_test_files(repo: Path, commit: str, under: str, limit: int = 64) -> List[str]:
    listing = git(repo, "ls-tree", "-r", "--name-only", commit, "--", under).split()
    return sorted(p for p in listing if TEST_FILE.search(p))[:limit]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def run_tests(repo: Path, commit: str, files: Sequence[str], label: str, classes: Sequence[Sequence[str]],
              names: Sequence[str], runner: Revision, python: Path, out: Path, select: str, deadline: float,
              per_test_s: float = 60.0, per_class: int = 8) -> None:
    """Run ``files`` of ``commit`` (those of their tests that name one of ``names``) with
    ``runner``'s DaCe and the harvest plugin, until ``deadline`` (``time.monotonic()``); what
    they saved is in ``out``, at most ``per_class`` programs per class in all."""
    left = deadline - time.monotonic()
    if not files or left < 5:
        return
    root = export_paths(repo, commit, list(TEST_SUPPORT), out.parent.parent / "tests-src")
    settings = out / f"harvest-{commit[:12]}.json"
    write_json(settings, {"classes": [list(c) for c in classes], "names": list(names), "out": str(out),
                          "select": select,
                          "per_test_s": per_test_s, "per_class": per_class, "label": label})
    base = [str(python), "-m", "pytest", "-q", "--no-header", "-p", "no:cacheprovider", "-o", "addopts=",
            "-p", "harnessgen.ci.harvest_plugin", "--harnessgen-harvest", str(settings), "--rootdir", str(root)]
    env = {**os.environ, **runner.env, "PYTHONDONTWRITEBYTECODE": "1"}
    log = out / f"harvest-{commit[:12]}.log"
    for attempt in (base, base + ["--noconftest"]):
        try:
            proc = subprocess.run(attempt + list(files), capture_output=True, text=True, cwd=root, env=env,
                                  timeout=max(5.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired as exc:
            log.write_text(_text(exc.stdout) + _text(exc.stderr) + "\n(stopped: the bound ended)\n")
            return
        log.write_text(proc.stdout + proc.stderr)
        if proc.returncode not in (3, 4):           # pytest's internal error, usage error: conftest's doing
            return


def _blob(repo: Path, commit: str, path: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), "rev-parse", f"{commit}:{path}"], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def _text(data) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def harvest(repo: Path, sides: Sequence[Revision], runner: Revision, since: str, classes: Sequence[Sequence[str]],
            python: Path, folder: Path, deadline: float, under: str = TESTS, select: str = "naming") -> Harvest:
    """Programs for ``classes`` from the tests of each of ``sides`` (the head's first; a later
    side's files only where they differ from the first's), run with ``runner``'s DaCe, under
    ``folder``: once per revisions, classes and selection (a later check of the same pull
    request reads the same files, so plans the same instances)."""
    started = time.monotonic()
    names = [name for _, name in classes]
    names += callers(repo, sides[0].commit, names)
    key = hashlib.sha256(json.dumps([[s.commit for s in sides], runner.commit, [list(c) for c in classes], names,
                                     under, select, PER_CLASS, TOUCHED_PER_CLASS, RULES]).encode()).hexdigest()[:16]
    folder = folder / key
    done = folder / COMPLETE
    if done.is_file():
        return Harvest(folder, json.loads(done.read_text()), 0.0)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    touched = git(repo, "diff", "--name-only", since, sides[0].commit, "--", TESTS).split()
    files: Dict[str, List[str]] = {}
    for side in sides:
        wanted = (test_files(repo, side.commit, names, touched, under) if select == "naming"
                  else all_test_files(repo, side.commit, under))
        if side is not sides[0]:
            wanted = [p for p in wanted if _blob(repo, side.commit, p) != _blob(repo, sides[0].commit, p)]
        files[f"{side.side} {side.commit[:10]}"] = wanted
    # first the test functions the pull request added, changed or removed, at either revision (a
    # revert's removed test is only at base); then the other tests of the files it touched, each
    # with a larger share; then the others
    other = {side.commit: next(s for s in sides if s is not side).commit for side in sides} if len(sides) > 1 else {}
    passes = [(TOUCHED_PER_CLASS, "all", lambda side, f: changed_tests(repo, f, side.commit, other.get(side.commit))
               if f in touched else []),
              (TOUCHED_PER_CLASS, select, lambda side, f: [f] if f in touched else []),
              (PER_CLASS, select, lambda side, f: [f] if f not in touched else [])]
    for share, selecting, pick in passes:
        for side in sides:
            label = f"{side.side} {side.commit[:10]}"
            chosen = [target for f in files[label] for target in pick(side, f)]
            run_tests(repo, side.commit, chosen, label, classes, names, runner, python, folder, selecting, deadline,
                      per_class=share)
    if time.monotonic() < deadline:          # every test ran (or was given up on alone)
        write_json(done, files)
    return Harvest(folder, files, round(time.monotonic() - started, 1))
