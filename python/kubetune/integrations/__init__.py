"""kubetune inside other engines: ``kubetune.integrations.optuna`` (sampler and pruner for Optuna studies) and
``kubetune.integrations.ray`` (a Ray Tune searcher). Each needs its engine installed (extras ``optuna``, ``ray``);
this package imports neither until its submodule is imported."""
from __future__ import annotations

__all__: list[str] = []
