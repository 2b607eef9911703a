"""Record a recipe: run it once with DaCe's entry points instrumented, and keep every step.

A *step* is the outermost change the recipe made through DaCe: a pattern or subgraph
transformation's ``apply`` (however it was reached: ``apply_to``, ``apply_pattern``,
``apply_transformations_repeated``, a pass that applies patterns, ``auto_optimize``), or a
modifying pass's ``apply_pass`` (a member of ``simplify``, a pass of the user's own).
Pipelines and the passes that only match and apply patterns are not steps: what they apply
is. A change made inside a transformation's step (one that applies another) is part of it; the
patterns a pass applies are steps of their own too (``within`` that pass's step).

Kept per step: the program just before it (its pickle, in a content-addressed store), after
it for a pass (a pattern step is applied again, in a cutout or the whole program), the class,
its properties and match (``to_json``, relative to the program's root SDFG), where the recipe
called it (``file:line``) and the chain of DaCe calls it came through. A step that raised is
kept with its traceback; the recipe ends there.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import inspect
import json
import pickle
import time
import traceback
import zlib
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from ..core.errors import ConfigError
from ..core.files import write_atomic, write_json
from ..dacecompat import copy_sdfg
from ..plan.instances import class_spec

RECORDING = "recording.json"
# a recipe that goes on making steps is stopped there (DaCe 2.0's
# apply_transformations_once_everywhere([MapTiling]) tiles its own tiles without end)
MAX_STEPS = 3000
PRINTED_KEPT = 20000
PROGRAMS = "programs"

# the DaCe calls a step's chain names (besides the recipe's own frames and the pipelines)
ENTRY_POINTS = frozenset({
    "auto_optimize", "greedy_fuse", "tile_wcrs", "simplify", "apply_transformations",
    "apply_transformations_repeated", "apply_transformations_once_everywhere", "apply_to",
    "apply_gpu_transformations", "apply_fpga_transformations", "expand_library_nodes", "move_small_arrays_to_stack",
})


@dataclasses.dataclass
class Step:
    """One change the recipe made (``kind``: pattern, subgraph or pass)."""

    index: int                      # 1-based, in the order the recipe made them
    kind: str
    name: str                       # the class's name
    spec: str                       # how to load the class again (a DaCe name, module:Class, file.py:Class)
    match: Dict[str, Any]           # a pattern's to_json (its place and properties); a pass's properties
    before: str                     # the program just before the step (a digest in the store)
    after: str = ""                 # just after it (a pass's; '' for a pattern, applied again)
    where: str = ""                 # the recipe's line that made it: file:line (function)
    chain: List[str] = dataclasses.field(default_factory=list)   # the calls it came through, outermost first
    error: str = ""                 # the traceback where the step raised
    within: int = 0                 # the pass step this one happened inside (0: none)
    unjudgeable: str = ""           # why the step cannot be judged alone ('' where it can)
    seconds: float = 0.0
    guids: Dict[str, str] = dataclasses.field(default_factory=dict)   # a pattern's nodes by key (to replay it)
    ids: int = 0                    # the seed of the GUIDs of the nodes the step made (``element_ids``)

    def to_json(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "Step":
        return cls(**obj)

    def describe(self) -> str:
        """The step for a table: what, where in the recipe, through which calls."""
        through = " > ".join(self.chain)
        return f"{self.name}" + (f" at {self.where}" if self.where else "") + (f" via {through}" if through else "")


@dataclasses.dataclass
class Recording:
    """What a recipe did to one program."""

    recipe: str                     # the recipe spec
    program: str
    original: str                   # digests in the store
    final: str
    steps: List[Step]
    error: str = ""                 # the recipe raised (at a step, or in its own code)
    seconds: float = 0.0
    store: str = ""                 # the folder the programs are kept in
    printed: str = ""               # what the recipe printed while it ran (its end)

    def to_json(self) -> Dict[str, Any]:
        return {**dataclasses.asdict(self), "steps": [s.to_json() for s in self.steps]}

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "Recording":
        return cls(**{**obj, "steps": [Step.from_json(s) for s in obj["steps"]]})

    def step(self, index: int) -> Step:
        return self.steps[index - 1]


# the GUIDs a step gives the nodes it makes: this mark, the step's seed, a count (DaCe's own are
# random version-4 UUIDs, which never carry it)
GUID_MARK = 0x6867


@contextlib.contextmanager
def element_ids(seed: int):
    """DaCe's new nodes, states and memlets numbered from ``seed`` instead of at random while a
    step runs: the same step made again (``replay``) gives its nodes the GUIDs the recording
    has, so a later step's match finds them."""
    import itertools
    import uuid

    original, count = uuid.uuid4, itertools.count()
    uuid.uuid4 = lambda: uuid.UUID(int=(GUID_MARK << 112) | (seed << 48) | next(count))
    try:
        yield
    finally:
        uuid.uuid4 = original


class RecipeStopped(Exception):
    """Raised into the recipe where it goes on making steps."""


def judged_again(step: Step) -> bool:
    """A pattern transformation with its match: applied again (in a cutout, or the whole
    program before it) where it is judged; every other step is judged as the recipe left it."""
    return step.kind == "pattern" and not step.unjudgeable and not step.error


# ---------------------------------------------------------------- the recipe itself
def load_recipe(spec: str) -> Callable:
    """The function a ``file.py:function`` or ``package.module:function`` value names."""
    from ..targets.loaders import load_attribute

    func = load_attribute(spec, "--recipe", "function")
    if not callable(func):
        raise ConfigError(f"--recipe {spec!r}: {spec.rpartition(':')[2]!r} is not a function")
    return func


def recipe_identity(spec: str) -> str:
    """The recipe by its spec and the code of the file that defines it."""
    func = load_recipe(spec)
    source = inspect.getsourcefile(func)
    code = Path(source).read_bytes() if source and Path(source).is_file() else b""
    return json.dumps([spec, hashlib.sha256(code).hexdigest()[:24]])


# ---------------------------------------------------------------- the store of programs
class Store:
    """Programs kept by the digest of their pickle, compressed, in ``folder/programs``."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def put(self, pickled: bytes) -> str:
        digest = hashlib.sha256(pickled).hexdigest()[:20]
        path = self.path(digest)
        if not path.is_file():
            write_atomic(path, zlib.compress(pickled, 1))
        return digest

    def path(self, digest: str) -> Path:
        return self.folder / PROGRAMS / f"{digest}.pickle.z"

    def pickled(self, digest: str) -> bytes:
        return zlib.decompress(self.path(digest).read_bytes())

    def program(self, digest: str, name: str):
        """A fresh copy of a kept program, named ``name``."""
        program = pickle.loads(self.pickled(digest))
        program.name = name
        return program

    def recording(self) -> Optional[Recording]:
        path = self.folder / RECORDING
        if not path.is_file():
            return None
        try:
            return Recording.from_json(json.loads(path.read_text()))
        except (ValueError, TypeError, KeyError):     # a damaged recording is made again
            return None

    def keep(self, recording: Recording) -> None:
        write_json(self.folder / RECORDING, recording.to_json())


# ---------------------------------------------------------------- instrumentation
def _root(sdfg):
    while getattr(sdfg, "parent_sdfg", None) is not None:
        sdfg = sdfg.parent_sdfg
    return sdfg


class Recorder:
    """Instruments DaCe while a recipe runs on ``root`` and keeps its steps in ``store``."""

    def __init__(self, root, store: Store, recipe: Callable):
        self.root, self.store = root, store
        self.entry = getattr(recipe, "__code__", None)      # the chain starts at the recipe's own frame
        recipe_files = [inspect.getsourcefile(recipe) or ""]
        self.recipe_files = {str(Path(f).resolve()) for f in recipe_files}
        self.steps: List[Step] = []
        self._active: List[str] = []       # the kinds of the steps and containers under way, outermost first
        self._within: List[int] = []       # and their numbers
        self._order = 0
        self._patched: List[tuple] = []
        import dace

        self._dace_dir = str(Path(dace.__file__).parent.resolve())
        self._own_dir = str(Path(__file__).parents[1].resolve())

    # -- patching
    def __enter__(self) -> "Recorder":
        from dace.transformation import pass_pipeline as ppl
        from dace.transformation.transformation import PatternTransformation, SubgraphTransformation

        from ..plan.instances import builtin_transformations
        from ..plan.passes import _subclasses

        builtin_transformations()          # every DaCe transformation module imported, so every class is patched
        for kind, base, method in (("pattern", PatternTransformation, "apply"),
                                   ("subgraph", SubgraphTransformation, "apply"),
                                   ("pass", ppl.Pass, "apply_pass")):
            for cls in [base] + _subclasses(base):
                self._patch_class(cls, kind, method)
            self._watch_new_classes(base, kind, method)
        return self

    def __exit__(self, *exc) -> None:
        for cls, method, original in reversed(self._patched):
            if original is None:
                delattr(cls, method)
            else:
                setattr(cls, method, original)
        self._patched.clear()

    def _patch_class(self, cls: type, kind: str, method: str) -> None:
        if method in cls.__dict__:
            self._patch(cls, method, "container" if self._container(cls, kind) else kind)

    def _watch_new_classes(self, base: type, kind: str, method: str) -> None:
        """A class the recipe defines or first imports while it runs (a transformation of its
        own, imported inside its function) is instrumented as it is made: otherwise what it
        applies inside would be taken for its steps."""
        recorder = self

        def made(cls, **kwargs):
            super(base, cls).__init_subclass__(**kwargs)
            recorder._patch_class(cls, kind, method)

        self._patched.append((base, "__init_subclass__", base.__dict__.get("__init_subclass__")))
        base.__init_subclass__ = classmethod(made)

    @staticmethod
    def _container(cls: type, kind: str) -> bool:
        """A pipeline, or a pass that matches and applies patterns: what it applies are the steps."""
        if kind != "pass":
            return False
        from dace.transformation import pass_pipeline as ppl
        from dace.transformation.transformation import PatternTransformation, SubgraphTransformation

        return (issubclass(cls, (ppl.Pipeline, PatternTransformation, SubgraphTransformation))
                or cls.__module__.endswith("passes.pattern_matching"))

    def _patch(self, cls: type, method: str, kind: str) -> None:
        original = cls.__dict__[method]
        recorder = self

        def instrumented(this, *args, **kwargs):
            return recorder._step(this, kind, args, lambda: original(this, *args, **kwargs))

        instrumented.__wrapped__ = original
        setattr(cls, method, instrumented)
        self._patched.append((cls, method, original))

    # -- one step
    def _step(self, xform, kind: str, args: tuple, call: Callable):
        if kind == "container":
            self._active.append(kind)
            try:
                return call()
            finally:
                self._active.pop()
        sdfg = self._sdfg_of(xform, kind, args)
        if self._part_of_another(kind) or sdfg is None or _root(sdfg) is not self.root or \
                (kind == "pass" and not self._modifies(xform)):
            return call()          # part of the step around it, another program's, or an analysis
        if self._order >= MAX_STEPS:
            raise RecipeStopped(f"the recipe was stopped at its step {MAX_STEPS + 1}: a recipe that makes more than "
                                f"{MAX_STEPS} steps is taken not to end ({type(xform).__name__} was next)")
        self._order += 1
        started = time.monotonic()
        before = self._pickled()          # kept only for a step that changed something
        step = Step(index=self._order, kind=kind, name=type(xform).__name__, spec=class_spec(type(xform)),
                    match={}, before="", within=self._within[-1] if self._within else 0)
        step.where, step.chain = self._call_site()
        step.match, step.unjudgeable = self._match(xform, kind)
        step.guids = self._guids(xform) if kind == "pattern" and not step.unjudgeable else {}
        self._active.append(kind)
        self._within.append(step.index)   # (a container's steps never get here: they are not numbered)
        step.ids = self._order
        try:
            with element_ids(step.ids):
                result = call()
        except Exception:
            step.before = self.store.put(before)
            step.error = traceback.format_exc()
            step.seconds = round(time.monotonic() - started, 3)
            self.steps.append(step)
            raise
        finally:
            self._active.pop()
            self._within.pop()
        if kind == "pass" and result is None:      # DaCe's passes say they changed nothing so
            return result
        step.before = self.store.put(before)
        if not judged_again(step):       # judged on the program just before and just after it
            step.after = self._snapshot()
        step.seconds = round(time.monotonic() - started, 3)
        self.steps.append(step)
        return result

    def _part_of_another(self, kind: str) -> bool:
        """Inside a transformation, everything is part of it; inside a pass, so is every
        other pass and every pattern it applies itself, but not the patterns a pattern-matching
        pass applies for it (FullMapFusion's MapFusion, one step each)."""
        steps = [k for k in self._active if k != "container"]
        if not steps:
            return False
        if steps[-1] != "pass" or kind == "pass":
            return True
        return self._active[-1] != "container"

    def numbered(self) -> List[Step]:
        """The steps in the order they began, numbered from 1 (a pass's own steps after it)."""
        ordered = sorted(self.steps, key=lambda s: s.index)
        number = {s.index: n for n, s in enumerate(ordered, 1)}
        return [dataclasses.replace(s, index=number[s.index], within=number.get(s.within, 0)) for s in ordered]

    @staticmethod
    def _sdfg_of(xform, kind: str, args: tuple):
        if kind == "pattern":
            return args[1] if len(args) > 1 else getattr(xform, "_sdfg", None)
        return args[0] if args else None

    @staticmethod
    def _modifies(p) -> bool:
        from dace.transformation import pass_pipeline as ppl

        try:
            return p.modifies() != ppl.Modifies.Nothing
        except Exception:  # noqa: BLE001 -- a pass that cannot say: taken to modify
            return True

    def _pickled(self) -> bytes:
        return pickle.dumps(self.root, protocol=pickle.HIGHEST_PROTOCOL)

    def _snapshot(self) -> str:
        return self.store.put(self._pickled())

    def _match(self, xform, kind: str) -> tuple:
        """The step's properties and place, and why it cannot be judged alone where it cannot."""
        try:
            match = json.loads(json.dumps(xform.to_json(), default=str))
        except Exception as exc:  # noqa: BLE001 -- a class without a serialisable match
            return {}, f"its match does not serialise ({type(exc).__name__}: {str(exc)[:120]})"
        if kind == "pattern" and not self._found_again(xform, match):
            return match, ("its match does not lead back to the nodes it was applied to (DaCe applied it "
                           "without a serialisable match): judged as the whole program before and after it")
        if kind == "subgraph":
            return match, "a subgraph transformation: judged as the whole program before and after it"
        return match, ""

    def _found_again(self, xform, match: Dict[str, Any]) -> bool:
        """Whether the match, read back into the program, binds the nodes the step binds and
        DaCe's own check accepts it there: what judging the step again rests on."""
        from ..cutout.extract import can_apply
        from ..plan.instances import bound_node, rebuild_transformation

        try:
            again = rebuild_transformation(type(xform), json.loads(json.dumps(match)), self.root)
            same = all(bound_node(again, key) is bound_node(xform, key) for key in type(xform)._get_pattern_nodes())
        except Exception:  # noqa: BLE001 -- a match that does not read back
            return False
        return same and can_apply(again, self.root)

    @staticmethod
    def _guids(xform) -> Dict[str, str]:
        """The GUIDs of the nodes the match binds (none where a node has none: a step the
        shrinking of a bisected recipe cannot replay)."""
        from ..plan.instances import bound_node

        nodes = {key: bound_node(xform, key) for key in type(xform)._get_pattern_nodes()}
        guids = {key: getattr(node, "guid", None) for key, node in nodes.items() if node is not None}
        return guids if guids and all(guids.values()) else {}

    def _call_site(self) -> tuple:
        """The recipe's line that made the step, and the chain of calls it came through."""
        chain: List[str] = []
        where = ""
        frame = inspect.currentframe()
        frames = []
        while frame is not None:
            frames.append(frame)
            frame = frame.f_back
        started = self.entry is None
        for frame in reversed(frames):              # outermost first
            started = started or frame.f_code is self.entry
            if not started:
                continue
            file = str(Path(frame.f_code.co_filename).resolve())
            name = frame.f_code.co_name
            if file in self.recipe_files or not (file.startswith(self._dace_dir) or file.startswith(self._own_dir)
                                                 or "/lib/python" in file):
                where = f"{Path(file).name}:{frame.f_lineno}"
                chain.append(f"{name} ({where})")
            elif file.startswith(self._dace_dir):
                this = frame.f_locals.get("self")
                if name == "apply_pass" and this is not None:
                    label = type(this).__name__
                elif name in ENTRY_POINTS:
                    label = name
                else:
                    continue
                if not chain or chain[-1] != label:
                    chain.append(label)
        return where, chain


def _another_sdfg(returned, program_sdfg) -> str:
    """Why a recipe that returned an SDFG other than its argument is not what was recorded."""
    import dace

    if isinstance(returned, dace.SDFG) and returned is not program_sdfg:
        return ("RecipeReturnedAnotherSDFG: the recipe returned an SDFG other than the one it was given; harnessgen "
                "records and judges what it did to the SDFG it was given: optimize that one in place")
    return ""


def record(program_sdfg, recipe_spec: str, store_dir: Path, program: str = "") -> Recording:
    """Run the recipe on a copy of ``program_sdfg`` and keep its steps; a recording already in
    ``store_dir`` is returned as it is."""
    store = Store(store_dir)
    kept = store.recording()
    if kept is not None:
        return kept
    program_sdfg = copy_sdfg(program_sdfg)
    func = load_recipe(recipe_spec)
    started = time.monotonic()
    recorder = Recorder(program_sdfg, store, func)
    original = recorder._snapshot()
    error = ""
    printed = io.StringIO()          # DaCe's "Applied 3 MapFusion." and the recipe's own prints
    with recorder, contextlib.redirect_stdout(printed):
        try:
            returned = func(program_sdfg)
        except Exception:  # noqa: BLE001 -- the recipe raised: its steps so far are judged, the failing one too
            error = traceback.format_exc()
        else:
            error = _another_sdfg(returned, program_sdfg)
    recording = Recording(recipe=recipe_spec, program=program, original=original, final=recorder._snapshot(),
                          steps=recorder.numbered(), error=error, seconds=round(time.monotonic() - started, 3),
                          store=str(store_dir), printed=printed.getvalue()[-PRINTED_KEPT:])
    store.keep(recording)
    return recording
