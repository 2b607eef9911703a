"""The pytest plugin (entry point ``pytest11``): a transformation's test says "and fuzz this
transformation on this program" in one line.

    def test_my_tiling(harnessgen):
        harnessgen.check(my_program, MyTiling)

``harnessgen.check`` takes ``harnessgen.check``'s arguments (``harnessgen.api.check``) and
``expected``: the kinds of finding (``MISMATCH``, ``FAILED_TO_APPLY``...) or words of a bug's
description the test knows of (a DaCe bug already filed). A finding of another kind, or an
instance harnessgen could not judge, fails the test with the verdicts, each bug's smallest
reproducer and the ``python repro.py`` line; expected findings are reported at the end of the
session and do not fail it. Options:

``--harnessgen-time S``  fuzzing seconds per instance for every check (0: skip the checks)
``--harnessgen-jobs N``  worker processes per check (default 1)
``--harnessgen-budget S``  no instance of a check starts after S seconds

A check judges the transformation as the test configures it (its defaults, or ``settings``);
``params="pairs"`` explores its parameters as ``harnessgen fuzz`` does. Everything a check
writes is under the test's ``tmp_path`` (its builds under one folder of
the session's, shared by the checks). This module imports nothing of harnessgen until a check
runs: every pytest session of an environment with harnessgen installed loads it.
"""
from __future__ import annotations

from typing import Any, Iterable, List, Optional

import pytest

DEFAULT_TIME = 10.0
_REPORTED = pytest.StashKey[list]()


def pytest_addoption(parser) -> None:
    group = parser.getgroup("harnessgen", "fuzzing transformations in tests (the harnessgen fixture)")
    group.addoption("--harnessgen-time", type=float, default=None, metavar="S",
                    help=f"fuzzing seconds per instance for every harnessgen check (default: the check's own, else "
                         f"{DEFAULT_TIME:g}); 0 skips the checks")
    group.addoption("--harnessgen-jobs", type=int, default=1, metavar="N",
                    help="worker processes per harnessgen check (default 1)")
    group.addoption("--harnessgen-budget", type=float, default=None, metavar="S",
                    help="no instance of a check starts after this many seconds (default: the check's own, else "
                         "every instance is judged)")


def pytest_configure(config) -> None:
    config.stash[_REPORTED] = []


class Checker:
    """The ``harnessgen`` fixture: ``check`` judges and fails the test on an unexpected finding."""

    def __init__(self, request, tmp_path, builds):
        self._request, self._tmp, self._builds = request, tmp_path, builds
        self._count = 0

    def check(self, program, transformation=None, *, expected: Iterable[str] = (), time: Optional[float] = None,
              **keywords: Any):
        """The report of ``harnessgen.api.check`` (None where ``--harnessgen-time 0`` skips it)."""
        from harnessgen import api

        config = self._request.config
        asked = config.getoption("--harnessgen-time")
        if asked == 0:
            return None
        self._count += 1
        keywords.setdefault("directory", self._tmp / f"harnessgen-{self._count}")
        keywords.setdefault("work_dir", self._builds)
        keywords.setdefault("jobs", config.getoption("--harnessgen-jobs"))
        if config.getoption("--harnessgen-budget") is not None:
            keywords["budget_s"] = config.getoption("--harnessgen-budget")
        # the transformation as the test configures it (``params="pairs"`` explores its parameters too)
        keywords.setdefault("params", "default")
        seconds = asked if asked is not None else (time if time is not None else DEFAULT_TIME)
        report = api.check(program, transformation, time=seconds, **keywords)
        known = [str(e) for e in expected]
        unexpected = [v for v in report.findings if not _expected(report, v, known)]
        if report.findings and not unexpected:
            config.stash[_REPORTED].append((self._request.node.nodeid, report))
        if unexpected or report.errors:
            pytest.fail(_failure(report, unexpected), pytrace=False)
        return report


def _expected(report, verdict, known: List[str]) -> bool:
    """A finding the test declared: its kind, or words of its bug's description."""
    if verdict.verdict in known:
        return True
    bugs = [b for b in report.bugs if verdict.reproducer is not None and b.transformation == verdict.transformation]
    return any(word in bug.description for bug in bugs for word in known if not word.isupper())


def _failure(report, unexpected) -> str:
    lines = [report.describe()]
    if unexpected:
        first = unexpected[0]
        lines.append(f"first unexpected finding: {first.verdict} at {first.instance}"
                     + (f"; reproducer {first.reproducer} (python {first.reproducer / 'repro.py'})"
                        if first.reproducer else ""))
    return "\n".join(lines)


@pytest.fixture(scope="session")
def _harnessgen_builds(tmp_path_factory):
    return tmp_path_factory.mktemp("harnessgen-builds")


@pytest.fixture
def harnessgen(request, tmp_path, _harnessgen_builds) -> Checker:
    """Fuzz a transformation on a program in this test: ``harnessgen.check(program, Transformation)``."""
    return Checker(request, tmp_path, _harnessgen_builds)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    reported = config.stash.get(_REPORTED, [])
    if not reported:
        return
    terminalreporter.section("harnessgen: expected findings (not failures)")
    for nodeid, report in reported:
        terminalreporter.write_line(f"{nodeid}:")
        for line in report.describe().splitlines():
            terminalreporter.write_line(f"  {line}")
