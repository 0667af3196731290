"""kubetune: hyperparameter and architecture search plus GPU-scheduling and autoscaler maths.

Every algorithm is implemented once in C++ (``kubetune._kubetune``); this package re-exports it and adds
pure-Python conveniences (``Study.optimize``, plots, integrations, the demo).
"""
from __future__ import annotations

from . import _kubetune as _native
from ._kubetune import (  # noqa: F401  (re-exports)
    SearchSpace,
    Study,
    Trial,
    TrialState,
    RandomSearch,
    GridSearch,
    Sobol,
    cuda_available,
    built_with_cuda,
)
from .study import _install_study_helpers
from . import functions  # noqa: F401

_install_study_helpers(Study)

try:  # searchers filled in by later modules; absent names are simply not exported
    from ._kubetune import TPE  # noqa: F401
except ImportError:  # pragma: no cover
    pass
try:
    from ._kubetune import GP  # noqa: F401
except ImportError:  # pragma: no cover
    pass
try:
    from ._kubetune import Hyperband, ASHA, BOHB, MedianStop, PercentilePruner  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from . import autoscale  # noqa: E402,F401
from . import sched  # noqa: E402,F401
from . import nas  # noqa: E402,F401

__version__ = _native.__version__
__all__ = [n for n in dir() if not n.startswith("_")]
