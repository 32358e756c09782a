"""Min-max latency bandwidth allocation: time per allocation, and against SLSQP.

    python benchmarks/bench_allocation.py

Random cells (clients uniform in 35-500 m, 3GPP path loss, 8 dB shadowing, uplink payloads of
0.1-10 Mbit, compute 0-0.5 s, 0.2 W): milliseconds per `MinMaxLatencyAllocator.allocate_hz`
for 10, 100 and 1,000 clients (goal: under 10 ms for 100), and for 10 and 30 clients the time
and the optimum of scipy's general-purpose SLSQP on the same problem, measured side by side.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import minimize

import channel

N0_W_PER_HZ = float(channel.dbm_to_w(-174.0))
TOTAL_HZ = 20e6


def instance(n: int, seed: int) -> channel.LinkDemand:
    rng = np.random.default_rng(seed)
    distance_m = rng.uniform(35, 500, n)
    gain = channel.db_to_linear(-channel.Macro3gpp36814().pathloss_db(distance_m)
                                - rng.normal(0, 8, n))
    return channel.LinkDemand(np.arange(n), gain, rng.uniform(1e5, 1e7, n),
                              rng.uniform(0.0, 0.5, n), np.full(n, 0.2), N0_W_PER_HZ)


def finish_s(demand: channel.LinkDemand, b: np.ndarray) -> np.ndarray:
    return demand.compute_time_s + demand.payload_bits / demand.rate_bps(b, TOTAL_HZ)


def slsqp(demand: channel.LinkDemand) -> float:
    n = len(demand)
    t_equal = finish_s(demand, np.full(n, TOTAL_HZ / n)).max()
    result = minimize(
        lambda x: x[n], np.append(np.full(n, 1 / n), 1.0), method="SLSQP",
        bounds=[(1e-9, 1)] * n + [(0, None)],
        constraints=[{"type": "eq", "fun": lambda x: x[:n].sum() - 1},
                     {"type": "ineq",
                      "fun": lambda x: x[n] - finish_s(demand, x[:n] * TOTAL_HZ) / t_equal}],
        options={"ftol": 1e-12, "maxiter": 1000})
    return float(finish_s(demand, result.x[:n] * TOTAL_HZ).max())


def main() -> None:
    allocator = channel.MinMaxLatencyAllocator()
    for n in (10, 100, 1000):
        demands = [instance(n, seed) for seed in range(20)]
        start = time.perf_counter()
        shares = [allocator.allocate_hz(TOTAL_HZ, d) for d in demands]
        ms = (time.perf_counter() - start) / len(demands) * 1e3
        gain = np.mean([1 - finish_s(d, b).max() / finish_s(d, np.full(n, TOTAL_HZ / n)).max()
                        for d, b in zip(demands, shares, strict=True)])
        print(f"{n:5d} clients: {ms:7.2f} ms per allocation; one local step's latency "
              f"{100 * gain:.1f} % below equal shares (mean of 20 cells)")
    for n in (10, 30):
        demand = instance(n, 0)
        start = time.perf_counter()
        ours = finish_s(demand, allocator.allocate_hz(TOTAL_HZ, demand)).max()
        ours_ms = (time.perf_counter() - start) * 1e3
        start = time.perf_counter()
        theirs = slsqp(demand)
        slsqp_ms = (time.perf_counter() - start) * 1e3
        print(f"{n:5d} clients: min-max {ours_ms:.2f} ms, SLSQP {slsqp_ms:.1f} ms "
              f"({slsqp_ms / ours_ms:.0f}x); optimum {ours:.9g} s against SLSQP's {theirs:.9g} s "
              f"(relative difference {abs(ours - theirs) / theirs:.1e})")


if __name__ == "__main__":
    main()
