"""Passes and pipelines under test: a planted fusion pass inside simplify is found, bisected to
itself and reproduced, while DaCe's own simplify stays silent on the same program; a pass that
raises is a FAILED_TO_APPLY with a reproducer; a nested SDFG's instance is cut out smaller than
the program; the reference check blames the pipeline whose form differs."""
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

from harnessgen.checks.reference_check import CHECK_MAX_SIZE, DIFFERS, CheckOptions, check_program
from harnessgen.cutout.changes import load_change
from harnessgen.harness.judge import JudgeOptions
from harnessgen.plan import passes
from harnessgen.targets.kernels import REFERENCES
from harnessgen.targets.reference import Reference
from tests.conftest import kernels, run_cli, summary_of

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
PLANTED_PIPELINE = "harnessgen.zoo.planted:SimplifyMissingViews"


def repro(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "repro.py", *args], cwd=folder, capture_output=True, text=True,
                          timeout=600)


def test_a_planted_pass_in_a_pipeline_is_found_bisected_and_reproduced(tmp_path):
    proc = run_cli(["fuzz", "--program", "kernels:softmax", "--transformation", f"{PLANTED_PIPELINE},simplify",
                    "--time", "5"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = summary_of(tmp_path)
    by_name = {e["transformation"]: e for e in summary["instances"]}
    planted, simplify = by_name["SimplifyMissingViews"], by_name["simplify"]
    assert simplify["verdict"] == "PASS" and not simplify["bisect"]      # DaCe's own simplify: silent
    assert planted["verdict"] == "MISMATCH", planted["message"]
    bisect = planted["bisect"]
    assert bisect["verdict"] == "BISECTED", bisect
    assert bisect["first_pass"] == "FuseStatesMissingViews"
    assert bisect["steps"][:bisect["first_step"] - 1].count("FuseStatesMissingViews") == 0
    assert bisect["minimal_passes"] == ["FuseStatesMissingViews"]
    assert "fewest passes that still change it: FuseStatesMissingViews" in " ".join(proc.stderr.split())
    folder = Path(planted["findings"][0]["path"])
    assert json.loads((folder / "meta.json").read_text())["bisect"]["first_pass"] == "FuseStatesMissingViews"
    assert repro(folder).returncode == 1
    report = (tmp_path / "out" / "report.md").read_text()
    assert "FuseStatesMissingViews" in report.split("## Pipelines bisected")[1].split("## Per instance")[0]
    [check] = summary["reference_checks"]
    assert check["program"] == "softmax" and check["verdict"] == "AGREES"


def test_a_pass_that_raises_is_failed_to_apply_with_a_reproducer(tmp_path):
    proc = run_cli(["fuzz", "--program", "kernels:gemm", "--transformation",
                    f"{PROGRAMS / 'broken_xforms.py'}:PassThatRaises", "--time", "5", "--no-reference-check"],
                   tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = summary_of(tmp_path)
    assert summary["reference_checks"] == []
    [entry] = summary["instances"]
    assert entry["verdict"] == "FAILED_TO_APPLY" and "gave up half-way" in entry["message"]
    folder = Path(entry["crashes"][0])
    again = repro(folder, "--no-build")
    assert again.returncode == 1 and "FAILED_TO_APPLY" in again.stdout, again.stdout + again.stderr


def test_a_nested_sdfg_is_judged_in_a_cutout_smaller_than_the_program():
    target = kernels()
    program = target.programs["clip_small"].sdfg(simplified=False)
    change = load_change("simplify")
    insts = change.instances(target, [target.programs["clip_small"]],
                             lambda name, simplified: target.programs[name].sdfg(simplified), None)
    nested = [i for i in insts if i.match["sdfg"]]
    assert nested
    pair = change.extract(program, nested[0], 0)
    assert pair.ok and not pair.grown_for
    assert sum(1 for _ in pair.pre.all_nodes_recursive()) < sum(1 for _ in program.all_nodes_recursive())
    # the pass made of the nested SDFG in the cutout what it made of it in the program
    whole_post = passes.applied_copy(change.pspec, program)
    inner = [s for p, s in passes.sdfg_paths(pair.post).items() if p]
    assert passes.fingerprint(passes.sdfg_paths(whole_post)[nested[0].match["sdfg"]]) in \
        {passes.fingerprint(s) for s in inner}
    grown = change.extract(program, nested[0], 1)                       # after the audit: the whole program
    assert grown.grown_for.startswith("the pass: the whole program")


def test_the_reference_check_blames_the_pipeline_whose_form_differs(tmp_path, build_cache):
    program = kernels().programs["softmax"]
    options = CheckOptions(crashes_root=tmp_path / "crashes", inputs=6, judge=JudgeOptions(work_dir=build_cache, max_size=CHECK_MAX_SIZE))

    def zero_rows(X, Y):
        Y[:] = 0.0

    wrong = dataclasses.replace(program, reference=Reference("zero_rows", zero_rows))
    check = check_program("kernels", wrong, options)
    assert check.blame == "the frontend" and check.verdict == DIFFERS
    finding = Path(check.forms[0].finding)
    assert (finding / "program.sdfg").is_file() and repro(finding).returncode == 1

    planted = passes.find_pass(PLANTED_PIPELINE)
    broken_simplify = dataclasses.replace(program, build=lambda: passes.applied_copy(
        planted, program.sdfg(simplified=False)), reference=Reference("kernels:softmax", REFERENCES["softmax"]))
    check = check_program("kernels", broken_simplify, options)
    assert [f.verdict for f in check.forms] == ["AGREES", DIFFERS], check
    assert check.blame == "simplify"
    assert repro(Path(check.forms[1].finding)).returncode == 1


def test_a_program_form_that_does_not_build_is_a_finding_against_its_pipeline(tmp_path, build_cache):
    import dace
    from dace import nodes

    from harnessgen.checks.reference_check import BUILD_FAILURE

    program = kernels().programs["sigmoid"]

    def not_cxx():
        sdfg = program.sdfg(simplified=False)
        tasklet = next(n for n, _ in sdfg.all_nodes_recursive() if isinstance(n, nodes.Tasklet))
        tasklet.code = dace.properties.CodeBlock("this is not C++;", dace.Language.CPP)
        return sdfg

    broken = dataclasses.replace(program, build_unsimplified=not_cxx)
    options = CheckOptions(crashes_root=tmp_path / "crashes", inputs=4, judge=JudgeOptions(work_dir=build_cache, max_size=CHECK_MAX_SIZE))
    check = check_program("kernels", broken, options)
    assert [f.verdict for f in check.forms] == [BUILD_FAILURE, "AGREES"], check
    assert check.blame == "the frontend" and "error:" in check.forms[0].reason
    assert check_program("kernels", broken, options).forms[0].verdict == BUILD_FAILURE    # read back, not rebuilt
