"""AFL++ (afl-fuzz) engine: persistent-mode harness, time-bounded, resumable."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional

from .. import envs
from ..errors import ConfigError, ToolMissing
from . import Engine, EngineResult, FuzzJob, RawCrash

AFL_FUZZ = envs.get("HARNESSGEN_AFL_FUZZ")
# Extra seconds afl-fuzz may take beyond -V (start-up, calibration) before it is stopped.
GRACE_S = 30.0

BASE_ENV = {
    "AFL_NO_UI": "1",
    "AFL_SKIP_CPUFREQ": "1",
    "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1",
    "AFL_TRY_AFFINITY": "1",       # bind to a free core when there is one, never fail
    "AFL_FAST_CAL": "1",
    "AFL_NO_CRASH_README": "1",
    "AFL_QUIET": "1",
    "AFL_IGNORE_UNKNOWN_ENVS": "1",
    "OMP_NUM_THREADS": "1",
}


def read_options(path) -> List[str]:
    """``afl_configs/<target>.options``: afl-fuzz arguments, shell-quoted, ``#`` comments."""
    if path is None:
        return []
    out: List[str] = []
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out += shlex.split(line)
    for forbidden in ("-i", "-o", "-V", "--"):
        if forbidden in out:
            raise ConfigError(f"{Path(path).name}: {forbidden} is set by harnessgen; remove it from the options file")
    return out


def read_stats(path: Path) -> Dict[str, str]:
    stats: Dict[str, str] = {}
    try:
        text = path.read_text()
    except OSError:
        return stats
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            stats[key.strip()] = value.strip()
    return stats


_TIME = re.compile(r"time:(\d+)")
_EXECS = re.compile(r"execs:(\d+)")


class AflEngine(Engine):
    """One afl-fuzz instance (``default``); in race mode two sharing a sync directory:
    ``-S main`` on one thread and ``-S race`` running post on several threads."""

    name = "afl"

    def _command(self, afl: str, job: FuzzJob, out: Path, instance: Optional[str], resume: bool) -> List[str]:
        cmd = [afl, "-i", "-" if resume else str(job.seeds_dir), "-o", str(out), "-V", str(max(1, int(job.time_s)))]
        if instance:
            cmd += ["-S", instance]
        if job.dict_file:
            cmd += ["-x", str(job.dict_file)]
        if "-s" not in job.options:
            cmd += ["-s", str(job.seed)]
        cmplog = job.build.harness_cmplog
        if cmplog is not None and "-c" not in job.options and instance != "race":
            cmd += ["-c", str(cmplog)]
        return cmd + list(job.options) + ["--", str(job.build.harness_afl)]

    def run(self, job: FuzzJob) -> EngineResult:
        afl = shutil.which(AFL_FUZZ)
        if not afl:
            raise ToolMissing("afl-fuzz is not installed: run `make setup`")
        out = Path(job.out_dir)
        names = ["main", "race"] if job.race_threads > 1 else ["default"]
        resume = job.resume and (out / names[0] / "fuzzer_stats").exists()
        out.parent.mkdir(parents=True, exist_ok=True)
        started, started_wall = time.monotonic(), time.time()
        procs, commands = {}, []
        logs = []
        for name in names:
            cmd = self._command(afl, job, out, None if name == "default" else name, resume)
            env = {**os.environ, **BASE_ENV}
            if job.until_crash:
                env["AFL_BENCH_UNTIL_CRASH"] = "1"
            if name == "race":
                env.update(HARNESSGEN_THREADS=str(job.race_threads), HARNESSGEN_REPEAT=str(job.race_repeat))
            log = open(out.parent / f"{out.name}.{name}.log", "ab")
            logs.append(log)
            procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            commands.append(cmd)
        try:
            self._watch(procs, job, out, started)
        finally:
            for log in logs:
                log.close()
        wall = time.monotonic() - started
        stats = {name: read_stats(out / name / "fuzzer_stats") for name in names}
        for name, proc in procs.items():
            if proc.returncode not in (0, None) and not stats[name]:
                log_path = out.parent / f"{out.name}.{name}.log"
                tail = log_path.read_text(errors="replace")[-3000:]
                raise ConfigError(f"afl-fuzz failed to start (exit {proc.returncode}); its log {log_path}:\n{tail}")
        crashes: List[RawCrash] = []
        for name in names:
            crashes += self._collect(out / name / "crashes", "race" if name == "race" else "crash", started_wall)
            crashes += self._collect(out / name / "hangs", "hang", started_wall)
        main = stats[names[0]]
        execs = sum(int(float(st.get("execs_done", 0))) for st in stats.values())
        run_time = float(main.get("run_time", 0) or 0) or wall
        main_execs = int(float(main.get("execs_done", 0)))
        flat = dict(main)
        if "race" in stats:
            race_time = float(stats["race"].get("run_time", 0) or 0) or wall
            flat["race_execs_done"] = stats["race"].get("execs_done", "0")
            flat["race_execs_per_sec"] = f"{int(float(stats['race'].get('execs_done', 0))) / race_time:.1f}"
        return EngineResult(execs=execs, execs_per_sec=main_execs / run_time if run_time else 0.0, wall_s=wall,
                            crashes=crashes, stats=flat, command=commands[0])

    def _watch(self, procs: Dict[str, subprocess.Popen], job: FuzzJob, out: Path, started: float) -> None:
        """Wait for every instance; when one stops at its first crash (--until-crash), stop the rest."""
        deadline = started + job.time_s + GRACE_S
        while True:
            running = {n: p for n, p in procs.items() if p.poll() is None}
            finished_early = job.until_crash and len(running) < len(procs)
            if not running or finished_early or time.monotonic() > deadline:
                for proc in running.values():
                    proc.terminate()
                for proc in running.values():
                    try:
                        proc.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
                return
            first = next(iter(running.values()))
            try:
                first.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
            if job.progress:
                job.progress(read_stats(out / next(iter(procs)) / "fuzzer_stats"))

    @staticmethod
    def _collect(directory: Path, kind: str, started_wall: float) -> List[RawCrash]:
        """Crash files with the time they were written (since afl-fuzz was started: its own
        ``time:`` field leaves out its start-up) and the exec count from their name."""
        if not directory.is_dir():
            return []
        found = []
        for path in sorted(directory.glob("id:*")):
            seconds = path.stat().st_mtime - started_wall
            if seconds < 0:  # written by an earlier session (resumed output directory)
                match = _TIME.search(path.name)
                seconds = int(match.group(1)) / 1000.0 if match else None
            execs = _EXECS.search(path.name)
            found.append(RawCrash(path, seconds, kind, int(execs.group(1)) if execs else None))
        return found
