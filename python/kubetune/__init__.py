"""kubetune: hyperparameter and architecture search plus GPU-scheduling and autoscaler maths.

Every algorithm is implemented once in C++ (``kubetune._kubetune``); this package re-exports it and adds
pure-Python conveniences (``Study.optimize``, plots, integrations, the demo).
"""
# Names are imported explicitly (``X as X``) rather than copied through ``globals()`` so that mypy and IDEs
# see every public name; the stubs of the extension live in ``_kubetune/*.pyi`` (scripts/gen_stubs.py).
from . import _kubetune as _native
from ._kubetune import Pruner as Pruner
from ._kubetune import SearchExhausted as SearchExhausted
from ._kubetune import Searcher as Searcher
from ._kubetune import SearchSpace as SearchSpace
from ._kubetune import Study as Study
from ._kubetune import Trial as Trial
from ._kubetune import TrialState as TrialState
from ._kubetune import built_with_cuda as built_with_cuda
from ._kubetune import cuda_available as cuda_available
from ._kubetune import cuda_device_count as cuda_device_count
from ._kubetune import make_searcher as make_searcher
from ._kubetune import registered_pruners as registered_pruners
from ._kubetune import registered_searchers as registered_searchers
from .study import RunningTrial as RunningTrial
from .study import TrialPruned as TrialPruned
from .study import _install_study_helpers

_install_study_helpers(Study)

# A developer build may hold a subset of the native modules (KUBETUNE_MODULES, e.g. "core;nas" in
# scripts/gpu_check.sh); each group below is present exactly when its module was built. A full build has all.
if hasattr(_native, "RandomSearch"):
    from ._kubetune import GridSearch as GridSearch
    from ._kubetune import RandomSearch as RandomSearch
    from ._kubetune import Sobol as Sobol
if hasattr(_native, "TPE"):
    from ._kubetune import TPE as TPE
if hasattr(_native, "GP"):
    from ._kubetune import GP as GP
if hasattr(_native, "Hyperband"):
    from ._kubetune import ASHA as ASHA
    from ._kubetune import BOHB as BOHB
    from ._kubetune import ASHAPruner as ASHAPruner
    from ._kubetune import Hyperband as Hyperband
    from ._kubetune import HyperbandPruner as HyperbandPruner
    from ._kubetune import MedianStop as MedianStop
    from ._kubetune import PercentilePruner as PercentilePruner
    from ._kubetune import hyperband_brackets as hyperband_brackets
if hasattr(_native, "functions"):
    from . import functions as functions
if hasattr(_native, "autoscale"):
    from . import autoscale as autoscale
if hasattr(_native, "sched"):
    from . import sched as sched
if hasattr(_native, "nas"):
    from . import nas as nas

__version__: str = _native.__version__
# `from kubetune import *` gives every public name above; a subset build simply lacks some of them.
__all__ = [n for n in [
    "ASHA", "ASHAPruner", "BOHB", "GP", "GridSearch", "Hyperband", "HyperbandPruner", "MedianStop",
    "PercentilePruner", "Pruner", "RandomSearch", "RunningTrial", "SearchExhausted", "SearchSpace", "Searcher",
    "Sobol", "Study", "TPE", "Trial", "TrialPruned", "TrialState", "autoscale", "built_with_cuda",
    "cuda_available", "cuda_device_count", "functions", "hyperband_brackets", "make_searcher", "nas",
    "registered_pruners", "registered_searchers", "sched",
] if n in globals()]
