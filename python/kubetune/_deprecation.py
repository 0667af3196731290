"""Renamed keyword arguments of the pure-Python layer: the old spelling still works for one release, with a
``DeprecationWarning``; giving both spellings is a ``TypeError``."""
from __future__ import annotations

import functools as _functools
import inspect as _inspect
import typing as _typing
import warnings as _warnings

del annotations  # the future flag stays in effect; the name would be a stray module attribute

_F = _typing.TypeVar("_F", bound=_typing.Callable[..., _typing.Any])


def renamed_keywords(where: str, **renames: str) -> _typing.Callable[[_F], _F]:
    """Decorator: each ``old="new"`` keyword is accepted for one release and passed on as ``new``.

    ``where`` names the callable in the messages (``"Study.optimize"``). The wrapped function keeps its own
    signature (``inspect.signature`` follows ``__wrapped__``), so stubs and help show the new names only.
    """

    def decorate(func: _F) -> _F:
        signature = _inspect.signature(func)

        @_functools.wraps(func)
        def wrapper(*args: _typing.Any, **kwargs: _typing.Any) -> _typing.Any:
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                value = kwargs.pop(old)
                if new in kwargs or new in _bound_names(signature, args, kwargs):
                    raise TypeError(f"{where}() got both {new}= and its deprecated alias {old}=; pass {new}= only")
                _warnings.warn(f"{where}({old}=...) is deprecated (removed in the next release); use {new}=",
                               DeprecationWarning, stacklevel=2)
                kwargs[new] = value
            return func(*args, **kwargs)

        return _typing.cast(_F, wrapper)

    return decorate


def _bound_names(signature: _inspect.Signature, args: tuple, kwargs: dict) -> set[str]:
    """Parameter names the call gives (positionally or by keyword); empty when the call does not bind at all
    (the function itself then raises Python's own TypeError)."""
    try:
        return set(signature.bind_partial(*args, **kwargs).arguments)
    except TypeError:
        return set()
