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
    timing = defaultdict(list)     # (n, peer) -> (wall, cpu)
    for p in paths:
        with open(p) as fh:
            for line in fh:
                r = json.loads(line)
                if "timing_n" in r:
                    timing[(r["timing_n"], r["peer"])].append((r["wall"], r["cpu"]))
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
        print()
        print("| n | " + " | ".join(f"{p} wall / CPU s" for p in peers) + " |")
        print("|---|" + "---|" * len(peers))
        for n in sorted({k[0] for k in timing}):
            cells = []
            for p in peers:
                v = timing.get((n, p))
                cells.append(f"{statistics.median(w for w, _ in v):.4f} / {statistics.median(c for _, c in v):.4f}" if v else "—")
            print(f"| {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
