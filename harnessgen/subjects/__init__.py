"""What harnessgen tests, behind one interface.

A *subject* is a kind of thing with instances, each judged by running pre and post on the
same inputs: a change DaCe makes at one place in a program (``sdfg``: a pattern transformation
at a match, or a pass or pipeline at an SDFG it changed, judged in a cutout around it) and a
hand-written CUDA kernel against its reference (``kernel``). Each kind implements ``Subject`` once: how it plans its instances, builds
one instance's harness or gives it a verdict without one, what it checks beyond the harness,
what it does after the verdict, how its crashes are triaged and how it shows in the
instance list. The driver (fuzz.py, the campaign) and the runner (runner.py) only speak
this interface.

``SUBJECTS`` maps each kind to its class by name; a module is imported when its kind is asked
for (implementations import this module, never the reverse).
"""
from __future__ import annotations

import abc
import dataclasses
import importlib
import json
from pathlib import Path
from typing import Callable, ClassVar, Dict, List, Optional, Tuple

from ..core.errors import ConfigError
from ..plan.params import ParamOptions

# kind -> "module:Class"; a --program value goes to the first kind (in this order) that claims it
SUBJECTS: Dict[str, str] = {
    "kernel": "harnessgen.gpukernels.subject:KernelSubject",
    "sdfg": "harnessgen.subjects.sdfg:SdfgSubject",
}


class Subject(abc.ABC):
    """One kind of subject, loaded for one ``--program`` value."""

    kind: ClassVar[str]

    def __init__(self, program_spec: str, simplify: Optional[bool] = None):
        self.program_spec = program_spec
        # which form of the program pattern transformations meet, where a kind has two: True
        # (--simplify) the simplified one, False (--no-simplify) the one as given (as its frontend
        # wrote it), None the kind's default for the program (``resolved_simplify``)
        self.simplify = simplify
        self.target = None                  # harnessgen.targets.Target: its afl_configs and constraints

    # ---------------------------------------------------------------- planning
    @classmethod
    @abc.abstractmethod
    def claims(cls, program_spec: str) -> bool:
        """True when a ``--program`` value names a subject of this kind."""

    @abc.abstractmethod
    def transformation_specs(self, xform_spec: Optional[str]) -> List[str]:
        """What ``--transformation`` selects (its default when empty)."""

    @abc.abstractmethod
    def instances(self, spec: str, settings: Optional[List[str]] = None,
                  params: ParamOptions = ParamOptions()) -> list:
        """The instances (``instances.Instance``) of one selected transformation, in a fixed order;
        ``params``: which parameter variants of each match (``--params``)."""

    def declined(self, spec: str) -> List[Dict]:
        """The parameter variants of ``spec`` the last ``instances`` left out of the plan because
        the transformation declines them at their match (each ``{"id", "match", "params"}``)."""
        return []

    def transformation_name(self, spec: str) -> str:
        """What a transformation spec is called in reports (loading it, where that is needed)."""
        return spec

    def matches_in_other_form(self, spec: str) -> Optional[int]:
        """Where ``spec`` matched nowhere in the form of the program the run meets: how many
        matches the other form has (None where the kind has one form, or it was not asked)."""
        return None

    def plan_identity(self, spec: str) -> Optional[Dict]:
        """What the instances of ``spec`` depend on besides the installed DaCe, harnessgen's own
        code and the planning options (program contents, the transformation's code), as JSON
        values: the key of the plan cache. None: never cached."""
        return None

    def whole_program(self, spec: str) -> bool:
        """Whether enumerating and judging ``spec`` works on whole programs (slow): its
        enumeration runs beside the run, and its instances get their own share of the time."""
        return False

    def quick_to_judge(self, spec: str) -> bool:
        """Whether the instances of ``spec`` are expected to reach a verdict in a moment (small
        cutouts, quick builds): the planner enumerates such a transformation before the run
        starts, so that the first verdicts come within seconds."""
        return False

    def loading_steps(self, specs: List[str]) -> List[Tuple[str, Callable[[], None]]]:
        """(label, load) for what enumerating ``specs`` will load (programs parsed, forms made),
        so that the planner can show each step as it happens."""
        return []

    def own_seeds(self, inst, layout) -> List[Tuple[str, bytes]]:
        """Seed inputs of the instance's program's own (a benchmark's realistic inputs), encoded
        for ``layout``, before the generated ones; none by default."""
        return []

    def program_options(self, program: str, options):
        """The run's options as they apply to one of its programs."""
        return options

    def warm(self, instance: Dict) -> None:
        """Load what an instance (its JSON record) needs, before workers fork and inherit it."""

    def check_programs(self, options) -> List[Dict]:
        """Checks of the loaded programs themselves, run once before any instance (the SDFG
        subject's: each program against its reference); JSON records."""
        return []

    def names(self, inst) -> List[str]:
        """What ``--instance`` may call an instance."""
        return [inst.id]

    def label(self, specs: List[str]) -> str:
        """The run's ``transformation`` in summary.json."""
        return ",".join(specs)

    # ---------------------------------------------------------------- one instance
    @abc.abstractmethod
    def prepare(self, spec: str, inst, options, result, started: float, past: int = 0,
                claim: Optional[Callable[[str], str]] = None):
        """Build the instance's harness (a ``build.HarnessBuild``), or give ``result`` its verdict
        without one (a static finding, a build failure) and return None. ``past``: how many
        steps larger than the first the judged part of the program is (growth after an audit).
        ``claim(key)``: where the kind knows its pair's canonical key, the instance that judges
        that pair (``core.shared_pairs.claim``); another one's id raises ``SamePair``."""

    def fuzzable(self, harness, inst, options):
        """The build the engine runs: ``harness`` where it holds the engine's binaries, else the
        same pair built with them (EngineError where a kind cannot build them)."""
        return harness

    def passing_checks(self, harness, passing: List[Path]) -> List[Path]:
        """Inputs the harness passed that a check of this kind flags (kind ``sanitizer``)."""
        return []

    def after_verdict(self, spec: str, inst, options, result, judge: Callable) -> None:
        """What follows the instance's verdict (the SDFG subject's whole-program audit);
        ``judge(inst, past)`` judges a variant of the instance again."""

    def audit_later(self, spec: str, inst, options, result, judge: Callable) -> None:
        """The check ``after_verdict`` left for after every match's verdict (``result.audit``
        says DEFERRED); a kind that defers nothing has nothing to do."""

    @abc.abstractmethod
    def describe(self, spec: str, inst, prove_max_size: Optional[int] = None, builds: Optional[Path] = None) -> Dict:
        """The instance's row in ``harnessgen instances`` (id, program, match, status, ...);
        ``prove_max_size``: prove its pair too, sizes up to that (a kind without pairs ignores it);
        ``builds``: compile its pre too, with that work directory's headers (``row["builds"]``)."""

    # ---------------------------------------------------------------- triage
    @classmethod
    @abc.abstractmethod
    def triage_class(cls) -> type:
        """The ``triage.Triage`` (sub)class that turns this kind's raw crashes into findings."""


def subject_class(kind: str) -> type:
    if kind not in SUBJECTS:
        raise ConfigError(f"unknown subject kind {kind!r}: one of {', '.join(SUBJECTS)}")
    module, _, name = SUBJECTS[kind].partition(":")
    return getattr(importlib.import_module(module), name)


def load(program_spec: str, simplify: Optional[bool] = None) -> Subject:
    """The subject a ``--program`` value names, loaded (targets resolved, kernels read)."""
    for kind in SUBJECTS:
        cls = subject_class(kind)
        if cls.claims(program_spec):
            return cls(program_spec, simplify)
    raise ConfigError(f"--program {program_spec}: no kind of subject takes it")


def kind_of_build(build_dir: Path) -> str:
    """Which kind of subject a build directory was made for (its manifest says)."""
    manifest = json.loads((Path(build_dir) / "manifest.json").read_text())
    return manifest.get("subject", "sdfg")      # builds from before the field was written: SDFG cutouts


def triage_build(build_dir: Path, raw: list, options):
    """Triage raw crashes of one build with its subject's triage."""
    return subject_class(kind_of_build(build_dir)).triage_class()(build_dir, options).run(raw)


# ---------------------------------------------------------------- planning a run
@dataclasses.dataclass
class Plan:
    """A run's instances in a fixed order: (transformation spec, instance) pairs."""

    subject: Subject
    specs: List[str]
    planned: List[Tuple[str, object]]

    @property
    def label(self) -> str:
        return self.subject.label(self.specs)


def plan(program_spec: str, xform_spec: Optional[str], instance_ids: Optional[List[str]] = None,
         settings: Optional[List[str]] = None, simplify: Optional[bool] = None,
         params: ParamOptions = ParamOptions()) -> Plan:
    """Every instance ``--program``/``--transformation``/``--instance`` select, in their order."""
    subject = load(program_spec, simplify)
    specs = subject.transformation_specs(xform_spec)
    if settings and len(specs) != 1:
        raise ConfigError("--set applies to one transformation: pass exactly one --transformation")
    planned = [(spec, inst) for spec in specs for inst in subject.instances(spec, settings, params)]
    return Plan(subject, specs, select(subject, planned, instance_ids, program_spec, specs))


def split_ids(values: Optional[List[str]]) -> List[str]:
    """``--instance`` values, each repeatable and comma-separated, as one list."""
    return [i.strip() for item in values or [] for i in item.split(",") if i.strip()]


def select(subject: Subject, planned: List[tuple], instance_ids: Optional[List[str]], program_spec: str,
           specs: List[str]) -> List[tuple]:
    """The (spec, instance) pairs ``--instance`` names, in its order (all of them without it)."""
    wanted = split_ids(instance_ids)
    if not wanted:
        return planned
    named: Dict[str, tuple] = {}
    for spec, inst in planned:
        for name in subject.names(inst):
            named.setdefault(name, (spec, inst))
    missing = [i for i in wanted if i not in named]
    if missing:
        choices = ", ".join(inst.id for _, inst in planned[:20]) + (", ..." if len(planned) > 20 else "")
        raise ConfigError(f"--instance {', '.join(missing)}: no such instance; choose from {choices or 'none'} "
                          f"(`harnessgen instances --program {program_spec}"
                          + (f" --transformation {specs[0]}`" if specs else "`") + " lists them)")
    return [named[i] for i in wanted]


def interleave(planned: List[tuple]) -> List[tuple]:
    """Round-robin over transformations (in their given order), so that a run cut short by its
    budget has tested every transformation, not only the first ones."""
    queues: Dict[str, List[tuple]] = {}
    for item in planned:
        queues.setdefault(item[0], []).append(item)
    out = []
    while any(queues.values()):
        for queue in queues.values():
            if queue:
                out.append(queue.pop(0))
    return out


__all__ = ["SUBJECTS", "Plan", "Subject", "interleave", "kind_of_build", "load", "plan", "select", "split_ids",
           "subject_class", "triage_build"]
