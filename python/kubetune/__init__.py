"""kubetune: hyperparameter and architecture search plus GPU-scheduling and autoscaler maths.

Every algorithm is implemented once in C++ (``kubetune._kubetune``); this package re-exports it and adds
pure-Python conveniences (``Study.optimize``, plots, integrations, the demo).
"""
from __future__ import annotations

from . import _kubetune as _native
from ._kubetune import (  # noqa: F401  (re-exports)
    Pruner,
    SearchExhausted,
    Searcher,
    SearchSpace,
    Study,
    Trial,
    TrialState,
    built_with_cuda,
    cuda_available,
    cuda_device_count,
    make_searcher,
    registered_pruners,
    registered_searchers,
)
from .study import TrialPruned, RunningTrial, _install_study_helpers

_install_study_helpers(Study)

# Searchers and pruners implemented in C++ (each module binds its own classes).
for _name in ("RandomSearch", "GridSearch", "Sobol", "TPE", "GP", "Hyperband", "ASHA", "BOHB", "MedianStop",
              "PercentilePruner", "ASHAPruner", "HyperbandPruner", "hyperband_brackets"):
    if hasattr(_native, _name):
        globals()[_name] = getattr(_native, _name)
del _name

# Submodules whose native part exists in this build (a developer build may hold a subset of modules,
# see KUBETUNE_MODULES); a full build always has all four.
if hasattr(_native, "functions"):
    from . import functions  # noqa: E402,F401
if hasattr(_native, "autoscale"):
    from . import autoscale  # noqa: E402,F401
if hasattr(_native, "sched"):
    from . import sched  # noqa: E402,F401
if hasattr(_native, "nas"):
    from . import nas  # noqa: E402,F401

__version__ = _native.__version__
__all__ = sorted(n for n in dir() if not n.startswith("_"))
