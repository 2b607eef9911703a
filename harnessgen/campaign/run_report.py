"""A run's report: ``report.html`` (self-contained: plots embedded), ``report.md`` (plots as PNG
files under ``report/``) and ``summary.json`` (the campaign's, or ``harnessgen fuzz``'s
contract: the kind the run recorded), all from ``campaign.db``; rendered from
``templates/report.*.j2``. ``harnessgen report DIR`` redraws them at any time, also while the
run goes on (the database is read, never written)."""
from __future__ import annotations

import base64
import dataclasses
import datetime
import io
import json
import os
import statistics
from collections import Counter
from pathlib import Path
from typing import Callable, Dict, List, Optional

from ..bugs.analysis import analyse
from ..bugs.cluster import CODEGEN_FAILURE, bug_rows
from ..bugs.reduce import ReduceOptions
from ..core import runlog
from ..core.data import template_environment
from ..core.evidence import SEEDS_ONLY, Evidence
from ..core.files import write_atomic, write_json
from ..core.outcome import STATIC_OUTCOMES
from ..core.records import BLOCKED, InstanceResult, audit_deferred, error_reasons, run_summary as records_summary
from ..plan.params import describe
from ..prove import Proof
from .schedule import estimate_seconds
from .state import CampaignState

# verdicts that mean "the transformation is wrong", in the order the report lists them
FINDING_VERDICTS = ("MISMATCH", "POST_CRASH", "POST_HANG", "OOB_WRITE", "RACE", "BARRIER_DIVERGENCE",
                    "FAILED_TO_APPLY", "INVALID_SDFG", "BUILD_FAILURE")
STATIC_VERDICTS = STATIC_OUTCOMES
VERDICT_ORDER = ("PASS",) + FINDING_VERDICTS + ("CUTOUT_MISSED", "INVALID_INPUT", "FLAKY", "BUILT", "BLOCKED",
                                                "REPLAY_ERROR", "UNSUPPORTED", "ERROR")
COLOURS = {"PASS": "#4caf50", "MISMATCH": "#d32f2f", "POST_CRASH": "#b71c1c", "POST_HANG": "#e65100",
           "OOB_WRITE": "#880e4f", "RACE": "#6a1b9a", "BARRIER_DIVERGENCE": "#4a148c", "FAILED_TO_APPLY": "#f57c00", "INVALID_SDFG": "#00838f",
           "BUILD_FAILURE": "#5d4037", "INVALID_INPUT": "#fbc02d", "FLAKY": "#fdd835", "UNSUPPORTED": "#9e9e9e",
           "BUILT": "#90a4ae", "BLOCKED": "#8d6e63", "REPLAY_ERROR": "#616161", "ERROR": "#212121", "CUTOUT_MISSED": "#000000"}


@dataclasses.dataclass
class ReportData:
    title: str
    generated: str
    meta: Dict[str, str]
    runs: List[Dict]
    wall_seconds: float
    counts: Dict[str, int]
    verdicts: Dict[str, int]
    transformations: List[Dict]
    instances: List[Dict]
    findings: List[Dict]
    # each program against its reference, when the run was planned (reference.py)
    reference_checks: List[Dict] = dataclasses.field(default_factory=list)
    # the findings clustered into distinct bugs (bugs.json), when the run has been analysed
    bugs: List[Dict] = dataclasses.field(default_factory=list)
    bugs_error: str = ""          # why the findings could not be clustered (a harnessgen defect)

    @property
    def not_judged(self) -> List[Dict]:
        """The instances harnessgen could not judge (ERROR), by reason, most first: what the
        report says before anything else, since one may hide a bug."""
        return error_reasons((i["id"], i["error"], i["message"]) for i in self.instances if i["verdict"] == "ERROR")


def _findings_of(result: Dict, directory: Path) -> List[Dict]:
    """Reproducers of one instance: triaged findings, or the static finding's folder."""
    out = [{"outcome": f["outcome"], "path": _relative(f["path"], directory), "summary": f.get("summary", ""),
            "seconds": f.get("seconds")} for f in result.get("findings", [])]
    if not out and result.get("verdict") == BLOCKED and result.get("crashes"):   # DaCe's, not the change's
        out = [{"outcome": CODEGEN_FAILURE, "path": _relative(result["crashes"][0], directory),
                "summary": (result.get("message") or "").splitlines()[0], "seconds": None}]
    if not out and result.get("verdict") in STATIC_VERDICTS and result.get("crashes"):
        out = [{"outcome": result["verdict"], "path": _relative(result["crashes"][0], directory),
                "summary": (result.get("message") or "").splitlines()[0] if result.get("message") else "",
                "seconds": result.get("seconds_to_first_finding")}]
    return out


def _relative(path: str, directory: Path) -> str:
    return os.path.relpath(str(path), str(directory.resolve()))


def _median(values: List[float]) -> Optional[float]:
    return round(statistics.median(values), 1) if values else None


def collect(directory: Path, state: CampaignState, selection: Optional[List[str]] = None) -> ReportData:
    """What the report shows: every instance of the plan (``selection``: these only)."""
    directory = Path(directory)
    meta = state.meta()
    rows = state.instances(selection)
    instances, by_spec = [], {}
    for row in rows:
        result = row["result"] or {}
        params = result.get("params") or {}
        findings = _findings_of(result, directory) if result else []
        instances.append({
            "id": row["id"], "transformation": row["transformation"], "program": row["program"], "spec": row["spec"],
            "state": row["state"], "verdict": row["verdict"] or row["state"].upper(), "attempts": row["attempts"],
            "execs": result.get("execs", 0), "execs_per_sec": result.get("execs_per_sec", 0.0),
            # from the instance's start (cutout and build included), as the plot counts it
            "first_finding_s": result.get("verdict_seconds") if findings else None,
            "verdict_s": result.get("verdict_seconds"), "wall_s": result.get("wall_seconds"),
            "config_before": result.get("input_config_before", ""), "config_after": result.get("input_config_after", ""),
            "findings": findings, "message": (result.get("message") or "").splitlines()[0] if result.get("message") else "",
            "bisect": result.get("bisect") or {},
            "proof": (result.get("proof") or {}).get("verdict", ""), "proof_reason": _proof_text(result.get("proof")),
            "params": _params_text(params), "match": params.get("match") or row["id"],
            "variant": bool(params.get("values")),
            "evidence": _evidence_text(result), "evidence_kind": _pass_evidence_kind(result),
            "error": result.get("error") or {},
        })
        by_spec.setdefault(row["spec"], []).append(instances[-1])
    transformations = []
    for xform in state.transformations():
        mine = by_spec.get(xform["spec"], [])
        done = [i for i in mine if i["state"] == "done"]
        transformations.append({
            "spec": xform["spec"], "name": xform["class_name"] or xform["spec"], "instances": xform["instances"],
            "status": xform["status"], "message": xform["message"], "done": len(done),
            "verdicts": dict(sorted(Counter(i["verdict"] for i in done).items(),
                                    key=lambda kv: VERDICT_ORDER.index(kv[0]) if kv[0] in VERDICT_ORDER else 99)),
            "findings": dict(Counter(f["outcome"] for i in done for f in i["findings"])),
            "proofs": dict(sorted(Counter(i["proof"] for i in done if i["proof"]).items())),
            # what the PASS verdicts rest on; "SEEDS_ONLY!" where afl-fuzz was meant to run and did not
            "pass_evidence": dict(sorted(Counter(i["evidence_kind"] for i in done if i["evidence_kind"]).items())),
            "median_execs_per_sec": _median([i["execs_per_sec"] for i in done if i["execs_per_sec"]]),
            "median_first_finding_s": _median([i["first_finding_s"] for i in done if i["first_finding_s"] is not None]),
            # --params: the matches judged, and how many of the instances judged a parameter variant
            "matches": len({i["match"] for i in done}), "param_variants": sum(i["variant"] for i in done),
        })
    runs = [{**r, "seconds": round(_run_end(state, r) - r["started_at"], 1)} for r in state.runs()]
    wall = sum(r["seconds"] for r in runs)
    findings = [{"instance": i["id"], "transformation": i["transformation"], **f} for i in instances for f in i["findings"]]
    done = [i for i in instances if i["state"] == "done"]
    return ReportData(
        title=f"harnessgen campaign: {meta.get('program', '?')} x {meta.get('transformations', '?')}",
        generated=datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"), meta=meta,
        runs=runs, wall_seconds=round(wall, 1), counts=state.counts(selection),
        verdicts=dict(Counter(i["verdict"] for i in done)), transformations=transformations,
        instances=instances, findings=findings, reference_checks=state.reference_checks(),
        bugs=bug_rows(directory))


def _proof_text(record: Optional[Dict]) -> str:
    """An instance's proof in one line (prove.Proof.summary), or ''."""
    if not record:
        return ""

    return Proof.from_json(record).summary()


def _evidence_text(result: Dict) -> str:
    """What a PASS rests on, in one line (evidence.Evidence.describe), or ''."""
    evidence = Evidence.from_json(result.get("evidence")) if result.get("verdict") == "PASS" else None
    return evidence.describe() if evidence else ""


def _pass_evidence_kind(result: Dict) -> str:
    """PROVEN, FUZZED, SEEDS_ONLY, or SEEDS_ONLY! where afl-fuzz was meant to run; '' for others."""
    evidence = Evidence.from_json(result.get("evidence")) if result.get("verdict") == "PASS" else None
    if evidence is None:
        return ""
    return evidence.kind + ("!" if evidence.kind == SEEDS_ONLY and evidence.meant_to_fuzz else "")


def _params_text(record: Dict) -> str:
    """A variant's parameters, and the simplest that fail alike where they were looked for."""
    if not record.get("values"):
        return ""

    text = describe(record["values"])
    if record.get("simplest") is not None and record["simplest"] != record["values"]:
        text += f"; simplest failing: {describe(record['simplest'])}"
    return text


def _run_end(state: CampaignState, run: Dict) -> float:
    """When a run ended; for one still going (or killed), when its last instance finished."""
    if run["finished_at"]:
        return run["finished_at"]
    last = state.db.execute("SELECT MAX(finished_at) FROM instances WHERE run = ?", (run["run"],)).fetchone()[0]
    return last or run["started_at"]


# ------------------------------------------------------------------ plots
def _figure_bytes(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return buffer.getvalue()


def plots(data: ReportData) -> Dict[str, bytes]:
    """PNG bytes by name: verdicts per transformation, execs/s distribution, time to first finding."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator, NullFormatter

    out = {}
    shown = [t for t in data.transformations if t["done"]]
    if shown:
        fig, ax = plt.subplots(figsize=(8, 0.32 * len(shown) + 1.2))
        names = [t["name"] for t in shown]
        left = [0] * len(shown)
        for verdict in VERDICT_ORDER:
            counts = [t["verdicts"].get(verdict, 0) for t in shown]
            if any(counts):
                ax.barh(names, counts, left=left, color=COLOURS[verdict], label=verdict)
                left = [a + b for a, b in zip(left, counts)]
        ax.invert_yaxis()
        ax.set_xlabel("instances")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title("verdicts per transformation")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        out["verdicts"] = _figure_bytes(fig)
        plt.close(fig)
    rates = [i["execs_per_sec"] for i in data.instances if i["execs_per_sec"]]
    if rates:
        import numpy as np

        fig, ax = plt.subplots(figsize=(7, 3.2))
        bins = np.logspace(np.log10(min(rates)) - 0.05, np.log10(max(rates)) + 0.05, 25)
        ax.hist(rates, bins=bins, color="#1976d2")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("execs/s per instance (afl-fuzz)")
        ax.set_ylabel("instances")
        ax.set_title(f"throughput of {len(rates)} fuzzed instance(s), median {statistics.median(rates):,.0f} execs/s")
        out["execs"] = _figure_bytes(fig)
        plt.close(fig)
    times = sorted((i["verdict_s"], i["transformation"]) for i in data.instances
                   if i["findings"] and i["verdict_s"] is not None)
    if times:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        ax.step([0] + [t for t, _ in times], range(len(times) + 1), where="post", color="#212121", label="all")
        for name in sorted({n for _, n in times}, key=lambda n: -sum(1 for _, m in times if m == n))[:6]:
            mine = [t for t, n in times if n == name]
            ax.step([0] + mine, range(len(mine) + 1), where="post", alpha=0.6, label=name)
        ax.set_xlabel("seconds from the instance's start to its first finding")
        ax.set_ylabel("instances with a finding")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title("time to first finding")
        ax.legend(fontsize=7)
        out["time_to_finding"] = _figure_bytes(fig)
        plt.close(fig)
    return out


# ------------------------------------------------------------------ files
def _render(name: str, autoescape: bool, **context) -> str:
    return template_environment(autoescape=autoescape).get_template(name).render(**context)


def campaign_summary(directory: Path, state: CampaignState, data: ReportData) -> Dict:
    """summary.json of ``harnessgen campaign``: per transformation and per instance, for scripts."""
    return {"program": data.meta.get("program"), "transformations": data.meta.get("transformations"),
            "distinct_bugs": data.bugs, "counts": data.counts, "verdicts": data.verdicts, "wall_seconds": data.wall_seconds, "runs": data.runs,
            "per_transformation": data.transformations, "instances": data.instances, "findings": data.findings,
            "reference_checks": data.reference_checks}


def run_summary(directory: Path, state: CampaignState, data: Optional[ReportData] = None) -> Dict:
    """summary.json of ``harnessgen fuzz`` (records.run_summary): the instances of its last
    run's selection that are done, in plan order."""
    meta = state.meta()
    rows = state.instances(state.selection())
    results = [InstanceResult.from_json(r["result"]) for r in rows if r["state"] == "done" and r["result"]]
    warnings = {"count": runlog.count(directory), "log": str(Path(directory) / runlog.LOG_NAME)}
    settings = json.loads(meta.get("run_settings", "{}"))
    summary = records_summary(settings, results, len(rows), warnings, state.reference_checks(), bug_rows(directory))
    summary["remaining"] = remaining(state, rows, int(settings.get("jobs") or 1))
    # with "instances" (each judged one's result): every planned instance, and what became of it
    summary["not_judged"] = [{"id": row["id"], "transformation": row["transformation"], "program": row["program"],
                              "state": row["state"], "attempts": row["attempts"], "why": _why_not_judged(row)}
                             for row in rows if not (row["state"] == "done" and row["result"])]
    return summary


def _why_not_judged(row: Dict) -> str:
    if row["state"] == "running":
        return "it was being judged when the run stopped; the same command again judges it"
    return "not started within the run's budget; the same command again continues"


def remaining(state: CampaignState, rows: List[Dict], workers: int) -> Dict:
    """What the run has not judged: instances planned and not done, transformations not
    enumerated yet, and an estimate of the time the planned ones would take on ``workers``."""
    pending = [row for row in rows if row["state"] != "done"]
    done = [row for row in state.instances() if row["state"] == "done"]
    seconds = estimate_seconds(pending, done, workers)
    variants = sum(1 for row in pending if row["instance"].get("params"))
    return {"instances": len(pending), "matches": len(pending) - variants, "variants": variants,
            # PASS verdicts whose whole-program audit the bound left undone (the next run does them)
            "audits": sum(1 for row in rows if row["state"] == "done" and audit_deferred(row["result"])),
            "not_enumerated": json.loads(state.meta().get("not_enumerated", "[]")),
            "estimated_seconds": None if seconds is None else round(seconds, 1), "workers": workers}


# which summary.json a run writes (the "summary" its state records)
SUMMARIES: Dict[str, Callable] = {"campaign": campaign_summary, "run": run_summary}


def write_summary(directory: Path, state: CampaignState, data: Optional[ReportData] = None) -> None:
    """summary.json alone, of the kind the run asked for."""
    kind = state.meta().get("summary", "campaign")
    if kind == "campaign" and data is None:
        data = collect(directory, state, state.selection())
    write_json(Path(directory) / "summary.json", SUMMARIES[kind](directory, state, data))


def write(directory: Path, state: Optional[CampaignState] = None, bugs_error: str = "", plots: bool = True) -> Path:
    """Write report.html, report.md, report/*.png and summary.json from the run's state and its
    bugs.json (``analyse_findings`` makes that); returns report.html's path. ``bugs_error``: why
    the findings could not be clustered, where they could not; ``plots``: False leaves the
    plots out (and any an earlier report drew: they would show another state of the run)."""
    directory = Path(directory)
    own = state is None
    if own:
        state = CampaignState(directory / "campaign.db", readonly=True)
    try:
        data = collect(directory, state, state.selection())
        data.bugs_error = bugs_error
        _write_files(directory, data, plots)
        write_summary(directory, state, data)
    finally:
        if own:
            state.close()
    return directory / "report.html"


def analyse_findings(directory: Path, state: CampaignState, reduce: Optional[ReduceOptions] = None,
                     seconds: Optional[float] = None, step=None, hard: bool = False) -> str:
    """The run's findings clustered into distinct bugs, each bug's program reduced (bugs.json,
    bugs/<id>/BUG.md): the analysis stage, which the driver runs before the report, its
    reductions bounded by ``seconds`` together and each step told to ``step``. Returns why it
    failed ('' when it did not, or when there was nothing to analyse)."""
    data = collect(directory, state, state.selection())
    if not data.findings:
        return ""
    write_summary(directory, state, data)      # the findings the analysis reads
    try:
        analyse([directory], directory, reduce or ReduceOptions(), seconds=seconds, hard=hard,
                **({"step": step} if step else {}))
    except Exception as exc:  # noqa: BLE001 -- the report is written without the clusters, saying why
        return f"{type(exc).__name__}: {exc}"
    return ""


def _write_files(directory: Path, data: ReportData, drawn: bool = True) -> None:
    if drawn:
        images = plots(data)
    else:       # none an earlier report drew stays beside this one: it shows another state of the run
        images = {}
        for stale in sorted((directory / "report").glob("*.png")):
            stale.unlink()
    for name, png in images.items():
        write_atomic(directory / "report" / f"{name}.png", png)
    embedded = {name: base64.b64encode(png).decode() for name, png in images.items()}
    context = dict(data=data, colours=COLOURS, finding_verdicts=FINDING_VERDICTS)
    write_atomic(directory / "report.html", _render("report.html.j2", True, images=embedded, **context).encode())
    write_atomic(directory / "report.md", _render("report.md.j2", False, images=sorted(images), **context).encode())
