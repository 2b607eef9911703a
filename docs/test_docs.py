"""The README opens with the two commands and points at every document; the documents
cover every environment knob, and their links resolve."""
import re
from pathlib import Path

from harnessgen.core.envs import KNOBS

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_every_environment_knob_is_documented():
    environment = (DOCS / "environment.md").read_text()
    for name in KNOBS:
        assert f"`{name}`" in environment, name


def test_readme_opens_with_fuzz_and_test_and_ci_runs_the_test_command():
    lines = [l for l in (REPO / "README.md").read_text().splitlines() if l.startswith("make ")]
    assert lines[0].startswith("make fuzz TARGET=") and lines[1].startswith("make test")
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_readme_stays_short_and_links_every_document():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    linked = set(LINK.findall(readme))
    for doc in sorted(DOCS.glob("*.md")):
        assert f"docs/{doc.name}" in linked, doc.name


def test_relative_links_in_the_documents_resolve():
    for page in [REPO / "README.md", *sorted(DOCS.glob("*.md"))]:
        for target in LINK.findall(page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            assert (page.parent / target).exists(), f"{page.name}: {target}"
