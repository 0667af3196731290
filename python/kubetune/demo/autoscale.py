"""Demo section: Knative KPA vs Kubernetes HPA vs Erlang-C SLO sizing on one synthetic trace, one table."""
from __future__ import annotations

import numpy as _np

from kubetune import autoscale as _autoscale

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = ["demo_trace", "run"]


def demo_trace(quick: bool = False) -> _autoscale.Trace:
    """A day-like cycle with a burst in the middle, an idle gap (scale to zero) and a last trickle (cold start)."""
    total = 1200.0 if quick else 3600.0
    base = _np.asarray(_autoscale.trace_diurnal(150.0, 120.0, total * 0.8, total * 0.8, 1.0, 0.05, 7).rate)
    n = len(base)
    burst = _np.zeros(n)
    start = n // 2
    burst[start : start + 60] = 150.0
    tail = _np.zeros(int(total - n))
    tail[-60:] = 20.0
    return _autoscale.Trace(_np.concatenate([base + burst, tail]), 1.0)


def run(quick: bool = False) -> None:
    """KPA vs HPA vs SLO sizing on ``demo_trace(quick)`` with ``autoscale.standard_configs()``."""
    trace = demo_trace(quick)
    results = _autoscale.compare(trace, _autoscale.standard_configs())
    print(f"trace: {len(trace)} s, mean {sum(trace.rate) / len(trace):.0f} req/s, 100 ms service, "
          f"10 concurrent per pod, 10 s pod start-up, SLO p95 latency <= 500 ms")
    print(_autoscale.summary_table(results))
    print(f"Erlang C check (A=10, c=14, AHT 180 s): P(wait) = {_autoscale.erlang_c(14, 10.0):.5f}")
