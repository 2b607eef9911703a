"""The recipe's report for the engineer who wrote it: the first wrong step (its number, the line
of the recipe that made it, the transformation and its match, the reproducer), every step with
its verdict, and the whole recipe's verdict with its bisection (``recipe.json``, ``recipe.md``
in the run directory)."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

from ..core.files import write_atomic, write_json
from ..core.outcome import Outcome
from ..plan.instances import Instance
from .record import Recording, judged_again
from .steps import WHOLE, instances_of

# verdicts that say a step is wrong (a harnessgen defect, CUTOUT_MISSED, is not the recipe's)
WRONG = frozenset(o.name for o in Outcome if o.is_finding) - {"CUTOUT_MISSED"}
NOT_JUDGED = "NOT_JUDGED"


def recipe_report(recording: Recording, results: Dict[str, Dict], target: str, spec: str) -> Dict:
    """``results``: the run's results by instance id (``InstanceResult.to_json``)."""
    rows, whole = [], {}
    for inst in instances_of(recording, target, spec):
        result = results.get(inst.id, {})
        row = _row(inst, result)
        if inst.step["index"] == WHOLE:
            whole = {**row, "bisect": result.get("bisect") or {}}
        else:
            step = recording.step(inst.step["index"])
            rows.append({**row, "index": step.index, "kind": step.kind, "name": step.name, "where": step.where,
                         "chain": step.chain, "within": step.within, "match": step.match,
                         "judged_as": "a cutout" if judged_again(step) else "the whole program before and after it",
                         "unjudgeable": step.unjudgeable, "error": step.error.strip().splitlines()[-1:] or []})
    rows.sort(key=lambda r: r["index"])
    wrong = [r for r in rows if r["verdict"] in WRONG]
    judged = [r for r in rows if r["verdict"] != NOT_JUDGED]
    return {"recipe": recording.recipe, "program": recording.program, "steps": rows,
            "recorded_seconds": recording.seconds, "recipe_error": recording.error.strip().splitlines()[-1:] or [],
            "first_wrong": wrong[0] if wrong else None, "wrong": len(wrong), "judged": len(judged),
            "whole_recipe": whole, "counts": _counts(rows)}


def _row(inst: Instance, result: Dict) -> Dict:
    findings = result.get("findings") or []
    reproducer = findings[0].get("path", "") if findings else ""
    proof = (result.get("proof") or {}).get("verdict", "")
    return {"instance": inst.id, "verdict": result.get("verdict", NOT_JUDGED), "message": result.get("message", ""),
            "reproducer": reproducer, "proof": proof, "same_pair_as": result.get("same_pair_as", "")}


def _counts(rows: List[Dict]) -> Dict[str, int]:
    """How the steps were judged: proven, fuzzed, judged only as part of the whole recipe."""
    return {"steps": len(rows), "judged": sum(r["verdict"] != NOT_JUDGED for r in rows),
            "proven": sum(r["proof"] == "PROVEN" for r in rows),
            "in_a_cutout": sum(r["judged_as"] == "a cutout" for r in rows),
            "whole_program": sum(r["judged_as"] != "a cutout" for r in rows),
            "same_pair": sum(bool(r["same_pair_as"]) for r in rows)}


def headline(report: Dict) -> List[str]:
    """What the engineer reads first."""
    first, whole = report["first_wrong"], report["whole_recipe"]
    lines = []
    if first is not None:
        lines.append(f"first wrong step: {first['index']} of {len(report['steps'])}, {first['name']} "
                     f"({first['verdict']}) at {first['where'] or 'an unknown line'}"
                     + (f" via {' > '.join(first['chain'])}" if first["chain"] else ""))
        if first["reproducer"]:
            lines.append(f"  reproducer: {first['reproducer']}  (python {first['reproducer']}/repro.py)")
    bisect = whole.get("bisect") or {}
    if whole.get("verdict") in WRONG:
        said = f"the whole recipe: {whole['verdict']}"
        if bisect.get("first_step"):
            said += f"; its results first differ after step {bisect['first_step']} ({bisect.get('first_pass', '')})"
            if bisect.get("minimal_steps"):
                said += f"; the fewest steps that still change them: {', '.join(map(str, bisect['minimal_steps']))}"
            elif bisect.get("reason"):
                said += f" ({bisect['reason']})"
        elif bisect:
            said += f"; bisect: {bisect.get('verdict')} {bisect.get('reason', '')}".rstrip()
        lines.append(said)
        if whole.get("reproducer"):
            lines.append(f"  reproducer: {whole['reproducer']}")
    elif whole.get("verdict") and first is None:
        lines.append(f"no wrong step: {report['judged']} of {len(report['steps'])} steps judged, the whole "
                     f"recipe {whole['verdict']}")
    if report["judged"] < len(report["steps"]):
        lines.append(f"{len(report['steps']) - report['judged']} step(s) not judged within the bound (the same "
                     "command again continues)")
    return lines


def markdown(report: Dict) -> str:
    out = [f"# Recipe `{report['recipe']}` on `{report['program']}`", ""]
    out += [f"- {line.strip()}" for line in headline(report)]
    counts = report["counts"]
    out += ["", f"{counts['steps']} steps recorded in {report['recorded_seconds']:g} s: {counts['in_a_cutout']} judged "
            f"in a cutout, {counts['whole_program']} on the whole program before and after them; {counts['judged']} "
            f"judged, {counts['proven']} proven, {counts['same_pair']} the same pair as another step.", ""]
    if report["recipe_error"]:
        out += [f"The recipe raised: `{report['recipe_error'][0]}`", ""]
    out += ["| step | verdict | transformation | where | through | judged as | reproducer |",
            "|---:|---|---|---|---|---|---|"]
    for r in report["steps"]:
        out.append(f"| {r['index']} | {r['verdict']} | {r['name']} | {r['where']} | {' > '.join(r['chain'][1:])} | "
                   f"{r['judged_as']} | {r['reproducer']} |")
    return "\n".join(out) + "\n"


def write(out_dir: Path, reports: List[Dict]) -> Optional[Path]:
    """``recipe.json`` and ``recipe.md`` in the run directory; the Markdown's path."""
    if not reports:
        return None
    write_json(Path(out_dir) / "recipe.json", reports if len(reports) > 1 else reports[0])
    path = Path(out_dir) / "recipe.md"
    write_atomic(path, "\n".join(markdown(r) for r in reports).encode())
    return path
