"""A campaign's state in SQLite (``<campaign>/campaign.db``), written only by the process that
runs the campaign, one transaction per change: a run killed at any moment (``kill -9``)
leaves every finished instance recorded and every other one pending or running, and the
same command continues from there.

Instance states: ``pending`` -> ``running`` (handed to a worker; ``attempts`` counts the
hand-overs) -> ``done`` (its result JSON stored). A run that starts finds ``running`` rows
only after a kill: those whose worker still wrote its result file are recorded as done,
the others go back to ``pending``.
"""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Dict, List, Optional

from ..core.errors import ConfigError

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS transformations (
    spec TEXT PRIMARY KEY, position INTEGER NOT NULL, class_name TEXT, instances INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS instances (
    id TEXT PRIMARY KEY, position INTEGER NOT NULL, spec TEXT NOT NULL, transformation TEXT NOT NULL,
    program TEXT NOT NULL, instance TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'done')),
    attempts INTEGER NOT NULL DEFAULT 0, completions INTEGER NOT NULL DEFAULT 0, verdict TEXT,
    result TEXT, started_at REAL, finished_at REAL, run INTEGER);
CREATE TABLE IF NOT EXISTS runs (
    run INTEGER PRIMARY KEY AUTOINCREMENT, started_at REAL NOT NULL, finished_at REAL,
    executor TEXT NOT NULL, workers INTEGER NOT NULL, command TEXT NOT NULL DEFAULT '',
    instances_done INTEGER NOT NULL DEFAULT 0);
"""


class CampaignState:
    def __init__(self, path: Path, readonly: bool = False):
        self.path = Path(path)
        if readonly:
            if not self.path.is_file():
                raise ConfigError(f"{self.path.parent} is not a campaign directory (it has no campaign.db)")
            self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=60)
            self.db.execute("PRAGMA synchronous=FULL")
            with self.db:
                self.db.executescript(_SCHEMA)
        self.db.row_factory = sqlite3.Row

    def close(self) -> None:
        self.db.close()

    # -------------------------------------------------------------- what the campaign is
    def meta(self) -> Dict[str, str]:
        return {row["key"]: row["value"] for row in self.db.execute("SELECT key, value FROM meta")}

    def set_meta(self, values: Dict[str, str]) -> None:
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(values.items()))

    def reference_checks(self) -> List[Dict]:
        """What the programs' reference checks found when the run was planned (reference.py)."""
        return json.loads(self.meta().get("reference_checks", "[]"))

    def selection(self) -> Optional[List[str]]:
        """The ids the last run was about (a run that replans: fuzz); None: every planned one."""
        return json.loads(self.meta().get("selection", "null"))

    def is_planned(self) -> bool:
        return self.meta().get("planned") == "1"

    def is_same(self, identity: Dict[str, str]) -> bool:
        """This state belongs to the run ``identity`` describes (or to none yet)."""
        meta = self.meta()
        return int(meta.get("schema", SCHEMA_VERSION)) == SCHEMA_VERSION and \
            all(meta.get(key, value) == value for key, value in identity.items())

    def check_same(self, identity: Dict[str, str]) -> None:
        """A campaign directory belongs to one (target, transformations) campaign."""
        meta = self.meta()
        if int(meta.get("schema", SCHEMA_VERSION)) != SCHEMA_VERSION:
            raise ConfigError(f"{self.path} was written by another harnessgen version: use a new --out")
        for key, value in identity.items():
            if key in meta and meta[key] != value:
                raise ConfigError(f"{self.path.parent} holds a campaign with {key} {meta[key]!r}, not {value!r}: "
                                  "pass another --out, or --fresh to start it over")

    def record_plan(self, identity: Dict[str, str], transformations: List[Dict], instances: List[Dict]) -> None:
        """The whole plan in one transaction: a run killed while planning plans again."""
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                                [(k, v) for k, v in identity.items()] +
                                [("schema", str(SCHEMA_VERSION)), ("created_at", str(time.time()))])
            self._add(transformations, instances)
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('planned', '1')")

    def add_to_plan(self, transformations: List[Dict], instances: List[Dict]) -> None:
        """Transformations enumerated while the run went on, with their instances, placed after
        every instance planned so far (one transaction)."""
        with self.db:
            last = self.db.execute("SELECT COALESCE(MAX(position), -1) FROM instances").fetchone()[0]
            self._add(transformations, [{**row, "position": last + 1 + i} for i, row in enumerate(instances)])

    def _add(self, transformations: List[Dict], instances: List[Dict]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO transformations (spec, position, class_name, instances, status, message) "
            "VALUES (:spec, :position, :class_name, :instances, :status, :message)", transformations)
        self.db.executemany(
            "INSERT OR IGNORE INTO instances (id, position, spec, transformation, program, instance) "
            "VALUES (:id, :position, :spec, :transformation, :program, :instance)",
            [{**row, "instance": json.dumps(row["instance"], sort_keys=True)} for row in instances])

    def transformations(self) -> List[Dict]:
        return [dict(row) for row in self.db.execute("SELECT * FROM transformations ORDER BY position")]

    # -------------------------------------------------------------- runs
    def start_run(self, executor: str, workers: int, command: str) -> int:
        with self.db:
            cursor = self.db.execute("INSERT INTO runs (started_at, executor, workers, command) VALUES (?, ?, ?, ?)",
                                     (time.time(), executor, workers, command))
        return int(cursor.lastrowid)

    def finish_run(self, run: int, instances_done: int) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET finished_at = ?, instances_done = ? WHERE run = ?",
                            (time.time(), instances_done, run))

    def runs(self) -> List[Dict]:
        return [dict(row) for row in self.db.execute("SELECT * FROM runs ORDER BY run")]

    # -------------------------------------------------------------- instances
    def recover(self, result_file) -> Dict[str, int]:
        """After a kill: ``running`` rows become done (their worker wrote the result) or pending.
        ``result_file(id)`` is where a worker writes an instance's result."""
        counts = {"recorded": 0, "requeued": 0}
        rows = list(self.db.execute("SELECT id, attempts FROM instances WHERE state = 'running'"))
        for row in rows:
            path = Path(result_file(row["id"]))
            result = read_result(path)
            if result is not None and result.get("attempt") == row["attempts"]:
                self.finish(row["id"], result)
                counts["recorded"] += 1
            else:
                self.requeue(row["id"])
                counts["requeued"] += 1
        return counts

    def requeue(self, instance_id: str) -> None:
        with self.db:
            self.db.execute("UPDATE instances SET state = 'pending' WHERE id = ?", (instance_id,))

    def redo(self, verdicts_or_transformations) -> int:
        """Send finished instances with one of these verdicts (or transformations) back to pending."""
        names = list(verdicts_or_transformations)
        if not names:
            return 0
        marks = ",".join("?" * len(names))
        with self.db:
            cursor = self.db.execute(f"UPDATE instances SET state = 'pending' WHERE state = 'done' AND "
                                     f"(verdict IN ({marks}) OR transformation IN ({marks}))", names + names)
        return cursor.rowcount

    def pending(self, selection: Optional[List[str]] = None) -> List[Dict]:
        """Pending instances in plan order (``selection``: only these ids, in its order)."""
        rows = self.db.execute("SELECT id, spec, instance, attempts FROM instances WHERE state = 'pending' "
                               "ORDER BY position")
        out = [{"id": r["id"], "spec": r["spec"], "instance": json.loads(r["instance"]), "attempts": r["attempts"]}
               for r in rows]
        return out if selection is None else _in_order(out, selection)

    def start(self, instance_id: str, run: int) -> int:
        """Mark handed to a worker; returns the attempt number."""
        with self.db:
            self.db.execute("UPDATE instances SET state = 'running', attempts = attempts + 1, started_at = ?, "
                            "run = ? WHERE id = ?", (time.time(), run, instance_id))
        return int(self.db.execute("SELECT attempts FROM instances WHERE id = ?", (instance_id,)).fetchone()[0])

    def finish(self, instance_id: str, result: Dict) -> None:
        with self.db:
            self.db.execute("UPDATE instances SET state = 'done', verdict = ?, result = ?, finished_at = ?, "
                            "completions = completions + 1 WHERE id = ?",
                            (result.get("verdict"), json.dumps(result, default=str), time.time(), instance_id))

    def row(self, instance_id: str) -> Optional[Dict]:
        """One instance's row (id, spec, instance, attempts), None for one this campaign does not hold."""
        row = self.db.execute("SELECT id, spec, instance, attempts FROM instances WHERE id = ?",
                              (instance_id,)).fetchone()
        return None if row is None else {"id": row["id"], "spec": row["spec"], "instance": json.loads(row["instance"]),
                                         "attempts": row["attempts"]}

    def status(self, instance_id: str) -> Optional[str]:
        """pending, running or done; None for an instance this campaign does not hold."""
        row = self.db.execute("SELECT state FROM instances WHERE id = ?", (instance_id,)).fetchone()
        return row["state"] if row else None

    def result(self, instance_id: str) -> Optional[Dict]:
        """A finished instance's result (None while it is not done)."""
        row = self.db.execute("SELECT result FROM instances WHERE id = ? AND state = 'done'",
                              (instance_id,)).fetchone()
        return json.loads(row["result"]) if row and row["result"] else None

    def counts(self, selection: Optional[List[str]] = None) -> Dict[str, int]:
        out = {"pending": 0, "running": 0, "done": 0}
        wanted = None if selection is None else set(selection)
        for row in self.db.execute("SELECT id, state FROM instances"):
            if wanted is None or row["id"] in wanted:
                out[row["state"]] += 1
        return out

    def verdicts(self) -> Dict[str, int]:
        """Finished instances per verdict."""
        return {row["verdict"]: row["n"] for row in self.db.execute(
            "SELECT verdict, COUNT(*) AS n FROM instances WHERE state = 'done' GROUP BY verdict")}

    def instances(self, selection: Optional[List[str]] = None) -> List[Dict]:
        """Every instance in plan order (``selection``: only these ids, in its order): its row,
        with the result decoded (None until done)."""
        out = []
        for row in self.db.execute("SELECT * FROM instances ORDER BY position"):
            entry = dict(row)
            entry["instance"] = json.loads(entry["instance"])
            entry["result"] = json.loads(entry["result"]) if entry["result"] else None
            out.append(entry)
        return out if selection is None else _in_order(out, selection)


def _in_order(rows: List[Dict], selection: List[str]) -> List[Dict]:
    by_id = {row["id"]: row for row in rows}
    return [by_id[i] for i in selection if i in by_id]


def read_result(path: Path) -> Optional[Dict]:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
