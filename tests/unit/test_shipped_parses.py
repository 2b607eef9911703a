"""The parsed built-in programs that ship: current for every pinned DaCe, used in place of a
parse, and never used when switched off."""
import lzma
import re
from pathlib import Path

import pytest

from harnessgen.targets import cloudsc_port
from harnessgen.targets.loaders import SHIPPED, cached_program, program_key, shipped_parse

ROOT = Path(__file__).resolve().parents[2]


def _pinned_dace_versions():
    versions = set()
    for constraints in ROOT.glob("constraints*.txt"):
        versions |= set(re.findall(r"^dace==(\S+)$", constraints.read_text(), re.M))
    return sorted(versions)


def test_every_pinned_dace_has_the_current_parse_and_nothing_stale():
    versions = _pinned_dace_versions()
    assert len(versions) >= 2, versions
    source = Path(cloudsc_port.__file__).read_bytes()
    for version in versions:
        key = program_key(source, version)
        expected = {shipped_parse(f"cloudsc-{key}{form}.sdfg", version) for form in ("", "-unsimplified")}
        present = set((SHIPPED / f"dace-{version}").glob("*.xz"))
        assert present == expected, (f"the shipped CLOUDSC parse for DaCe {version} is not the current one "
                                     "(the port, or how targets/loaders.py prepares it, changed): run `make shipped-parses`")
    assert {p.name for p in SHIPPED.iterdir()} == {f"dace-{v}" for v in versions}


class _Parsed(Exception):
    pass


def _parse():
    raise _Parsed


def test_a_shipped_parse_is_used_instead_of_parsing(tmp_path, monkeypatch):
    import dace

    monkeypatch.setenv("HARNESSGEN_PROGRAM_CACHE", str(tmp_path))
    source = Path(cloudsc_port.__file__).read_bytes()
    sdfg = cached_program("cloudsc", source, _parse, simplify=True, frontend_form=True)
    cached = tmp_path / f"cloudsc-{program_key(source)}.sdfg"
    shipped = shipped_parse(cached.name, dace.__version__)
    assert cached.read_bytes() == lzma.decompress(shipped.read_bytes())
    assert sdfg.name == "cloudsc" and sdfg.hash_sdfg() == dace.SDFG.from_file(str(cached)).hash_sdfg()


def test_switched_off_the_program_is_parsed(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESSGEN_PROGRAM_CACHE", str(tmp_path))
    monkeypatch.setenv("HARNESSGEN_SHIPPED_PARSES", "0")
    with pytest.raises(_Parsed):
        cached_program("cloudsc", Path(cloudsc_port.__file__).read_bytes(), _parse, simplify=False)
    assert not list(tmp_path.glob("*.sdfg"))
