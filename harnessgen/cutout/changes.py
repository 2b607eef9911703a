"""The kinds of change DaCe makes to a program, each behind one interface (``Change``): how its
instances are found, how one is cut out with the change made, the whole program before and
after it, and the variants of it in another program (the reducer's).

``Patterns``: a pattern transformation at one of its matches, cut out by DaCe's ``SDFGCutout``
(``extract``). ``Passes``: a pass or pipeline at one SDFG of the program it changed
(``extract_change``). ``load_change`` tells them apart by the ``--transformation`` value.
"""
from __future__ import annotations

import abc
import copy
import dataclasses
import hashlib
import inspect
import json
import warnings
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional

from ..core.errors import ConfigError, Unsupported
from ..plan import params, passes
from ..plan.instances import (MATCH_PLACE_KEYS, Instance, enumerate_instances, instance_id, load_transformation,
                              match_settings, parse_settings, pattern_matches, rebuild_transformation)
from ..plan.params import ParamOptions
from .extract import AppliedOnce, CutoutPair, can_apply, extract, extract_change, transformed_program, whole_program_pair

# what separates a variant's parameters from its match's description
PARAMS_MARK = " | with "


class Change(abc.ABC):
    """One kind of change DaCe makes to a program, loaded from one ``--transformation`` value."""

    name: str
    spec: str
    simplified: bool           # which form of the program its instances lie in
    # parameter variants the last ``instances`` left out: the transformation declines them at
    # their match (``{"id", "match", "params"}`` each)
    declined: List[Dict] = []

    @abc.abstractmethod
    def instances(self, target, programs, sdfg_of: Callable, settings,
                  param_options: ParamOptions = ParamOptions()) -> List[Instance]:
        """Its instances in ``programs``; ``sdfg_of(program name, simplified)`` gives an SDFG;
        ``param_options``: which parameter variants of each match."""

    @abc.abstractmethod
    def extract(self, program_sdfg, inst: Instance, past: int,
                before_whole: Optional[Callable[[], None]] = None) -> CutoutPair:
        """The instance's pre and post (``past``: how many smaller cutouts were judged already).
        ``before_whole()`` runs before the whole program is made the pair (it may raise to
        stop there: a whole program known not to build)."""

    @abc.abstractmethod
    def whole_program(self, program_sdfg, inst: Instance, pre_on_failure: bool = True,
                      keep_as_made: bool = False) -> CutoutPair:
        """The whole program before and after the instance's change (the audit's pair);
        ``pre_on_failure=False``: no pre where the change fails; ``keep_as_made``: the changed
        program as DaCe made it kept beside (``whole_program_pair``)."""

    def judged_whole(self, inst: Instance, past: int) -> bool:
        """Whether the instance's cutout is the whole program already (no audit needed)."""
        return False

    def variants(self, sdfg, inst: Instance) -> Iterator[CutoutPair]:
        """The instance's change made to all of another program (a reduced one), at every place
        it applies there: whole-pre and whole-post, the pair's verdict saying where it fails."""
        yield self.whole_program(sdfg, inst)


class Patterns(Change):
    """A pattern transformation: every match, cut out by DaCe's ``SDFGCutout``."""

    def __init__(self, spec: str, simplified: bool):
        self.spec, self.simplified = spec, simplified
        self.cls = load_transformation(spec)
        self.name = self.cls.__name__

    def instances(self, target, programs, sdfg_of, settings,
                  param_options: ParamOptions = ParamOptions()) -> List[Instance]:
        pinned = parse_settings(settings, self.cls) if settings else None
        self.declined = []
        found = enumerate_instances(target, programs, self.cls, self.spec,
                                    {p.name: sdfg_of(p.name, self.simplified) for p in programs}, pinned)
        if not self.simplified:     # the same match in another SDFG is another instance
            found = [dataclasses.replace(i, simplified=False, id=instance_id(f"{i.program}(unsimplified)",
                                                                             self.name, i.match)) for i in found]
        if param_options.mode == "default":
            return found
        return [variant for inst in found
                for variant in self.param_variants(sdfg_of(inst.program, self.simplified), inst, sorted(pinned or {}),
                                                   param_options)]

    def param_space(self, sdfg, inst: Instance, pinned=(), max_size: int = 16) -> params.Space:
        """The parameter space of the instance's match (``params.space``)."""
        return params.space(self.cls, rebuild_transformation(self.cls, _defaults_match(inst), sdfg), sdfg, pinned,
                            max_size)

    def param_variants(self, sdfg, inst: Instance, pinned, options: ParamOptions) -> List[Instance]:
        """The instance once per parameter variant ``--params`` asks for, the defaults first; a
        variant's id is the match's plus a short hash of its parameters. A variant the
        transformation declines at its match in the program (its ``can_be_applied`` says no
        with those values) is not planned: it goes to ``declined`` (a verdict would say only
        that it does not apply there)."""
        space = self.param_space(sdfg, inst, pinned, options.max_size)
        found = []
        for values in params.variants(space, options.mode, options.seed, inst.id):
            try:
                variant = self.with_params(inst, values)
            except ValueError as exc:    # a value of the wrong type for its property: the domain's defect
                warnings.warn(f"{inst.id}: parameter variant left out: {exc}")
                continue
            if values and not can_apply(rebuild_transformation(self.cls, copy.deepcopy(variant.match), sdfg), sdfg):
                self.declined.append({"id": variant.id, "match": inst.match_id, "params": dict(values)})
                continue
            found.append(variant)
        return found

    def with_params(self, inst: Instance, values: Dict) -> Instance:
        """The instance's match with the given parameters (those of ``inst`` replaced)."""
        base_id, base = inst.match_id, _defaults_match(inst)
        if not values:
            return dataclasses.replace(inst, id=base_id, match=base, params={}, base="",
                                       description=inst.description.split(PARAMS_MARK)[0])
        return dataclasses.replace(inst, id=base_id + params.variant_suffix(values), params=dict(values),
                                   base=base_id, match=params.variant_match(self.cls, base, values),
                                   description=f"{inst.description.split(PARAMS_MARK)[0]}{PARAMS_MARK}"
                                               f"{params.describe(values)}")

    def extract(self, program_sdfg, inst, past, before_whole=None):
        return extract(program_sdfg, inst, self.cls, past=past)      # its cutouts are never the whole program

    def whole_program(self, program_sdfg, inst, pre_on_failure=True, keep_as_made=False):
        return transformed_program(program_sdfg, inst, self.cls, pre_on_failure, keep_as_made)

    def variants(self, sdfg, inst):
        # the instance's settings, as the DaCe that wrote them wrote them, at each place of this
        # program (its other properties at their defaults, as the match's JSON leaves them)
        settings = match_settings(inst.match)
        written_by = {"dace_version": inst.match["dace_version"]} if inst.match.get("dace_version") else {}
        for xform in list(pattern_matches(sdfg, self.cls, None)):
            place = {k: v for k, v in json.loads(json.dumps(xform.to_json())).items() if k in MATCH_PLACE_KEYS}
            match = {**place, **settings, **written_by}
            try:
                yield self.whole_program(sdfg, dataclasses.replace(inst, match=match))
            except Unsupported:      # it does not match in a copy: no variant there
                continue


class Passes(Change):
    """A pass or pipeline: one instance per SDFG of a program it changed (the top level and each
    nested SDFG), on the program as the frontend wrote it (simplify has been applied to every
    simplified program already: it would leave nothing to do)."""

    simplified = False

    def __init__(self, pspec: "passes.PassSpec"):
        self.pspec, self.spec, self.name = pspec, pspec.spec, pspec.name
        self.applied = AppliedOnce(self.apply, _pass_identity(pspec))

    def apply(self, sdfg) -> None:
        passes.run_pass(self.pspec, sdfg)

    def instances(self, target, programs, sdfg_of, settings,
                  param_options: ParamOptions = ParamOptions()) -> List[Instance]:
        if settings:
            raise ConfigError(f"--set: {self.name} is a pass; --set gives properties of a pattern transformation")
        found = []
        for program in programs:
            pre = sdfg_of(program.name, False)
            try:
                post = passes.applied_copy(self.pspec, pre)
            except Exception as exc:  # noqa: BLE001 -- judged as the whole program: FAILED_TO_APPLY
                changed, failure = [""], f" (it raises: {type(exc).__name__})"
            else:
                changed, failure = passes.changed_paths(pre, post), ""
                self.applied.offer(pre, post)      # every instance judged starts from it
            for path in changed:
                match = {"pass": self.name, "sdfg": path}
                where = (f"nested SDFG {path}" if path else "the top-level SDFG") + failure
                found.append(Instance(id=instance_id(program.name, self.name, match), target=target.name,
                                      program=program.name, transformation=self.name, transformation_spec=self.spec,
                                      match=match, description=f"{self.name} changes {where}", simplified=False))
        found.sort(key=lambda inst: (inst.program, inst.id))
        return found

    def extract(self, program_sdfg, inst, past, before_whole=None):
        return extract_change(program_sdfg, inst, self.applied, past=past, before_whole=before_whole)

    def whole_program(self, program_sdfg, inst, pre_on_failure=True, keep_as_made=False):
        pair = whole_program_pair(program_sdfg, f"{inst.id}-whole", changed=self.applied(program_sdfg),
                                  pre_on_failure=pre_on_failure, keep_as_made=keep_as_made)
        pair.instance = dataclasses.replace(inst, id=f"{inst.id}-whole")
        pair.translated_match = dict(inst.match)
        return pair

    def judged_whole(self, inst, past) -> bool:
        return past > 0 or not inst.match.get("sdfg")


def _pass_identity(pspec: "passes.PassSpec") -> str:
    """A pass by its spec and the code of the file that defines it."""
    source = inspect.getsourcefile(pspec.cls)
    code = hashlib.sha256(Path(source).read_bytes()).hexdigest()[:24] if source and Path(source).is_file() else ""
    return json.dumps([pspec.spec, pspec.cls.__module__, pspec.cls.__qualname__, code])


def _defaults_match(inst: Instance) -> Dict:
    """The instance's match with the properties its variant sets back at their defaults."""
    return {k: v for k, v in inst.match.items() if k not in inst.params}


def load_change(spec: str, simplified: bool = True) -> Change:
    """The change a ``--transformation`` value names: a pass (``simplify``, a pass class by name,
    ``module:Class`` of a ``Pass``) or a pattern transformation."""
    pspec = passes.find_pass(spec)
    return Passes(pspec) if pspec is not None else Patterns(spec, simplified)
