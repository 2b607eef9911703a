"""A recipe's steps as instances the ordinary pipeline judges (``RecipeSteps``, a ``Change``).

Each step is judged on the program as it was just before it (``program_before``):

* a pattern transformation with its match is cut out and applied again in the cutout, as every
  instance of that transformation is (``Patterns.extract``), and audited against the whole
  program before and after it;
* a pass, a subgraph transformation and a pattern applied without a match are judged on the
  whole program just before and just after the step, as the recipe left it;
* a step that raised is FAILED_TO_APPLY with the traceback it raised;
* the whole recipe is one more instance: the program before the recipe against the program after
  it, so that steps that are wrong only together are found (``bisect`` then names the first
  prefix of the steps that changes the results).

Every instance keeps ``Instance.step`` = ``{"store", "index"}`` (index 0: the whole recipe).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
from collections import OrderedDict
from pathlib import Path
from typing import Dict, List, Optional

from .. import __version__
from ..core import envs
from ..core.errors import ConfigError, Unsupported
from ..core.outcome import Outcome
from ..cutout.changes import Change, Patterns
from ..cutout.extract import CutoutPair, whole_program_pair
from ..dacecompat import dace_identity, keep_template
from ..plan.instances import Instance
from ..plan.params import ParamOptions
from . import record as record_module
from .record import Recording, Step, Store, judged_again, record, recipe_identity

PREFIX = "recipe:"
WHOLE = 0                 # the index of the whole recipe's instance
# what a recording was made by (read once: a process keys all its recordings alike)
RECORDER_CODE = hashlib.sha256(Path(record_module.__file__).read_bytes()).hexdigest()[:16]


def is_recipe(spec: str) -> bool:
    return spec.startswith(PREFIX)


def recipe_of(spec: str) -> str:
    return spec[len(PREFIX):]


class RecipeSteps(Change):
    """The steps a recipe takes on each program, and the whole recipe."""

    simplified = False         # a recipe starts from the program as its frontend wrote it

    def __init__(self, spec: str):
        self.spec = spec
        self.recipe = recipe_of(spec)
        self.name = self.recipe.rpartition(":")[2] or self.recipe
        self._patterns: Dict[str, Patterns] = {}
        self.recordings: Dict[str, Recording] = {}

    # -- planning
    def instances(self, target, programs, sdfg_of, settings,
                  param_options: ParamOptions = ParamOptions()) -> List[Instance]:
        if settings:
            raise ConfigError("--set: a recipe sets its transformations' properties itself")
        found: List[Instance] = []
        for program in programs:
            recording = self.record(program.name, sdfg_of(program.name, False), program.identity)
            found += instances_of(recording, target.name, self.spec)
        return found

    def record(self, program: str, program_sdfg, identity: str) -> Recording:
        """The recording of the recipe on ``program`` (made once, kept under the program cache
        by the program's content, the recipe's code, DaCe and harnessgen)."""

        if not identity:
            identity = hashlib.sha256(pickle.dumps(program_sdfg, protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()
        digest = hashlib.sha256(json.dumps([identity, recipe_identity(self.recipe), dace_identity(),
                                            __version__, RECORDER_CODE]).encode()).hexdigest()[:20]
        store = Path(envs.get("HARNESSGEN_PROGRAM_CACHE")).resolve() / "recipes" / digest
        recording = record(program_sdfg, self.recipe, store, program)
        self.recordings[program] = recording
        return recording

    # -- one instance
    def extract(self, program_sdfg, inst, past, before_whole=None) -> CutoutPair:
        step = step_of(inst)
        if step is not None and judged_again(step):
            return self._pattern(inst.transformation_spec).extract(program_sdfg, inst, past)
        if past:
            raise Unsupported(f"{inst.id}: the whole program was judged already; no larger cutout exists")
        if before_whole is not None:
            before_whole()
        return self.whole_program(program_sdfg, inst)

    def whole_program(self, program_sdfg, inst, pre_on_failure=True, keep_as_made=False) -> CutoutPair:
        step = step_of(inst)
        if step is not None and judged_again(step):
            return self._pattern(inst.transformation_spec).whole_program(program_sdfg, inst, pre_on_failure,
                                                                         keep_as_made)
        store = Store(Path(inst.step["store"]))
        if step is not None and step.error:
            pair = whole_program_pair(program_sdfg, inst.id)
            pair.verdict, pair.error = Outcome.FAILED_TO_APPLY, _raised(step.error)
        else:
            after = _recording(inst.step["store"]).final if step is None else step.after
            pair = whole_program_pair(program_sdfg, inst.id, changed=lambda name: store.program(after, name),
                                      keep_as_made=keep_as_made)
        pair.instance, pair.translated_match = inst, dict(inst.match)
        pair.grown_for = ("the whole recipe: the whole program" if step is None else
                          f"a {step.kind} step: the whole program before and after it")
        return pair

    def judged_whole(self, inst, past) -> bool:
        step = step_of(inst)
        return step is None or not judged_again(step)

    def variants(self, sdfg, inst):
        step = step_of(inst)
        if step is not None and judged_again(step):
            yield from self._pattern(inst.transformation_spec).variants(sdfg, inst)
        else:
            yield self.whole_program(sdfg, inst)

    def _pattern(self, spec: str) -> Patterns:
        if spec not in self._patterns:
            self._patterns[spec] = Patterns(spec, simplified=False)
        return self._patterns[spec]


def instances_of(recording: Recording, target: str, spec: str) -> List[Instance]:
    """The recording's instances, cheapest first: the steps judged in a cutout, in order; then
    the whole recipe; then the steps judged on the whole program."""
    store = recording.store
    tag = hashlib.sha256(json.dumps([store, recording.original, recording.final]).encode()).hexdigest()[:8]
    cut, whole = [], []
    for step in recording.steps:
        inst = Instance(id=f"step{step.index:04d}-{step.name}-{tag}", target=target, program=recording.program,
                        transformation=step.name, transformation_spec=step.spec if judged_again(step) else spec,
                        match=dict(step.match) if judged_again(step) else {},
                        description=f"step {step.index} of {len(recording.steps)}: {step.describe()}",
                        simplified=False, step={"store": store, "index": step.index})
        (cut if judged_again(step) else whole).append(inst)
    everything = Instance(id=f"recipe-{recording.recipe.rpartition(':')[2]}-{tag}", target=target,
                          program=recording.program, transformation="recipe", transformation_spec=spec, match={},
                          description=f"the whole recipe ({len(recording.steps)} steps)", simplified=False,
                          step={"store": store, "index": WHOLE})
    return cut + [everything] + whole


def is_whole_recipe(inst: Instance) -> bool:
    return bool(inst.step) and inst.step.get("index", WHOLE) == WHOLE


def recording_of(inst: Instance) -> Recording:
    return _recording(inst.step["store"])


def step_of(inst: Instance) -> Optional[Step]:
    """The recorded step an instance judges; None for the whole recipe."""
    index = inst.step.get("index", WHOLE)
    return None if index == WHOLE else _recording(inst.step["store"]).step(index)


# -- the programs a step is judged on, loaded once per process (a few at a time: CLOUDSC is large)
_RECORDINGS: Dict[str, Recording] = {}
_PROGRAMS: "OrderedDict[str, object]" = OrderedDict()
_PROGRAMS_KEPT = 4


def _recording(store: str) -> Recording:
    if store not in _RECORDINGS:
        recording = Store(Path(store)).recording()
        if recording is None:
            raise Unsupported(f"the recipe's recording in {store} is gone: run the recipe again")
        _RECORDINGS[store] = recording
    return _RECORDINGS[store]


def program_before(inst: Instance):
    """The program the instance is judged on: as it was just before its step, or before the
    whole recipe. Never changed in place: copies come from its pickle."""
    store, digest = inst.step["store"], _digest_before(inst)
    key = f"{store}/{digest}"
    if key in _PROGRAMS:
        _PROGRAMS.move_to_end(key)
        return _PROGRAMS[key]
    pickled = Store(Path(store)).pickled(digest)
    program = pickle.loads(pickled)
    keep_template(program, identity=program_key(inst), pickled=pickled)
    _PROGRAMS[key] = program
    while len(_PROGRAMS) > _PROGRAMS_KEPT:
        _PROGRAMS.popitem(last=False)
    return program


def program_key(inst: Instance) -> str:
    return f"recipe-program-{_digest_before(inst)}"


def _digest_before(inst: Instance) -> str:
    """The program the instance is judged on, as its digest in the recording's store."""
    step = step_of(inst)
    return _recording(inst.step["store"]).original if step is None else step.before


def _raised(trace: str) -> str:
    """A recorded traceback as a pair's error: the exception's line first, then the frames."""
    lines = trace.strip().splitlines()
    return "\n".join([lines[-1]] + lines[1:-1]) if lines else trace
