"""AFL++ (afl-fuzz) engine: persistent-mode harness, time-bounded, resumable."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Tuple

from ..core import envs
from ..core.errors import ConfigError, EngineError, ToolMissing
from ..core.procs import die_with_parent
from ..core.protocol import OPENMP_WAIT, HarnessEnv
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


def instance_names(job: FuzzJob) -> List[str]:
    """afl-fuzz instances of one job, the first one leading: ``default`` alone; with
    ``parallel`` N a main (-M) and N-1 secondaries (-S); in race mode one more, ``race``."""
    if job.parallel <= 1 and job.race_threads <= 1:
        return ["default"]
    names = ["main"] + [f"s{i}" for i in range(1, max(1, job.parallel))]
    return names + (["race"] if job.race_threads > 1 else [])


# ---------------------------------------------------------------- AFL++'s folder layout
# One owner: every other module finds afl-fuzz instances, their statistics and their crashes
# through these functions. A sync directory holds one folder per instance: ``default`` (one
# instance), or ``main`` and ``s1``..``sN`` (--jobs), and ``race`` (race mode).
_INSTANCE = re.compile(r"^(default|main|race|s[0-9]+)$")


def is_instance_dir(path: Path) -> bool:
    """An afl-fuzz instance folder (by its name) that afl-fuzz has started in."""
    return bool(_INSTANCE.match(path.name)) and path.is_dir() and (
        (path / "fuzzer_stats").is_file() or (path / "cmdline").is_file() or (path / "crashes").is_dir())


def instance_dirs(out: Path) -> List[Path]:
    """Every instance folder of the sync directory ``out``, the leading one (default/main) first."""
    out = Path(out)
    if not out.is_dir():
        return []
    found = [p for p in out.iterdir() if is_instance_dir(p)]
    order = {"default": 0, "main": 1, "race": 3}
    return sorted(found, key=lambda p: (order.get(p.name, 2), len(p.name), p.name))


def sync_dir(path: Path) -> Path:
    """The sync directory of ``path``: itself, or its parent when ``path`` is an instance folder."""
    path = Path(path)
    return path.parent if is_instance_dir(path) else path


def lead_stats(out: Path) -> Dict[str, str]:
    """The leading instance's fuzzer_stats (empty before it has written any)."""
    for folder in instance_dirs(out):
        if folder.name in ("default", "main"):
            return read_stats(folder / "fuzzer_stats")
    return {}


def crash_files(out: Path) -> List[Tuple[Path, str]]:
    """(file, kind) of every crash and hang of every instance under ``out``: kind ``race`` for
    the race-mode instance's crashes, ``crash`` for the others', ``hang`` for hangs."""
    found = []
    for folder in instance_dirs(out):
        for sub, kind in (("crashes", "race" if folder.name == "race" else "crash"), ("hangs", "hang")):
            if (folder / sub).is_dir():
                found += [(p, kind) for p in sorted((folder / sub).glob("id:*")) if p.is_file()]
    return found


def previous_run_time(out: Path, name: str) -> float:
    """Seconds an earlier session in ``out`` fuzzed (afl-fuzz adds them up over resumes)."""
    return float(read_stats(out / name / "fuzzer_stats").get("run_time", 0) or 0)


class AflEngine(Engine):
    """One afl-fuzz instance (``default``), or several sharing a sync directory: with
    ``job.parallel`` N, ``-M main`` plus N-1 ``-S sK`` (``s1`` with CMPLOG when built); in race
    mode one more, ``-S race``, running post on several threads."""

    name = "afl"

    def _command(self, afl: str, job: FuzzJob, out: Path, name: str, resume: bool, time_s: float,
                 names: List[str]) -> List[str]:
        cmd = [afl, "-i", "-" if resume else str(job.seeds_dir), "-o", str(out), "-V", str(max(1, int(time_s)))]
        if name == "main" and job.parallel > 1:
            cmd += ["-M", name]
        elif name != "default":
            cmd += ["-S", name]
        if job.max_execs:
            cmd += ["-E", str(max(1, job.max_execs // len(names)))]
        if job.dict_file:
            cmd += ["-x", str(job.dict_file)]
        if "-s" not in job.options:
            cmd += ["-s", str(job.seed + names.index(name))]
        if job.exec_timeout_ms and "-t" not in job.options:
            cmd += ["-t", str(job.exec_timeout_ms)]
        cmplog = job.build.harness_cmplog
        # CMPLOG costs an extra execution per input: one instance runs it, the others fuzz plainly
        cmplog_instance = "s1" if "s1" in names else names[0]
        if cmplog is not None and "-c" not in job.options and name == cmplog_instance:
            cmd += ["-c", str(cmplog)]
        return cmd + list(job.options) + ["--", str(job.build.harness_afl)]

    def run(self, job: FuzzJob) -> EngineResult:
        afl = shutil.which(AFL_FUZZ)
        if not afl:
            raise ToolMissing("afl-fuzz is not installed: run `make setup`")
        if not job.build.harness_afl.is_file():
            # a build made for replay only: fuzzing it would end in afl-fuzz's "not found"
            raise EngineError(f"the build {job.build.dir} has no AFL harness (harness_afl): it was built for replay "
                              "only", log=str(job.build.dir))
        out = Path(job.out_dir)
        names = instance_names(job)
        resume = job.resume and (out / names[0] / "fuzzer_stats").exists()
        if not job.resume:
            shutil.rmtree(out, ignore_errors=True)
        time_s = job.time_s - (previous_run_time(out, names[0]) if resume else 0.0)
        out.parent.mkdir(parents=True, exist_ok=True)
        started, started_wall = time.monotonic(), time.time()
        procs, commands = {}, []
        if time_s >= 1:    # else an earlier session already used the whole budget: only collect
            self._start(afl, job, out, names, resume, time_s, procs, commands)
        wall = time.monotonic() - started
        stats = {name: read_stats(out / name / "fuzzer_stats") for name in names}
        for name, proc in procs.items():
            if proc.returncode not in (0, None) and not stats[name]:
                log_path = out.parent / f"{out.name}.{name}.log"
                tail = log_path.read_text(errors="replace")[-3000:]
                raise EngineError(f"afl-fuzz failed to start (exit {proc.returncode}): {_last_words(tail)}",
                                  log=str(log_path))
        crashes = [self._timed(path, kind, started_wall) for path, kind in crash_files(out)]
        main = stats[names[0]]
        plain = [name for name in names if name != "race"]
        execs = sum(int(float(st.get("execs_done", 0))) for st in stats.values())
        run_time = float(main.get("run_time", 0) or 0) or wall
        plain_execs = sum(int(float(stats[name].get("execs_done", 0))) for name in plain)
        flat = dict(main)
        flat["instances"] = str(len(names))
        if "race" in stats:
            race_time = float(stats["race"].get("run_time", 0) or 0) or wall
            flat["race_execs_done"] = stats["race"].get("execs_done", "0")
            flat["race_execs_per_sec"] = f"{int(float(stats['race'].get('execs_done', 0))) / race_time:.1f}"
        queue = sorted(path for name in plain for path in (out / name / "queue").glob("id:*") if path.is_file())
        return EngineResult(execs=execs, execs_per_sec=plain_execs / run_time if run_time else 0.0, wall_s=wall,
                            crashes=crashes, stats=flat, command=commands[0] if commands else [], queue=queue)

    def _start(self, afl: str, job: FuzzJob, out: Path, names: List[str], resume: bool, time_s: float,
               procs: Dict[str, subprocess.Popen], commands: List[List[str]]) -> None:
        logs = []
        try:
            for name in names:
                cmd = self._command(afl, job, out, name, resume, time_s, names)
                env = {**OPENMP_WAIT, **os.environ, **BASE_ENV}
                if job.until_crash:
                    env["AFL_BENCH_UNTIL_CRASH"] = "1"
                if name == "race":
                    env.update(HarnessEnv(threads=job.race_threads, repeat=job.race_repeat).variables())
                log = open(out.parent / f"{out.name}.{name}.log", "ab")
                logs.append(log)
                procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                               start_new_session=True, preexec_fn=die_with_parent)
                commands.append(cmd)
            self._watch(procs, job, out, time.monotonic(), time_s)
        finally:
            for log in logs:
                log.close()

    def _watch(self, procs: Dict[str, subprocess.Popen], job: FuzzJob, out: Path, started: float,
               time_s: float) -> None:
        """Wait for every instance; when one stops at its first crash (--until-crash), stop the rest."""
        deadline = started + time_s + GRACE_S
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
    def _timed(path: Path, kind: str, started_wall: float) -> RawCrash:
        """A crash file with the time it was written (since afl-fuzz was started: its own
        ``time:`` field leaves out its start-up) and the exec count from its name."""
        seconds = path.stat().st_mtime - started_wall
        if seconds < 0:  # written by an earlier session (resumed output directory)
            match = _TIME.search(path.name)
            seconds = int(match.group(1)) / 1000.0 if match else None
        execs = _EXECS.search(path.name)
        return RawCrash(path, seconds, kind, int(execs.group(1)) if execs else None)


def _last_words(log_tail: str) -> str:
    """afl-fuzz's reason for stopping (its "PROGRAM ABORT" line and the one after it), else the
    log's last line: what a verdict line can show."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in log_tail.splitlines()]
    lines = [line for line in lines if line]
    for k, line in enumerate(lines):
        if "PROGRAM ABORT" in line:
            return " ".join(lines[k:k + 2])[:300]
    return (lines[-1] if lines else "no output")[:300]
