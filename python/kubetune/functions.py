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

import typing as _typing

from ._kubetune import functions as _native
from ._kubetune.functions import (  # the C++ side, re-exported explicitly so type checkers see it
    Function as Function,
    ackley as ackley,
    branin as branin,
    goldstein_price as goldstein_price,
    hartmann3 as hartmann3,
    hartmann6 as hartmann6,
    levy as levy,
    rastrigin as rastrigin,
    rosenbrock as rosenbrock,
    six_hump_camel as six_hump_camel,
    styblinski_tang as styblinski_tang,
)

# The multi-fidelity module adds its synthetic learning curves to the same native submodule; a developer build
# without it (KUBETUNE_MODULES) lacks them.
if hasattr(_native, "LearningCurves"):
    from ._kubetune.functions import LearningCurves as LearningCurves
    from ._kubetune.functions import learning_curves as learning_curves

if _typing.TYPE_CHECKING:
    from typing import Optional

del annotations  # the future flag stays in effect; the name would be a stray module attribute


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


__all__ = [n for n in [
    "Function", "LearningCurves", "ackley", "branin", "get", "goldstein_price", "hartmann3", "hartmann6",
    "learning_curves", "levy", "names", "rastrigin", "regret", "rosenbrock", "six_hump_camel", "styblinski_tang",
] if n in globals()]
