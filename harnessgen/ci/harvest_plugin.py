"""A pytest plugin ``harnessgen ci`` loads into a DaCe revision's own tests (``harvest``): each
test that uses a changed transformation or pass is run up to the moment DaCe applies that
class, and the whole program the class meets there is saved as an SDFG file. The test stops
right then: what DaCe would compile and compare afterwards is the test's business, not ours,
and it costs seconds per test.

It runs inside pytest with the revision's DaCe first on the path, so it imports nothing of
harnessgen that imports DaCe. Its settings come from one JSON file (``--harnessgen-harvest``):
``classes`` ([module, name] pairs), ``names`` (what a test must name to be run: the classes and
the transformations that apply them), ``out`` (the folder), ``select`` (``naming``: only the
tests whose code names one, directly or through a helper of their module; ``all``), ``per_test_s``
and ``per_class`` (how many programs of one class at most), ``label`` (where the tests come
from: a line of the index)."""
from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import re
import signal
import tempfile
import types
from pathlib import Path

import pytest

INDEX = "index.jsonl"


class Harvested(BaseException):
    """Raised into a test once its program is saved: a BaseException, so that a test's own
    ``except Exception`` does not go on past it."""


class TooSlow(BaseException):
    """A test that took longer than ``per_test_s``."""


def pytest_addoption(parser):
    parser.addoption("--harnessgen-harvest", metavar="FILE", help="harnessgen ci: what to save, and where")


def pytest_configure(config):
    path = config.getoption("--harnessgen-harvest")
    if path:
        harvest = Harvest(json.loads(Path(path).read_text()))
        harvest.install()
        config.pluginmanager.register(harvest, "harnessgen-harvest")


class Harvest:
    def __init__(self, settings: dict):
        self.out = Path(settings["out"])
        self.out.mkdir(parents=True, exist_ok=True)
        self.wanted = [tuple(pair) for pair in settings["classes"]]
        # the names a test must mention to be run: the classes, and the transformations that apply them
        self.names = settings.get("names") or [name for _, name in self.wanted]
        self.select = settings.get("select", "naming")
        self.per_test_s = float(settings.get("per_test_s", 60))
        self.per_class = int(settings.get("per_class", 8))
        self.label = settings.get("label", "")
        self.classes = []
        self.current = ""
        self.saved = {}
        self.harvested = set()       # the tests an earlier run of this harvest took a program from
        for line in (self.out / INDEX).read_text().splitlines() if (self.out / INDEX).is_file() else ():
            entry = json.loads(line)
            self.saved[entry["class"]] = self.saved.get(entry["class"], 0) + 1
            self.harvested.add(entry["test"])

    # ------------------------------------------------------------ the classes' entry points
    def install(self) -> None:
        for module, name in self.wanted:
            try:
                cls = getattr(importlib.import_module(module), name)
            except Exception:  # noqa: BLE001 -- the revision does not define it: nothing to watch
                continue
            method = "apply_pass" if hasattr(cls, "apply_pass") and not hasattr(cls, "can_be_applied") else "apply"
            original = getattr(cls, method, None)
            if original is None:
                continue
            setattr(cls, method, self._watching(cls, original, method))
            self.classes.append(cls)

    def _watching(self, cls, original, method):
        harvest = self

        def watched(this, *args, **kwargs):
            sdfg = _sdfg_among(args, kwargs, method)
            if sdfg is not None:
                harvest.save(cls, sdfg)
            return original(this, *args, **kwargs)

        watched.__wrapped__ = original
        return watched

    def save(self, cls, sdfg) -> None:
        """Save the whole program ``sdfg`` belongs to (once per content) and stop the test: what
        the class meets in it is all the test is wanted for."""
        if not self.current:
            return                    # while a module is imported or collected: no test to name
        name = cls.__name__
        if self.saved.get(name, 0) < self.per_class:
            self._write(name, sdfg)
        raise Harvested(f"{name} met its program")

    def _write(self, name: str, sdfg) -> None:
        root = sdfg
        while getattr(root, "parent_sdfg", None) is not None:
            root = root.parent_sdfg
        handle, tmp = tempfile.mkstemp(suffix=".part", dir=self.out)
        os.close(handle)
        try:
            root.save(tmp)
            digest = hashlib.sha256(Path(tmp).read_bytes()).hexdigest()[:10]
            stem = re.sub(r"[^A-Za-z0-9_]+", "_", self.current.split("::")[-1])[:60]
            target = self.out / f"{name}__{stem}__{digest}.sdfg"
            if target.exists():
                return
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        self.saved[name] = self.saved.get(name, 0) + 1
        with open(self.out / INDEX, "a") as index:
            index.write(json.dumps({"file": target.name, "class": name, "test": self.current,
                                    "source": self.label}) + "\n")

    # ------------------------------------------------------------ pytest's side
    def pytest_collection_modifyitems(self, session, config, items):
        names = list(self.names)
        kept, dropped = [], []
        for item in items:
            function = getattr(item, "obj", None)
            wanted = item.nodeid not in self.harvested and (
                self.select != "naming" or (function is not None and _names_any(function, names)))
            (kept if wanted else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        self.current = item.nodeid

        def too_slow(signum, frame):
            raise TooSlow(f"{item.nodeid}: over {self.per_test_s:g} s")

        previous = signal.signal(signal.SIGALRM, too_slow)
        signal.setitimer(signal.ITIMER_REAL, self.per_test_s)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            self.current = ""


def _sdfg_among(args, kwargs, method):
    """The SDFG a pattern's ``apply(graph, sdfg)`` or a pass's ``apply_pass(sdfg, results)`` is
    given."""
    position = 0 if method == "apply_pass" else 1
    candidate = kwargs.get("sdfg", args[position] if len(args) > position else None)
    return candidate if hasattr(candidate, "save") and hasattr(candidate, "arrays") else None


def _names_any(function, names, depth: int = 2) -> bool:
    """Whether ``function``'s code names one of ``names``, itself or through a function of its
    own module that it calls (``depth`` levels)."""
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    if any(re.search(rf"\b{re.escape(n)}\b", source) for n in names):
        return True
    if depth == 0:
        return False
    module = inspect.getmodule(function)
    code = getattr(function, "__code__", None)
    if module is None or code is None:
        return False
    called = set(code.co_names) | {n for c in code.co_consts if isinstance(c, types.CodeType) for n in c.co_names}
    helpers = [getattr(module, n) for n in sorted(called) if inspect.isfunction(getattr(module, n, None))]
    return any(h is not function and _names_any(h, names, depth - 1) for h in helpers)
