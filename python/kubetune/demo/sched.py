"""Demo section: a short replay of the FGD paper's experiment (best fit, FGD, kubetune), one table.

Replays the Alibaba openb default trace when ``$KUBETUNE_SHARED_DATA`` holds it (``scripts/demo.sh`` sets it),
else, and always with ``quick``, a seeded synthetic look-alike.
"""
from __future__ import annotations

import time as _time

from kubetune import sched as _sched

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = ["run"]


def run(quick: bool = False) -> None:
    """Unallocated GPU share at 100 % arrived workload, fragmentation and failed pods per policy (seed 42)."""
    trace = None
    if not quick:  # quick: the FGD-class policies on the synthetic trace
        try:
            trace = _sched.load_trace("default")
        except FileNotFoundError:
            pass
    if trace is not None:
        cluster, pods = trace
        source = "Alibaba openb default trace"
    else:
        cluster, pods = _sched.synthetic_trace(300 if quick else 800, 3000 if quick else 6000, 7)
        source = "synthetic trace (seeded)"
    print(f"sched: replay on {source}: {cluster.num_nodes} nodes, {cluster.total_gpus} GPUs, seed 42")
    print(f"  {'policy':<10} {'unallocated@100%':>17} {'frag ratio':>11} {'failed pods':>12} {'time s':>7}")
    for pol in ("best_fit", "fgd", "kubetune"):
        t0 = _time.perf_counter()
        r = _sched.replay(cluster, list(pods), pol, seed=42, step_pct=5.0)
        dt = _time.perf_counter() - t0
        a = r["at_100"]
        print(f"  {pol:<10} {a['unallocated_pct']:>16.2f}% {a['frag_ratio_pct']:>10.1f}% "
              f"{r['pods_failed']:>12d} {dt:>7.2f}")
