"""``python -m kubetune.demo``: every kubetune algorithm on built-in defaults, with compact tables."""
from __future__ import annotations

import argparse
import sys
import time


def _section(title: str) -> None:
    print()
    print(title)
    print("=" * len(title))


def _section_fn(kt, name: str):
    mod = getattr(kt, name, None)  # absent only in developer builds of a module subset
    return getattr(mod, "_demo", None)


def main(argv: list[str] | None = None) -> int:
    import kubetune as kt

    parser = argparse.ArgumentParser(prog="python -m kubetune.demo", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller budgets (used by the tests)")
    parser.add_argument("--only", default="", help="comma list of sections: search,multifidelity,autoscale,sched,nas")
    args = parser.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    t0 = time.perf_counter()
    print(f"kubetune {kt.__version__}  (CUDA built: {kt.built_with_cuda()}, GPU available: {kt.cuda_available()})")
    from . import _demo_search

    sections = [
        ("search", "Search: best value found per searcher on built-in benchmark functions", _demo_search.run),
        ("multifidelity", "Multi-fidelity search and early stopping", getattr(_demo_search, "run_multifidelity", None)),
        ("autoscale", "Autoscaling: KPA vs HPA vs SLO sizing on one trace", _section_fn(kt, "autoscale")),
        ("sched", "GPU-sharing allocator: trace replay", _section_fn(kt, "sched")),
        ("nas", "DARTS architecture search on digits", _section_fn(kt, "nas")),
    ]
    for key, title, fn in sections:
        if fn is None or (only and key not in only):
            continue
        _section(title)
        fn(quick=args.quick)
    print(f"\ndemo finished in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
