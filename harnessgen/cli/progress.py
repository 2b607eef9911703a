"""Live terminal displays (rich), drawing records through ``render``: a campaign's overall
progress, verdict counts and the instances in flight with their afl-fuzz statistics, read from
the shared campaign directory (so it works for remote Dask workers too; without a terminal,
one line per finished instance); planning as it happens (``PlanDisplay``); one instance's
afl-fuzz statistics as they come (``AflProgress``)."""
from __future__ import annotations

import contextlib
import time
from collections import Counter
from typing import Dict, Iterator, List

from rich.console import Group
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from ..campaign.planning import PlanProgress
from ..checks.reference_check import describe_checks
from ..core.records import InstanceResult, engine_dir
from ..engines.afl import lead_stats
from .render import audited_lines, enumeration_line, result_lines


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
        self.console.print("\n".join(result_lines(InstanceResult.from_json(result))))
        if self.bar is not None:
            self.bar.advance(self.task_id)
            self.live.update(self._render())

    def checked(self, records: List[Dict]) -> None:
        """The reference checks, which ran beside the instances, are done."""
        for line in describe_checks(records):
            self.console.print(line)

    def audited(self, result: Dict) -> None:
        """A finished instance's deferred whole-program audit is done."""
        self.console.print("\n".join(audited_lines(InstanceResult.from_json(result))))

    def planned_more(self, row: Dict, seconds: float, count: int) -> None:
        """A transformation enumerated beside the run has added its instances."""
        self.console.print(enumeration_line(row, seconds, count=count) + " [dim](enumerated beside the run)[/]")
        if self.bar is not None:
            self.bar.update(self.task_id, total=self.bar.tasks[0].total + count)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    # -------------------------------------------------------------- drawing
    def _render(self):
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
            self.console.print(enumeration_line(row, seconds, cached))

    def done(self, planned) -> None:
        if self.cached:
            count = sum(row["instances"] for row in self.cached)
            self.console.print(f"  {len(self.cached)} transformation(s) with {count} instance(s) from the plan cache")

    def deferred(self, specs: List[str]) -> None:
        self.console.print(f"  enumerated beside the run (they apply to whole programs): {escape(', '.join(specs))}")


class AflProgress:
    """A bar per instance run in this process, fed by afl-fuzz's fuzzer_stats (a terminal only)."""

    def __init__(self, console, time_s: float):
        self.time_s = time_s
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                            TextColumn("{task.fields[stats]}"), console=console, transient=True)
        self.tasks: Dict[str, int] = {}

    def update(self, inst, stats) -> None:
        if inst.id not in self.tasks:
            self.bar.start()
            self.tasks[inst.id] = self.bar.add_task(f"{inst.program}/{inst.id}", total=self.time_s, stats="")
        run_time = float(stats.get("run_time", 0) or 0)
        text = f"{stats.get('execs_per_sec', '0')} execs/s, {stats.get('saved_crashes', '0')} crashes"
        self.bar.update(self.tasks[inst.id], completed=min(run_time, self.time_s), stats=text)

    def finish(self, result) -> None:
        if result.id in self.tasks:
            self.bar.remove_task(self.tasks.pop(result.id))
        if not self.tasks:
            self.bar.stop()
