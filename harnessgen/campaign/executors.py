"""Where a campaign's instances run: behind one small interface, a ``concurrent.futures``
executor plus how many instances it runs at once.

``inline``      this process, one instance at a time (``fuzz`` with one job: live afl-fuzz
                statistics on the terminal, nothing forked)
``local``       forked worker processes on this machine (the default; no server needed)
``dask``        an existing Dask scheduler (``--scheduler ADDRESS``)
``dask-local``  a Dask ``LocalCluster`` of N single-threaded worker processes (``--dask-local N``)
``slurm``       Dask workers submitted as Slurm jobs through ``dask-jobqueue`` (``--slurm``)

Adding one means one function here and one entry in ``EXECUTORS``. Dask and dask-jobqueue
are the optional extra ``harnessgen[dask]``; they are imported only when asked for.
Instances write their results on a filesystem every worker shares with this process (the
campaign directory), so a remote worker needs the same paths.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import multiprocessing
import os
from typing import Callable, Dict, Iterator, Optional

from ..core.errors import ConfigError
from ..core.procs import die_with_parent


@dataclasses.dataclass
class SlurmOptions:
    queue: Optional[str] = None
    account: Optional[str] = None
    walltime: str = "02:00:00"
    cores: int = 8                    # per Slurm job; each core runs one instance
    memory: str = "16GB"              # per Slurm job
    jobs: int = 1                     # Slurm jobs to submit
    extra: tuple = ()                 # more #SBATCH directives, e.g. "--constraint=mc"


@dataclasses.dataclass
class ExecutorSpec:
    kind: str = "local"
    workers: int = 1                  # local, dask-local: processes
    scheduler: Optional[str] = None   # dask: tcp://host:port or a scheduler file
    slurm: SlurmOptions = dataclasses.field(default_factory=SlurmOptions)


@dataclasses.dataclass
class Opened:
    executor: cf.Executor
    capacity: int                     # instances to keep in flight
    description: str
    in_process: bool = False          # tasks run in the driver's process (they may report live)


class _InlineExecutor(cf.Executor):
    """Runs each task in the calling thread when it is submitted."""

    def submit(self, fn, /, *args, **kwargs):
        future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:       # the driver reads it from the future, as from a pool's
            future.set_exception(exc)
        return future


@contextlib.contextmanager
def _inline(spec: ExecutorSpec) -> Iterator[Opened]:
    yield Opened(_InlineExecutor(), 1, "this process", in_process=True)


@contextlib.contextmanager
def _local(spec: ExecutorSpec) -> Iterator[Opened]:
    # fork: workers inherit the programs the campaign process has already parsed
    pool = cf.ProcessPoolExecutor(max_workers=spec.workers, mp_context=multiprocessing.get_context("fork"),
                                  initializer=die_with_parent)
    try:
        yield Opened(pool, spec.workers, f"{spec.workers} local worker process(es)")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _distributed():
    try:
        import distributed
    except ImportError as exc:
        raise ConfigError("Dask is not installed: `pip install 'harnessgen[dask]'` (or `make setup`)") from exc
    return distributed


@contextlib.contextmanager
def _dask_client(client, description: str) -> Iterator[Opened]:
    """Any Dask client: ``pure=False`` so that two identical task descriptions both run."""
    try:
        workers = client.scheduler_info().get("workers", {})
        capacity = sum(int(w.get("nthreads", 1)) for w in workers.values()) or 1
        yield Opened(client.get_executor(pure=False), capacity, description)
    finally:
        client.close()


@contextlib.contextmanager
def _dask(spec: ExecutorSpec) -> Iterator[Opened]:
    if not spec.scheduler:
        raise ConfigError("--scheduler ADDRESS is required for the dask executor (tcp://host:8786 or a scheduler file)")
    distributed = _distributed()
    if os.path.isfile(spec.scheduler):
        client = distributed.Client(scheduler_file=spec.scheduler)
    else:
        client = distributed.Client(spec.scheduler, timeout="30s")
    with _dask_client(client, f"Dask scheduler {spec.scheduler}") as opened:
        yield opened


def local_cluster(workers: int):
    """A LocalCluster of single-threaded worker processes (one instance per core at a time)."""
    distributed = _distributed()
    return distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                    dashboard_address=":0", silence_logs=40)   # any free port


@contextlib.contextmanager
def _from_cluster(cluster, description: str, wait_for: int) -> Iterator[Opened]:
    distributed = _distributed()
    try:
        client = distributed.Client(cluster)
        client.wait_for_workers(wait_for)
        with _dask_client(client, description) as opened:
            yield opened
    finally:
        cluster.close()


@contextlib.contextmanager
def _dask_local(spec: ExecutorSpec) -> Iterator[Opened]:
    with _from_cluster(local_cluster(spec.workers), f"Dask LocalCluster of {spec.workers} worker(s)",
                       spec.workers) as opened:
        yield opened


def slurm_cluster(options: SlurmOptions):
    """A dask-jobqueue SLURMCluster: one single-threaded Dask worker per core of each job."""
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError as exc:
        raise ConfigError("dask-jobqueue is not installed: `pip install 'harnessgen[dask]'`") from exc
    return SLURMCluster(queue=options.queue, account=options.account, walltime=options.walltime,
                        cores=options.cores, processes=options.cores, memory=options.memory,
                        job_extra_directives=list(options.extra))


@contextlib.contextmanager
def _slurm(spec: ExecutorSpec) -> Iterator[Opened]:
    options = spec.slurm
    cluster = slurm_cluster(options)
    cluster.scale(jobs=options.jobs)
    with _from_cluster(cluster, f"{options.jobs} Slurm job(s) of {options.cores} core(s)", 1) as opened:
        # workers arrive as the queue starts the jobs; keep the eventual capacity in flight
        opened.capacity = max(opened.capacity, options.jobs * options.cores)
        yield opened


EXECUTORS: Dict[str, Callable[[ExecutorSpec], contextlib.AbstractContextManager]] = {
    "inline": _inline,
    "local": _local,
    "dask": _dask,
    "dask-local": _dask_local,
    "slurm": _slurm,
}


def open_executor(spec: ExecutorSpec):
    if spec.kind not in EXECUTORS:
        raise ConfigError(f"executor {spec.kind!r} is unknown; choose one of {', '.join(EXECUTORS)}")
    if spec.workers < 1:
        raise ConfigError(f"--jobs {spec.workers}: at least one worker is needed")
    return EXECUTORS[spec.kind](spec)
