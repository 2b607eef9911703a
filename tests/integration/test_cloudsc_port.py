"""Checks that make our CLOUDSC port trustworthy as a fuzzing target: conservation,
bounds, identities, determinism, column independence, sub-range writes, and agreement
between the DaCe-compiled program and the same function run as plain NumPy."""
import numpy as np
import pytest

from harnessgen.targets import cloudsc as C

RG = 9.80665
SEEDS = range(4)


def run(seed, **kw):
    case = C.make_inputs(seed=seed, **{"klon": 6, "klev": 15, "kidia": 2, "kfdia": 5, "ncldtop": 3, **kw})
    return case["sizes"], case["arrays"], C.run_numpy(case["arrays"], case["sizes"])


@pytest.mark.parametrize("seed", SEEDS)
def test_column_water_budget_closes(seed):
    s, x, o = run(seed)
    cols, top, dt = slice(s["KIDIA"] - 1, s["KFDIA"]), s["NCLDTOP"] - 1, float(x["PTSPHY"])
    dp = np.diff(x["PAPH"], axis=1)[cols]
    change = (dp / RG * dt * (o["TENDENCY_LOC_Q"][cols] + o["TENDENCY_LOC_CLD"][cols, :, :4].sum(-1))).sum(1)
    detrained = o["PLUDE"][cols, top:-1]           # PLUDE comes back as what was detrained
    snow = np.where(detrained > 0, np.maximum(x["PSNDE"][cols, top:-1], 0) * dt * RG / dp[:, top:-1], 0.0)
    supsat = np.where(x["PSUPSAT"][cols, top:] > 1e-14, x["PSUPSAT"][cols, top:], 0.0)
    sources = (dp[:, top:-1] / RG * (detrained + snow)).sum(1) + (dp[:, top:] / RG * supsat).sum(1)
    surface = dt * (o["PFPLSL"][cols, -1] + o["PFPLSN"][cols, -1])
    assert np.all(surface > 0)                       # it rains or snows in every column
    np.testing.assert_allclose(change, sources - surface, rtol=1e-10, atol=1e-14 * np.abs(surface).max())


@pytest.mark.parametrize("seed", SEEDS)
def test_positivity_bounds_and_enthalpy_identities(seed):
    s, x, o = run(seed)
    cols, top, dt = slice(s["KIDIA"] - 1, s["KFDIA"]), s["NCLDTOP"] - 1, float(x["PTSPHY"])
    final = x["PCLV"][cols, :, :4] + dt * (x["TENDENCY_TMP_CLD"][cols, :, :4] + o["TENDENCY_LOC_CLD"][cols, :, :4])
    assert final.min() >= -1e-20
    cover = np.clip(x["PA"] + dt * x["TENDENCY_TMP_A"], 0, 1)[cols] + dt * o["TENDENCY_LOC_A"][cols]
    assert cover.min() >= -1e-12 and cover.max() <= 1 + 1e-12
    assert 0 <= o["PCOVPTOT"][cols, top:].min() and o["PCOVPTOT"][cols, top:].max() <= 1
    assert o["PFPLSL"][cols].min() >= 0 and o["PFPLSN"][cols].min() >= 0
    np.testing.assert_array_equal(o["PFHPSL"][cols], -2.5008e6 * o["PFPLSL"][cols])
    np.testing.assert_array_equal(o["PFHPSN"][cols], -2.8345e6 * o["PFPLSN"][cols])
    assert np.all(o["TENDENCY_LOC_CLD"][:, :, 4] == C.SENTINEL)      # the vapour slot is never written


def test_every_branch_family_runs():
    """The generated states exercise melting, warm rain, the tidy-ups and snow."""
    s, x, o = run(0, klon=8, kidia=1, kfdia=8)
    t = x["PT"]
    assert (t > 273.16).any() and (t < 250).any()
    assert (x["PCLV"][:, :, :4] == 1e-10).any() and (x["PA"] == 1e-10).any()
    assert o["PFPLSL"][:, -1].max() > 0 and o["PFPLSN"][:, -1].max() > 0


def test_deterministic_and_columns_are_independent():
    s, x, o = run(1, kidia=1, kfdia=6)
    again = C.run_numpy(x, s)
    perm = np.array([3, 0, 5, 1, 4, 2])
    permuted = {k: (v[perm] if isinstance(v, np.ndarray) and v.ndim >= 1 else v) for k, v in x.items()}
    p = C.run_numpy(permuted, s)
    for name in C.OUTPUTS:
        np.testing.assert_array_equal(again[name], o[name])
        np.testing.assert_array_equal(p[name], o[name][perm])


def test_outputs_outside_the_column_window_and_above_ncldtop_keep_their_contents():
    s, x, o = run(2)
    outside = [i for i in range(s["KLON"]) if not s["KIDIA"] - 1 <= i < s["KFDIA"]]
    for name in C.OUTPUTS:
        assert np.all(o[name][outside] == C.SENTINEL), name
    assert np.all(o["PCOVPTOT"][:, :s["NCLDTOP"] - 1] == C.SENTINEL)
    np.testing.assert_array_equal(o["PLUDE"][:, :s["NCLDTOP"] - 1], x["PLUDE"][:, :s["NCLDTOP"] - 1])


@pytest.fixture(scope="module")
def compiled():
    # Without -ffast-math: a library built with it turns on flush-to-zero in the whole process
    # when loaded, and the tests that run after it in this worker would see subnormals as zero
    import dace

    with dace.config.set_temporary("compiler", "cpu", "args",
                                   value="-std=c++14 -fPIC -O3 -Wno-unused-parameter -Wno-unused-label"):
        return C.build_sdfg().compile()


@pytest.mark.parametrize("klon,klev,kidia,kfdia,ncldtop,seed", [
    (1, 12, 1, 1, 12, 0), (1, 12, 1, 1, 6, 1), (8, 12, 2, 7, 3, 2), (5, 20, 1, 5, 2, 3), (3, 4, 2, 3, 2, 4),
])
def test_dace_compiled_program_matches_numpy(compiled, klon, klev, kidia, kfdia, ncldtop, seed):
    case = C.make_inputs(klon=klon, klev=klev, seed=seed, kidia=kidia, kfdia=kfdia, ncldtop=ncldtop)
    want = C.run_numpy(case["arrays"], case["sizes"])
    got = C.run_compiled(compiled, case["arrays"], case["sizes"])
    for name in C.OUTPUTS + ("PLUDE",):
        # agreement to rounding (DaCe orders some sums differently), relative to each output's scale
        # (plus 1e-18 kg m-2 s-1 for the cleared round-off residues of ZEPSEC clipping)
        scale = np.abs(want[name]).max()
        floor = 1e-18 * (3e6 if name in ("PFHPSL", "PFHPSN") else 1.0)     # enthalpy = latent heat x flux
        np.testing.assert_allclose(got[name], want[name], rtol=1e-9, atol=1e-12 * scale + floor, err_msg=name)
