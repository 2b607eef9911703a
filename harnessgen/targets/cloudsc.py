"""Built-in target ``cloudsc``: our port of the ECMWF cloud microphysics scheme.

The program itself is in ``cloudsc_port.py``. This module adds what the pipeline and
the port checks need: the SDFG (parsed once, then cached by the port's source hash:
DaCe's frontend needs about a minute for it), a pure-NumPy execution of the same
function, and a generator of physically plausible states.
"""
from __future__ import annotations

import types
from pathlib import Path
from typing import Dict, Optional

import numpy as np

from . import cloudsc_port
from .base import GPU_TRANSFORMATIONS, Program, Target, builtin_defaults
from .loaders import cached_program, content_identity, program_key

# built-in DaCe transformations engineers apply to such code, then our engineer-style ones
DEFAULT_TRANSFORMATIONS = [
    "LoopUnroll", "TaskletFusion", "MapFusion", "LoopToMap", "MoveLoopIntoMap", "MapTiling",
    "Vectorization", "MapExpansion", "StateFusion",
    "harnessgen.targets.cloudsc_xforms:OffloadMap", "harnessgen.targets.cloudsc_xforms:UnrollByTwo",
]
SIZES = ("KLON", "KLEV", "KIDIA", "KFDIA", "NCLDTOP")
INPUTS = ("PT", "PQ", "PA", "TENDENCY_TMP_T", "TENDENCY_TMP_Q", "TENDENCY_TMP_A", "TENDENCY_TMP_CLD", "PVERVEL",
          "PHRSW", "PHRLW", "PAP", "PAPH", "PLSM", "LDCUM", "KTYPE", "PLUDE", "PLU", "PSNDE", "PMFU", "PMFD",
          "PSUPSAT", "PCLV", "PLCRIT_AER", "PICRIT_AER", "PRE_ICE", "PCCN", "PNICE", "PTSPHY")
FLUXES = ("PFSQLF", "PFSQIF", "PFCQNNG", "PFCQLNG", "PFSQRF", "PFSQSF", "PFCQRNG", "PFCQSNG", "PFSQLTUR",
          "PFSQITUR", "PFPLSL", "PFPLSN", "PFHPSL", "PFHPSN")
OUTPUTS = ("TENDENCY_LOC_T", "TENDENCY_LOC_Q", "TENDENCY_LOC_A", "TENDENCY_LOC_CLD", "PCOVPTOT",
           "PRAINFRAC_TOPRFZ") + FLUXES
SENTINEL = -999.0     # what outputs hold before the call: untouched parts must keep it


def _port():
    return cloudsc_port


def build_sdfg(simplify: bool = True):
    """The port's SDFG, simplified (or as the frontend wrote it); parsed once per version of
    the port and DaCe."""
    port = _port()

    def parse():
        sdfg = port.cloudsc.to_sdfg(simplify=False)
        sdfg.name = "cloudsc"
        return sdfg

    return cached_program("cloudsc", Path(port.__file__).read_bytes(), parse, simplify, frontend_form=True)


def shapes(sizes: Dict[str, int]) -> Dict[str, tuple]:
    klon, klev, nclv = sizes["KLON"], sizes["KLEV"], _port().NCLV
    out = {name: (klon, klev) for name in INPUTS + OUTPUTS}
    out.update({n: (klon, klev + 1) for n in FLUXES + ("PAPH",)})
    out.update({n: (klon, klev, nclv) for n in ("TENDENCY_TMP_CLD", "PCLV", "TENDENCY_LOC_CLD")})
    out.update({n: (klon,) for n in ("PLSM", "LDCUM", "KTYPE", "PRAINFRAC_TOPRFZ")})
    out["PTSPHY"] = ()
    return out


def make_inputs(klon: int = 8, klev: int = 12, seed: int = 0, kidia: int = 1, kfdia: Optional[int] = None,
                ncldtop: int = 2, ptsphy: float = 3600.0) -> Dict[str, object]:
    """A physically plausible state: a warm moist bottom (melting, warm rain), a cold top
    (ice, snow, supersaturation), partial cloud cover, some condensate below RLMIN and some
    cover below RAMIN (the tidy-ups), convection in some columns. Outputs hold SENTINEL."""
    port = _port()
    rng = np.random.default_rng(seed)
    kfdia = klon if kfdia is None else kfdia
    sizes = {"KLON": klon, "KLEV": klev, "KIDIA": kidia, "KFDIA": kfdia, "NCLDTOP": ncldtop}
    f = {}
    eta = (np.arange(klev + 1) / klev) ** 1.4
    psurf = rng.uniform(98000.0, 103000.0, klon)
    f["PAPH"] = 1500.0 + np.outer(psurf - 1500.0, eta)
    f["PAP"] = 0.5 * (f["PAPH"][:, :-1] + f["PAPH"][:, 1:])
    sigma = f["PAP"] / f["PAPH"][:, -1:]
    t = 205.0 + 95.0 * sigma ** 0.6 + rng.normal(0.0, 2.0, (klon, klev))
    t[:, klev // 5] += 6.0                         # an inversion: the tropopause search finds it
    f["PT"] = t
    qsat = 0.622 * 611.0 * np.exp(17.5 * (t - 273.16) / (t - 32.19)) / f["PAP"]
    f["PQ"] = np.minimum(qsat * rng.uniform(0.4, 1.15, (klon, klev)), 0.04)
    cover = rng.uniform(0.0, 1.0, (klon, klev))
    cover[rng.uniform(size=(klon, klev)) < 0.25] = 0.0
    cover[rng.uniform(size=(klon, klev)) < 0.08] = 1e-10
    f["PA"] = cover
    clv = np.zeros((klon, klev, port.NCLV))
    warm = t > 273.16
    clv[:, :, 0] = np.where(warm | (t > 250.0), rng.uniform(0, 4e-4, (klon, klev)), 0.0) * (cover > 0)
    clv[:, :, 1] = np.where(~warm, rng.uniform(0, 2e-4, (klon, klev)), 0.0) * (cover > 0)
    clv[:, :, 2] = np.where(warm, rng.uniform(0, 1e-4, (klon, klev)), 0.0)
    clv[:, :, 3] = np.where(~warm, rng.uniform(0, 5e-5, (klon, klev)), 0.0)
    tiny = rng.uniform(size=(klon, klev, 4)) < 0.1
    clv[:, :, :4][tiny] = 1e-10
    f["PCLV"] = clv
    f["TENDENCY_TMP_T"] = rng.normal(0.0, 1e-5, (klon, klev))
    f["TENDENCY_TMP_Q"] = rng.normal(0.0, 1e-9, (klon, klev))
    f["TENDENCY_TMP_A"] = rng.normal(0.0, 1e-6, (klon, klev))
    f["TENDENCY_TMP_CLD"] = rng.normal(0.0, 1e-10, (klon, klev, port.NCLV))
    f["PVERVEL"] = rng.normal(0.0, 0.5, (klon, klev))
    f["PHRSW"] = rng.uniform(0.0, 2e-5, (klon, klev))
    f["PHRLW"] = rng.uniform(-3e-5, 0.0, (klon, klev))
    f["PLSM"] = (rng.uniform(size=klon) < 0.5).astype(np.float64)
    f["LDCUM"] = (rng.uniform(size=klon) < 0.6).astype(np.int32)
    f["KTYPE"] = rng.integers(0, 4, klon).astype(np.int32)
    f["PLUDE"] = rng.uniform(0.0, 2e-6, (klon, klev))
    f["PLU"] = rng.uniform(0.0, 1e-3, (klon, klev))
    f["PSNDE"] = rng.uniform(0.0, 5e-7, (klon, klev))
    f["PMFU"] = rng.uniform(0.0, 0.02, (klon, klev))
    f["PMFD"] = -rng.uniform(0.0, 0.01, (klon, klev))
    f["PSUPSAT"] = np.where(rng.uniform(size=(klon, klev)) < 0.2, rng.uniform(0, 1e-6, (klon, klev)), 0.0)
    for name, scale in (("PLCRIT_AER", 3e-4), ("PICRIT_AER", 3e-5), ("PRE_ICE", 60.0), ("PCCN", 200.0),
                        ("PNICE", 50.0)):
        f[name] = np.where(rng.uniform(size=(klon, klev)) < 0.5, rng.uniform(0.2, 1.5, (klon, klev)) * scale, 0.0)
    f["PTSPHY"] = np.float64(ptsphy)
    for name in OUTPUTS:
        f[name] = np.full(shapes(sizes)[name], SENTINEL)
    return {"sizes": sizes, "arrays": f}


def _copies(arrays: Dict[str, object]) -> Dict[str, object]:
    """Arguments a run may overwrite, so that the caller's stay as they were."""
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in arrays.items()}


def run_numpy(arrays: Dict[str, object], sizes: Dict[str, int]) -> Dict[str, object]:
    """Run the port's Python function as plain NumPy on copies; returns every argument after the call."""
    port = _port()
    namespace = dict(port.cloudsc.f.__globals__)
    namespace.update({k: int(v) for k, v in sizes.items()})
    for helper in port.HELPERS:
        namespace[helper.f.__name__] = helper.f
    function = types.FunctionType(port.cloudsc.f.__code__, namespace)
    copies = _copies(arrays)
    function(**{k: copies[k] for k in INPUTS + OUTPUTS})
    return copies


def run_compiled(compiled, arrays: Dict[str, object], sizes: Dict[str, int]) -> Dict[str, object]:
    copies = _copies(arrays)
    compiled(**copies, **sizes)
    return copies


def make_target() -> Target:
    programs = {"cloudsc": Program("cloudsc", build_sdfg, "cloud microphysics scheme (our CLOUDSC port)",
                                   build_unsimplified=lambda: build_sdfg(simplify=False),
                                   identity=content_identity(program_key(Path(_port().__file__).read_bytes()).encode()))}
    return Target(name="cloudsc", programs=programs, recipe="harnessgen.targets.cloudsc_recipe:optimize", default_transformations=builtin_defaults(DEFAULT_TRANSFORMATIONS),
                  gpu_transformations=list(GPU_TRANSFORMATIONS))
