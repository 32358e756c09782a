"""3GPP TR 38.901 (v17) propagation for the urban macro (UMa), urban micro street-canyon
(UMi) and rural macro (RMa) scenarios: path loss in line of sight (LOS) and not (NLOS),
Table 7.4.1-1; the LOS probability, Table 7.4.2-1; the outdoor-to-indoor (O2I) penetration
loss, 7.4.3.1 (Tables 7.4.3-1 and 7.4.3-2); the shadow-fading standard deviations of Table
7.4.1-1.

Pure functions of numbers (NumPy arrays or floats): distances in metres, heights in metres,
the carrier frequency in Hz (the tables write f_c in GHz; the conversion is done here). The
random draws (LOS state, indoor distance, shadowing) take a NumPy Generator, so that a
scenario's seed fixes them. Distances below a model's range are not clipped: `check_ranges`
says which inputs the tables do not cover."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SPEED_OF_LIGHT_M_PER_S = 299_792_458.0
EFFECTIVE_ENVIRONMENT_HEIGHT_M = 1.0   # h_E (UMa: for h_UT < 13 m, as here; UMi: always)
FREQUENCY_RANGE_HZ = (0.5e9, 100e9)    # the tables' validity


@dataclass(frozen=True)
class Scenario38901:
    """One 38.901 scenario's constants: the default base-station height, the valid UT
    heights and 2D distances, and the shadow-fading standard deviations (LOS, NLOS)."""

    name: str
    bs_height_m: float
    ut_height_range_m: tuple[float, float]
    d2d_range_m: tuple[float, float]
    shadowing_std_db: tuple[float, float]   # (LOS, NLOS), Table 7.4.1-1
    frequency_range_hz: tuple[float, float] = FREQUENCY_RANGE_HZ
    indoor_distance_max_m: float = 25.0     # d2D-in: the least of two U(0, this) draws
    #: RMa: the LOS shadow fading's sigma beyond the breakpoint (PL2), 6 dB; None: one sigma
    los_shadowing_beyond_breakpoint_db: float | None = None
    bs_height_range_m: tuple[float, float] | None = None
    #: the shadow fading's correlation distance in the horizontal plane (m; LOS, NLOS, O2I),
    #: Table 7.5-6 Part-1: how far a moving client goes before its shadowing is new
    shadowing_correlation_m: tuple[float, float, float] = (37.0, 50.0, 7.0)
    #: the LOS state's correlation distance (m), 7.6.3.3
    los_correlation_m: float = 50.0


UMA = Scenario38901("uma", 25.0, (1.5, 22.5), (10.0, 5000.0), (4.0, 6.0))
UMI = Scenario38901("umi", 10.0, (1.5, 22.5), (10.0, 5000.0), (4.0, 7.82),
                    shadowing_correlation_m=(10.0, 13.0, 7.0))
RMA = Scenario38901("rma", 35.0, (1.0, 10.0), (10.0, 10000.0), (4.0, 8.0),
                    frequency_range_hz=(0.5e9, 30e9), indoor_distance_max_m=10.0,
                    los_shadowing_beyond_breakpoint_db=6.0, bs_height_range_m=(10.0, 150.0),
                    shadowing_correlation_m=(37.0, 120.0, 120.0), los_correlation_m=60.0)
SCENARIOS = {s.name: s for s in (UMA, UMI, RMA)}
#: RMa's average building height h and street width W (Table 7.4.1-1's defaults)
RMA_BUILDING_HEIGHT_M, RMA_STREET_WIDTH_M = 5.0, 20.0


def distance_3d_m(d2d_m: np.ndarray | float, bs_height_m: float,
                  ut_height_m: np.ndarray | float) -> np.ndarray:
    """d_3D = sqrt(d_2D^2 + (h_BS - h_UT)^2)."""
    return np.hypot(np.asarray(d2d_m, dtype=float), bs_height_m - np.asarray(ut_height_m))


def breakpoint_distance_m(carrier_hz: float, bs_height_m: float,
                          ut_height_m: np.ndarray | float,
                          env_height_m: np.ndarray | float = EFFECTIVE_ENVIRONMENT_HEIGHT_M
                          ) -> np.ndarray:
    """d'_BP = 4 h'_BS h'_UT f_c / c with the effective heights h' = h - h_E (Table 7.4.1-1,
    note 1), h_E = 1 m unless drawn (`draw_environment_height_m`)."""
    h_e = np.asarray(env_height_m, dtype=float)
    h_bs = bs_height_m - h_e
    h_ut = np.asarray(ut_height_m, dtype=float) - h_e
    return 4 * h_bs * h_ut * carrier_hz / SPEED_OF_LIGHT_M_PER_S


def height_term(ut_height_m: np.ndarray | float) -> np.ndarray:
    """UMa's C'(hUT) (Table 7.4.2-1, and Table 7.4.1-1 note 1): 0 up to 13 m, ((hUT - 13) /
    10)^1.5 above."""
    h_ut = np.asarray(ut_height_m, dtype=float)
    return np.where(h_ut <= 13, 0.0, np.clip((h_ut - 13) / 10, 0, None) ** 1.5)


def draw_floors_m(n: int, rng: np.random.Generator) -> np.ndarray:
    """Indoor clients' heights (TR 38.901 Table 7.2-1, UMa and UMi): h_UT = 3 (n_fl - 1) +
    1.5 m on floor n_fl ~ U{1, ..., N_fl} of a building of N_fl ~ U{4, ..., 8} floors."""
    floors = rng.integers(4, 9, n)
    return 3.0 * (np.floor(rng.random(n) * floors)) + 1.5


def draw_environment_height_m(d2d_m: np.ndarray, ut_height_m: np.ndarray,
                              rng: np.random.Generator) -> np.ndarray:
    """UMa's effective environment height per link (Table 7.4.1-1, note 1): h_E = 1 m with
    probability 1 / (1 + C(d2D, hUT)), else uniform on {12, 15, ..., hUT - 1.5}; C = g(d2D)
    C'(hUT), g = 0 up to 18 m and 5/4 (d2D/100)^3 exp(-d2D/150) beyond, C' = 0 below 13 m
    and ((hUT - 13)/10)^1.5 from 13 to 23 m. Draws two numbers a link whatever its height."""
    d = np.asarray(d2d_m, dtype=float)
    h_ut = np.asarray(ut_height_m, dtype=float)
    g = np.where(d <= 18, 0.0, 1.25 * (d / 100) ** 3 * np.exp(-d / 150))
    c = g * height_term(h_ut)
    first, second = rng.random(d.shape), rng.random(d.shape)
    choices = np.maximum(np.floor((h_ut - 1.5 - 12) / 3) + 1, 1)     # 12, 15, ..., hUT - 1.5
    drawn = 12.0 + 3.0 * np.floor(second * choices)
    return np.where(first < 1 / (1 + c), EFFECTIVE_ENVIRONMENT_HEIGHT_M, drawn)


def rma_breakpoint_distance_m(carrier_hz: float, bs_height_m: float,
                              ut_height_m: np.ndarray | float) -> np.ndarray:
    """RMa's d_BP = 2 pi h_BS h_UT f_c / c, with the actual heights (Table 7.4.1-1, note 5)."""
    return (2 * np.pi * bs_height_m * np.asarray(ut_height_m, dtype=float) * carrier_hz
            / SPEED_OF_LIGHT_M_PER_S)


def _rma_pl1(d3d: np.ndarray, f_ghz: float) -> np.ndarray:
    """RMa's PL1 = 20 log10(40 pi d3D fc / 3) + min(0.03 h^1.72, 10) log10(d3D)
    - min(0.044 h^1.72, 14.77) + 0.002 log10(h) d3D, h the average building height."""
    h = RMA_BUILDING_HEIGHT_M
    return (20 * np.log10(40 * np.pi * d3d * f_ghz / 3) + min(0.03 * h ** 1.72, 10.0)
            * np.log10(d3d) - min(0.044 * h ** 1.72, 14.77) + 0.002 * np.log10(h) * d3d)


def pathloss_los_db(scenario: Scenario38901, d2d_m: np.ndarray | float, carrier_hz: float,
                    bs_height_m: float, ut_height_m: np.ndarray | float,
                    env_height_m: np.ndarray | float = EFFECTIVE_ENVIRONMENT_HEIGHT_M
                    ) -> np.ndarray:
    """PL_LOS: PL1 up to the breakpoint d'_BP, PL2 beyond it (Table 7.4.1-1).
    UMa: PL1 = 28.0 + 22 log10(d3D) + 20 log10(fc), PL2 = 28.0 + 40 log10(d3D) +
    20 log10(fc) - 9 log10(d'_BP^2 + (hBS - hUT)^2); UMi: 32.4, 21, 32.4, 40 and 9.5;
    RMa: PL1 (`_rma_pl1`) up to d_BP, PL2 = PL1(d_BP) + 40 log10(d3D / d_BP) beyond."""
    d2d = np.asarray(d2d_m, dtype=float)
    h_ut = np.asarray(ut_height_m, dtype=float)
    d3d = distance_3d_m(d2d, bs_height_m, h_ut)
    f_ghz = carrier_hz / 1e9
    if scenario.name == "rma":
        d_bp = rma_breakpoint_distance_m(carrier_hz, bs_height_m, h_ut)
        return np.where(d2d <= d_bp, _rma_pl1(d3d, f_ghz),
                        _rma_pl1(d_bp, f_ghz) + 40 * np.log10(d3d / d_bp))
    d_bp = breakpoint_distance_m(carrier_hz, bs_height_m, h_ut, env_height_m)
    if scenario.name == "uma":
        pl1 = 28.0 + 22 * np.log10(d3d) + 20 * np.log10(f_ghz)
        pl2 = (28.0 + 40 * np.log10(d3d) + 20 * np.log10(f_ghz)
               - 9 * np.log10(d_bp ** 2 + (bs_height_m - h_ut) ** 2))
    else:
        pl1 = 32.4 + 21 * np.log10(d3d) + 20 * np.log10(f_ghz)
        pl2 = (32.4 + 40 * np.log10(d3d) + 20 * np.log10(f_ghz)
               - 9.5 * np.log10(d_bp ** 2 + (bs_height_m - h_ut) ** 2))
    return np.where(d2d <= d_bp, pl1, pl2)


def pathloss_nlos_db(scenario: Scenario38901, d2d_m: np.ndarray | float, carrier_hz: float,
                     bs_height_m: float, ut_height_m: np.ndarray | float,
                     env_height_m: np.ndarray | float = EFFECTIVE_ENVIRONMENT_HEIGHT_M
                     ) -> np.ndarray:
    """PL_NLOS = max(PL_LOS, PL'_NLOS) (Table 7.4.1-1). UMa: PL' = 13.54 + 39.08 log10(d3D)
    + 20 log10(fc) - 0.6 (hUT - 1.5); UMi: PL' = 35.3 log10(d3D) + 22.4 + 21.3 log10(fc)
    - 0.3 (hUT - 1.5); RMa: PL' = 161.04 - 7.1 log10(W) + 7.5 log10(h) - (24.37 - 3.7
    (h/hBS)^2) log10(hBS) + (43.42 - 3.1 log10(hBS)) (log10(d3D) - 3) + 20 log10(fc)
    - (3.2 (log10(11.75 hUT))^2 - 4.97), W the street width, h the building height."""
    h_ut = np.asarray(ut_height_m, dtype=float)
    d3d = distance_3d_m(d2d_m, bs_height_m, h_ut)
    f_ghz = carrier_hz / 1e9
    if scenario.name == "uma":
        nlos = 13.54 + 39.08 * np.log10(d3d) + 20 * np.log10(f_ghz) - 0.6 * (h_ut - 1.5)
    elif scenario.name == "rma":
        h, w, h_bs = RMA_BUILDING_HEIGHT_M, RMA_STREET_WIDTH_M, bs_height_m
        nlos = (161.04 - 7.1 * np.log10(w) + 7.5 * np.log10(h)
                - (24.37 - 3.7 * (h / h_bs) ** 2) * np.log10(h_bs)
                + (43.42 - 3.1 * np.log10(h_bs)) * (np.log10(d3d) - 3)
                + 20 * np.log10(f_ghz) - (3.2 * np.log10(11.75 * h_ut) ** 2 - 4.97))
    else:
        nlos = 35.3 * np.log10(d3d) + 22.4 + 21.3 * np.log10(f_ghz) - 0.3 * (h_ut - 1.5)
    return np.maximum(pathloss_los_db(scenario, d2d_m, carrier_hz, bs_height_m, h_ut,
                                      env_height_m), nlos)


def los_probability(scenario: Scenario38901, d2d_out_m: np.ndarray | float,
                    ut_height_m: np.ndarray | float = 1.5) -> np.ndarray:
    """Pr_LOS at the outdoor 2D distance (Table 7.4.2-1): 1 up to 18 m; beyond it UMi
    18/d + exp(-d/36)(1 - 18/d), UMa [18/d + exp(-d/63)(1 - 18/d)] (1 + C'(hUT) 5/4
    (d/100)^3 exp(-d/150)) with C'(hUT) = 0 up to 13 m and ((hUT - 13)/10)^1.5 above; RMa:
    1 up to 10 m, exp(-(d - 10)/1000) beyond."""
    d = np.maximum(np.asarray(d2d_out_m, dtype=float), 1e-9)
    h_ut = np.asarray(ut_height_m, dtype=float)
    if scenario.name == "rma":
        return np.where(d <= 10, 1.0, np.exp(-(d - 10) / 1000))
    if scenario.name == "umi":
        far = 18 / d + np.exp(-d / 36) * (1 - 18 / d)
    else:
        c_prime = height_term(h_ut)
        far = ((18 / d + np.exp(-d / 63) * (1 - 18 / d))
               * (1 + c_prime * 1.25 * (d / 100) ** 3 * np.exp(-d / 150)))
    return np.where(d <= 18, 1.0, far)


def draw_los(scenario: Scenario38901, d2d_out_m: np.ndarray, ut_height_m: np.ndarray | float,
             rng: np.random.Generator) -> np.ndarray:
    """Each client's LOS state (True: line of sight), drawn from Pr_LOS at its outdoor 2D
    distance, one uniform draw per client."""
    return draw_los_uniform(scenario, d2d_out_m, ut_height_m, rng)[0]


def draw_los_uniform(scenario: Scenario38901, d2d_out_m: np.ndarray,
                     ut_height_m: np.ndarray | float,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """draw_los's states and the uniform draws they come from (LOS where the draw is below
    Pr_LOS): the same draws, kept for a client that moves on from them."""
    probability = los_probability(scenario, d2d_out_m, ut_height_m)
    uniform = rng.random(np.shape(probability))
    return uniform < probability, uniform


def o2i_building_loss_db(kind: str, carrier_hz: float) -> float:
    """PL_tw, the through-wall loss of 7.4.3.1 (Table 7.4.3-2), from the materials' losses of
    Table 7.4.3-1 (f in GHz): L_glass = 2 + 0.2 f, L_IIRglass = 23 + 0.3 f, L_concrete =
    5 + 4 f. Low loss: 5 - 10 log10(0.3 10^(-L_glass/10) + 0.7 10^(-L_concrete/10)); high
    loss: 5 - 10 log10(0.7 10^(-L_IIRglass/10) + 0.3 10^(-L_concrete/10))."""
    f = carrier_hz / 1e9
    concrete = 5 + 4 * f
    if kind == "low_loss":
        glass, share = 2 + 0.2 * f, 0.3
    elif kind == "high_loss":
        glass, share = 23 + 0.3 * f, 0.7
    else:
        raise ValueError(f"o2i: must be 'low_loss' or 'high_loss', got {kind!r}")
    return float(5 - 10 * np.log10(share * 10 ** (-glass / 10)
                                   + (1 - share) * 10 ** (-concrete / 10)))


#: the O2I loss's own standard deviation sigma_P (Table 7.4.3-2), dB
O2I_STD_DB = {"low_loss": 4.4, "high_loss": 6.5}


def draw_indoor_distance_m(n: int, rng: np.random.Generator, max_m: float = 25.0
                           ) -> np.ndarray:
    """d_2D-in: the least of two independent U(0, max_m) draws per client (7.4.3.1: 25 m for
    UMa and UMi, 10 m for RMa); the indoor loss is PL_in = 0.5 d_2D-in dB."""
    return np.minimum(rng.uniform(0, max_m, n), rng.uniform(0, max_m, n))


def shadowing_std_db(scenario: Scenario38901, los: np.ndarray, d2d_m: np.ndarray,
                     carrier_hz: float, bs_height_m: float,
                     ut_height_m: np.ndarray | float) -> np.ndarray:
    """Each link's shadow-fading sigma (Table 7.4.1-1): the LOS or the NLOS one; RMa's LOS
    sigma is 4 dB up to its breakpoint d_BP and 6 dB beyond."""
    sigma_los, sigma_nlos = scenario.shadowing_std_db
    beyond = scenario.los_shadowing_beyond_breakpoint_db
    if beyond is None:
        return np.where(los, sigma_los, sigma_nlos)
    d_bp = rma_breakpoint_distance_m(carrier_hz, bs_height_m, ut_height_m)
    return np.where(los, np.where(np.asarray(d2d_m) <= d_bp, sigma_los, beyond), sigma_nlos)


def check_ranges(scenario: Scenario38901, carrier_hz: float, ut_height_m: float,
                 bs_height_m: float, o2i: str = "low_loss") -> list[str]:
    """What the tables do not cover among the settings: 'field: allowed, got value'."""
    problems = []
    low, high = scenario.frequency_range_hz
    if not low <= carrier_hz <= high:
        problems.append(f"carrier_frequency_hz: 3gpp_38901_{scenario.name} is defined from "
                        f"{low / 1e9:g} to {high / 1e9:g} GHz, got {carrier_hz:g}")
    h_low, h_high = scenario.ut_height_range_m
    if not h_low <= ut_height_m <= h_high:
        problems.append(f"ut_height_m: 3gpp_38901_{scenario.name} is defined for "
                        f"{h_low:g} to {h_high:g} m, got {ut_height_m:g}")
    if ut_height_m > 13 and scenario.name == "uma":
        problems.append(f"ut_height_m: above 13 m UMa draws the effective environment height "
                        f"h_E, which is not modelled here; got {ut_height_m:g}")
    if scenario.bs_height_range_m is not None and not (
            scenario.bs_height_range_m[0] <= bs_height_m <= scenario.bs_height_range_m[1]):
        problems.append(f"bs_height_m: 3gpp_38901_{scenario.name} is defined for "
                        f"{scenario.bs_height_range_m[0]:g} to "
                        f"{scenario.bs_height_range_m[1]:g} m, got {bs_height_m:g}")
    if scenario.name == "rma" and o2i != "low_loss":
        problems.append(f"o2i: 3gpp_38901_rma has the low-loss building model only "
                        f"(TR 38.901 7.4.3.1), got {o2i!r}")
    if bs_height_m <= EFFECTIVE_ENVIRONMENT_HEIGHT_M:
        problems.append(f"bs_height_m: must be above {EFFECTIVE_ENVIRONMENT_HEIGHT_M:g} m, "
                        f"got {bs_height_m:g}")
    return problems
