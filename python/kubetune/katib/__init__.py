"""kubetune as Katib's suggestion and early-stopping service (``kubetune-katib``) and its DARTS trial.

``SuggestionService`` and ``EarlyStoppingService`` implement Katib's ``api.v1beta1`` gRPC services with the
message classes of the ``kubeflow-katib`` package; ``serve`` runs both (plus gRPC health) on one port. They need
the ``katib`` extra (``pip install kubetune[katib]``); the DARTS trial entry point (``kubetune-darts-trial``)
does not, so the names below are imported on first use. See docs/katib.md.
"""
from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from typing import Any

    from .early_stopping import EarlyStoppingService, KubernetesTrialStatusSetter, TrialStatusSetter
    from .server import serve
    from .suggestion import SuggestionService, algorithm_names

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = ["EarlyStoppingService", "KubernetesTrialStatusSetter", "SuggestionService", "TrialStatusSetter",
           "algorithm_names", "serve"]

_HOME = {"EarlyStoppingService": "early_stopping", "KubernetesTrialStatusSetter": "early_stopping",
         "TrialStatusSetter": "early_stopping", "SuggestionService": "suggestion",
         "algorithm_names": "suggestion", "serve": "server"}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'kubetune.katib' has no attribute {name!r}")
    return getattr(_importlib.import_module(f".{_HOME[name]}", __name__), name)


def __dir__() -> list[str]:
    return sorted(__all__)
