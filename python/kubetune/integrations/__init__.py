"""kubetune inside other engines: ``kubetune.integrations.optuna`` (sampler and pruner for Optuna studies) and
``kubetune.integrations.ray`` (a Ray Tune searcher). Each needs its engine installed (extras ``optuna``, ``ray``);
this package imports neither until its submodule is imported."""
from __future__ import annotations

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__: list[str] = []
