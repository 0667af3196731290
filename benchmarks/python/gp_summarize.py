"""Summarise gp_vs_peers.py --log files (JSON lines) into the Markdown tables of benchmarks/gp.md.

    python benchmarks/python/gp_summarize.py run1.jsonl run2.jsonl ...
"""
from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict


def main(paths):
    best = defaultdict(list)       # (function, budget, peer) -> values
    timing = defaultdict(list)     # (n, peer) -> (wall, cpu, asks)
    for p in paths:
        with open(p) as fh:
            for line in fh:
                r = json.loads(line)
                if "timing_n" in r:
                    timing[(r["timing_n"], r["peer"])].append((r["wall"], r["cpu"], r.get("asks", 1)))
                else:
                    for b, v in r["best"].items():
                        best[(r["function"], int(b), r["peer"])].append(v)
    peers = sorted({k[2] for k in best} | {k[1] for k in timing}, key=lambda s: (s != "kubetune", s))
    if best:
        print("| function | budget | " + " | ".join(f"{p} median (seeds)" for p in peers) + " |")
        print("|---|---|" + "---|" * len(peers))
        for f, b in sorted({(k[0], k[1]) for k in best}, key=lambda t: (["branin", "hartmann6", "ackley5", "levy4"].index(t[0]) if t[0] in ["branin", "hartmann6", "ackley5", "levy4"] else 9, t[1])):
            cells = []
            for p in peers:
                v = best.get((f, b, p))
                cells.append(f"{statistics.median(v):.5f} ({len(v)})" if v else "—")
            print(f"| {f} | {b} | " + " | ".join(cells) + " |")
    if timing:
        # Each timing line is one protocol run: the mean CPU time over its consecutive asks (older logs:
        # a median). Several runs of one (n, peer) are averaged, weighted by their ask counts.
        print()
        print("| n | " + " | ".join(f"{p} mean CPU ms (asks)" for p in peers)
              + "".join(f" | {p} / kubetune" for p in peers if p != "kubetune") + " |")
        print("|---|" + "---|" * (2 * len(peers) - 1))
        for n in sorted({k[0] for k in timing}):
            cells, means = [], {}
            for p in peers:
                v = timing.get((n, p))
                if v:
                    asks = sum(a for _, _, a in v)
                    means[p] = sum(c * a for _, c, a in v) / asks
                    cells.append(f"{1e3 * means[p]:.2f} ({asks})")
                else:
                    cells.append("—")
            ratios = [f"{means[p] / means['kubetune']:.0f}×" if p in means and "kubetune" in means else "—"
                      for p in peers if p != "kubetune"]
            print(f"| {n} | " + " | ".join(cells + ratios) + " |")

if __name__ == "__main__":
    main(sys.argv[1:])
