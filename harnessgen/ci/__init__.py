"""``harnessgen ci``: the pull-request check of a DaCe checkout. It reports only the bugs the
pull request brings.

1. **What changed.** The transformations and passes whose code differs between the head and
   the commit it branched from (``git merge-base``), by module and class: a class whose
   syntax tree differs (comments, formatting and docstrings do not count) or that is new, and
   every transformation of a module whose own code outside its classes differs.
2. **Exercised at head.** ``harnessgen fuzz`` of those classes with the head's DaCe on the
   user's programs (``--program``, ``--builtin``), then on program sources in turn, each only
   for the classes none before gave a judged instance (``--exercise``): the programs the
   checkout's own tests apply the class to (``harvest``; the head's tests and the base's,
   since a revert removes the test its fix added), our kernels, NPBench, generated programs.
   A class no program exercised is reported as **not exercised** (a JUnit skip), never as a pass.
3. **Judged again at base.** Each distinct bug's finding judged by the base's DaCe, as the
   cross-version judging does (``harnessgen rejudge``). Where the base shows the same
   finding, it is **pre-existing**: listed apart, it does not fail the check. Otherwise (the
   base passes, its transformation does not exist or match there, or it fails there with
   another error) it is **new**.
4. **Instances not judged.** An instance harnessgen could not judge at head (ERROR) is judged
   again at base: where the base judges it, the head's ERROR is **new** and fails the check as
   a bug does (a JUnit error): an ERROR can hide the bug the pull request brings.
5. **Output.** JUnit XML (what CI systems show), a Markdown summary for the pull request,
   ``ci.json``, and the exit code: 1 where a new bug or a new ERROR was found; 2 where the
   check cannot judge at all (a revision that does not build a trivial program, a requirement
   that cannot be installed).

Each revision is made runnable by ``revision``: its ``dace`` package exported from git, what
it requires and this environment lacks installed beside it, the trivial build checked; every
cache is keyed by its ``dace/`` tree's git id.
"""
from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence
from xml.etree import ElementTree

from ..bugs.cluster import bug_rows
from ..bugs.version_verdicts import STILL_PRESENT
from ..bugs.versions import rejudge_in
from ..core.errors import ConfigError
from ..core.files import write_atomic, write_json
from .harvest import NPBENCH_TESTS, harvest
from .harvest_plugin import INDEX
from .revision import PACKAGE, Revision, git, prepare

# where programs for a changed class come from, in this order, each only for the classes the
# ones before gave no judged instance: the checkout's own tests (head's and base's), our
# kernels, NPBench (harnessgen's npbench target), programs generated for the classes
EXERCISE = ("tests", "kernels", "npbench", "generated")
SOURCES = EXERCISE + ("npbench-tests",)
# what makes a bug pre-existing: the base shows the same finding. Where the base fails at the
# same place with another error (FAILS_OTHERWISE), the pull request changed how the program
# fails: StripMining's reverted fix turns one invalid SDFG into another. That is the pull
# request's, and new.
SHOWN_AT_BASE = (STILL_PRESENT,)


@dataclasses.dataclass
class Changed:
    """A transformation or pass whose code changed between the revisions."""

    module: str                      # dace.transformation.dataflow.tiling
    name: str                        # MapTiling
    why: str                         # added, changed, module changed
    needs: List[str] = dataclasses.field(default_factory=list)   # a pass's constructor arguments without default

    @property
    def spec(self) -> str:
        return f"{self.module}:{self.name}"


@dataclasses.dataclass
class CiBug:
    """A distinct bug found at head, with what the base made of it."""

    id: str
    kind: str
    transformation: str
    program: str
    description: str
    instances: int
    reproducer: str
    base_verdict: str = ""
    base_reason: str = ""
    dace_alone: str = ""             # CONFIRMED: DaCe alone shows it on the whole program
    shown_by: str = ""               # the program(s) that show it: for a test's program, the test

    @property
    def new(self) -> bool:
        return self.base_verdict not in SHOWN_AT_BASE


@dataclasses.dataclass
class CiError:
    """An instance harnessgen could not judge at head, with what the base made of it."""

    id: str
    transformation: str
    program: str
    reason: str
    base_verdict: str = ""           # the instance's verdict at base; NOT_PLANNED where it has none there

    @property
    def new(self) -> bool:
        return self.base_verdict != "ERROR"


@dataclasses.dataclass
class CiOptions:
    repo: Path
    base: str
    head: str = "HEAD"
    programs: Sequence[str] = ()     # the user's, judged for every changed class
    exercise: Sequence[str] = EXERCISE
    bound_s: float = 1800.0          # no program source starts after this (from the command's start)
    time_s: float = 10.0             # fuzzing per instance
    budget_s: float = 600.0          # no instance of a program's run starts after this
    params: str = "default"
    jobs: int = os.cpu_count() or 1  # worker processes of each run
    audit_time_s: float = 15.0       # the whole-program audit of each instance (fuzz's default is 60)
    out: Path = Path(".harnessgen/ci")
    python: Path = Path(sys.executable)
    rejudge_timeout_s: float = 600.0


@dataclasses.dataclass
class NotExercised:
    """A changed class no program gave a judged instance of: shown, never a silent pass."""

    module: str
    name: str
    tried: str                       # the program sources tried
    why: str = ""                    # where no program could: why

    @property
    def reason(self) -> str:
        if self.why:
            return f"{self.name} changed, but {self.why}"
        return (f"{self.name} changed, but no program gave it an instance harnessgen judged (tried: {self.tried}); "
                f"add a test that applies it, or give --program")


@dataclasses.dataclass
class CiResult:
    base: str
    head: str
    changed: List[Changed]
    runs: List[Dict]                 # per program: its folder, verdict counts and instances
    bugs: List[CiBug]
    seconds: float = 0.0
    errors: List[CiError] = dataclasses.field(default_factory=list)
    not_exercised: List[NotExercised] = dataclasses.field(default_factory=list)

    @property
    def new(self) -> List[CiBug]:
        return [b for b in self.bugs if b.new]

    @property
    def new_errors(self) -> List[CiError]:
        return [e for e in self.errors if e.new]

    @property
    def exit_code(self) -> int:
        return 1 if self.new or self.new_errors else 0

    def to_json(self) -> Dict:
        return {"base": self.base, "head": self.head, "changed": [dataclasses.asdict(c) for c in self.changed],
                "runs": self.runs, "bugs": [{**dataclasses.asdict(b), "new": b.new} for b in self.bugs],
                "errors": [{**dataclasses.asdict(e), "new": e.new} for e in self.errors],
                "not_exercised": [dataclasses.asdict(n) for n in self.not_exercised],
                "new": len(self.new), "new_errors": len(self.new_errors), "seconds": self.seconds}


# ---------------------------------------------------------------- what changed
def changed_classes(repo: Path, base: str, head: str) -> List[Changed]:
    """Every class of the package whose code differs between ``base`` and ``head`` (whether it
    is a transformation is decided at head, ``transformations_among``)."""
    files = git(repo, "diff", "--name-only", base, head, "--", f"{PACKAGE}/").split()
    found: List[Changed] = []
    for path in sorted(f for f in files if f.endswith(".py")):
        module = path[:-3].replace("/", ".").removesuffix(".__init__")
        before, after = _classes(repo, base, path), _classes(repo, head, path)
        if after is None:
            continue                                  # removed at head: nothing to judge
        module_changed = before is not None and before.get("") != after.get("")
        for name in sorted(n for n in after if n):
            if before is None or name not in before:
                found.append(Changed(module, name, "added"))
            elif before[name] != after[name]:
                found.append(Changed(module, name, "changed"))
            elif module_changed:
                found.append(Changed(module, name, "module changed"))
    return found


def _classes(repo: Path, rev: str, path: str) -> Optional[Dict[str, str]]:
    """The top-level classes of a file at a revision by name, as syntax trees ('' : the rest of
    the module); None where the file is not there or does not parse."""
    proc = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    try:
        tree = ast.parse(proc.stdout)
    except SyntaxError:
        return None
    classes = {node.name: _code_of(node) for node in tree.body if isinstance(node, ast.ClassDef)}
    classes[""] = ast.dump(ast.Module([n for n in tree.body if not isinstance(n, ast.ClassDef)], []))
    return classes


def _code_of(node: ast.ClassDef) -> str:
    """A class's code with its docstrings left out: a pull request that only rewords them
    changes nothing DaCe runs."""
    copy = ast.parse(ast.unparse(node)).body[0]
    for inner in ast.walk(copy):
        body = getattr(inner, "body", None)
        if (isinstance(inner, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            inner.body = body[1:] or [ast.Pass()]
    return ast.dump(copy)


WHICH = r"""
import importlib, json, sys
from harnessgen.plan.passes import required_arguments
from dace.transformation import pass_pipeline as ppl
from dace.transformation.transformation import PatternTransformation
import dace
found = []
for module, name in json.loads(sys.argv[1]):
    try:
        cls = getattr(importlib.import_module(module), name)
    except Exception:
        continue
    if isinstance(cls, type) and (issubclass(cls, PatternTransformation) or issubclass(cls, ppl.Pass)) \
            and not getattr(cls, "__abstractmethods__", None):
        needs = [] if issubclass(cls, PatternTransformation) else required_arguments(cls)
        found.append([module, name, needs])
print(json.dumps({"dace": dace.__file__, "found": found}))
"""


def transformations_among(candidates: List[Changed], python: Path, head: Revision) -> List[Changed]:
    """The pattern transformations and passes among ``candidates``, as the head defines them
    (checked in a process of its own, that DaCe imported); a pass whose constructor needs
    arguments has them in ``needs`` (harnessgen cannot make it)."""
    if not candidates:
        return []
    proc = subprocess.run([str(python), "-c", WHICH, json.dumps([[c.module, c.name] for c in candidates])],
                          capture_output=True, text=True, env={**os.environ, **head.env}, timeout=600)
    if proc.returncode != 0:
        raise ConfigError(f"the {head.name} DaCe does not import: {(proc.stderr or '').strip().splitlines()[-1:]}")
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    if not Path(answer["dace"]).resolve().is_relative_to(head.root.resolve()):
        raise ConfigError(f"PYTHONPATH={head.root} did not put that DaCe first (dace came from {answer['dace']})")
    needs = {(module, name): list(args) for module, name, args in answer["found"]}
    return [dataclasses.replace(c, needs=needs[(c.module, c.name)]) for c in candidates if (c.module, c.name) in needs]


# ---------------------------------------------------------------- the check
def run_ci(options: CiOptions, say=print) -> CiResult:
    started = time.monotonic()
    repo = Path(options.repo).resolve()
    if not (repo / PACKAGE / "__init__.py").is_file():
        raise ConfigError(f"--dace {repo}: no {PACKAGE}/__init__.py there; give a DaCe git checkout")
    out = Path(options.out).resolve()
    base = prepare(repo, "base", options.base, out, options.python, say)
    head = prepare(repo, "head", options.head, out, options.python, say)
    # what the pull request changed: since the commit it branched from (the base may have moved on)
    since = git(repo, "merge-base", base.commit, head.commit).strip()
    changed = transformations_among(changed_classes(repo, since, head.commit), options.python, head)
    say(f"harnessgen ci: {len(changed)} transformation(s) and pass(es) changed between {base.commit[:10]} and "
        f"{head.commit[:10]}" + (": " + ", ".join(f"{c.name} ({c.why})" for c in changed) if changed else ""))
    state = _Judging(options, repo, out, base, head, since, changed, say)
    if changed:
        state.exercise(started)
        for bug in state.bugs:
            _judge_at_base(options, bug, base, out)
    result = CiResult(base.commit, head.commit, changed, state.runs, state.bugs,
                      round(time.monotonic() - started, 1), state.errors, state.not_exercised())
    write_json(out / "ci.json", result.to_json())
    return result


# the verdicts of instances that were not judged: a class with only these is not exercised yet
NOT_JUDGED = ("UNSUPPORTED", "ERROR", "BLOCKED", "BUILT")


class _Judging:
    """The changed classes judged at head, program source after program source (the user's
    first), each source only for the classes none before gave a judged instance."""

    def __init__(self, options, repo, out, base, head, since, changed, say):
        self.options, self.repo, self.out, self.say = options, repo, out, say
        self.base, self.head, self.since, self.changed = base, head, since, changed
        self.runs: List[Dict] = []
        self.bugs: List[CiBug] = []
        self.errors: List[CiError] = []
        self.judged: Dict[str, int] = {c.name: 0 for c in changed}
        self.tried: Dict[str, List[str]] = {c.name: [] for c in changed}

    def waiting(self) -> List[Changed]:
        return [c for c in self.changed if self.judged[c.name] == 0 and not c.needs]

    def exercise(self, started: float) -> None:
        deadline = started + self.options.bound_s
        for program in self.options.programs:
            self.judge(program, "yours", [c for c in self.changed if not c.needs], deadline)
        for source in self.options.exercise:
            classes = self.waiting()
            if not classes:
                return
            if time.monotonic() > deadline - 10:
                self.say(f"harnessgen ci: the bound ({self.options.bound_s:g} s) ended before {source}")
                return
            for program in self.programs_from(source, classes, deadline):
                self.judge(program, source, self.waiting(), deadline)

    def programs_from(self, source: str, classes: List[Changed], deadline: float) -> List[str]:
        pairs = [[c.module, c.name] for c in classes]
        for c in classes:
            self.tried[c.name].append(source)
        if source == "tests":
            found = harvest(self.repo, [self.head, self.base], self.head, self.since, pairs, self.options.python,
                            self.out / "harvest" / "tests", deadline)
            self.say(f"harnessgen ci: the checkout's tests gave {_counted(found.programs_of())} in {found.seconds:g} s")
            return [str(found.folder)] if found.programs_of() else []
        if source == "npbench-tests":
            found = harvest(self.repo, [self.head], self.head, self.since, pairs, self.options.python,
                            self.out / "harvest" / "npbench", deadline, under=NPBENCH_TESTS, select="all")
            self.say(f"harnessgen ci: the checkout's NPBench tests gave {_counted(found.programs_of())} in "
                     f"{found.seconds:g} s")
            return [str(found.folder)] if found.programs_of() else []
        return [source]

    def judge(self, program: str, source: str, classes: List[Changed], deadline: float) -> None:
        if not classes:
            return
        number = len(self.runs)
        budget = max(10.0, min(self.options.budget_s, deadline - time.monotonic()))
        folder = self.out / "head" / f"{number}-{_safe(Path(program).name if source != 'yours' else program)}"
        try:
            summary = _fuzz_at(self.options, self.head, program, folder, classes, budget=budget)
        except ConfigError as exc:
            if source == "yours":
                raise
            self.say(f"harnessgen ci: {source} gave nothing to judge: {str(exc)[:300]}")
            self.runs.append({"program": program, "source": source, "folder": str(folder), "verdicts": {},
                              "instances": 0, "judged": {}, "failed": str(exc)[:600],
                              "classes": [c.name for c in classes]})
            return
        run, found, failed = _read_run(program, folder, summary)
        run["source"], run["classes"] = source, [c.name for c in classes]
        self.runs.append(run)
        for name, count in run["judged"].items():
            if name in self.judged:
                self.judged[name] += count
        self.say(f"harnessgen ci: {program} ({source}): {run['instances']} instance(s)"
                 + "".join(f", {n} {v}" for v, n in run["verdicts"].items()))
        self.bugs += found
        if failed:
            _errors_at_base(self.options, program, number, failed, classes, self.base, self.out)
            self.errors += failed

    def not_exercised(self) -> List[NotExercised]:
        return [NotExercised(c.module, c.name, ", ".join(self.tried[c.name]) or "none", _cannot_make(c))
                for c in self.changed if self.judged[c.name] == 0]


def _cannot_make(change: Changed) -> str:
    if not change.needs:
        return ""
    return (f"it is a pass whose constructor needs {', '.join(change.needs)}, and harnessgen makes each pass without "
            "arguments: the passes that use it are judged where they changed")


def _counted(programs: Dict[str, List]) -> str:
    if not programs:
        return "no program"
    return ", ".join(f"{len(v)} program(s) of {k}" for k, v in sorted(programs.items()))


def _fuzz_at(options: CiOptions, side: Revision, program: str, folder: Path, changed: List[Changed],
             instances: Sequence[str] = (), budget: Optional[float] = None) -> Dict:
    """``harnessgen fuzz`` of the changed classes on one program with one revision's DaCe (only
    ``instances`` where given); its summary."""
    cmd = [str(options.python), "-m", "harnessgen", "fuzz", "--program", program,
           "--transformation", ",".join(c.spec for c in changed), "--time", f"{options.time_s:g}",
           "--budget", f"{budget or options.budget_s:g}", "--params", options.params, "--jobs", str(options.jobs),
           "--audit-time", f"{options.audit_time_s:g}", "--out", str(folder / "run"),
           "--work-dir", str(_work_dir(options, side)), "--crashes-dir", str(folder / "crashes"),
           "--corpus-dir", str(folder / "corpus"), "--no-progress", "--no-plots", "--fresh",
           *(["--instance", ",".join(instances)] if instances else [])]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **side.env})
    header = f"harnessgen fuzz with the {side.name} DaCe ({side.root}, dace/ tree {side.tree_id[:12]})\n"
    write_atomic(folder / "fuzz.log", (header + proc.stdout + proc.stderr).encode())
    if proc.returncode != 0:
        raise ConfigError(f"harnessgen fuzz --program {program} at {side.side} failed (exit {proc.returncode}); its "
                          f"output is in {folder / 'fuzz.log'}: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    return json.loads((folder / "run" / "summary.json").read_text())


def _work_dir(options: CiOptions, side: Revision) -> Path:
    """A revision's work folder (plans and builds), shared by its programs' runs and by every
    check of the same ``dace/`` tree: keyed by the tree's content, never by a version string."""
    return Path(options.out).resolve() / "work" / side.tree_id[:16]


def _read_run(program: str, folder: Path, summary: Dict):
    counts: Dict[str, int] = {}
    judged: Dict[str, int] = {}
    for row in summary.get("instances", []):
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
        if row["verdict"] not in NOT_JUDGED:
            name = row.get("transformation", "")
            judged[name] = judged.get(name, 0) + 1
    tests = _tests_of(program)
    found = [CiBug(id=row["id"], kind=row["kind"], transformation=row["transformation"], program=program,
                   description=row["description"], instances=row["instances"],
                   reproducer=str((folder / "run" / row["representative"]).resolve()),
                   dace_alone=row.get("dace_alone") or "",
                   shown_by="; ".join(tests.get(name, name) for name in row.get("programs") or []))
             for row in bug_rows(folder / "run")]
    failed = [CiError(id=row["id"], transformation=row.get("transformation", ""), program=program,
                      reason=(row.get("message") or "").strip()[:600])
              for row in summary.get("instances", []) if row["verdict"] == "ERROR"]
    return {"program": program, "folder": str(folder), "verdicts": dict(sorted(counts.items())),
            "instances": sum(counts.values()), "judged": dict(sorted(judged.items()))}, found, failed


def _tests_of(program: str) -> Dict[str, str]:
    """For programs a checkout's tests gave: program name -> the test and the revision it came from."""
    index = Path(program) / INDEX
    if not index.is_file():
        return {}
    entries = [json.loads(line) for line in index.read_text().splitlines() if line.strip()]
    return {Path(e["file"]).stem: f"{e['test']} ({e['source']})" for e in entries}


def _errors_at_base(options: CiOptions, program: str, number: int, errors: List[CiError], changed: List[Changed],
                    base: Revision, out: Path) -> None:
    """The instances harnessgen could not judge at head, judged at base: an ERROR there too is
    pre-existing (the tool's, or the program's); any other verdict, or an instance the base does
    not plan, makes the head's ERROR new."""
    folder = out / "base" / f"{number}-{_safe(Path(program).name)}"
    names = {e.transformation for e in errors}
    try:
        summary = _fuzz_at(options, base, program, folder, [c for c in changed if c.name in names] or changed,
                           [e.id for e in errors])
    except ConfigError as exc:      # the base plans none of them, or cannot run them at all
        for error in errors:
            error.base_verdict = f"NOT_PLANNED ({str(exc)[:200]})"
        return
    verdicts = {row["id"]: row["verdict"] for row in summary.get("instances", [])}
    for error in errors:
        error.base_verdict = verdicts.get(error.id, "NOT_PLANNED")


def _judge_at_base(options: CiOptions, bug: CiBug, base: Revision, out: Path) -> None:
    verdict = rejudge_in(options.python, Path(bug.reproducer), _work_dir(options, base), options.rejudge_timeout_s,
                         "base", env=base.env)
    bug.base_verdict, bug.base_reason = verdict.verdict, verdict.reason


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[-60:]


# ---------------------------------------------------------------- what CI shows
def junit(result: CiResult) -> bytes:
    """One test case per changed transformation and program; a failure per new bug, the
    pre-existing ones as skipped (shown, never failing)."""
    suite = ElementTree.Element("testsuite", name="harnessgen ci", time=f"{result.seconds:g}")
    cases = 0
    failures = skipped = errors = 0
    for run in result.runs:
        for change in result.changed:
            if change.name not in run.get("classes", [change.name]):
                continue
            cases += 1
            case = ElementTree.SubElement(suite, "testcase", classname=change.module, name=f"{change.name} on "
                                          f"{run['program']}")
            mine = [b for b in result.bugs if b.transformation == change.name and b.program == run["program"]]
            for bug in mine:
                text = (f"{bug.description}\nreproducer: {bug.reproducer}\npython {bug.reproducer}/repro.py\n"
                        f"base: {bug.base_verdict} {bug.base_reason}")
                if bug.new:
                    failures += 1
                    node = ElementTree.SubElement(case, "failure", message=f"new {bug.kind}: {bug.id}", type=bug.kind)
                else:
                    skipped += 1
                    node = ElementTree.SubElement(case, "skipped", message=f"pre-existing {bug.kind} (the base "
                                                  f"shows it: {bug.base_verdict}): {bug.id}")
                node.text = text
            for error in [e for e in result.errors if e.transformation == change.name and e.program == run["program"]]:
                if error.new:
                    errors += 1
                    node = ElementTree.SubElement(case, "error", message=f"new ERROR: {error.id} could not be judged "
                                                  f"at head (at base: {error.base_verdict})", type="ERROR")
                    node.text = error.reason
    for missing in result.not_exercised:
        cases += 1
        skipped += 1
        case = ElementTree.SubElement(suite, "testcase", classname=missing.module, name=f"{missing.name}: not exercised")
        ElementTree.SubElement(case, "skipped", message=f"not exercised: {missing.reason}")
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    suite.set("errors", str(errors))
    return ElementTree.tostring(suite, encoding="utf-8", xml_declaration=True)


def markdown(result: CiResult) -> str:
    title = f"## harnessgen: {len(result.new)} new bug(s)" if result.new else "## harnessgen: no new bug"
    if result.new_errors:
        title += f", {len(result.new_errors)} instance(s) not judged (new ERROR)"
    lines = [title, ""]
    if result.new_errors:
        # first: an instance not judged may hide the very bug the pull request brings
        lines += ["### Not judged at head (ERROR), judged at base", "",
                  "| instance | transformation | program | at base | why not judged |", "|---|---|---|---|---|"]
        lines += [f"| {e.id} | {e.transformation} | `{e.program}` | {e.base_verdict[:80]} | "
                  f"{e.reason.splitlines()[0][:200] if e.reason else ''} |" for e in result.new_errors]
        lines.append("")
    lines += [f"Base `{result.base[:10]}`, head `{result.head[:10]}`; {len(result.changed)} changed "
              f"transformation(s) and pass(es) judged in {result.seconds:g} s.", ""]
    if result.changed:
        lines += ["| changed | why |", "|---|---|"] + [f"| `{c.spec}` | {c.why} |" for c in result.changed] + [""]
    for run in result.runs:
        counts = ", ".join(f"{n} {v}" for v, n in run["verdicts"].items()) or "no instance"
        lines.append(f"- `{run['program']}` ({run.get('source', 'yours')}): {run['instances']} instance(s): {counts}")
    lines.append("")
    if result.not_exercised:
        lines += ["### Not exercised (no program gave them a judged instance; nothing is known of them)", ""]
        lines += [f"- `{n.module}:{n.name}`: {n.reason}" for n in result.not_exercised]
        lines.append("")
    if result.new:
        lines += ["### New bugs (the base does not show them)", "",
                  "| bug | kind | transformation | shown by | at base | DaCe alone | reproducer |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {b.id} | {b.kind} | {b.transformation} | `{b.shown_by or b.program}` | {b.base_verdict} | "
                  f"{b.dace_alone or '-'} | `python {b.reproducer}/repro.py` |" for b in result.new]
        lines.append("")
    old = [b for b in result.bugs if not b.new]
    if old:
        lines += ["### Pre-existing bugs (the base shows them too; they do not fail the check)", ""]
        lines += [f"- {b.id}: {b.kind} of {b.transformation} on `{b.shown_by or b.program}` ({b.base_verdict}"
                  f"{'; ' + b.dace_alone if b.dace_alone else ''})" for b in old]
        lines.append("")
    return "\n".join(lines)
