"""Cutout fidelity over a whole target: how every instance of every CPU built-in is cut out.

    python bench/fidelity.py [--program kernels] [--transformation all|default|A,B] [--jobs 2]
                             [--out bench/results/fidelity-<program>.json]

For each instance: the cutout stage's verdict without building or fuzzing it (ok, a static
finding such as FAILED_TO_APPLY, or UNSUPPORTED with its reason), whether it joined aliased
nested-SDFG connectors into one container or grew past them (or past alibi containers that
alias), whether it grew until the match held, and the seconds it took.
Prints the counts and every UNSUPPORTED reason; writes the rows as JSON.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import json
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

_SDFGS = {}


def _sdfg(program: str, name: str):
    from harnessgen.targets import resolve

    if (program, name) not in _SDFGS:
        target, _ = resolve(program)
        _SDFGS[(program, name)] = target.programs[name].build()
    return _SDFGS[(program, name)]


def _cut(program: str, inst_json: dict) -> dict:
    from harnessgen.core.errors import Unsupported
    from harnessgen.cutout.extract import extract
    from harnessgen.plan.instances import Instance, load_transformation

    inst = Instance.from_json(inst_json)
    started = time.monotonic()
    row = {"instance": inst.id, "program": inst.program, "transformation": inst.transformation}
    try:
        pair = extract(_sdfg(program, inst.program), inst, load_transformation(inst.transformation_spec))
        aliases = getattr(pair, "aliases", [])
        row.update(verdict="ok" if pair.ok else pair.verdict.name, aliases=len(aliases),
                   joined=sum(1 for a in aliases if "joined_as" in a),
                   alibis_kept_whole=sum(1 for a in aliases if a.get("kept_whole")),
                   grown=getattr(pair, "grown_for", "") or "")
    except Unsupported as exc:
        row.update(verdict="UNSUPPORTED", reason=str(exc))
    except Exception as exc:     # a harnessgen bug: counted apart
        row.update(verdict="ERROR", reason=f"{type(exc).__name__}: {exc}")
    row["seconds"] = round(time.monotonic() - started, 3)
    return row


def _instances(program: str, spec: str):
    from harnessgen.core.errors import Unsupported
    from harnessgen.plan.instances import cpu_builtin_transformations, enumerate_instances, load_transformation
    from harnessgen.plan.passes import find_pass
    from harnessgen.targets import resolve

    target, name = resolve(program)
    names = {"all": cpu_builtin_transformations(), "default": target.default_transformations}.get(spec) \
        or spec.split(",")
    programs = target.select(name)
    sdfgs = {p.name: _sdfg(program, p.name) for p in programs}
    found = []
    for xform in names:
        if find_pass(xform) is not None:    # passes are cut out by what they changed: not this bench's subject
            continue
        try:
            found += enumerate_instances(target, programs, load_transformation(xform), xform, sdfgs)
        except Unsupported:
            continue
    return found


def _reason_kind(reason: str) -> str:
    """The reason with instance ids, names and numbers taken out, to count alike reasons together."""
    return re.sub(r"\b[\w.]+-[0-9a-f]{8}\b|\b\d+\b|'[^']*'|\"[^\"]*\"", "_", reason)[:160]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--program", default="kernels")
    parser.add_argument("--transformation", default="all")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    insts = _instances(args.program, args.transformation)
    started = time.monotonic()
    with cf.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(_cut, [args.program] * len(insts), [i.to_json() for i in insts]))
    verdicts = collections.Counter(r["verdict"] for r in rows)
    print(f"{len(rows)} instances of {args.transformation} in {args.program} in {time.monotonic() - started:.0f} s: "
          + ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())))
    aliased = [r for r in rows if r.get("aliases")]
    print(f"with aliased views: {len(aliased)} (joined into one container: "
          f"{sum(1 for r in aliased if r['joined'] == r['aliases'])}; grown past them: "
          f"{sum(1 for r in aliased if r.get('grown') == 'aliased views')}, of which for alibi containers: "
          f"{sum(1 for r in aliased if r['alibis_kept_whole'])}); "
          f"grown until the match held: {sum(1 for r in rows if r.get('grown', '').startswith('the match'))}")
    reasons = collections.Counter((r["transformation"], _reason_kind(r["reason"])) for r in rows if "reason" in r)
    for (xform, reason), count in sorted(reasons.items()):
        print(f"  {count:3d} {xform}: {reason}")
    safe_name = re.sub(r"[^\w.-]", "_", args.program)
    out = args.out or REPO / "bench" / "results" / f"fidelity-{safe_name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"program": args.program, "transformation": args.transformation,
                               "verdicts": dict(verdicts), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
