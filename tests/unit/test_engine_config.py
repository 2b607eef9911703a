"""afl_configs/<target>.options and .dict: parsed, validated, picked up per target."""
import pytest

from harnessgen.engines import get_engine
from harnessgen.engines.afl import read_options, read_stats
from harnessgen.errors import ConfigError
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
