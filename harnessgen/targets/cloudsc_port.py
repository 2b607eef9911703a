"""Our own port of the ECMWF cloud microphysics scheme CLOUDSC, written from the facts
(dimensions, arguments, sections, loop structure, saturation functions, constants) in
DaCe's Python frontend. Not ECMWF's code: the physics is simplified where the structure
is kept, and every transfer between species is antisymmetric so that the column water
budget closes to rounding.

Conventions: 0-based indices, arrays ``[column, level(, species)]``; columns
``KIDIA..KFDIA`` (1-based, inclusive) are active, the main loop runs over levels
``NCLDTOP..KLEV`` (1-based). Species: liquid 0, ice 1, rain 2, snow 3, vapour 4.

The same function runs as plain NumPy (``run_numpy``): ``dace.map`` iterates in Python,
the size symbols are bound as integers and the saturation helpers run as Python.
"""
# No ``from __future__ import annotations``: DaCe reads the annotations as objects.
import math

import dace
import numpy as np

KLON, KLEV = dace.symbol("KLON"), dace.symbol("KLEV")
KIDIA, KFDIA, NCLDTOP = dace.symbol("KIDIA"), dace.symbol("KFDIA"), dace.symbol("NCLDTOP")
f64, i32 = dace.float64, dace.int32

NCLV = 5
NCLDQL, NCLDQI, NCLDQR, NCLDQS, NCLDQV = 0, 1, 2, 3, 4

# physical constants
RG, RD, RV, RCPD, RETV = 9.80665, 287.0597, 461.525, 1004.709, 0.60777
RLVTT, RLSTT, RLMLT, RTT = 2.5008e6, 2.8345e6, 3.337e5, 273.16
R2ES, R3LES, R3IES, R4LES, R4IES = 380.1609, 17.502, 22.587, 32.19, -0.7
R5LES, R5IES, R5ALVCP, R5ALSCP = 4217.457, 6185.676, 1.04976e7, 1.74511e7
RALVDCP, RALSDCP, RALFDCP = 2489.079, 2821.215, 332.136
RTICE, RTWAT, RKOOP1, RKOOP2 = 250.16, 273.16, 2.583, 0.0048116
# scheme constants
RAMID, RAMIN, RLMIN, RCLDIFF, RCLDIFF_CONVI = 0.8, 1e-8, 1e-8, 3e-6, 7.0
RCLCRIT_SEA, RCLCRIT_LAND, RKCONV, RPRC1 = 2.5e-4, 5.5e-4, 1.667e-4, 100.0
RPECONS, RVRFACTOR, RPRECRHMAX, RTAUMEL = 5.547e-5, 0.00509, 0.7, 7200.0
RKOOPTAU, RLCRITSNOW, RSNOWLIN1, RSNOWLIN2 = 10800.0, 3e-5, 0.001, 0.03
RICEINIT, RVICE, RVRAIN, RVSNOW, RTHOMO = 1e-12, 0.13, 4.0, 1.0, 235.16
RCOVPMIN, RCCN, RNICE, RCLDTOPCF = 0.1, 125.0, 0.027, 0.01
RDEPLIQREFRATE, RDEPLIQREFDEPTH = 0.1, 500.0
KK_AUTO, KK_AUTO_QC, KK_AUTO_ND, KK_ACCR, KK_ACCR_Q = 1350.0, 2.47, -1.79, 67.0, 1.15
ND_LAND, ND_SEA = 300.0, 50.0
ZEPSEC = 1e-14
ZEPSILON = 100.0 * 2.220446049250313e-16


# ---------------------------------------------------------------- saturation functions
@dace.program
def foealfa(t: f64):
    """Liquid fraction of the mixed phase."""
    return min(1.0, ((min(max(t, RTICE), RTWAT) - RTICE) / (RTWAT - RTICE)) ** 2)


@dace.program
def foeeliq(t: f64):
    return R2ES * math.exp(R3LES * (t - RTT) / (t - R4LES))


@dace.program
def foeeice(t: f64):
    return R2ES * math.exp(R3IES * (t - RTT) / (t - R4IES))


@dace.program
def foeewm(t: f64):
    alfa = min(1.0, ((min(max(t, RTICE), RTWAT) - RTICE) / (RTWAT - RTICE)) ** 2)
    return R2ES * (alfa * math.exp(R3LES * (t - RTT) / (t - R4LES))
                   + (1.0 - alfa) * math.exp(R3IES * (t - RTT) / (t - R4IES)))


@dace.program
def foedem(t: f64):
    alfa = min(1.0, ((min(max(t, RTICE), RTWAT) - RTICE) / (RTWAT - RTICE)) ** 2)
    return alfa * R5ALVCP * (1.0 / (t - R4LES) ** 2) + (1.0 - alfa) * R5ALSCP * (1.0 / (t - R4IES) ** 2)


@dace.program
def foeldcpm(t: f64):
    alfa = min(1.0, ((min(max(t, RTICE), RTWAT) - RTICE) / (RTWAT - RTICE)) ** 2)
    return alfa * RALVDCP + (1.0 - alfa) * RALSDCP


@dace.program
def fokoop(t: f64):
    liq = R2ES * math.exp(R3LES * (t - RTT) / (t - R4LES))
    ice = R2ES * math.exp(R3IES * (t - RTT) / (t - R4IES))
    return min(RKOOP1 - RKOOP2 * t, liq / ice)


HELPERS = (foealfa, foeeliq, foeeice, foeewm, foedem, foeldcpm, fokoop)


# ---------------------------------------------------------------- the scheme
@dace.program
def cloudsc(PT: f64[KLON, KLEV], PQ: f64[KLON, KLEV], PA: f64[KLON, KLEV],
            TENDENCY_TMP_T: f64[KLON, KLEV], TENDENCY_TMP_Q: f64[KLON, KLEV], TENDENCY_TMP_A: f64[KLON, KLEV],
            TENDENCY_TMP_CLD: f64[KLON, KLEV, NCLV], PVERVEL: f64[KLON, KLEV], PHRSW: f64[KLON, KLEV],
            PHRLW: f64[KLON, KLEV], PAP: f64[KLON, KLEV], PAPH: f64[KLON, KLEV + 1], PLSM: f64[KLON],
            LDCUM: i32[KLON], KTYPE: i32[KLON], PLUDE: f64[KLON, KLEV], PLU: f64[KLON, KLEV],
            PSNDE: f64[KLON, KLEV], PMFU: f64[KLON, KLEV], PMFD: f64[KLON, KLEV], PSUPSAT: f64[KLON, KLEV],
            PCLV: f64[KLON, KLEV, NCLV], PLCRIT_AER: f64[KLON, KLEV], PICRIT_AER: f64[KLON, KLEV],
            PRE_ICE: f64[KLON, KLEV], PCCN: f64[KLON, KLEV], PNICE: f64[KLON, KLEV], PTSPHY: f64,
            TENDENCY_LOC_T: f64[KLON, KLEV], TENDENCY_LOC_Q: f64[KLON, KLEV], TENDENCY_LOC_A: f64[KLON, KLEV],
            TENDENCY_LOC_CLD: f64[KLON, KLEV, NCLV], PCOVPTOT: f64[KLON, KLEV], PRAINFRAC_TOPRFZ: f64[KLON],
            PFSQLF: f64[KLON, KLEV + 1], PFSQIF: f64[KLON, KLEV + 1], PFCQNNG: f64[KLON, KLEV + 1],
            PFCQLNG: f64[KLON, KLEV + 1], PFSQRF: f64[KLON, KLEV + 1], PFSQSF: f64[KLON, KLEV + 1],
            PFCQRNG: f64[KLON, KLEV + 1], PFCQSNG: f64[KLON, KLEV + 1], PFSQLTUR: f64[KLON, KLEV + 1],
            PFSQITUR: f64[KLON, KLEV + 1], PFPLSL: f64[KLON, KLEV + 1], PFPLSN: f64[KLON, KLEV + 1],
            PFHPSL: f64[KLON, KLEV + 1], PFHPSN: f64[KLON, KLEV + 1]):
    ZQTMST = 1.0 / PTSPHY

    # state of the scheme (Fortran-style work arrays over all columns)
    ZTP1 = np.zeros((KLON, KLEV), dtype=np.float64)
    ZA = np.zeros((KLON, KLEV), dtype=np.float64)
    ZQX = np.zeros((KLON, KLEV, NCLV), dtype=np.float64)
    ZQX0 = np.zeros((KLON, KLEV, NCLV), dtype=np.float64)
    ZQXFIN = np.zeros((KLON, KLEV, NCLV), dtype=np.float64)     # species after the level's update
    ZNEG = np.zeros((KLON, KLEV, NCLV), dtype=np.float64)       # small values cleared into vapour
    ZDETL = np.zeros((KLON, KLEV), dtype=np.float64)            # detrained liquid / ice per level
    ZDETI = np.zeros((KLON, KLEV), dtype=np.float64)
    ZPFL = np.zeros((KLON, KLEV + 1), dtype=np.float64)         # precipitation flux, liquid phase
    ZPFS = np.zeros((KLON, KLEV + 1), dtype=np.float64)         # and ice phase, at half levels
    ZFOEALFA = np.zeros((KLON, KLEV), dtype=np.float64)
    ZQSMIX0 = np.zeros((KLON, KLEV), dtype=np.float64)
    ZQSLIQ = np.zeros((KLON, KLEV), dtype=np.float64)
    ZQSICE = np.zeros((KLON, KLEV), dtype=np.float64)
    ZTRPAUS = np.zeros((KLON,), dtype=np.float64)
    # carried from one level to the next
    ZANEWM1 = np.zeros((KLON,), dtype=np.float64)
    ZCOVPTOT = np.zeros((KLON,), dtype=np.float64)
    ZCOVPMAX = np.zeros((KLON,), dtype=np.float64)
    ZCLDTOPDIST = np.zeros((KLON,), dtype=np.float64)
    ZPFPLSX = np.zeros((KLON, NCLV), dtype=np.float64)         # sedimentation flux into the level
    ZSUBFLUX = np.zeros((KLON, NCLV), dtype=np.float64)        # subsidence flux into the level
    # per level, per column
    # (no variable named jn below: sympy knows jn as a Bessel function; loops with different
    # ranges in one scope get different variables: DaCe 1.0.2 confuses them otherwise)
    ZSOLQA = np.zeros((KLON, NCLV, NCLV), dtype=np.float64)    # explicit transfers [to, from]
    ZSOLQB = np.zeros((KLON, NCLV, NCLV), dtype=np.float64)    # implicit transfer rates [to, from]
    ZQLHS = np.zeros((KLON, NCLV, NCLV), dtype=np.float64)
    ZQXN = np.zeros((KLON, NCLV), dtype=np.float64)
    ZPIVOT = np.zeros((KLON, NCLV), dtype=np.float64)
    ZFALLSINK = np.zeros((KLON, NCLV), dtype=np.float64)
    ZFALLSRCE = np.zeros((KLON, NCLV), dtype=np.float64)
    ZCONVSINK = np.zeros((KLON, NCLV), dtype=np.float64)
    ZCONVSRCE = np.zeros((KLON, NCLV), dtype=np.float64)
    ZEXTSRC = np.zeros((KLON, NCLV), dtype=np.float64)
    ZRATIO = np.zeros((KLON, NCLV), dtype=np.float64)
    ZSINKSUM = np.zeros((KLON, NCLV), dtype=np.float64)
    LLINDEX = np.zeros((KLON, NCLV), dtype=np.int32)
    IORDER = np.zeros((KLON, NCLV), dtype=np.int32)
    ZSOLAC = np.zeros((KLON,), dtype=np.float64)
    ZSOLAB = np.zeros((KLON,), dtype=np.float64)
    ZANEW = np.zeros((KLON,), dtype=np.float64)

    # ---- 1. zero the local tendencies (CLD: species 1..4 only) -----------------------------
    TENDENCY_LOC_T[KIDIA - 1:KFDIA, :] = 0.0
    TENDENCY_LOC_Q[KIDIA - 1:KFDIA, :] = 0.0
    TENDENCY_LOC_A[KIDIA - 1:KFDIA, :] = 0.0
    TENDENCY_LOC_CLD[KIDIA - 1:KFDIA, :, 0:NCLV - 1] = 0.0
    PRAINFRAC_TOPRFZ[KIDIA - 1:KFDIA] = 0.0

    # ---- 2. initial state: state + PTSPHY x earlier tendency, kept twice --------------------
    ZTP1[KIDIA - 1:KFDIA, :] = PT[KIDIA - 1:KFDIA, :] + PTSPHY * TENDENCY_TMP_T[KIDIA - 1:KFDIA, :]
    ZQX[KIDIA - 1:KFDIA, :, NCLDQV] = PQ[KIDIA - 1:KFDIA, :] + PTSPHY * TENDENCY_TMP_Q[KIDIA - 1:KFDIA, :]
    ZA[KIDIA - 1:KFDIA, :] = np.minimum(1.0, np.maximum(
        0.0, PA[KIDIA - 1:KFDIA, :] + PTSPHY * TENDENCY_TMP_A[KIDIA - 1:KFDIA, :]))
    for jm in range(NCLV - 1):
        ZQX[KIDIA - 1:KFDIA, :, jm] = PCLV[KIDIA - 1:KFDIA, :, jm] + PTSPHY * TENDENCY_TMP_CLD[KIDIA - 1:KFDIA, :, jm]
    ZQX0[KIDIA - 1:KFDIA, :, :] = ZQX[KIDIA - 1:KFDIA, :, :]

    # ---- 3. tidy-ups: tiny condensate, then condensate without cover, into vapour -----------
    for jl, jk in dace.map[KIDIA - 1:KFDIA, 0:KLEV]:
        for jm in range(NCLV - 1):
            if ZQX[jl, jk, jm] < RLMIN:
                zqadj = ZQX[jl, jk, jm] * ZQTMST
                TENDENCY_LOC_Q[jl, jk] = TENDENCY_LOC_Q[jl, jk] + zqadj
                TENDENCY_LOC_CLD[jl, jk, jm] = TENDENCY_LOC_CLD[jl, jk, jm] - zqadj
                if jm == NCLDQL or jm == NCLDQR:
                    TENDENCY_LOC_T[jl, jk] = TENDENCY_LOC_T[jl, jk] - RALVDCP * zqadj
                else:
                    TENDENCY_LOC_T[jl, jk] = TENDENCY_LOC_T[jl, jk] - RALSDCP * zqadj
                ZQX[jl, jk, NCLDQV] = ZQX[jl, jk, NCLDQV] + ZQX[jl, jk, jm]
                ZQX[jl, jk, jm] = 0.0
    for jl, jk in dace.map[KIDIA - 1:KFDIA, 0:KLEV]:
        if ZA[jl, jk] < RAMIN:
            zliq = ZQX[jl, jk, NCLDQL] * ZQTMST
            zice = ZQX[jl, jk, NCLDQI] * ZQTMST
            TENDENCY_LOC_Q[jl, jk] = TENDENCY_LOC_Q[jl, jk] + zliq + zice
            TENDENCY_LOC_CLD[jl, jk, NCLDQL] = TENDENCY_LOC_CLD[jl, jk, NCLDQL] - zliq
            TENDENCY_LOC_CLD[jl, jk, NCLDQI] = TENDENCY_LOC_CLD[jl, jk, NCLDQI] - zice
            TENDENCY_LOC_T[jl, jk] = TENDENCY_LOC_T[jl, jk] - RALVDCP * zliq - RALSDCP * zice
            ZQX[jl, jk, NCLDQV] = ZQX[jl, jk, NCLDQV] + ZQX[jl, jk, NCLDQL] + ZQX[jl, jk, NCLDQI]
            ZQX[jl, jk, NCLDQL] = 0.0
            ZQX[jl, jk, NCLDQI] = 0.0
            ZA[jl, jk] = 0.0
    ZQXFIN[KIDIA - 1:KFDIA, :, :] = ZQX[KIDIA - 1:KFDIA, :, :]

    # ---- 4. saturation values and the liquid fraction per level ---------------------------
    for jl, jk in dace.map[KIDIA - 1:KFDIA, 0:KLEV]:
        ZFOEALFA[jl, jk] = foealfa(ZTP1[jl, jk])
        zfoeew = min(foeewm(ZTP1[jl, jk]) / PAP[jl, jk], 0.5)
        ZQSMIX0[jl, jk] = zfoeew / (1.0 - RETV * zfoeew)
        zliq = min(foeeliq(ZTP1[jl, jk]) / PAP[jl, jk], 0.5)
        ZQSLIQ[jl, jk] = zliq / (1.0 - RETV * zliq)
        zice = min(foeeice(ZTP1[jl, jk]) / PAP[jl, jk], 0.5)
        ZQSICE[jl, jk] = zice / (1.0 - RETV * zice)

    # ---- 5. tropopause: the last level that qualifies wins ---------------------------------
    ZTRPAUS[KIDIA - 1:KFDIA] = 0.1
    for jkt in range(KLEV - 1):
        for jlt in range(KIDIA - 1, KFDIA):
            zsig = PAP[jlt, jkt] / PAPH[jlt, KLEV]
            if zsig > 0.1 and zsig < 0.4 and ZTP1[jlt, jkt] > ZTP1[jlt, jkt + 1]:
                ZTRPAUS[jlt] = zsig

    # ---- 6. main loop over levels, sequential --------------------------------------------
    for jk in range(NCLDTOP - 1, KLEV):
        # per-level work arrays start empty
        ZSOLQA[KIDIA - 1:KFDIA, :, :] = 0.0
        ZSOLQB[KIDIA - 1:KFDIA, :, :] = 0.0
        ZFALLSINK[KIDIA - 1:KFDIA, :] = 0.0
        ZFALLSRCE[KIDIA - 1:KFDIA, :] = 0.0
        ZCONVSINK[KIDIA - 1:KFDIA, :] = 0.0
        ZCONVSRCE[KIDIA - 1:KFDIA, :] = 0.0
        ZEXTSRC[KIDIA - 1:KFDIA, :] = 0.0
        ZSOLAC[KIDIA - 1:KFDIA] = 0.0
        ZSOLAB[KIDIA - 1:KFDIA] = 0.0

        for jl in dace.map[KIDIA - 1:KFDIA]:
            # 3.0 setup
            zdp = PAPH[jl, jk + 1] - PAPH[jl, jk]
            zdtgdp = PTSPHY * RG / zdp
            zrho = PAP[jl, jk] / (RD * ZTP1[jl, jk])
            za = ZA[jl, jk]
            zqv = ZQX[jl, jk, NCLDQV]
            zqsice = ZQSICE[jl, jk]
            zli = ZQX[jl, jk, NCLDQL] + ZQX[jl, jk, NCLDQI]
            zliqfrac = 0.0
            zicefrac = 0.0
            if zli > RLMIN:
                zliqfrac = ZQX[jl, jk, NCLDQL] / zli
                zicefrac = 1.0 - zliqfrac
            zevaplimmix = max((ZQSMIX0[jl, jk] - zqv) / (1.0 + foedem(ZTP1[jl, jk]) * ZQSMIX0[jl, jk]), 0.0)

            # 3.1 ice supersaturation (Koop threshold below the tropopause; PSUPSAT added)
            zfac = 1.0
            if ZTP1[jl, jk] < RTT and PAP[jl, jk] / PAPH[jl, KLEV] > ZTRPAUS[jl]:
                zfac = fokoop(ZTP1[jl, jk])
            zsupsat = max((zqv - zfac * zqsice) / (1.0 + zfac * zqsice * foedem(ZTP1[jl, jk])), 0.0)
            if zsupsat > ZEPSEC:
                if ZTP1[jl, jk] > RTHOMO:
                    ZSOLQA[jl, NCLDQL, NCLDQV] = ZSOLQA[jl, NCLDQL, NCLDQV] + zsupsat
                    ZSOLQA[jl, NCLDQV, NCLDQL] = ZSOLQA[jl, NCLDQV, NCLDQL] - zsupsat
                else:
                    ZSOLQA[jl, NCLDQI, NCLDQV] = ZSOLQA[jl, NCLDQI, NCLDQV] + zsupsat
                    ZSOLQA[jl, NCLDQV, NCLDQI] = ZSOLQA[jl, NCLDQV, NCLDQI] - zsupsat
                ZSOLAC[jl] = ZSOLAC[jl] + (1.0 - za) * zfac
            if PSUPSAT[jl, jk] > ZEPSEC:
                if ZTP1[jl, jk] > RTHOMO:
                    ZSOLQA[jl, NCLDQL, NCLDQL] = ZSOLQA[jl, NCLDQL, NCLDQL] + PSUPSAT[jl, jk]
                    ZEXTSRC[jl, NCLDQL] = ZEXTSRC[jl, NCLDQL] + PSUPSAT[jl, jk]
                else:
                    ZSOLQA[jl, NCLDQI, NCLDQI] = ZSOLQA[jl, NCLDQI, NCLDQI] + PSUPSAT[jl, jk]
                    ZEXTSRC[jl, NCLDQI] = ZEXTSRC[jl, NCLDQI] + PSUPSAT[jl, jk]
                ZSOLAC[jl] = ZSOLAC[jl] + (1.0 - za) * 0.5

            # 3.2 convective detrainment (not on the lowest level; PLUDE rescaled in place)
            ZDETL[jl, jk] = 0.0
            ZDETI[jl, jk] = 0.0
            if jk < KLEV - 1:
                zlude = PLUDE[jl, jk] * zdtgdp
                if LDCUM[jl] != 0 and zlude > RLMIN and PLU[jl, jk + 1] > ZEPSEC:
                    zalfaw = ZFOEALFA[jl, jk]
                    ZDETL[jl, jk] = zalfaw * zlude
                    ZDETI[jl, jk] = (1.0 - zalfaw) * zlude
                    zsnde = max(PSNDE[jl, jk], 0.0) * zdtgdp
                    ZSOLQA[jl, NCLDQL, NCLDQL] = ZSOLQA[jl, NCLDQL, NCLDQL] + zalfaw * zlude
                    ZSOLQA[jl, NCLDQI, NCLDQI] = ZSOLQA[jl, NCLDQI, NCLDQI] + (1.0 - zalfaw) * zlude
                    ZSOLQA[jl, NCLDQS, NCLDQS] = ZSOLQA[jl, NCLDQS, NCLDQS] + zsnde
                    ZEXTSRC[jl, NCLDQL] = ZEXTSRC[jl, NCLDQL] + zalfaw * zlude
                    ZEXTSRC[jl, NCLDQI] = ZEXTSRC[jl, NCLDQI] + (1.0 - zalfaw) * zlude
                    ZEXTSRC[jl, NCLDQS] = ZEXTSRC[jl, NCLDQS] + zsnde
                    ZSOLAC[jl] = ZSOLAC[jl] + zlude / PLU[jl, jk + 1]
                    PLUDE[jl, jk] = zlude
                else:
                    PLUDE[jl, jk] = 0.0

            # 3.3 subsidence: cover and condensate of the level above come down
            zmf = max(0.0, (PMFU[jl, jk] + PMFD[jl, jk]) * zdtgdp)
            ZSOLAC[jl] = ZSOLAC[jl] + zmf * ZANEWM1[jl]
            ZSOLAB[jl] = ZSOLAB[jl] + zmf
            for jmc in range(NCLDQR):          # liquid and ice
                ZCONVSRCE[jl, jmc] = ZSUBFLUX[jl, jmc] * zdtgdp
                ZSOLQA[jl, jmc, jmc] = ZSOLQA[jl, jmc, jmc] + ZCONVSRCE[jl, jmc]
                if jk < KLEV - 1:
                    ZCONVSINK[jl, jmc] = zmf

            # 3.4 erosion, then condensation / evaporation with a temporary adjustment
            zldifdt = RCLDIFF * PTSPHY
            if KTYPE[jl] > 0 and PLUDE[jl, jk] > RLMIN:
                zldifdt = RCLDIFF_CONVI * zldifdt
            if zli > ZEPSEC:
                zleros = min(min(za * zldifdt * max(ZQSMIX0[jl, jk] - zqv, 0.0), zevaplimmix), zli)
                ZSOLAC[jl] = ZSOLAC[jl] - za * zleros / max(zli, RLMIN) * 0.1
                ZSOLQA[jl, NCLDQV, NCLDQL] = ZSOLQA[jl, NCLDQV, NCLDQL] + zliqfrac * zleros
                ZSOLQA[jl, NCLDQL, NCLDQV] = ZSOLQA[jl, NCLDQL, NCLDQV] - zliqfrac * zleros
                ZSOLQA[jl, NCLDQV, NCLDQI] = ZSOLQA[jl, NCLDQV, NCLDQI] + zicefrac * zleros
                ZSOLQA[jl, NCLDQI, NCLDQV] = ZSOLQA[jl, NCLDQI, NCLDQV] - zicefrac * zleros
            zdtdp = RD * ZTP1[jl, jk] / (RCPD * PAP[jl, jk])
            zdpmxdt = zdp * ZQTMST
            zwtot = min(zdpmxdt, max(-zdpmxdt, PVERVEL[jl, jk]))
            zzzdt = PHRSW[jl, jk] + PHRLW[jl, jk]
            zdtdiab = min(zdpmxdt * zdtdp, max(-zdpmxdt * zdtdp, zzzdt)) * PTSPHY
            zdtforc = zdtdp * zwtot * PTSPHY + zdtdiab
            # change temperature and saturation for two Newton steps, remember, then restore
            zqold = ZQSMIX0[jl, jk]
            ztold = ZTP1[jl, jk]
            ztp1 = max(ztold + zdtforc, 160.0)
            # (the two steps are written out: DaCe 1.0.2 mishandles these scalars carried by a loop)
            zqsat1 = min(0.5, foeewm(ztp1) / PAP[jl, jk])
            zcor1 = 1.0 / (1.0 - RETV * zqsat1)
            zqsat1 = zqsat1 * zcor1
            zcond1 = (zqold - zqsat1) / (1.0 + zqsat1 * zcor1 * foedem(ztp1))
            ztp2 = ztp1 + foeldcpm(ztp1) * zcond1
            zqsmix1 = zqold - zcond1
            zqsat2 = min(0.5, foeewm(ztp2) / PAP[jl, jk])
            zcor2 = 1.0 / (1.0 - RETV * zqsat2)
            zqsat2 = zqsat2 * zcor2
            zcond2 = (zqsmix1 - zqsat2) / (1.0 + zqsat2 * zcor2 * foedem(ztp2))
            zqsmix2 = zqsmix1 - zcond2
            zdqs = zqsmix2 - zqold
            # (the working temperature and saturation keep their values: ztp1/zqsmix were copies)
            if zdqs > 0.0:
                zlevap = min(min(za * min(zdqs, zli), zevaplimmix), max(zqold - zqv, 0.0))
                ZSOLQA[jl, NCLDQV, NCLDQL] = ZSOLQA[jl, NCLDQV, NCLDQL] + zliqfrac * zlevap
                ZSOLQA[jl, NCLDQL, NCLDQV] = ZSOLQA[jl, NCLDQL, NCLDQV] - zliqfrac * zlevap
                ZSOLQA[jl, NCLDQV, NCLDQI] = ZSOLQA[jl, NCLDQV, NCLDQI] + zicefrac * zlevap
                ZSOLQA[jl, NCLDQI, NCLDQV] = ZSOLQA[jl, NCLDQI, NCLDQV] - zicefrac * zlevap
            else:
                zlcond = 0.0
                if za > ZEPSEC:
                    zlcond = max(-zdqs, 0.0) * za
                zqe = (zqv - za * zqold) / max(ZEPSEC, 1.0 - za)
                if zqe > RAMID * zqold and za < 1.0:
                    zacond = (1.0 - za) * min(1.0, (zqe - RAMID * zqold) / max(ZEPSEC, (1.0 - RAMID) * zqold))
                    zlcond = zlcond + zacond * max(-zdqs, 0.0)
                    ZSOLAC[jl] = ZSOLAC[jl] + zacond
                zlcond = min(zlcond, max(zqv - zqold * 0.5, 0.0))
                zalfaw = ZFOEALFA[jl, jk]
                ZSOLQA[jl, NCLDQL, NCLDQV] = ZSOLQA[jl, NCLDQL, NCLDQV] + zalfaw * zlcond
                ZSOLQA[jl, NCLDQV, NCLDQL] = ZSOLQA[jl, NCLDQV, NCLDQL] - zalfaw * zlcond
                ZSOLQA[jl, NCLDQI, NCLDQV] = ZSOLQA[jl, NCLDQI, NCLDQV] + (1.0 - zalfaw) * zlcond
                ZSOLQA[jl, NCLDQV, NCLDQI] = ZSOLQA[jl, NCLDQV, NCLDQI] - (1.0 - zalfaw) * zlcond

            # carried per-column values are read into scalars and written back once (DaCe 1.0.2
            # reads a stale value after a conditional write to the array inside this map)
            zcldtopdist = ZCLDTOPDIST[jl]
            zcovptot = ZCOVPTOT[jl]
            zcovpmax = ZCOVPMAX[jl]
            zcovpclr = 0.0
            zraincld = 0.0
            zsnowcld = 0.0
            # 3.7 ice deposition (cover above; distance from cloud top carried over levels)
            zam1 = ZANEWM1[jl]
            if zam1 < RCLDTOPCF and za >= RCLDTOPCF:
                zcldtopdist = 0.0
            else:
                zcldtopdist = zcldtopdist + zdp / (zrho * RG)
            if ZTP1[jl, jk] < RTT and ZQX[jl, jk, NCLDQL] > ZEPSEC and za > ZEPSEC:
                zvpice = foeeice(ZTP1[jl, jk]) * RV / RD
                zvpliq = zvpice * fokoop(ZTP1[jl, jk])
                zicenuclei = 1000.0 * math.exp(12.96 * (zvpliq - zvpice) / zvpliq - 0.639)
                if PNICE[jl, jk] > 0.0:
                    zicenuclei = PNICE[jl, jk] * 1000.0
                zadd = RLSTT * (RLSTT / (RV * ZTP1[jl, jk]) - 1.0) / (2.4e-2 * ZTP1[jl, jk])
                zbdd = RV * ZTP1[jl, jk] * PAP[jl, jk] / (2.21 * zvpice)
                zcvds = 7.8 * (zicenuclei / zrho) ** 0.666 * (zvpliq - zvpice) / (8.87 * (zadd + zbdd) * zvpice)
                zice0 = max(ZQX[jl, jk, NCLDQI] / za, zicenuclei * RICEINIT / zrho)
                zinew = (0.666 * zcvds * PTSPHY + zice0 ** 0.666) ** 1.5
                zdepos = min(max(za * (zinew - zice0), 0.0), ZQX[jl, jk, NCLDQL])
                zinfactor = min(zicenuclei / 15000.0, 1.0)
                zdepos = zdepos * min(zinfactor + (1.0 - zinfactor)
                                      * (RDEPLIQREFRATE + zcldtopdist / RDEPLIQREFDEPTH), 1.0)
                ZSOLQA[jl, NCLDQI, NCLDQL] = ZSOLQA[jl, NCLDQI, NCLDQL] + zdepos
                ZSOLQA[jl, NCLDQL, NCLDQI] = ZSOLQA[jl, NCLDQL, NCLDQI] - zdepos

            # 4.2 sedimentation: ice, rain and snow fall in from the level above
            zvice = RVICE
            if PRE_ICE[jl, jk] > 0.0:
                zvice = RVICE * min(max(PRE_ICE[jl, jk] / 50.0, 0.5), 2.0)
            for jmf in range(NCLDQI, NCLDQV):
                zvqx = RVSNOW
                if jmf == NCLDQI:
                    zvqx = zvice
                if jmf == NCLDQR:
                    zvqx = RVRAIN
                ZFALLSRCE[jl, jmf] = ZPFPLSX[jl, jmf] * zdtgdp
                ZSOLQA[jl, jmf, jmf] = ZSOLQA[jl, jmf, jmf] + ZFALLSRCE[jl, jmf]
                ZFALLSINK[jl, jmf] = zdtgdp * zrho * zvqx

            # precipitation cover: overlap with the level above
            zqpretot = ZFALLSRCE[jl, NCLDQR] + ZFALLSRCE[jl, NCLDQS]
            if zqpretot > ZEPSEC:
                zcovptot = 1.0 - (1.0 - zcovptot) * (1.0 - max(za, zam1)) / (1.0 - min(zam1, 1.0 - 1e-6))
                zcovptot = min(max(zcovptot, RCOVPMIN), 1.0)
                zcovpclr = max(0.0, zcovptot - za)
                zraincld = (ZQX[jl, jk, NCLDQR] + ZFALLSRCE[jl, NCLDQR]) / zcovptot
                zsnowcld = (ZQX[jl, jk, NCLDQS] + ZFALLSRCE[jl, NCLDQS]) / zcovptot
                zcovpmax = max(zcovptot, zcovpmax)
            else:
                zcovptot = 0.0
                zcovpclr = 0.0
                zraincld = 0.0
                zsnowcld = 0.0
                zcovpmax = 0.0
            PCOVPTOT[jl, jk] = zcovptot

            # 4.3 autoconversion: warm rain (Khairoutdinov-Kogan), snow, riming
            if za > ZEPSEC:
                zliqcld = ZQX[jl, jk, NCLDQL] / za
                zicecld = ZQX[jl, jk, NCLDQI] / za
                if zliqcld > ZEPSEC and (PLCRIT_AER[jl, jk] <= 0.0 or zliqcld > PLCRIT_AER[jl, jk]):
                    znd = ND_SEA
                    if PLSM[jl] > 0.5:
                        znd = ND_LAND
                    if PCCN[jl, jk] > 0.0:
                        znd = PCCN[jl, jk]
                    zrainaut = za * PTSPHY * KK_AUTO * zliqcld ** KK_AUTO_QC * znd ** KK_AUTO_ND
                    zrainacc = 0.0
                    if zraincld > ZEPSEC:
                        zrainacc = za * PTSPHY * KK_ACCR * (zliqcld * zraincld) ** KK_ACCR_Q
                    if ZTP1[jl, jk] > RTT:
                        ZSOLQA[jl, NCLDQR, NCLDQL] = ZSOLQA[jl, NCLDQR, NCLDQL] + zrainaut + zrainacc
                        ZSOLQA[jl, NCLDQL, NCLDQR] = ZSOLQA[jl, NCLDQL, NCLDQR] - zrainaut - zrainacc
                    else:
                        ZSOLQA[jl, NCLDQS, NCLDQL] = ZSOLQA[jl, NCLDQS, NCLDQL] + zrainaut + zrainacc
                        ZSOLQA[jl, NCLDQL, NCLDQS] = ZSOLQA[jl, NCLDQL, NCLDQS] - zrainaut - zrainacc
                if ZTP1[jl, jk] < RTT and zicecld > ZEPSEC:
                    zlcrit = RLCRITSNOW
                    if PICRIT_AER[jl, jk] > 0.0:
                        zlcrit = PICRIT_AER[jl, jk]
                    zzco = PTSPHY * RSNOWLIN1 * math.exp(RSNOWLIN2 * (ZTP1[jl, jk] - RTT))
                    ZSOLQB[jl, NCLDQS, NCLDQI] = ZSOLQB[jl, NCLDQS, NCLDQI] + zzco * (
                        1.0 - math.exp(-(zicecld / zlcrit) ** 2))
                if ZTP1[jl, jk] < RTT and zsnowcld > ZEPSEC and zliqcld > ZEPSEC:
                    ZSOLQB[jl, NCLDQS, NCLDQL] = ZSOLQB[jl, NCLDQS, NCLDQL] + 0.3 * zcovptot * PTSPHY * RKCONV

            # 4.4 melting of ice and snow, freezing of rain (liquid from above) and of liquid
            ztdmtw0 = ZTP1[jl, jk] - RTT
            if ZQX[jl, jk, NCLDQI] + ZQX[jl, jk, NCLDQS] > ZEPSEC and ztdmtw0 > 0.0:
                zcons1 = abs(PTSPHY * (1.0 + 0.5 * ztdmtw0) / RTAUMEL)
                zmeltmax = 0.5 * ztdmtw0 / RALFDCP
                zsum = ZQX[jl, jk, NCLDQI] + ZQX[jl, jk, NCLDQS]
                for jmm in range(NCLDQI, NCLDQV, 2):      # ice and snow melt into rain
                    zmelt = min(ZQX[jl, jk, jmm], ZQX[jl, jk, jmm] / zsum * min(zcons1, 1.0) * zmeltmax)
                    ZSOLQA[jl, NCLDQR, jmm] = ZSOLQA[jl, NCLDQR, jmm] + zmelt
                    ZSOLQA[jl, jmm, NCLDQR] = ZSOLQA[jl, jmm, NCLDQR] - zmelt
            if jk > 0:
                if ZTP1[jl, jk - 1] > RTT and ZTP1[jl, jk] <= RTT:
                    zrs = ZQX[jl, jk, NCLDQR] + ZQX[jl, jk, NCLDQS]
                    if zrs > ZEPSEC:
                        PRAINFRAC_TOPRFZ[jl] = ZQX[jl, jk, NCLDQR] / zrs
                if ZTP1[jl, jk - 1] > RTT and ZQX[jl, jk, NCLDQR] > ZEPSEC and ZTP1[jl, jk] < RTT:
                    zfrzmax = 0.5 * (RTT - ZTP1[jl, jk]) / RALFDCP
                    zfrz = min(ZQX[jl, jk, NCLDQR], zfrzmax * min(PTSPHY / RTAUMEL, 1.0))
                    ZSOLQA[jl, NCLDQS, NCLDQR] = ZSOLQA[jl, NCLDQS, NCLDQR] + zfrz
                    ZSOLQA[jl, NCLDQR, NCLDQS] = ZSOLQA[jl, NCLDQR, NCLDQS] - zfrz
            if ZTP1[jl, jk] < RTHOMO and ZQX[jl, jk, NCLDQL] > ZEPSEC:
                ZSOLQA[jl, NCLDQI, NCLDQL] = ZSOLQA[jl, NCLDQI, NCLDQL] + ZQX[jl, jk, NCLDQL]
                ZSOLQA[jl, NCLDQL, NCLDQI] = ZSOLQA[jl, NCLDQL, NCLDQI] - ZQX[jl, jk, NCLDQL]

            # 4.5 evaporation of rain and of snow in the clear-sky part of the precipitation
            zzrh = RPRECRHMAX + (1.0 - RPRECRHMAX) * zcovpmax / max(ZEPSEC, 1.0 - za)
            zzrh = min(max(zzrh, RPRECRHMAX), 1.0)
            zqe = min(max((zqv - za * ZQSLIQ[jl, jk]) / max(ZEPSEC, 1.0 - za), 0.0), ZQSLIQ[jl, jk])
            if zcovpclr > ZEPSEC and ZQX[jl, jk, NCLDQR] > ZEPSEC and zqe < zzrh * ZQSLIQ[jl, jk]:
                zpreclr = ZQX[jl, jk, NCLDQR] * zcovpclr / zcovptot
                zbeta1 = math.sqrt(PAP[jl, jk] / PAPH[jl, KLEV]) / RVRFACTOR * zpreclr / zcovpclr
                zbeta = RG * RPECONS * 0.5 * zbeta1 ** 0.5777
                zdenom = 1.0 + zbeta * PTSPHY * (1.0 + foedem(ZTP1[jl, jk]) * ZQSLIQ[jl, jk])
                zevap = zcovpclr * zbeta * PTSPHY * (ZQSLIQ[jl, jk] - zqe) / zdenom
                zevap = max(min(zevap, ZQX[jl, jk, NCLDQR]), 0.0)
                ZSOLQA[jl, NCLDQV, NCLDQR] = ZSOLQA[jl, NCLDQV, NCLDQR] + zevap
                ZSOLQA[jl, NCLDQR, NCLDQV] = ZSOLQA[jl, NCLDQR, NCLDQV] - zevap
            zqe = min(max((zqv - za * zqsice) / max(ZEPSEC, 1.0 - za), 0.0), zqsice)
            if zcovpclr > ZEPSEC and ZQX[jl, jk, NCLDQS] > ZEPSEC and zqe < zzrh * zqsice:
                zpreclr = ZQX[jl, jk, NCLDQS] * zcovpclr / zcovptot
                zbeta1 = math.sqrt(PAP[jl, jk] / PAPH[jl, KLEV]) / RVRFACTOR * zpreclr / zcovpclr
                zbeta = RG * RPECONS * zbeta1 ** 0.5777
                zdenom = 1.0 + zbeta * PTSPHY * (1.0 + foedem(ZTP1[jl, jk]) * zqsice)
                zevap = zcovpclr * zbeta * PTSPHY * (zqsice - zqe) / zdenom
                zevap = max(min(zevap, ZQX[jl, jk, NCLDQS]), 0.0)
                ZSOLQA[jl, NCLDQV, NCLDQS] = ZSOLQA[jl, NCLDQV, NCLDQS] + zevap
                ZSOLQA[jl, NCLDQS, NCLDQV] = ZSOLQA[jl, NCLDQS, NCLDQV] - zevap

            ZCLDTOPDIST[jl] = zcldtopdist
            ZCOVPTOT[jl] = zcovptot
            ZCOVPMAX[jl] = zcovpmax
            # 5.1 cloud cover (feeds the next level)
            zanew = (za + ZSOLAC[jl]) / (1.0 + ZSOLAB[jl])
            zanew = min(max(zanew, 0.0), 1.0)
            if zanew < RAMIN:
                zanew = 0.0
            ZANEW[jl] = zanew

        # 5.2 sink truncation, species in the order in which they run out
        for jl in dace.map[KIDIA - 1:KFDIA]:
            for jm in range(NCLV):
                ZSINKSUM[jl, jm] = 0.0
                for js in range(NCLV):
                    ZSINKSUM[jl, jm] = ZSINKSUM[jl, jm] - ZSOLQA[jl, jm, js]
            for jm in range(NCLV):
                zmax = max(ZQX[jl, jk, jm], ZEPSEC)
                ZRATIO[jl, jm] = zmax / max(ZSINKSUM[jl, jm], zmax)
                LLINDEX[jl, jm] = 1
            for kr in range(NCLV):
                zmin = 1e32
                IORDER[jl, kr] = 0
                for ks in range(NCLV):
                    if LLINDEX[jl, ks] == 1 and ZRATIO[jl, ks] < zmin:
                        IORDER[jl, kr] = ks
                        zmin = ZRATIO[jl, ks]
                # (species are looked up by comparison, not by indirect indexing: DaCe 1.0.2
                # miscompiles a write through IORDER inside this map)
                for ks in range(NCLV):
                    if ks == IORDER[jl, kr]:
                        LLINDEX[jl, ks] = 0
            for kq in range(NCLV):
                for jo in range(NCLV):
                    if jo == IORDER[jl, kq]:
                        zsink = 0.0
                        for kt in range(NCLV):
                            zsink = zsink - ZSOLQA[jl, jo, kt]
                        zmax = max(ZQX[jl, jk, jo], ZEPSEC)
                        zzratio = zmax / max(zsink, zmax)
                        for kt in range(NCLV):
                            if kt != jo and ZSOLQA[jl, jo, kt] < 0.0:
                                ZSOLQA[jl, jo, kt] = ZSOLQA[jl, jo, kt] * zzratio
                                ZSOLQA[jl, kt, jo] = ZSOLQA[jl, kt, jo] * zzratio

        # 5.2.2 implicit solver: NCLV x NCLV per column, LU without pivoting
        for jl in dace.map[KIDIA - 1:KFDIA]:
            for jm in range(NCLV):
                zdiag = 1.0 + ZFALLSINK[jl, jm] + ZCONVSINK[jl, jm]
                for js in range(NCLV):
                    if js != jm:
                        ZQLHS[jl, js, jm] = 0.0 - ZSOLQB[jl, js, jm]   # (unary minus on an element trips simplify)
                        zdiag = zdiag + ZSOLQB[jl, js, jm]
                ZQLHS[jl, jm, jm] = zdiag
                zrhs = ZQX[jl, jk, jm]
                for js in range(NCLV):
                    zrhs = zrhs + ZSOLQA[jl, jm, js]
                ZQXN[jl, jm] = zrhs
            for kp in range(NCLV - 1):
                for kr in range(kp + 1, NCLV):
                    ZQLHS[jl, kr, kp] = ZQLHS[jl, kr, kp] / ZQLHS[jl, kp, kp]
                    for kc in range(kp + 1, NCLV):
                        ZQLHS[jl, kr, kc] = ZQLHS[jl, kr, kc] - ZQLHS[jl, kr, kp] * ZQLHS[jl, kp, kc]
            for kf in range(1, NCLV):
                for kg in range(kf):
                    ZQXN[jl, kf] = ZQXN[jl, kf] - ZQLHS[jl, kf, kg] * ZQXN[jl, kg]
            # the pivots, read once (a diagonal read inside the negative-step loop trips DaCe 1.0.2)
            for kd in range(NCLV):
                ZPIVOT[jl, kd] = ZQLHS[jl, kd, kd]
            ZQXN[jl, NCLV - 1] = ZQXN[jl, NCLV - 1] / ZPIVOT[jl, NCLV - 1]
            for kb in range(NCLV - 2, -1, -1):
                for kbc in range(kb + 1, NCLV):
                    ZQXN[jl, kb] = ZQXN[jl, kb] - ZQLHS[jl, kb, kbc] * ZQXN[jl, kbc]
                ZQXN[jl, kb] = ZQXN[jl, kb] / ZPIVOT[jl, kb]

        # 5.3 fluxes to the next level (before clipping), clip small values, 6 tendencies
        for jl in dace.map[KIDIA - 1:KFDIA]:
            zdp = PAPH[jl, jk + 1] - PAPH[jl, jk]
            zrdtgdp = zdp / (RG * PTSPHY)
            zfluxl = 0.0
            zfluxs = 0.0
            ztend_t = 0.0
            for jm in range(NCLV - 1):
                zout = (ZFALLSINK[jl, jm] + ZCONVSINK[jl, jm]) * ZQXN[jl, jm]
                ZPFPLSX[jl, jm] = ZFALLSINK[jl, jm] * ZQXN[jl, jm] * zrdtgdp
                ZSUBFLUX[jl, jm] = ZCONVSINK[jl, jm] * ZQXN[jl, jm] * zrdtgdp
                zfluxq = ZFALLSRCE[jl, jm] + ZCONVSRCE[jl, jm] + ZEXTSRC[jl, jm] - zout
                zneg = 0.0
                if ZQXN[jl, jm] < ZEPSEC:
                    zneg = ZQXN[jl, jm]
                    ZQXN[jl, NCLDQV] = ZQXN[jl, NCLDQV] + ZQXN[jl, jm]
                    ZQXN[jl, jm] = 0.0
                ZNEG[jl, jk, jm] = zneg
                zchange = ZQXN[jl, jm] - ZQX[jl, jk, jm] - zfluxq
                if jm == NCLDQL or jm == NCLDQR:
                    ztend_t = ztend_t + RALVDCP * zchange
                    zfluxl = zfluxl + ZPFPLSX[jl, jm]
                else:
                    ztend_t = ztend_t + RALSDCP * zchange
                    zfluxs = zfluxs + ZPFPLSX[jl, jm]
                TENDENCY_LOC_CLD[jl, jk, jm] = TENDENCY_LOC_CLD[jl, jk, jm] + (
                    ZQXN[jl, jm] - ZQX[jl, jk, jm]) * ZQTMST
                ZQXFIN[jl, jk, jm] = ZQXN[jl, jm]
            ZQXFIN[jl, jk, NCLDQV] = ZQXN[jl, NCLDQV]
            ZPFL[jl, jk + 1] = zfluxl
            ZPFS[jl, jk + 1] = zfluxs
            TENDENCY_LOC_T[jl, jk] = TENDENCY_LOC_T[jl, jk] + ztend_t * ZQTMST
            TENDENCY_LOC_Q[jl, jk] = TENDENCY_LOC_Q[jl, jk] + (ZQXN[jl, NCLDQV] - ZQX[jl, jk, NCLDQV]) * ZQTMST
            TENDENCY_LOC_A[jl, jk] = TENDENCY_LOC_A[jl, jk] + (ZANEW[jl] - ZA[jl, jk]) * ZQTMST
            ZANEWM1[jl] = ZANEW[jl]

    # ---- 8. flux diagnostics: prefix sums over levels ------------------------------------
    PFSQLF[KIDIA - 1:KFDIA, 0] = 0.0
    PFSQIF[KIDIA - 1:KFDIA, 0] = 0.0
    PFSQRF[KIDIA - 1:KFDIA, 0] = 0.0
    PFSQSF[KIDIA - 1:KFDIA, 0] = 0.0
    PFCQLNG[KIDIA - 1:KFDIA, 0] = 0.0
    PFCQNNG[KIDIA - 1:KFDIA, 0] = 0.0
    PFCQRNG[KIDIA - 1:KFDIA, 0] = 0.0
    PFCQSNG[KIDIA - 1:KFDIA, 0] = 0.0
    PFSQLTUR[KIDIA - 1:KFDIA, 0] = 0.0
    PFSQITUR[KIDIA - 1:KFDIA, 0] = 0.0
    for jkf in range(KLEV):
        zgdph = (PAPH[KIDIA - 1:KFDIA, jkf + 1] - PAPH[KIDIA - 1:KFDIA, jkf]) * (-ZQTMST / RG)
        PFSQLF[KIDIA - 1:KFDIA, jkf + 1] = PFSQLF[KIDIA - 1:KFDIA, jkf] + (
            ZQXFIN[KIDIA - 1:KFDIA, jkf, NCLDQL] - ZQX0[KIDIA - 1:KFDIA, jkf, NCLDQL]
            + ZQXFIN[KIDIA - 1:KFDIA, jkf, NCLDQR] - ZQX0[KIDIA - 1:KFDIA, jkf, NCLDQR]
            - ZDETL[KIDIA - 1:KFDIA, jkf]) * zgdph
        PFSQIF[KIDIA - 1:KFDIA, jkf + 1] = PFSQIF[KIDIA - 1:KFDIA, jkf] + (
            ZQXFIN[KIDIA - 1:KFDIA, jkf, NCLDQI] - ZQX0[KIDIA - 1:KFDIA, jkf, NCLDQI]
            + ZQXFIN[KIDIA - 1:KFDIA, jkf, NCLDQS] - ZQX0[KIDIA - 1:KFDIA, jkf, NCLDQS]
            - ZDETI[KIDIA - 1:KFDIA, jkf]) * zgdph
        PFSQRF[KIDIA - 1:KFDIA, jkf + 1] = PFSQRF[KIDIA - 1:KFDIA, jkf] + (
            ZQXFIN[KIDIA - 1:KFDIA, jkf, NCLDQR] - ZQX0[KIDIA - 1:KFDIA, jkf, NCLDQR]) * zgdph
        PFSQSF[KIDIA - 1:KFDIA, jkf + 1] = PFSQSF[KIDIA - 1:KFDIA, jkf] + (
            ZQXFIN[KIDIA - 1:KFDIA, jkf, NCLDQS] - ZQX0[KIDIA - 1:KFDIA, jkf, NCLDQS]) * zgdph
        PFCQLNG[KIDIA - 1:KFDIA, jkf + 1] = PFCQLNG[KIDIA - 1:KFDIA, jkf] + ZNEG[KIDIA - 1:KFDIA, jkf, NCLDQL] * zgdph
        PFCQNNG[KIDIA - 1:KFDIA, jkf + 1] = PFCQNNG[KIDIA - 1:KFDIA, jkf] + ZNEG[KIDIA - 1:KFDIA, jkf, NCLDQI] * zgdph
        PFCQRNG[KIDIA - 1:KFDIA, jkf + 1] = PFCQRNG[KIDIA - 1:KFDIA, jkf] + ZNEG[KIDIA - 1:KFDIA, jkf, NCLDQR] * zgdph
        PFCQSNG[KIDIA - 1:KFDIA, jkf + 1] = PFCQSNG[KIDIA - 1:KFDIA, jkf] + ZNEG[KIDIA - 1:KFDIA, jkf, NCLDQS] * zgdph
        PFSQLTUR[KIDIA - 1:KFDIA, jkf + 1] = PFSQLTUR[KIDIA - 1:KFDIA, jkf] - ZDETL[KIDIA - 1:KFDIA, jkf] * zgdph
        PFSQITUR[KIDIA - 1:KFDIA, jkf + 1] = PFSQITUR[KIDIA - 1:KFDIA, jkf] - ZDETI[KIDIA - 1:KFDIA, jkf] * zgdph
    PFPLSL[KIDIA - 1:KFDIA, :] = ZPFL[KIDIA - 1:KFDIA, :]
    PFPLSN[KIDIA - 1:KFDIA, :] = ZPFS[KIDIA - 1:KFDIA, :]
    PFHPSL[KIDIA - 1:KFDIA, :] = -RLVTT * ZPFL[KIDIA - 1:KFDIA, :]
    PFHPSN[KIDIA - 1:KFDIA, :] = -RLSTT * ZPFS[KIDIA - 1:KFDIA, :]
