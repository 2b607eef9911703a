"""afl_configs/<target>.options and .dict: parsed, validated, picked up per target."""
import pytest

from harnessgen.core.errors import ConfigError
from harnessgen.engines import get_engine
from harnessgen.engines.afl import read_options, read_stats
from harnessgen.targets import resolve


def test_options_file_is_shell_split_with_comments(tmp_path):
    f = tmp_path / "t.options"
    f.write_text("# schedule for long runs\n-p explore   # comment\n-t '2000+'\n\n")
    assert read_options(f) == ["-p", "explore", "-t", "2000+"]


@pytest.mark.parametrize("flag", ["-i", "-o", "-V"])
def test_options_harnessgen_sets_itself_are_refused(tmp_path, flag):
    f = tmp_path / "t.options"
    f.write_text(f"{flag} somewhere\n")
    with pytest.raises(ConfigError, match=f"{flag} is set by harnessgen"):
        read_options(f)


def test_kernels_target_ships_a_valid_dictionary():
    target, _ = resolve("kernels")
    assert target.dict_file is not None and target.dict_file.name == "kernels.dict"
    entries = [l for l in target.dict_file.read_text().splitlines() if l and not l.startswith("#")]
    assert entries and all(l.split("=", 1)[0].replace("_", "").isalnum() for l in entries)
    assert all(len(bytes(l.split('"')[1], "ascii").decode("unicode_escape")) in (4, 8) for l in entries)


def test_fuzzer_stats_parsing(tmp_path):
    f = tmp_path / "fuzzer_stats"
    f.write_text("execs_done        : 1234\nexecs_per_sec     : 99.5\nbad line\n")
    assert read_stats(f) == {"execs_done": "1234", "execs_per_sec": "99.5"}
    assert read_stats(tmp_path / "missing") == {}


def test_unknown_engine_is_a_config_error():
    with pytest.raises(ConfigError, match="--engine 'libfuzzer' is unknown"):
        get_engine("libfuzzer")


def _job(tmp_path, **fields):
    from types import SimpleNamespace

    from harnessgen.engines import FuzzJob

    build = SimpleNamespace(harness_afl=tmp_path / "harness_afl", harness_cmplog=tmp_path / "harness_cmplog")
    return FuzzJob(build=build, seeds_dir=tmp_path / "seeds", out_dir=tmp_path / "out", time_s=100, **fields)


def test_parallel_instances_one_main_and_one_cmplog_secondary(tmp_path):
    from harnessgen.engines.afl import AflEngine, instance_names

    job = _job(tmp_path, parallel=3, max_execs=9000)
    names = instance_names(job)
    assert names == ["main", "s1", "s2"]
    commands = {n: AflEngine()._command("afl-fuzz", job, job.out_dir, n, False, 100, names) for n in names}
    assert commands["main"][commands["main"].index("-M") + 1] == "main" and "-c" not in commands["main"]
    assert "-c" in commands["s1"] and "-c" not in commands["s2"]
    assert all(c[c.index("-E") + 1] == "3000" for c in commands.values())      # the executions are shared
    assert len({c[c.index("-s") + 1] for c in commands.values()}) == 3        # each its own RNG seed


def test_resumed_session_gets_the_time_left(tmp_path):
    from harnessgen.engines.afl import AflEngine, instance_names, previous_run_time

    job = _job(tmp_path)
    (job.out_dir / "default").mkdir(parents=True)
    (job.out_dir / "default" / "fuzzer_stats").write_text("run_time          : 37\n")
    assert instance_names(job) == ["default"] and previous_run_time(job.out_dir, "default") == 37.0
    cmd = AflEngine()._command("afl-fuzz", job, job.out_dir, "default", True, 100 - 37, ["default"])
    assert cmd[cmd.index("-i") + 1] == "-" and cmd[cmd.index("-V") + 1] == "63"
