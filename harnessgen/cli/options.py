"""The flags several commands share, and what they mean as records: the instance options
(oracle, decoder ranges, seeds, checks, where files go) as ``FuzzOptions``, the tolerance, the
executor a run uses."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..campaign.executors import ExecutorSpec, SlurmOptions
from ..core.records import VERDICTS, FuzzOptions
from ..core.runtime import Tolerance
from ..plan.params import parse_mode


def add_tolerance_flags(p, default_from: str = "") -> None:
    """--rtol / --atol / --exact; unset, each keeps the oracle's own default (runtime.Tolerance)
    or, where ``default_from`` says so, the value recorded there."""
    where = default_from or "{:g}"
    p.add_argument("--rtol", type=float, help=f"relative tolerance (default {where.format(Tolerance.rtol)})")
    p.add_argument("--atol", type=float, help=f"absolute tolerance (default {where.format(Tolerance.atol)})")
    p.add_argument("--exact", action="store_true", default=None, help="compare floats bit for bit")


def tolerance_from(args, recorded=None):
    """The one Tolerance the flags of add_tolerance_flags give: each flag not given keeps the
    ``recorded`` tolerance's value (a build's), else the oracle's default."""
    import dataclasses

    base = recorded or Tolerance()
    given = {name: getattr(args, name) for name in ("rtol", "atol", "exact") if getattr(args, name, None) is not None}
    return dataclasses.replace(base, **given)


def add_simplify_flag(p) -> None:
    p.add_argument("--simplify", dest="simplify", action=argparse.BooleanOptionalAction, default=None,
                   help="which form of the program pattern transformations meet: --simplify the simplified one, "
                        "--no-simplify the program as given (as its frontend wrote it). Default: a @dace.program "
                        "and the built-in targets simplified (what their users run), an SDFG file or a builder's "
                        "SDFG as given (passes such as simplify always start from the form as given)")


def add_params_flag(p) -> None:
    p.add_argument("--params", default="pairs", metavar="pairs|pairs:K|default|boundary|N",
                   help="the transformation's own parameters (tile sizes, overlaps, vector widths, unroll counts, "
                        "choices): pairs (the default: the default values and 2 variants per match that change two "
                        "interacting parameters together, judged in their own share of the run's time), pairs:K (K "
                        "such variants), default (the default values or --set's only), boundary (every boundary "
                        "value of each parameter, the others at their defaults) or N (at most N combinations per "
                        "match, seeded, simplest first); each variant is an instance of its own")


def add_instance_options(p) -> None:
    """What every instance is fuzzed with: oracle, decoder ranges, seeds, where files go."""
    p.add_argument("--constraints", type=Path, metavar="FILE",
                   help='symbol/data ranges, {"name": ["lo", "hi"]} (default afl_configs/<target>.constraints.json)')
    add_simplify_flag(p)
    add_params_flag(p)
    p.add_argument("--params-shrink-time", type=float, default=120.0, metavar="SECONDS",
                   help="a finding of a parameter variant: look this long for simpler parameters that fail alike, "
                        "defaults and small values first (default 120; 0: none)")
    p.add_argument("--no-reference-check", dest="reference_check", action="store_false",
                   help="do not check the programs against their references before the instances (a check "
                        "runs where a program has one: the kernels, a @dace.program run as plain Python)")
    add_tolerance_flags(p)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show DaCe's warnings as they come (always written to warnings.log in the output directory)")
    p.add_argument("--max-size", type=int, default=16, help="largest value of a size symbol (default 16)")
    p.add_argument("--float-bound", type=float, default=1e6, help="floats are decoded into [-B, B] (default 1e6)")
    p.add_argument("--nonfinite", action="store_true", help="let NaN and Inf through the decoder")
    p.add_argument("--race", nargs="?", type=int, const=4, default=0, metavar="THREADS",
                   help="also fuzz in race mode: a second afl-fuzz instance runs post on THREADS OpenMP "
                        "threads (default 4) and compares with pre on one thread")
    p.add_argument("--race-repeat", type=int, default=2, metavar="R", help="race mode: post runs per input (default 2)")
    p.add_argument("--race-check", action=argparse.BooleanOptionalAction, default=True,
                   help="where post runs parallel code pre does not run identically (a new parallel region, a "
                        "region whose body or callees changed), run the seeds and the final queue with post on 4 "
                        "threads, unasked (default on)")
    p.add_argument("--whole-share", type=float, default=0.25, metavar="F",
                   help="share of the workers' time for instances judged on whole programs (passes, and "
                        "transformations whose instances prove slow); default 0.25")
    p.add_argument("--variant-share", type=float, default=0.0, metavar="F",
                   help="share of the workers' time for parameter variants beyond each match's defaults "
                        "(--params), interleaved with the matches; default 0: variants after every match has "
                        "its verdict")
    p.add_argument("--share-pairs", action=argparse.BooleanOptionalAction, default=True,
                   help="an instance whose cutout pair equals one already judged up to names and GUIDs takes "
                        "that one's verdict (\"same pair as <id>\") instead of being built and fuzzed again; "
                        "never where a whole-program audit runs beside the verdict; a run with --budget audits "
                        "each place after every match has its verdict, so its pairs are shared (default on)")
    p.add_argument("--cmplog", action="store_true", help="also build a CMPLOG harness and pass it to afl-fuzz -c")
    p.add_argument("--prove", choices=("first", "only", "off"), default="first",
                   help="translation validation of affine cutouts (islpy + z3): first (default) proves each pair "
                        "and fuzzes those neither PROVEN bit for bit nor DISPROVEN, a counterexample becoming a "
                        "finding and a seed; only: prove and replay counterexamples, never fuzz; off: fuzz only")
    p.add_argument("--seed", type=int, default=0, help="seed of the seed sampler")
    p.add_argument("--seed-mode", choices=("boundary", "random", "none"), default="boundary",
                   help="boundary-aware seeds (default), a few random byte strings, or only your own "
                        "files in the corpus directory")
    p.add_argument("--work-dir", type=Path, default=Path(".harnessgen"), help="build cache (default .harnessgen)")
    p.add_argument("--corpus-dir", type=Path, default=Path("corpus"))
    p.add_argument("--crashes-dir", type=Path, default=Path("crashes"))
    p.add_argument("--max-replays", type=int, default=500, help="raw crashes triaged per instance (default 500)")
    p.add_argument("--audit", action=argparse.BooleanOptionalAction, default=None,
                   help="whole-program audit of every instance: the same match applied to the whole program, "
                        "whole-pre against whole-post on small inputs; CUTOUT_MISSED where the program differs "
                        "and the cutout passed, findings marked observable or latent (default: on where the "
                        "whole program is small)")
    p.add_argument("--audit-time", type=float, default=60.0, metavar="SECONDS",
                   help="the audit's inputs stop after this many seconds per instance (default 60; its build is extra)")
    add_reduce_flag(p)
    p.add_argument("--no-plots", dest="plots", action="store_false",
                   help="report.html and report.md without their plots (drawing them takes matplotlib about 2 s "
                        "at the end of every run; `harnessgen report DIR` draws them later)")


def add_reduce_flag(p) -> None:
    p.add_argument("--reduce-time", type=float, default=60.0, metavar="SECONDS",
                   help="when the findings are clustered into bugs, reduce each bug's program for at most this "
                        "long (default 60; 0: no reduction)")
    p.add_argument("--reduce-candidates", type=int, default=2000, metavar="N",
                   help="... and judge at most N smaller programs per bug (default 2000)")


def fuzz_options(args, **fields):
    """FuzzOptions from the flags add_instance_options declares (plus ``fields``)."""
    return FuzzOptions(
        constraints=args.constraints, tolerance=tolerance_from(args), max_size=args.max_size,
        float_bound=args.float_bound, nonfinite=args.nonfinite, work_dir=args.work_dir, corpus_root=args.corpus_dir,
        crashes_root=args.crashes_dir, cmplog=args.cmplog, max_replays=args.max_replays, seed=args.seed,
        seed_mode=args.seed_mode, race_threads=args.race, race_repeat=args.race_repeat,
        race_check=args.race_check, audit=args.audit, verbose=args.verbose, simplify=args.simplify,
        reference_check=args.reference_check, audit_time_s=args.audit_time, reduce_seconds=args.reduce_time,
        reduce_candidates=args.reduce_candidates, plots=args.plots, params=parse_mode(args.params),
        params_shrink_s=args.params_shrink_time, prove=args.prove, whole_share=args.whole_share,
        variant_share=args.variant_share, share_pairs=args.share_pairs, command_line=" ".join(["harnessgen"] + sys.argv[1:]), **fields)


def redo_list(text: str) -> tuple:
    """Verdicts (upper case) and transformation class names, comma-separated."""
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    unknown = [v for v in names if v.isupper() and v not in VERDICTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown verdict(s) {', '.join(unknown)}; "
                                         f"one of {', '.join(VERDICTS)} (or a transformation's class name)")
    return names


def add_executor_flags(p, default, jobs_help: str) -> None:
    """Where instances run: --jobs (local), --dask-local, --scheduler or --slurm (and its options)."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--jobs", type=int, default=default, metavar="N", help=jobs_help)
    where.add_argument("--dask-local", type=int, metavar="N", help="run on a Dask LocalCluster of N workers")
    where.add_argument("--scheduler", metavar="ADDRESS", help="run on a Dask scheduler (tcp://host:8786 or a "
                                                                "scheduler file); workers must see --out's path")
    where.add_argument("--slurm", action="store_true", help="submit Dask workers as Slurm jobs (dask-jobqueue)")
    slurm = p.add_argument_group("Slurm (with --slurm)")
    slurm.add_argument("--slurm-queue", help="partition (sbatch -p)")
    slurm.add_argument("--slurm-account", help="account (sbatch -A)")
    slurm.add_argument("--slurm-walltime", default="02:00:00", help="per job (default 02:00:00)")
    slurm.add_argument("--slurm-cores", type=int, default=8, help="cores per job, one instance each (default 8)")
    slurm.add_argument("--slurm-memory", default="16GB", help="memory per job (default 16GB)")
    slurm.add_argument("--slurm-jobs", type=int, default=1, help="jobs to submit (default 1)")
    slurm.add_argument("--slurm-directive", action="append", default=[], metavar="TEXT",
                       help="one more #SBATCH directive, e.g. --slurm-directive=--constraint=mc (repeatable)")


def elsewhere(args):
    """The executor --dask-local, --scheduler or --slurm ask for; None without them."""
    if args.slurm:
        return ExecutorSpec("slurm", slurm=SlurmOptions(
            queue=args.slurm_queue, account=args.slurm_account, walltime=args.slurm_walltime,
            cores=args.slurm_cores, memory=args.slurm_memory, jobs=args.slurm_jobs, extra=tuple(args.slurm_directive)))
    if args.scheduler:
        return ExecutorSpec("dask", scheduler=args.scheduler)
    if args.dask_local:
        return ExecutorSpec("dask-local", workers=args.dask_local)
    return None


def executor_spec(args):
    """The campaign's executor: as add_executor_flags ask, else --jobs local workers (default the cores)."""
    import os

    return elsewhere(args) or ExecutorSpec("local", workers=args.jobs or os.cpu_count() or 1)
