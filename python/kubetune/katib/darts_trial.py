"""``kubetune-darts-trial``: a Katib DARTS trial container entry point that runs kubetune's DARTS (kt.nas.DARTS).

It takes the three assignments of Katib's darts algorithm as Katib's own trial image does (kubeflow/katib,
examples/v1beta1/trial-images/darts-cnn-cifar10/run_trial.py)::

    kubetune-darts-trial --algorithm-settings="{'num_epochs': '3', 'w_lr': 0.025, ...}" \\
        --search-space="['separable_convolution_3x3', 'skip_connection']" --num-layers=3

The strings are read as JSON, as JSON with ``'`` quotes, or as Python literals (never evaluated as code); one
extra pair of surrounding double quotes, which Katib's example trial template leaves in the argument, is
dropped. Settings not given take Katib's defaults. kubetune's own options: ``--dataset`` (``digits``:
scikit-learn's 8x8 digits, the default; ``fashion-mnist``: Debian's dataset-fashion-mnist files; or a path to an
.npz holding ``X`` [n, h, w] or [n, c, h, w] and integer labels ``y``), ``--limit``, ``--threads``, ``--seed``,
``--device``.

Standard output, for Katib's StdOut metrics collector (default filter
``([\\w|-]+)\\s*=\\s*([+-]?\\d*(\\.\\d+)?([Ee][+-]?\\d+)?)``): one line per epoch
``epoch=1 lr=0.025 Train-loss=... Train-accuracy=... Validation-loss=... Validation-accuracy=...``, then
``Validation-accuracy=<best epoch's value>`` (so "latest" and "max" strategies both give the best) and, as
Katib's image prints it (the genotype of the best epoch, spaces removed, Katib op names)::

    Best-Genotype=Genotype(normal=[[('max_pooling_3x3',0),('skip_connection',1)]],normal_concat=range(2,3),...)

Exit codes: 0 done; 2 bad arguments, settings or data (message on stderr); 1 any other failure.
``num_workers`` and ``print_step`` are accepted and have no effect; an odd ``init_channels`` (Katib allows 1) is
rounded up to the next even number, which kubetune's cells need (a note goes to stderr).
"""
from __future__ import annotations

import argparse as _argparse
import ast as _ast
import json as _json
import os as _os
import sys as _sys
import typing as _t

import numpy as _np

from .darts import KUBETUNE_SETTING_NAMES as _SETTING_NAMES
from .darts import parse_darts_settings as _parse_darts_settings

del annotations

__all__ = ["UsageError", "build_parser", "main", "parse_katib_literal"]


class UsageError(ValueError):
    """A bad argument, setting or data set: exit code 2."""


# ------------------------------------------------------------------------------------------ arguments
def _unwrap(text: str) -> str:
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"' and '"' not in s[1:-1]:
        s = s[1:-1].strip()  # Katib's example template writes --x="${value}", so the quotes reach argv
    return s


def parse_katib_literal(text: str, what: str) -> _t.Any:
    """A value in Katib's string form: JSON, JSON with ``'`` quotes (Katib's), or a Python literal."""
    s = _unwrap(text)
    if not s:
        raise UsageError(f"argument --{what} is empty")
    for candidate in (s, s.replace("'", '"')):
        try:
            return _json.loads(candidate)
        except ValueError:
            pass
    try:
        return _ast.literal_eval(s)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise UsageError(f"argument --{what} = {text!r} is not a JSON or Python literal") from None


def _settings(text: str) -> _t.Dict[str, _t.Any]:
    if not text.strip():
        return _parse_darts_settings({})
    value = parse_katib_literal(text, "algorithm-settings")
    if not isinstance(value, dict):
        raise UsageError(f"argument --algorithm-settings must be a dict of settings, got {type(value).__name__}")
    try:
        return _parse_darts_settings(value)
    except ValueError as e:
        raise UsageError(f"argument --algorithm-settings: {e}") from None


def _search_space(text: str) -> _t.List[str]:
    """The trial's ops ('none' appended unless listed), checked by the C++ engine (src/nas/katib_ops.cpp)."""
    from .. import _kubetune

    names: _t.List[str] = []
    if text.strip():
        value = parse_katib_literal(text, "search-space")
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise UsageError(f"argument --search-space = {text!r} must be a non-empty list of operation names")
        names = [str(v) for v in value]
    try:
        return list(_kubetune.nas.katib_trial_ops(names, "argument --search-space"))
    except ValueError as e:
        raise UsageError(str(e)) from None


def _num_layers(text: str) -> int:
    s = _unwrap(text)
    try:
        n = int(s)
    except ValueError:
        raise UsageError(f"argument --num-layers = {text!r} must be an integer >= 1") from None
    if n < 1:
        raise UsageError(f"argument --num-layers = {text!r} must be an integer >= 1")
    return n


def build_parser() -> _argparse.ArgumentParser:
    p = _argparse.ArgumentParser(
        prog="kubetune-darts-trial",
        description="Katib DARTS trial running kubetune's DARTS; prints metrics for Katib's StdOut collector.",
    )
    p.add_argument("--algorithm-settings", default="", help="Katib's DARTS settings dict (string form)")
    p.add_argument("--search-space", default="", help="list of operation names (default: DARTS' 7 ops)")
    p.add_argument("--num-layers", default="8", help="cells in the search network (default 8)")
    p.add_argument("--dataset", default="digits", help="'digits', 'fashion-mnist' or a path to an .npz with X, y")
    p.add_argument("--limit", type=int, default=None, help="use only the first N samples")
    # command-line flags keep their spelling (docs/python.md); the value is passed on as n_threads
    p.add_argument("--threads", dest="n_threads", type=int, default=0, help="CPU threads (0: all)")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="where the search runs")
    return p


# ------------------------------------------------------------------------------------------ data
def _load_npz(path: str) -> _t.Tuple[_np.ndarray, _np.ndarray]:
    try:
        loaded = _np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise UsageError(f"--dataset {path!r} cannot be read as .npz: {e}") from None
    if not hasattr(loaded, "files"):  # a plain .npy array
        raise UsageError(f"--dataset {path!r} is a single array, not an .npz holding X and y")
    with loaded as f:
        missing = [k for k in ("X", "y") if k not in f.files]
        if missing:
            raise UsageError(f"--dataset {path!r} lacks array(s) {missing} (it has {f.files})")
        try:
            return _np.asarray(f["X"]), _np.asarray(f["y"])
        except ValueError as e:  # e.g. an object array, which allow_pickle=False refuses
            raise UsageError(f"--dataset {path!r}: {e}") from None


def _dataset(name: str, limit: _t.Optional[int]) -> _t.Tuple[_np.ndarray, _np.ndarray]:
    from .. import nas

    if limit is not None and limit < 4:
        raise UsageError(f"argument --limit = {limit} must be >= 4")
    if name == "digits":
        try:
            X, y = nas.load_digits()
        except ImportError:
            raise UsageError("--dataset digits needs scikit-learn (pip install scikit-learn)") from None
    elif name == "fashion-mnist":
        try:
            X, y = nas.load_fashion_mnist(limit=limit)
        except (FileNotFoundError, OSError) as e:
            raise UsageError(f"--dataset fashion-mnist: {e}") from None
    elif name.endswith(".npz") or _os.path.exists(name):
        if not _os.path.isfile(name):
            raise UsageError(f"--dataset {name!r}: no such file")
        X, y = _load_npz(name)
    else:
        raise UsageError(f"argument --dataset = {name!r} must be 'digits', 'fashion-mnist' or a path to an .npz")
    if limit is not None:
        X, y = X[:limit], y[:limit]
    return X, y


# ------------------------------------------------------------------------------------------ run
def _search_kwargs(settings: _t.Dict[str, _t.Any], layers: int, ops: _t.List[str], args: _argparse.Namespace,
                   err: _t.TextIO) -> _t.Dict[str, _t.Any]:
    kw: _t.Dict[str, _t.Any] = {}
    for katib_name, kt_name in _SETTING_NAMES.items():
        if kt_name != "epochs":
            kw[kt_name] = settings[katib_name]
    if kw["batch_size"] is None:  # Katib accepts "None"; it means "not set" here: Katib's default
        kw["batch_size"] = 128
    if kw["channels"] % 2:
        even = kw["channels"] + 1
        print(f"note: init_channels {kw['channels']} rounded up to {even} (kubetune's cells need an even count)",
              file=err)
        kw["channels"] = even
    kw.update(layers=layers, ops=ops, seed=args.seed, n_threads=args.n_threads)
    return kw


def _fmt(v: float) -> str:
    return repr(float(v))


def _run(args: _argparse.Namespace, out: _t.TextIO, err: _t.TextIO) -> int:
    from .. import nas

    settings = _settings(args.algorithm_settings)
    ops = _search_space(args.search_space)
    layers = _num_layers(args.num_layers)
    if args.n_threads < 0:
        raise UsageError(f"argument --threads = {args.n_threads} must be >= 0")
    X, y = _dataset(args.dataset, args.limit)
    kw = _search_kwargs(settings, layers, ops, args, err)
    epochs = int(settings["num_epochs"])
    print(f">>> kubetune DARTS trial: {len(y)} samples, {layers} layers, {kw['nodes']} nodes, "
          f"{kw['channels']} channels, {epochs} epochs, device {args.device}", file=out, flush=True)
    print(f">>> search space: {', '.join(ops)}", file=out, flush=True)

    def on_epoch(st: _t.Dict[str, _t.Any]) -> None:
        print(f"epoch={st['epoch'] + 1} lr={_fmt(st['lr'])} Train-loss={_fmt(st['train_loss'])} "
              f"Train-accuracy={_fmt(st['train_acc'])} Validation-loss={_fmt(st['val_loss'])} "
              f"Validation-accuracy={_fmt(st['val_acc'])}", file=out, flush=True)

    try:
        res = nas.DARTS(**kw).search(X, y, epochs=epochs, device=args.device, callback=on_epoch)
    except (ValueError, TypeError) as e:
        raise UsageError(str(e)) from None
    best = 0
    for i, h in enumerate(res.history):  # first epoch with the highest accuracy (Katib keeps the first maximum)
        if h["val_acc"] > res.history[best]["val_acc"]:
            best = i
    h = res.history[best]
    genotype = nas.derive_genotype(h["alpha_normal"], h["alpha_reduce"], kw["nodes"], kw["nodes"], ops, 2)
    print(f"Validation-accuracy={_fmt(h['val_acc'])}", file=out)
    print(f"Best-Genotype={genotype.to_katib_string().replace(' ', '')}", file=out, flush=True)
    return 0


def main(argv: _t.Optional[_t.Sequence[str]] = None) -> int:
    """Entry point of ``kubetune-darts-trial``; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as e:  # argparse: usage error (2) or --help (0); its message is already on stderr
        return int(e.code) if isinstance(e.code, int) else 2
    try:
        return _run(args, _sys.stdout, _sys.stderr)
    except UsageError as e:
        print(f"kubetune-darts-trial: error: {e}", file=_sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - a trial container reports any failure and exits non-zero
        print(f"kubetune-darts-trial: failed: {type(e).__name__}: {e}", file=_sys.stderr)
        return 1


if __name__ == "__main__":
    _sys.exit(main())
