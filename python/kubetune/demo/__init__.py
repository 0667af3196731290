"""``python -m kubetune.demo``: every kubetune algorithm on built-in defaults, with compact tables.

Each section lives in its own module of this package (``kubetune.demo.search``, ``.multifidelity``,
``.autoscale``, ``.sched``, ``.nas``) with a ``run(quick=False)`` that prints its table; the library modules hold no demo
code. A section whose kubetune module is not built (developer builds of a module subset) is left out.
"""
from __future__ import annotations

import argparse as _argparse
import importlib as _importlib
import time as _time
import typing as _typing

if _typing.TYPE_CHECKING:
    from typing import Callable, Optional

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = ["SECTIONS", "main"]

#: (key for ``--only``, title, the ``kubetune`` attribute the section needs or None) in the order they run.
SECTIONS = (
    ("search", "Search: best value found per searcher on built-in benchmark functions", None),
    ("multifidelity", "Multi-fidelity search and early stopping", "Hyperband"),
    ("autoscale", "Autoscaling: KPA vs HPA vs SLO sizing on one trace", "autoscale"),
    ("sched", "GPU-sharing allocator: trace replay", "sched"),
    ("nas", "DARTS architecture search on digits", "nas"),
)


def _section_run(key: str) -> Callable[..., None]:
    """``kubetune.demo.<key>.run``."""
    run: Callable[..., None] = _importlib.import_module(f"{__name__}.{key}").run
    return run


def main(argv: Optional[list[str]] = None) -> int:
    import kubetune as kt

    parser = _argparse.ArgumentParser(prog="python -m kubetune.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller budgets (used by the tests)")
    parser.add_argument("--only", default="", help="comma list of sections: " + ",".join(k for k, _, _ in SECTIONS))
    args = parser.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    t0 = _time.perf_counter()
    print(f"kubetune {kt.__version__}  (CUDA built: {kt.built_with_cuda()}, GPU available: {kt.cuda_available()})")
    for key, title, needs in SECTIONS:
        if (only and key not in only) or (needs is not None and not hasattr(kt, needs)):
            continue
        run = _section_run(key)
        print()
        print(title)
        print("=" * len(title))
        run(quick=args.quick)
    print(f"\ndemo finished in {_time.perf_counter() - t0:.1f} s")
    return 0
