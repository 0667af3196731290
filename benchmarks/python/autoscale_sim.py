"""KPA vs HPA vs SLO (Erlang C) sizing on the same request trace: pod-seconds against SLO violations.

Usage:  PYTHONPATH=python .venv/bin/python benchmarks/python/autoscale_sim.py [--quick] [--csv TRACE.csv]
Writes benchmarks/out/autoscale_sim.png (time series) and benchmarks/out/autoscale_frontier.png
(pod-seconds vs SLO misses for a few settings of each policy) and prints the table.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import time

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np  # noqa: E402

import kubetune as kt  # noqa: E402

a = kt.autoscale
OUT = pathlib.Path(__file__).resolve().parents[1] / "out"


def workload(quick: bool) -> "a.Trace":
    """Two hours (quick: 30 min) of a day-like cycle with noise, two bursts and an idle hour tail."""
    total = 1800.0 if quick else 7200.0
    busy = total * 0.75
    base = np.asarray(a.trace_diurnal(150.0, 120.0, busy, busy, 1.0, 0.08, 11).rate)
    n = len(base)
    for start, width, extra in ((n // 3, 45, 200.0), (2 * n // 3, 90, 120.0)):
        base[start : start + width] += extra
    return a.Trace(np.concatenate([base, np.zeros(int(total - n))]), 1.0)


def variants() -> dict:
    out = {}
    std = a.standard_configs()
    out.update(std)
    for tu in (50.0, 90.0):
        c = a.standard_configs()["kpa"]
        c.kpa_revision = a.KpaRevision(container_concurrency=10, target_utilization_percentage=tu)
        out[f"kpa tu={tu:.0f}%"] = c
    for tu in (0.5, 0.9):
        c = a.standard_configs()["hpa"]
        c.hpa_target_utilization = tu
        out[f"hpa tu={100 * tu:.0f}%"] = c
    for h in (1.0, 1.3):
        out[f"slo x{h}"] = a.standard_configs(slo_headroom=h)["slo"]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--csv", help="trace CSV (rate column, or time,rate)")
    args = p.parse_args()
    trace = a.trace_from_csv(args.csv) if args.csv else workload(args.quick)
    OUT.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    main3 = a.compare(trace, a.standard_configs())
    allv = a.compare(trace, variants())
    elapsed = time.perf_counter() - t0
    print(f"trace: {len(trace)} s, mean {np.mean(trace.rate):.0f} req/s, peak {np.max(trace.rate):.0f} req/s; "
          "100 ms exp. service, 10 concurrent/pod, 10 s start-up, SLO P(latency <= 0.5 s) >= 0.95")
    print(a.summary_table(allv))
    print(f"({len(allv)} simulations in {elapsed:.2f} s)")
    a.plot_simulation(main3, path=str(OUT / "autoscale_sim.png"), title="KPA vs HPA vs Erlang-C SLO sizing")

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    for family, marker in (("kpa", "o"), ("hpa", "s"), ("slo", "^")):
        pts = [(r.pod_seconds, 100 * r.slo_violation_fraction, n) for n, r in allv.items() if n.startswith(family)]
        ax.scatter([x for x, _, _ in pts], [y for _, y, _ in pts], marker=marker, label=family, s=50)
        for x, y, n in pts:
            ax.annotate(n, (x, y), fontsize=7, xytext=(4, 2), textcoords="offset points")
    ax.set_xlabel("pod-seconds")
    ax.set_ylabel("requests over the latency SLO (%)")
    ax.set_title("Cost vs SLO misses on one trace")
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "autoscale_frontier.png", dpi=120)
    print(f"figures: {OUT / 'autoscale_sim.png'}, {OUT / 'autoscale_frontier.png'}")


if __name__ == "__main__":
    main()
