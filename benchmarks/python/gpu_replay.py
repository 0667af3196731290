"""FGD-paper replay benchmark on the Alibaba GPU trace 2023: unallocated GPU % at 100 % arrived workload.

Replays each trace variant with best-fit, FGD and kubetune for N seeds (default 10: 42..51, as the paper's
artifact scripts) and reports the median. Usage:

    PYTHONPATH=python .venv/bin/python benchmarks/python/gpu_replay.py [--seeds 10] [--threads 2]
        [--variants default gpushare40 gpushare80 multigpu50 gpuspec25] [--out benchmarks/gpu_replay.json]
        [--plot benchmarks/gpu_replay.png] [--count-typical]

--count-typical adds "fgd_count": FGD with typical tasks counted by task count (the simulator's gpuResWeight 0)
instead of GPU-weighted counts.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from kubetune import sched

PAPER = {"best_fit": 7.09, "fgd": 4.77}  # Weng et al. ATC'23, default trace, 100 % arrived


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--variants", nargs="*", default=list(sched.TRACE_VARIANTS))
    ap.add_argument("--policies", nargs="*", default=["best_fit", "fgd", "kubetune"])
    ap.add_argument("--count-typical", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--plot", default=None)
    args = ap.parse_args()

    if sched.trace_dir() is None:
        print("Alibaba trace not found: set KUBETUNE_SHARED_DATA to the folder holding alibaba-gpu-2023 "
              "(e.g. ../shared/data); nothing to replay", file=sys.stderr)
        return 1
    seeds = list(range(42, 42 + args.seeds))
    results = {}
    plot_runs = {}
    for variant in args.variants:
        try:
            cluster, pods = sched.load_trace(variant)
        except FileNotFoundError as e:
            print(f"{variant}: ABSENT ({e})")
            continue
        jobs = [(p, s, True) for p in args.policies for s in seeds]
        if args.count_typical and "fgd" in args.policies:
            jobs += [("fgd_count", s, False) for s in seeds]

        def one(job):
            pol, seed, weighted = job
            t0 = time.perf_counter()
            r = sched.replay(cluster, pods, "fgd" if pol == "fgd_count" else pol, seed=seed,
                             gpu_weighted_typical=weighted)
            r["wall_s"] = time.perf_counter() - t0
            return pol, r

        with ThreadPoolExecutor(max_workers=args.threads) as ex:
            done = list(ex.map(one, jobs))
        per = {}
        for pol, r in done:
            per.setdefault(pol, []).append(r)
        results[variant] = {}
        print(f"\n{variant}: {cluster.num_nodes} nodes, {cluster.total_gpus} GPUs, {len(pods)} tasks, "
              f"{len(seeds)} seeds")
        print(f"  {'policy':<10} {'median':>7} {'min':>6} {'max':>6} {'frag%':>6} {'paper':>6} {'s/run':>6}")
        for pol, runs in per.items():
            u = [r["at_100"]["unallocated_pct"] for r in runs]
            fr = statistics.median(r["at_100"]["frag_ratio_pct"] for r in runs)
            paper = PAPER.get(pol) if variant == "default" else None
            results[variant][pol] = {
                "median_unallocated_pct": statistics.median(u),
                "min": min(u), "max": max(u), "values": u,
                "median_frag_ratio_pct": fr,
                "mean_seconds": statistics.mean(r["wall_s"] for r in runs),
            }
            print(f"  {pol:<10} {statistics.median(u):>7.2f} {min(u):>6.2f} {max(u):>6.2f} {fr:>6.1f} "
                  f"{(f'{paper:.2f}' if paper else '-'):>6} {statistics.mean(r['wall_s'] for r in runs):>6.2f}")
        if variant == "default":
            plot_runs = {pol: runs[0] for pol, runs in per.items()}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    if args.plot and plot_runs:
        sched.plot_replay(plot_runs, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
