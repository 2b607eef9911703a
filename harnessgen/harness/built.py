"""A finished build of a pair (``build.build`` makes it): where its libraries and harnesses are,
what its manifest says, its input layout. Light on purpose: the replay worker opens a build in a
process of its own, started again after every input that kills it, and must start without
loading DaCe (a second of every restart).
"""
from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Dict, List, Optional

from ..core import protocol
from ..core.runtime import Tolerance
from ..inputs.layout import InputLayout
from .parallel_code import new_parallel_code


@dataclasses.dataclass
class HarnessBuild:
    dir: Path
    key: str
    layout: InputLayout
    manifest: Dict

    @property
    def libpre(self) -> Path:
        return self.dir / "libpre.so"

    @property
    def libpost(self) -> Path:
        return self.dir / "libpost.so"

    @property
    def harness_afl(self) -> Path:
        return self.dir / "harness_afl"

    @property
    def harness_cmplog(self) -> Optional[Path]:
        path = self.dir / "harness_cmplog"
        return path if path.exists() else None

    @property
    def harness_replay(self) -> Path:
        """The replay binary. A build made without it (its inputs screened through cffi first,
        ``harness.forked``) compiles it the first time it is asked for: whatever runs inputs
        natively (a finding's triage, its reducer, a user's replay) always finds it."""
        path = self.dir / "harness_replay"
        if self.replay_deferred and not path.is_file():
            from .compiler import complete_replay     # (DaCe's headers: never in a replay worker)

            complete_replay(self.dir)
        return path

    @property
    def replay_deferred(self) -> bool:
        """Made without its replay binary, which is compiled when first asked for."""
        return bool(self.manifest.get("replay_deferred"))

    @property
    def replay_compiled(self) -> bool:
        """Whether the replay binary is there already (asking ``harness_replay`` compiles it)."""
        return (self.dir / "harness_replay").is_file()

    def host_source(self, side: str) -> str:
        """One side's generated host code ('' where there is none)."""
        path = self.dir / "src" / "cpu" / f"{self.manifest[side]['name']}.cpp"
        return path.read_text() if path.is_file() else ""

    @functools.cached_property
    def new_parallel_regions(self) -> List[str]:
        """Post's parallel regions (with what they call) that pre does not run identically."""
        return new_parallel_code(self.host_source("pre"), self.manifest["pre"]["name"],
                                 self.host_source("post"), self.manifest["post"]["name"])

    @property
    def parallelism_changed(self) -> bool:
        """Post runs parallel code that pre does not run identically (a new region, a region
        whose body or callees changed, a loop moved into a parallel map), whether or not any
        OpenMP directive changed: post must be judged on several threads, not on one only."""
        return bool(self.new_parallel_regions)

    @property
    def tolerance(self) -> Tolerance:
        """The tolerance it was built with (its harness's default)."""
        return Tolerance.from_json(self.manifest["oracle"])

    def gpu_missing(self) -> Optional[str]:
        """Why this build cannot run on this machine (its harness's own device check); None
        when it can, and always for a CPU build."""
        if not self.manifest.get("cuda"):
            return None
        reason = protocol.device_check(self.harness_replay)
        if reason is None:
            return None
        from ..cuda import toolkit as cuda_toolkit  # (it reads DaCe's configuration)

        return cuda_toolkit.gpu_unavailable() or reason    # "insufficient driver" often means no driver at all

    @classmethod
    def open(cls, directory: Path) -> "HarnessBuild":
        directory = Path(directory)
        manifest = json.loads((directory / "manifest.json").read_text())
        return cls(directory, manifest["key"], InputLayout.load(directory / "layout.json"), manifest)
