"""The README documents every environment knob, and opens with the two commands."""
from harnessgen.core.envs import KNOBS
from tests.conftest import REPO


def test_every_environment_knob_is_documented():
    readme = (REPO / "README.md").read_text()
    for name in KNOBS:
        assert f"`{name}`" in readme, name


def test_readme_opens_with_fuzz_and_test_and_ci_runs_the_test_command():
    lines = [l for l in (REPO / "README.md").read_text().splitlines() if l.startswith("make ")]
    assert lines[0].startswith("make fuzz TARGET=") and lines[1].startswith("make test")
    assert "make test" in (REPO / ".ci" / "run").read_text()
