"""Built-in benchmark functions for research benchmarking (all minimised), with domains and known optima.

Definitions follow Surjanovic & Bingham, *Virtual Library of Simulation Experiments*
(https://www.sfu.ca/~ssurjano/optimization.html). Each function is callable on a parameter dict
``{"x0": .., "x1": ..}`` (or a trial with ``.params``), on a point ``(d,)`` or on a batch ``(n, d)``::

    import kubetune as kt
    kt.functions.branin({"x0": 3.14159, "x1": 2.275})      # ~0.3979
    f = kt.functions.get("hartmann6")
    study = kt.Study(f.space(), searcher=kt.Sobol(seed=1))
    study.optimize(lambda t: f(t.params), n_trials=64)
    print(study.best.values[0] - f.optimum)                 # simple regret

The variable-dimension families (rosenbrock, ackley, levy, styblinski_tang, rastrigin) default to d = 2
and adapt to the input's dimension; ``get(name, dim)`` or ``f.with_dim(d)`` fixes another one.
"""
from __future__ import annotations

from typing import Optional

from ._kubetune import functions as _native

Function = _native.Function

branin = _native.branin
hartmann3 = _native.hartmann3
hartmann6 = _native.hartmann6
rosenbrock = _native.rosenbrock
ackley = _native.ackley
levy = _native.levy
styblinski_tang = _native.styblinski_tang
six_hump_camel = _native.six_hump_camel
goldstein_price = _native.goldstein_price
rastrigin = _native.rastrigin


def names() -> list[str]:
    """Names of the built-in functions."""
    return list(_native.names())


def get(name: str, dim: Optional[int] = None) -> Function:
    """The function called ``name`` (case, dashes and underscores ignored) in dimension ``dim``.

    ``dim=None`` picks its natural dimension (2 for the any-dimension families). Unknown names raise KeyError.
    """
    return _native.get(name, dim)


def regret(name_or_function: "str | Function", best_value: float, dim: Optional[int] = None) -> float:
    """Simple regret ``best_value - optimum`` of a minimisation run on a built-in function."""
    f = get(name_or_function, dim) if isinstance(name_or_function, str) else name_or_function
    return float(best_value) - f.optimum


# Other modules add their benchmarks to the same native submodule (e.g. multifidelity's LearningCurves):
# re-export every public name found there.
def _reexport_native() -> None:
    for name in dir(_native):
        if not name.startswith("_") and name not in globals():
            globals()[name] = getattr(_native, name)


_reexport_native()

__all__ = sorted({"Function", "names", "get", "regret", *_native.names(),
                  *(n for n in dir(_native) if not n.startswith("_"))})
