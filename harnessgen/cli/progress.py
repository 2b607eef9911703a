"""The campaign's live terminal display (rich): overall progress, verdict counts and the
instances in flight with their afl-fuzz statistics, read from the shared campaign directory
(so it works for remote Dask workers too). Without a terminal: one line per finished instance."""
from __future__ import annotations

import contextlib
import time
from collections import Counter
from typing import Dict, Iterator, List

from rich.markup import escape

from ..campaign.planning import PlanProgress
from ..core.evidence import SEEDS_ONLY, Evidence
from ..core.records import engine_dir
from ..engines.afl import lead_stats

VERDICT_COLOURS = {"PASS": "green", "BUILT": "cyan", "BLOCKED": "yellow", "REPLAY_ERROR": "magenta", "UNSUPPORTED": "yellow", "FLAKY": "yellow", "INVALID_INPUT": "yellow",
                   "ERROR": "magenta", "CUTOUT_MISSED": "bold white on red"}


def _live_stats(task) -> Dict[str, str]:
    return lead_stats(engine_dir(task.options.out_dir, task.instance["id"]))


class LiveProgress:
    def __init__(self, console):
        self.console = console
        self.verdicts: Counter = Counter()
        self.started: Dict[str, float] = {}
        self.live = None
        self.bar = None
        self.task_id = None
        self.description = ""
        self.running: List = []

    # -------------------------------------------------------------- called by run_campaign
    def start(self, state, executor) -> None:
        counts = state.counts()
        self.verdicts.update(state.verdicts())
        total, done = sum(counts.values()), counts["done"]
        if not self.console.is_terminal:
            self.console.print(f"{total} instance(s), {done} done earlier, {total - done} to run")
            return
        from rich.live import Live
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)

        self.bar = Progress(TextColumn("instances"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("eta"), TimeRemainingColumn(), console=self.console)
        self.task_id = self.bar.add_task("instances", total=total, completed=done)
        self.live = Live(self._render(), console=self.console, refresh_per_second=2, transient=True)
        self.live.start()

    def describe(self, description: str) -> None:
        self.description = description
        if self.live is None:
            self.console.print(f"running on {description}")

    def update(self, running: List) -> None:
        self.running = running
        now = time.monotonic()
        for task in running:
            self.started.setdefault(task.instance["id"], now)
        if self.live is not None:
            self.live.update(self._render())

    def finished(self, result: Dict) -> None:
        self.verdicts[result["verdict"]] += 1
        self.started.pop(result["id"], None)
        colour = VERDICT_COLOURS.get(result["verdict"], "red")
        rate = f"  {result['execs_per_sec']:,.0f} execs/s" if result.get("execs_per_sec") else ""
        line = f"[{colour}]{result['verdict']:<15}[/] {result['program']}/{result['id']}{rate}"
        for finding in result.get("findings", []):
            seen = {True: " (observable in the whole program)", False: " (latent: the whole program does not show it)"}
            line += f"\n    -> {finding['outcome']}: {finding['path']}{seen.get(finding.get('observable'), '')}"
        evidence = Evidence.from_json(result.get("evidence"))
        if result["verdict"] == "PASS" and evidence is not None:
            warn = evidence.kind == SEEDS_ONLY and evidence.meant_to_fuzz
            line += "\n    " + ("[yellow]" if warn else "") + escape(evidence.describe()) + ("[/]" if warn else "")
        if result["verdict"] in ("ERROR", "REPLAY_ERROR", "BLOCKED", "UNSUPPORTED", "BUILT", "CUTOUT_MISSED") \
                and result.get("message"):
            line += f"\n    {result['message'].splitlines()[0]}"
        self.console.print(line)
        if self.bar is not None:
            self.bar.advance(self.task_id)
            self.live.update(self._render())

    def planned_more(self, row: Dict, seconds: float, count: int) -> None:
        """A transformation enumerated beside the run has added its instances."""
        self.console.print(describe_enumeration(row, seconds, count=count) + " [dim](enumerated beside the run)[/]")
        if self.bar is not None:
            self.bar.update(self.task_id, total=self.bar.tasks[0].total + count)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    # -------------------------------------------------------------- drawing
    def _render(self):
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        counts = Text("  ".join(f"{verdict} {n}" for verdict, n in sorted(self.verdicts.items())) or "no verdicts yet")
        table = Table(box=None, show_header=True, header_style="bold", title=self.description, title_justify="left")
        for column in ("running instance", "program", "s", "execs/s", "crashes"):
            table.add_column(column, justify="left" if column in ("running instance", "program") else "right")
        now = time.monotonic()
        for task in self.running:
            stats = _live_stats(task)
            elapsed = now - self.started.get(task.instance["id"], now)
            table.add_row(task.instance["id"], task.instance["program"], f"{elapsed:.0f}",
                          stats.get("execs_per_sec", "-"), stats.get("saved_crashes", "-"))
        return Group(self.bar, counts, table)


def describe_enumeration(row: Dict, seconds: float, cached: bool = False, count: int = None) -> str:
    """One transformation's enumeration in one line (markup)."""
    name = escape(row.get("class_name") or row["spec"])
    found = row["instances"] if count is None else count
    where = ", from the plan cache" if cached else ""
    if row["status"] != "ok":
        return f"  [yellow]{name}: {row['status']}[/] ({escape(row['message'].splitlines()[0][:160])})"
    return f"  {name}: {found} instance(s) ({seconds:.1f} s{where})"


class PlanDisplay(PlanProgress):
    """Planning on the terminal from its first second: a spinner on the step under way, and a
    line per step done; without a terminal, a line when a step starts and one when it ends."""

    def __init__(self, console):
        self.console = console
        self.cached: List[Dict] = []

    @contextlib.contextmanager
    def step(self, label: str) -> Iterator[None]:
        started = time.monotonic()
        enumeration = label.startswith("enumerating ")
        if self.console.is_terminal:
            with self.console.status(f"{escape(label)} ..."):
                yield
        else:
            if not enumeration:
                self.console.print(f"{escape(label)} ...")
            yield
        if not enumeration:
            self.console.print(f"  {escape(label)}: {time.monotonic() - started:.1f} s")

    def enumerated(self, row: Dict, seconds: float, cached: bool) -> None:
        if cached and row["status"] == "ok":
            self.cached.append(row)         # one line for all of them, at the end
        else:
            self.console.print(describe_enumeration(row, seconds, cached))

    def done(self, planned) -> None:
        if self.cached:
            count = sum(row["instances"] for row in self.cached)
            self.console.print(f"  {len(self.cached)} transformation(s) with {count} instance(s) from the plan cache")

    def deferred(self, specs: List[str]) -> None:
        self.console.print(f"  enumerated beside the run (they apply to whole programs): {escape(', '.join(specs))}")
