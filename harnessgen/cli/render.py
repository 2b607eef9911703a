"""How records look on a terminal: the one renderer every command and live display uses.

Each function turns a record (an ``InstanceResult``, a run's summary.json, a bugs.json row,
an enumeration row, an instance row) into rich markup; the commands print, the live displays
(``progress``) draw, and neither formats a record itself.
"""
from __future__ import annotations

import collections
import contextlib
import json
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..bugs.bug_report import shown_path
from ..bugs.cluster import bug_rows
from ..checks.pipeline_bisect import BisectRecord
from ..core import runlog
from ..core.evidence import SEEDS_ONLY, Evidence
from ..core.records import AUDIT_DEFERRED, InstanceResult, per_program, per_transformation
from ..core.versions import dace_source, source_version
from ..plan.params import describe
from ..prove import Proof

VERDICT_COLOURS = {"PASS": "green", "BUILT": "cyan", "BLOCKED": "yellow", "REPLAY_ERROR": "magenta",
                   "UNSUPPORTED": "yellow", "FLAKY": "yellow", "INVALID_INPUT": "yellow", "ERROR": "magenta",
                   "CUTOUT_MISSED": "bold white on red"}
# verdicts whose message is the news (a finding's is in its own line)
TOLD_VERDICTS = ("ERROR", "REPLAY_ERROR", "BLOCKED", "UNSUPPORTED", "BUILT", "CUTOUT_MISSED")


# the width tables are drawn at where the output is no terminal (a log, a pipe, CI): wide
# enough that names are not cut short
LOG_WIDTH = 200


def console() -> Console:
    """The console every command writes its lines to (standard error). Where that is no terminal,
    a line is never broken (a path split at 80 columns cannot be copied or grepped) and tables
    are drawn at ``LOG_WIDTH``."""
    terminal = Console(stderr=True, highlight=False)
    if terminal.is_terminal:
        return terminal
    return Console(stderr=True, highlight=False, soft_wrap=True, width=max(terminal.width, LOG_WIDTH))


def stdout_console() -> Console:
    """A console on standard output (a table a command prints as its result), unbroken and
    ``LOG_WIDTH`` wide where standard output is no terminal, as ``console`` is."""
    terminal = Console(highlight=False)
    if terminal.is_terminal:
        return terminal
    return Console(highlight=False, soft_wrap=True, width=max(terminal.width, LOG_WIDTH))


@contextlib.contextmanager
def stdout_kept_for_json():
    """Everything written to standard output inside (DaCe's warnings and prints, a compiler's
    output, at the level of the file descriptor) goes to standard error instead: a command whose
    output is JSON prints only JSON on standard output."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def opening_line(total: int, enumerating: Iterable[str], transformations: str, program: str) -> str:
    """A run's first count: the instances planned, and the transformations whose instances are
    still being enumerated beside the run (never "0 instance(s) of all" while they are)."""
    enumerating = list(enumerating)
    if not enumerating:
        return f"{total} instance(s) of {transformations} in {program}"
    return (f"{total} instance(s) planned so far in {program}; {len(enumerating)} transformation(s) of "
            f"{transformations} still being enumerated beside the run")


def dace_version() -> str:
    """The DaCe in use, as a planning line names it: its version and, for a source tree, where it
    is and its git revision."""
    source = dace_source()
    if source:
        import importlib.util

        tree = Path(importlib.util.find_spec("dace").origin).resolve().parent.parent
        return f"{source_version(tree) or 'unknown version'}, {source}"
    try:
        return version("dace")
    except PackageNotFoundError:
        return "not installed"


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# ------------------------------------------------------------------ one instance
def audit_lines(r: InstanceResult) -> List[str]:
    """The whole-program audit's line: what it judged, or that it comes after every match."""
    verdict = (r.audit or {}).get("verdict")
    if verdict in (None, "SKIPPED"):
        return []
    if verdict == AUDIT_DEFERRED:
        return ["    [dim]audit: whole program after every match has its verdict[/]"]
    if verdict == "ERROR":
        return [f"    [red]audit failed[/]: {escape(r.audit.get('reason', ''))} (log: {escape(r.audit.get('log', ''))})"]
    judged = f"on {r.audit['inputs']} input(s) " if "inputs" in r.audit else f"({r.audit.get('classification')}) "
    return [f"    audit: whole program {verdict} {judged}in {r.audit.get('seconds', 0.0):.1f} s"]


def audited_lines(r: InstanceResult, position: str = "") -> List[str]:
    """A deferred audit done: the instance's audit, and its verdict where the audit changed it."""
    colour = VERDICT_COLOURS.get(r.verdict, "red")
    where = f" {position}" if position else ""
    lines = [f"[{colour}]{r.verdict:<15}[/]{where} {escape(r.program)}/{escape(r.id)}  (audited)"]
    if r.verdict != "PASS" and r.message:
        lines.append(f"    {escape(r.message.splitlines()[0])}")
    return lines + audit_lines(r)


def result_lines(result: InstanceResult, position: str = "") -> List[str]:
    """An instance's verdict and what it rests on, one line each: the verdict (``position``: its
    place in the run, ``[3/40]``), its message, what a PASS rests on, the proof, each finding,
    the audit, the simplest parameters, the bisection."""
    r = result
    colour = VERDICT_COLOURS.get(r.verdict, "red")
    rate = f"{r.execs_per_sec:,.0f} execs/s" if r.execs_per_sec else ""
    if r.race_execs_per_sec:
        rate += f" (+ {r.race_execs_per_sec:,.0f}/s in race mode)"
    first = f", first finding after {r.seconds_to_first_finding:.1f} s" if r.seconds_to_first_finding is not None else ""
    where = f" {position}" if position else ""
    lines = [f"[{colour}]{r.verdict:<15}[/]{where} {escape(r.program)}/{escape(r.id)}  {r.execs:,} execs {rate}{first}"]
    if (r.verdict != "PASS" or r.same_pair_as) and r.message:
        lines.append(f"    {escape(r.message.splitlines()[0])}")
    evidence = Evidence.from_json(r.evidence)
    if r.verdict == "PASS" and evidence is not None:
        warn = evidence.kind == SEEDS_ONLY and evidence.meant_to_fuzz
        lines.append(f"    {'[yellow]' if warn else ''}{escape(evidence.describe())}{'[/]' if warn else ''}")
    for note in r.notes:
        lines.append(f"    note: {escape(note)}")
    if r.proof:
        lines.append(f"    proof: {escape(Proof.from_json(r.proof).summary())} ({r.proof['seconds']:.2f} s)")
    for finding in r.findings:
        seen = {True: ", observable in the whole program", False: ", latent: the whole program does not show it"}
        lines.append(f"    -> {finding['outcome']}: {escape(str(finding['path']))}  ({finding.get('raw_crashes', '?')} "
                     f"raw crash(es){seen.get(finding.get('observable'), '')})")
    lines += audit_lines(r)
    if r.params.get("simplest") is not None:
        lines.append(f"    parameters {describe(r.params['values'])}; the simplest that fail alike: "
                     f"{describe(r.params['simplest'])} ({r.params['tried']} tried in {r.params['seconds']:.1f} s"
                     + ("" if r.params["complete"] else ", out of time") + ")")
    if r.bisect:
        lines.append(f"    {escape(BisectRecord(**r.bisect).describe())} in {r.bisect['seconds']:.1f} s")
    return lines


# ------------------------------------------------------------------ planning
# what a run without --transformation judges
DEFAULT_TRANSFORMATIONS = "its default transformations (every built-in that matches, for a program of your own)"


def enumeration_line(row: Dict, seconds: float, cached: bool = False, count: Optional[int] = None) -> str:
    """One transformation's enumeration in one line."""
    name = escape(row.get("class_name") or row["spec"])
    found = row["instances"] if count is None else count
    where = ", from the plan cache" if cached else ""
    if row["status"] != "ok":
        return f"  [yellow]{name}: {row['status']}[/] ({escape(row['message'].splitlines()[0][:160])})"
    declined = len(row.get("declined", ()))
    pruned = f"; {declined} parameter variant(s) it declines at their match not planned" if declined else ""
    other = row.get("in_other_form")
    simplify = (f"; {other} in the simplified program: pass --simplify to test that form"
                if not found and other else "")
    return f"  {name}: {found} instance(s) ({seconds:.1f} s{where}{pruned}{simplify})"


# ------------------------------------------------------------------ a run's end
def declined_lines(xform_rows: List[Dict]) -> List[str]:
    """The parameter variants each transformation declines at their match (not planned)."""
    lines = []
    for row in xform_rows:
        declined = row.get("declined") or []
        if declined:
            lines.append(f"{escape(row.get('class_name') or row['spec'])}: {len(declined)} parameter variant(s) "
                         "not planned: the transformation declines them at their match")
            lines += [f"  {escape(d['id'])}: {escape(describe(d['params']))}" for d in declined]
    return lines


def build_check_lines(rows: List[Dict]) -> List[str]:
    """``instances --builds``: how many pres compile, and each that does not, with whose shape it is."""
    checked = [r for r in rows if "builds" in r]
    failing = [r for r in checked if not r["builds"]["pre"]]
    lines = [f"pre compiles for {len(checked) - len(failing)} of {len(checked)} cutout(s)"]
    for r in failing:
        whose = ("DaCe's: its code for the program fails alike" if r["builds"]["dace_made"] else
                 "[red]harnessgen's: the program compiles[/]" if r["builds"]["program"] else
                 "[red]harnessgen's: the program fails otherwise[/]")
        lines.append(f"  {escape(r['id'])}: {escape(r['builds']['error'])} ({whose})")
    return lines


def pass_evidence_text(row: Dict) -> str:
    """A per-transformation row's PASS verdicts by what they rest on (seeds only in yellow
    where afl-fuzz was meant to run)."""
    names = {"PROVEN": "proven", "FUZZED": "fuzzed", "SEEDS_ONLY": "seeds only"}
    parts = [f"{n} {names.get(kind, kind)}" for kind, n in row["pass_evidence"].items()]
    if row["not_fuzzed_as_meant"]:
        parts.append(f"[yellow]{row['not_fuzzed_as_meant']} not fuzzed as meant[/]")
    return ", ".join(parts)


def summary_table(results: List[InstanceResult]) -> Optional[Table]:
    """Per transformation: instances, verdicts, what PASS rests on, findings, median time to a verdict."""
    rows = per_transformation(results)
    if not rows:
        return None
    table = Table(title="verdicts per transformation")
    variants = any(row["param_variants"] for row in rows)
    proofs = any(row["proofs"] for row in rows)
    shared = any(row["same_pair"] for row in rows)
    columns = ("transformation", "instances") + (("distinct pairs",) if shared else ()) \
        + (("matches", "parameter variants") if variants else ()) \
        + ("verdicts", "PASS rests on") + (("proofs",) if proofs else ()) + ("findings", "median s to verdict")
    for col in columns:
        table.add_column(col, justify="left" if col in ("transformation", "verdicts", "PASS rests on", "proofs")
                         else "right")
    for row in rows:
        verdicts = ", ".join(f"{n} {v}" for v, n in row["verdicts"].items())
        table.add_row(row["transformation"], str(row["instances"]),
                      *((str(row["distinct_pairs"]),) if shared else ()),
                      *((str(row["matches"]), str(row["param_variants"])) if variants else ()), verdicts,
                      pass_evidence_text(row),
                      *((", ".join(f"{n} {v}" for v, n in row["proofs"].items()),) if proofs else ()),
                      str(row["findings"]), f"{row['median_verdict_seconds']:.1f}")
    return table


def program_table(results: List[InstanceResult], run_dir: Path) -> Optional[Table]:
    """Per program, where a run judged several: instances, verdicts, findings and distinct bugs
    (CONFIRMED: DaCe alone shows them on the whole program)."""
    bugs_file = Path(run_dir) / "bugs.json"
    bugs = json.loads(bugs_file.read_text()).get("bugs", []) if bugs_file.is_file() else []
    rows = per_program(results, bugs)
    if len(rows) < 2:
        return None
    table = Table(title="verdicts per program")
    for col in ("program", "instances", "verdicts", "findings", "distinct bugs", "CONFIRMED"):
        table.add_column(col, justify="left" if col in ("program", "verdicts") else "right")
    for row in rows:
        table.add_row(row["program"], str(row["instances"]),
                      ", ".join(f"{n} {v}" for v, n in sorted(row["verdicts"].items())), str(row["findings"]),
                      str(row["bugs"]), str(row["confirmed"]))
    return table


def reproducer_lines(results: List[InstanceResult]) -> List[str]:
    reproducers = [(row["transformation"], path) for row in per_transformation(results) for path in row["reproducers"]]
    if not reproducers:
        return []
    return ["reproducers (run `make replay CRASH=<dir>` or `python <dir>/repro.py`):"] + \
        [f"  {escape(name)}: {escape(str(path))}" for name, path in reproducers]


def bug_lines(run_dir: Path) -> List[str]:
    """The "distinct bugs" of a run (from its bugs.json), CONFIRMED first, and the clusters left
    out because none of their reproducers replays."""
    rows = bug_rows(run_dir)
    bugs_file = Path(run_dir) / "bugs.json"
    dropped = json.loads(bugs_file.read_text()).get("not_replaying", []) if bugs_file.is_file() else []
    if not rows:
        return _not_replaying_lines(dropped)
    statuses = collections.Counter(r["dace_alone"] for r in rows)
    lines = [f"[bold]distinct bugs:[/] {sum(r['findings'] for r in rows)} finding(s) in {len(rows)}; "
             f"{statuses['CONFIRMED']} CONFIRMED (DaCe alone shows it on the whole program: "
             f"bugs/<id>/confirm/confirm.py), {statuses['CUTOUT ONLY']} CUTOUT ONLY"
             + (f", {statuses['NOT JUDGED']} NOT JUDGED on the whole program yet (`harnessgen bugs <run>` judges "
                "them)" if statuses["NOT JUDGED"] else "")]
    for row in rows:
        where = shown_path(Path(os.path.normpath(Path(run_dir) / row["representative"])))
        alone = "[bold red]CONFIRMED[/]" if row["dace_alone"] == "CONFIRMED" else \
            f"{row['dace_alone']}: {escape(row['dace_alone_reason'][:200])}"
        lines.append(f"  [bold]{row['instances']:>4} x {escape(row['transformation'])} {row['kind']}[/]  {row['id']}  "
                     f"{alone}\n"
                     f"         {escape(row['description'])}\n         smallest: {escape(where)} ({row['size']})")
        if row.get("versions"):
            newest = f"; [bold red]shows on the newest DaCe judged, {row['shows_on_newest']}[/]" \
                if row.get("shows_on_newest") else ""
            lines.append(f"         DaCe: {escape(row['versions'])}{newest}")
    return lines + _not_replaying_lines(dropped)


def _not_replaying_lines(dropped: List[Dict]) -> List[str]:
    if not dropped:
        return []
    return [f"{len(dropped)} cluster(s) of findings left out: none of their reproducers replays (no bug; bugs.json "
            "not_replaying says what they said)"] + \
        [f"  {escape(d['transformation'])} {d['kind']} ({d['findings']} finding(s)): "
         f"{escape('; '.join(d['said'])[:200])}" for d in dropped]


def verdict_count_line(results: Iterable[InstanceResult], summary_file: Path) -> str:
    results = list(results)
    counts: Dict[str, int] = {}
    for r in results:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    total = sum(counts.values())
    errors = counts.pop("ERROR", 0)
    judged = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    not_judged = f"{'; ' if judged else ''}{errors} ERROR (not judged: see below)" if errors else ""
    shared = sum(1 for r in results if r.same_pair_as)
    pairs = f" ({total - shared} distinct pair(s) judged; {shared} took an equal pair's verdict)" if shared else ""
    return f"{total} instance(s){pairs}: {judged}{not_judged}; summary in {summary_file}"


def attention_lines(results: List[InstanceResult], out: Path, verbose: bool) -> List[str]:
    """What a user must look at after a run: library warnings, harnessgen's own defects, PASS
    verdicts that rest on the seeds alone where afl-fuzz was meant to run, programs DaCe could
    not build, and what is left of the plan."""
    lines = []
    logged = runlog.count(out)
    if logged and not verbose:
        lines.append(f"{logged} library warning(s) (DaCe's) in {out / runlog.LOG_NAME}; -v shows them as they come")
    regrown = [r for r in results if r.verdict != "CUTOUT_MISSED" and (r.audit or {}).get("grown")
               and r.audit.get("classification") == "CUTOUT_MISSED"]
    if regrown:
        lines.append(f"[bold white on red]{len(regrown)} instance(s) found only in a larger cutout:[/] their first "
                     "cutouts passed while the whole program differs (CUTOUT_MISSED of the first cutout, a harnessgen "
                     "defect: please report it); the finding is from the larger cutout: " + ", ".join(r.id for r in regrown))
    missed = [r for r in results if r.verdict == "CUTOUT_MISSED"]
    if missed:
        lines.append(f"[bold white on red]{len(missed)} instance(s) CUTOUT_MISSED:[/] their cutouts passed while the whole "
                     "program differs; harnessgen judged a different program there. Please report it with the "
                     "whole-program reproducers: " + ", ".join(r.audit.get("finding") or r.id for r in missed))
    unfuzzed = [r for r in results if r.verdict == "PASS" and (r.evidence or {}).get("meant_to_fuzz")
                and r.evidence.get("kind") == SEEDS_ONLY]
    if unfuzzed:
        lines.append(f"[yellow]{len(unfuzzed)} PASS verdict(s) rest on the seed inputs only:[/] afl-fuzz was meant to "
                     f"run and did not ({escape(unfuzzed[0].evidence['why_not_fuzzed'])}); they are not counted as fuzzed")
    summary = json.loads((out / "summary.json").read_text())
    lines += error_lines(summary) + codegen_cause_lines(summary) + [remaining_line(summary)]
    return lines


def error_lines(summary: Dict) -> List[str]:
    """The instances harnessgen could not judge, by reason: each reason once, with its log."""
    errors = summary.get("errors") or {}
    if not errors.get("count"):
        return []
    stages = ", ".join(f"{n} {stage}" for stage, n in errors.get("by_stage", {}).items())
    lines = [f"[magenta]{errors['count']} instance(s) ERROR[/] ({escape(stages)}): harnessgen could not judge them; "
             "each is in summary.json with its reason and log, and the same command again judges them again"]
    for entry in errors.get("reasons", [])[:5]:
        lines.append(f"  {entry['instances']} x {escape(entry['reason'][:200])} (first {escape(entry['first'])}; "
                     f"log {escape(entry['log'])})")
    return lines


def codegen_cause_lines(summary: Dict) -> List[str]:
    """Programs DaCe could not build before any change: one finding per cause."""
    return [f"[yellow]{c['instances']} instance(s) BLOCKED[/] ({escape(', '.join(c['transformations']))}): DaCe's code "
            f"generator cannot build their program before the change; one finding against DaCe: "
            f"{escape(c['finding'])}/BUG.md" for c in summary.get("codegen_causes", [])]


def remaining_line(summary: Dict) -> str:
    """How much of the plan is judged, what is left, and how long the rest would take."""
    left = summary.get("remaining") or {}
    errors = (summary.get("errors") or {}).get("count", 0)
    line = f"judged {summary['finished'] - errors} of {summary['planned']} planned instance(s)" + \
        (f" ({errors} ERROR)" if errors else "")
    if left.get("instances"):
        eta = left.get("estimated_seconds")
        when = f"; the rest would take about {duration(eta)} on {left['workers']} worker(s)" if eta else ""
        which = f" ({left['matches']} match(es), {left['variants']} parameter variant(s))" if "matches" in left else ""
        line = f"[yellow]{line}: {left['instances']}{which} not started within the budget{when}[/]; " \
               "the same command again continues"
    if left.get("audits"):
        line += (f"; [yellow]{left['audits']} verdict(s) still wait for their whole-program audit[/] (the bound "
                 "judged every match first; the same command again audits them)")
    if left.get("not_enumerated"):
        line += f"; [yellow]not enumerated yet: {escape(', '.join(left['not_enumerated']))}[/]"
    return line


# ------------------------------------------------------------------ the instance list
def instances_table(rows: List[Dict], title: str, with_proofs: bool) -> Table:
    table = Table(title=title)
    for col in ("id", "program", "form", "match", "input config (elements)", "at 20", "status") + \
            (("proof",) if with_proofs else ()):
        table.add_column(col)
    for r in rows:
        vol = f"{r.get('before', '?')} -> {r.get('after', '?')}"
        at = f"{r.get('before_at_20', '?')} -> {r.get('after_at_20', '?')}"
        table.add_row(r["id"], r["program"], r.get("form", "-"), escape(r["match"]), vol, at, r["status"],
                      *((escape(r.get("proof", {}).get("summary", "-")),) if with_proofs else ()))
    return table


# ------------------------------------------------------------------ other records
def triage_lines(instance_id: str, result) -> List[str]:
    """A re-triage of one instance's raw crashes (``triage.classify.TriageResult``)."""
    lines = [f"{escape(instance_id)}: {result.raw_total} raw crash(es) -> {len(result.findings)} finding(s), "
             f"{len(result.invalid)} invalid input(s), {len(result.flaky)} flaky, {result.seconds:.1f} s"]
    return lines + [f"    {finding.outcome.name:<11} {escape(str(finding.folder))}" for finding in result.findings]


def barrier_line(source: str, verdict) -> str:
    """One ``__syncthreads()`` judged (``gpukernels.barriers``)."""
    colour = {"REDUNDANT_BARRIER": "yellow", "NEEDED": "green", "BUILT": "cyan"}.get(verdict.verdict, "red")
    return (f"[{colour}]{verdict.verdict:<17}[/] {escape(source)}:{verdict.line} in {escape(verdict.kernel)}  "
            f"{escape(verdict.evidence)}")
