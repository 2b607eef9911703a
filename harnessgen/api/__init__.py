"""The Python API: judge a transformation on a program from Python and get records back.

    import harnessgen
    report = harnessgen.check("prog.py:f", MyTransformation, time=30)
    assert report.ok, report.describe()

``check`` takes what a DaCe developer has at hand: a program (a ``--program`` value, an
``SDFG``, a ``@dace.program``), transformations (classes, names, ``module:Class`` values) and
the run's knobs as keywords (the fields of ``FuzzOptions``); everything it writes goes under
``directory`` (a new temporary folder where none is given: the reproducers must outlive the
call). ``harnessgen fuzz`` is a shell over ``judge``, the same path with the CLI's options.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import tempfile
import types
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

from ..bugs.cluster import bug_rows
from ..campaign.executors import ExecutorSpec
from ..campaign.fuzz_run import fuzz
from ..core.errors import ConfigError
from ..core.outcome import Outcome
from ..core.records import FuzzOptions, InstanceResult

__all__ = ["Bug", "Hooks", "Report", "Verdict", "check", "judge", "program_spec", "transformation_spec"]

FINDINGS = frozenset(o.name for o in Outcome if o.is_finding)
# a spec the API made for a class no file or module names (one defined inside a function): it is
# kept as an attribute of this module, which forked workers inherit
REGISTERED = f"{__name__}.registered"
registered = types.ModuleType(REGISTERED)
_numbers = itertools.count(1)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One instance's verdict (``verdict``: PASS, a finding's outcome, UNSUPPORTED, ERROR...)."""

    instance: str
    transformation: str
    program: str
    verdict: str
    message: str = ""
    reproducer: Optional[Path] = None     # the first finding's folder (``python <it>/repro.py``)
    same_pair_as: str = ""                # the instance whose verdict it took (an equal pair)

    @property
    def is_finding(self) -> bool:
        return self.verdict in FINDINGS


@dataclasses.dataclass(frozen=True)
class Bug:
    """A distinct bug: the findings of one root cause, with its smallest reproducer."""

    id: str
    kind: str
    transformation: str
    description: str
    instances: int
    reproducer: Path                      # the smallest finding's folder
    report: Path                          # its BUG.md
    reduced: Optional[Path] = None        # the reduced program's folder, where it was reduced

    @property
    def replay_command(self) -> str:
        return f"python {self.reproducer / 'repro.py'}"


@dataclasses.dataclass
class Report:
    """What a check found: every instance's verdict and the distinct bugs."""

    program: str
    transformation: str
    directory: Path                       # the run's folder (summary.json, bugs.json, report.html)
    verdicts: List[Verdict]
    bugs: List[Bug]
    results: List[InstanceResult] = dataclasses.field(default_factory=list, repr=False)

    @property
    def findings(self) -> List[Verdict]:
        return [v for v in self.verdicts if v.is_finding]

    @property
    def errors(self) -> List[Verdict]:
        """Instances harnessgen could not judge: never a pass."""
        return [v for v in self.verdicts if v.verdict == "ERROR"]

    @property
    def ok(self) -> bool:
        """No finding and nothing left unjudged by an error of harnessgen's."""
        return not self.findings and not self.errors

    def counts(self) -> Dict[str, int]:
        counts: Dict[str, int] = {}
        for v in self.verdicts:
            counts[v.verdict] = counts.get(v.verdict, 0) + 1
        return dict(sorted(counts.items()))

    def describe(self) -> str:
        """The report in a few lines: the counts, each bug with its reproducer and the line
        that replays it, each error's reason."""
        counts = ", ".join(f"{n} {verdict}" for verdict, n in self.counts().items()) or "no instance"
        lines = [f"harnessgen: {self.transformation} on {self.program}: {counts} ({len(self.verdicts)} instance(s); "
                 f"run in {self.directory})"]
        for bug in self.bugs:
            lines += [f"  bug {bug.id}: {bug.kind} of {bug.transformation} in {bug.instances} instance(s): "
                      f"{bug.description}", f"    smallest reproducer: {bug.reproducer}", f"    {bug.replay_command}"]
        unclustered = [v for v in self.findings if not self.bugs and v.reproducer]
        for v in unclustered:
            lines += [f"  {v.verdict} {v.instance}: {v.message}", f"    python {v.reproducer / 'repro.py'}"]
        for v in self.errors:
            lines.append(f"  ERROR {v.instance} (not judged): {v.message}")
        return "\n".join(lines)

    @classmethod
    def of(cls, program: str, transformation: str, directory: Path, results: List[InstanceResult]) -> "Report":
        verdicts = [_verdict(r) for r in sorted(results, key=lambda r: r.id)]
        bugs = [Bug(id=row["id"], kind=row["kind"], transformation=row["transformation"],
                    description=row["description"], instances=row["instances"],
                    reproducer=(directory / row["representative"]).resolve(),
                    report=(directory / row["report"]).resolve(),
                    reduced=(directory / row["reduced"]).resolve() if row.get("reduced") else None)
                for row in bug_rows(directory)]
        return cls(program, transformation, directory, verdicts, bugs, results)


def _verdict(result: InstanceResult) -> Verdict:
    paths = [f.get("path") for f in result.findings if f.get("path")]
    message = result.message or (result.error or {}).get("reason", "")
    return Verdict(instance=result.id, transformation=result.transformation, program=result.program,
                   verdict=result.verdict, message=message, reproducer=Path(paths[0]).resolve() if paths else None,
                   same_pair_as=result.same_pair_as)


@dataclasses.dataclass
class Hooks:
    """What a caller sees as the run goes (the CLI's display; all optional)."""

    live: Optional[Callable] = None          # live(instance, engine statistics): one job in this process
    on_result: Optional[Callable] = None     # on_result(InstanceResult) as each instance finishes
    on_plan: Optional[Callable] = None       # on_plan(planned, already_done, reference_checks, still_enumerating) once planned
    plan_progress: Any = None                # each planning step as it happens (campaign.planning.PlanProgress)
    on_more: Optional[Callable] = None       # on_more(row, seconds, count): a transformation enumerated later
    on_audit: Optional[Callable] = None      # on_audit(InstanceResult): a finished instance's deferred audit is done
    on_checks: Optional[Callable] = None     # on_checks(records): the reference checks beside the run are done


def judge(program: str, transformation: Optional[str], options: FuzzOptions, *,
          instances: Optional[List[str]] = None, settings: Optional[List[str]] = None, jobs: int = 1,
          executor: Optional[ExecutorSpec] = None, hooks: Hooks = Hooks()) -> Report:
    """Judge every instance of ``transformation`` (a ``--transformation`` value; empty: the
    program's defaults) on ``program`` (a ``--program`` value) as ``options`` say: the one
    path ``check`` and ``harnessgen fuzz`` take."""
    results = fuzz(program, transformation, instances, options, progress=hooks.live, on_result=hooks.on_result,
                   settings=settings, jobs=max(1, jobs), on_plan=hooks.on_plan, executor=executor,
                   plan_progress=hooks.plan_progress, on_more=hooks.on_more, on_audit=hooks.on_audit,
                   on_checks=hooks.on_checks)
    return Report.of(program, transformation or "the default transformations", Path(options.out_dir), results)


def check(program, transformation=None, *, time: float = 10.0, directory: Union[str, Path, None] = None,
          jobs: int = 1, in_process: bool = False, settings: Optional[Dict[str, Any]] = None,
          instances: Optional[Sequence[str]] = None, simplify: Optional[bool] = None, **options: Any) -> Report:
    """Judge ``transformation`` wherever it applies in ``program`` and return the report.

    ``program``: a ``--program`` value (``kernels:gemm``, ``prog.py:f``, ``file.sdfg``), an
    ``SDFG`` (tested as given) or a ``@dace.program`` (simplified first, as DaCe does).
    ``transformation``: a class (a pattern transformation or a pass), a name or ``module:Class``
    value, or a list of them; None: the program's defaults (every built-in that matches, for a
    program of your own). ``time``: seconds of fuzzing per instance (proofs and seeds decide
    many before it). ``directory``: where the run, its builds and its findings go (a new
    temporary folder where None); a run already there is started over unless
    ``resume=True``. ``jobs``: worker processes; ``in_process``: judge in this
    process instead, one instance at a time. ``settings``: the transformation's properties
    (``{"tile_sizes": [4]}``). ``instances``: only these instance ids. Other keywords: fields
    of ``FuzzOptions`` (``budget_s``, ``seed``, ``prove``, ``params``, ``audit``...)."""
    folder = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="harnessgen-"))
    folder.mkdir(parents=True, exist_ok=True)
    spec, simplify = program_spec(program, folder, simplify)
    xform = transformation_spec(transformation)
    fuzz_options = _options(folder, time, simplify, options)
    executor = ExecutorSpec("inline") if in_process else None
    return judge(spec, xform, fuzz_options, instances=list(instances) if instances else None,
                 settings=_settings(settings), jobs=jobs, executor=executor)


def _options(folder: Path, time: float, simplify: Optional[bool], options: Dict[str, Any]) -> FuzzOptions:
    known = {f.name for f in dataclasses.fields(FuzzOptions)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"harnessgen.check: no option {', '.join(map(repr, unknown))}; the options are the fields "
                          f"of FuzzOptions: {', '.join(sorted(known))}")
    where = {"out_dir": folder / "run", "work_dir": folder / "work", "corpus_root": folder / "corpus",
             "crashes_root": folder / "crashes"}
    # each call judges anew (``resume=True`` continues a run in the same directory, as the CLI does)
    defaults = {"show_progress": False, "plots": False, "command_line": "harnessgen.check", "resume": False}
    return FuzzOptions(**{**defaults, **where, **options, "time_s": float(time), "simplify": simplify})


def _settings(settings: Optional[Dict[str, Any]]) -> Optional[List[str]]:
    if not settings:
        return None
    return [f"{key}={value if isinstance(value, str) else json.dumps(value)}" for key, value in settings.items()]


# ---------------------------------------------------------------- what the caller handed over
def program_spec(program, folder: Path, simplify: Optional[bool]) -> tuple:
    """A ``--program`` value for ``program`` and the form its instances meet: an SDFG is saved
    under ``folder`` and tested as given, a ``@dace.program`` converted and simplified (unless
    ``simplify`` says otherwise)."""
    if isinstance(program, (str, Path)):
        return str(program), simplify
    import dace

    if isinstance(program, dace.SDFG):
        return str(_saved(program, folder)), simplify
    to_sdfg = getattr(program, "to_sdfg", None)
    if callable(to_sdfg):
        return str(_saved(to_sdfg(), folder)), True if simplify is None else simplify
    raise ConfigError(f"harnessgen.check: the program is a {type(program).__name__}; give a --program value "
                      "(kernels:gemm, prog.py:f, file.sdfg), a dace.SDFG or a @dace.program")


def _saved(sdfg, folder: Path) -> Path:
    path = folder / "programs" / f"{sdfg.name}.sdfg"
    path.parent.mkdir(parents=True, exist_ok=True)
    sdfg.save(str(path))
    return path


def transformation_spec(transformation) -> Optional[str]:
    """A ``--transformation`` value for a class, a name or a list of them (None: the defaults)."""
    if transformation is None:
        return None
    if isinstance(transformation, str):
        return transformation
    if isinstance(transformation, type):
        return _class_spec(transformation)
    if isinstance(transformation, Iterable):
        return ",".join(transformation_spec(t) for t in transformation)
    raise ConfigError(f"harnessgen.check: the transformation is a {type(transformation).__name__}; give a class, "
                      "a name or module:Class")


def _class_spec(cls: type) -> str:
    """How a worker loads the class again (``plan.instances.class_spec``) where a module holds
    it by its name; any other (one defined inside a function) is kept here."""
    import sys

    from ..plan.instances import class_spec

    if getattr(sys.modules.get(cls.__module__), cls.__qualname__, None) is cls:
        return class_spec(cls)
    name = f"{cls.__name__}_{next(_numbers)}"
    setattr(registered, name, cls)
    sys.modules.setdefault(REGISTERED, registered)
    return f"{REGISTERED}:{name}"
