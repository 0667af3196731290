"""Clean module namespaces: no public module of kubetune exposes its own imports (``json``, ``np``, ``os``,
``annotations``, typing names, ...) as public attributes.

Every attribute of a public module whose name does not start with "_" must be in the module's ``__all__``, be one
of its own submodules, or be defined in the module itself (``__module__``). Constants have no ``__module__``, so a
public constant must be listed in ``__all__``. A new stray import fails here.
"""
from __future__ import annotations

import importlib
import pkgutil
import types

import pytest

import kubetune



def _public_modules() -> list[str]:
    names = ["kubetune"]
    for info in pkgutil.walk_packages(kubetune.__path__, "kubetune.", onerror=lambda name: None):
        parts = info.name.split(".")[1:]
        if any(p.startswith("_") for p in parts):  # private modules, the extension, and demo's __main__
            continue
        names.append(info.name)
    return sorted(names)


MODULES = _public_modules()


def _import(name: str) -> types.ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:  # an optional dependency (optuna, ray, grpc, kubernetes, ...)
        if exc.name and not exc.name.startswith("kubetune"):
            pytest.skip(f"{name} needs {exc.name}, which is not installed")
        raise
    except ImportError as exc:  # a developer build without that native module (KUBETUNE_MODULES)
        if "kubetune._kubetune" in str(exc):
            pytest.skip(f"{name}: native module not built ({exc})")
        raise


def stray_names(mod: types.ModuleType) -> list[str]:
    """Public attributes of ``mod`` that are neither exported, own submodules, nor defined in ``mod``."""
    exported = set(getattr(mod, "__all__", ()))
    stray = []
    for name, value in vars(mod).items():  # vars, not dir: a module __dir__ must not hide anything
        if name.startswith("_") or name in exported:
            continue
        if isinstance(value, types.ModuleType):
            if value.__name__ == f"{mod.__name__}.{name}":
                continue
        elif getattr(value, "__module__", None) == mod.__name__:
            continue
        stray.append(name)
    return sorted(stray)


def test_every_public_module_is_covered():
    # The walk finds the package's modules; private ones are skipped.
    for name in ("kubetune", "kubetune.study", "kubetune.autoscale", "kubetune.functions", "kubetune.sched",
                 "kubetune.sched.kube", "kubetune.katib", "kubetune.katib.suggestion", "kubetune.katib.server",
                 "kubetune.katib.early_stopping", "kubetune.integrations.optuna", "kubetune.integrations.ray",
                 "kubetune.demo", "kubetune.demo.search", "kubetune.demo.multifidelity", "kubetune.demo.nas",
                 "kubetune.nas", "kubetune.katib.darts", "kubetune.katib.darts_trial"):
        assert name in MODULES, name
    assert not any(m.endswith("__main__") or "._" in m for m in MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_no_stray_public_names(name):
    mod = _import(name)
    assert stray_names(mod) == [], f"{name} exposes its imports; alias them privately (import x as _x)"


@pytest.mark.parametrize("name", MODULES)
def test_all_is_correct(name):
    mod = _import(name)
    assert hasattr(mod, "__all__"), f"{name} has no __all__"
    exported = list(mod.__all__)
    assert len(exported) == len(set(exported)), f"{name}.__all__ repeats names"
    missing = [n for n in exported if not hasattr(mod, n)]
    assert not missing, f"{name}.__all__ names what the module lacks: {missing}"
    assert not [n for n in exported if n.startswith("_")], f"{name}.__all__ exports private names"


def test_the_checker_catches_a_stray_import():
    # The test is only worth something if a module that leaks an import fails it.
    mod = types.ModuleType("kubetune.fake")
    exec("from __future__ import annotations\nimport json\nfrom typing import Any\nX = 1\n"
         "def f() -> Any: return json\n__all__ = ['f']", mod.__dict__)
    assert stray_names(mod) == ["Any", "X", "annotations", "json"]
    exec("del annotations\nimport json as _json", mod.__dict__)
    assert stray_names(mod) == ["Any", "X", "json"]


def test_functions_reexports_every_native_function():
    # kubetune.functions names its re-exports one by one (no globals() injection): none may be missed.
    if not hasattr(kubetune, "functions"):
        pytest.skip("functions module not built")
    native = kubetune._native.functions
    public = {n for n in dir(native) if not n.startswith("_")}
    assert public <= set(kubetune.functions.__all__)
    for name in public - {"get", "names"}:  # those two are Python wrappers (docstrings, list copy)
        assert getattr(kubetune.functions, name) is getattr(native, name)
