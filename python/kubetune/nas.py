"""kubetune.nas: DARTS differentiable architecture search (Liu, Simonyan & Yang, ICLR 2019) in C++.

The engine (``kubetune._kubetune.nas``) runs the supernet, the bilevel optimisation and the genotype
derivation on the CPU (OpenMP + Eigen) or on a GPU (CUDA kernels + cuBLAS, when built with CUDA), and reads the
data (IDX files, plain or gzip-compressed). This module adds the numpy front end (:class:`DARTS`), a progress
bar, plots and the demo section; it only converts types.
"""
from __future__ import annotations

import numbers as _numbers
import os as _os
import time as _time
import typing as _t
import warnings as _warnings
from dataclasses import dataclass as _dataclass
from dataclasses import field as _field

import numpy as _np

from . import _kubetune
from ._deprecation import renamed_keywords as _renamed_keywords

del annotations

_native = getattr(_kubetune, "nas", None)  # None when the extension was built without the nas module


def _missing(*_a: _t.Any, **_k: _t.Any) -> _t.Any:
    raise ImportError("kubetune was built without the nas module")


DartsEngine = getattr(_native, "DartsEngine", _missing)
Genotype = getattr(_native, "Genotype", None)
darts_ops = getattr(_native, "darts_ops", _missing)
derive_genotype = getattr(_native, "derive_genotype", _missing)
canonical_op = getattr(_native, "canonical_op", _missing)
katib_op_name = getattr(_native, "katib_op_name", _missing)
pool_stats = getattr(_native, "pool_stats", _missing)
set_n_threads = getattr(_native, "set_n_threads", _missing)
n_threads = getattr(_native, "n_threads", _missing)
read_idx = getattr(_native, "read_idx", _missing)
fashion_mnist_dir = getattr(_native, "fashion_mnist_dir", _missing)
gzip_supported = getattr(_native, "gzip_supported", _missing)

#: Debian's dataset-fashion-mnist directory: the last choice of :func:`fashion_mnist_dir`.
FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"

__all__ = [
    "DARTS",
    "FASHION_MNIST_DIR",
    "SearchResult",
    "DartsEngine",
    "Genotype",
    "darts_ops",
    "derive_genotype",
    "canonical_op",
    "katib_op_name",
    "katib_operations_to_ops",
    "load_digits",
    "load_fashion_mnist",
    "fashion_mnist_available",
    "fashion_mnist_dir",
    "gzip_supported",
    "read_idx",
    "standardize",
    "plot_alphas",
    "pool_stats",
    "set_n_threads",
    "n_threads",
    "set_num_threads",
    "num_threads",
]


def _deprecated(old: str, new: str) -> None:
    _warnings.warn(f"{old} is deprecated, use {new}", DeprecationWarning, stacklevel=3)


def set_num_threads(n: int) -> None:
    """Deprecated alias of :func:`set_n_threads`."""
    _deprecated("kubetune.nas.set_num_threads", "kubetune.nas.set_n_threads")
    set_n_threads(n)


def num_threads() -> int:
    """Deprecated alias of :func:`n_threads`."""
    _deprecated("kubetune.nas.num_threads", "kubetune.nas.n_threads")
    return int(n_threads())


def katib_operations_to_ops(operations: _t.Sequence[_t.Mapping[str, _t.Any]]) -> _t.List[str]:
    """Expand Katib's ``nasConfig.operations`` list into op names (plus ``none``, as Katib's DARTS adds it).

    Each entry is ``{"operationType": "separable_convolution", "parameters": [{"name": "filter_size",
    "feasibleSpace": {"list": ["3", "5"]}}]}``; ``skip_connection`` takes no parameters. The expansion and its
    checks are the C++ engine's (src/nas/katib_ops.cpp); this converts the dicts.
    """
    converted = []
    for i, op in enumerate(operations):
        if not isinstance(op, _t.Mapping) or "operationType" not in op:
            raise ValueError(f"operations[{i}] must be a mapping with 'operationType', got {op!r}")
        params = [
            (str(p.get("name", "")), [str(v) for v in (p.get("feasibleSpace") or {}).get("list", []) or []])
            for p in op.get("parameters", []) or []
        ]
        converted.append((str(op["operationType"]), params))
    return list(_native_call("katib_operations_to_ops")(converted))


#: Largest class label: the engine takes num_classes = max label + 1 as a 32-bit int.
_MAX_LABEL = 2**31 - 2


def _int_arg(name: str, value: _t.Any, low: int) -> int:
    if not isinstance(value, _numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"param '{name}' = {value!r} must be an int")
    if value < low:
        raise ValueError(f"param '{name}' = {value} must be >= {low}")
    return int(value)


def _image_shape(image_shape: _t.Any) -> _t.Tuple[int, int, int]:
    if isinstance(image_shape, (str, bytes)) or not isinstance(image_shape, _t.Sequence):
        raise TypeError(f"param 'image_shape' = {image_shape!r} must be a tuple (h, w) or (c, h, w)")
    if len(image_shape) not in (2, 3) or not all(
        isinstance(d, _numbers.Integral) and not isinstance(d, bool) and d > 0 for d in image_shape
    ):
        raise ValueError(f"param 'image_shape' = {image_shape!r} must be (h, w) or (c, h, w) of positive ints")
    shape = tuple(int(d) for d in image_shape)
    return (1, shape[0], shape[1]) if len(shape) == 2 else (shape[0], shape[1], shape[2])


def _as_images(X: _t.Any, image_shape: _t.Optional[_t.Tuple[int, ...]]) -> _np.ndarray:
    try:
        X = _np.asarray(X, dtype=_np.float32)
    except (TypeError, ValueError):
        raise TypeError(f"param 'X' must be a numeric array of images, got {type(X).__name__}") from None
    if X.size == 0:
        raise ValueError(f"param 'X' holds no images (shape {X.shape})")
    if image_shape is not None:
        shape = _image_shape(image_shape)
        per_image = shape[0] * shape[1] * shape[2]
        if X.size != X.shape[0] * per_image:
            raise ValueError(
                f"param 'image_shape' = {tuple(image_shape)!r} needs {per_image} values per image, but 'X' of shape "
                f"{X.shape} has {X.size // X.shape[0]}"
            )
        X = X.reshape((X.shape[0],) + shape)
    if X.ndim == 3:  # [n, h, w]
        X = X[:, None]
    if X.ndim != 4:
        raise ValueError(f"param 'X' must be [n, h, w] or [n, c, h, w] (or pass image_shape), got shape {X.shape}")
    if not _np.all(_np.isfinite(X)):
        raise ValueError("param 'X' contains NaN or infinity")
    return _np.ascontiguousarray(X)


def _as_labels(y: _t.Any, n: int) -> _np.ndarray:
    """``y`` as int32 class labels, checked before the conversion so that nothing wraps or rounds."""
    ya = _np.asarray(y)
    if ya.ndim != 1 or ya.shape[0] != n:
        raise ValueError(f"param 'y' must be 1-D with {n} labels, got shape {ya.shape}")
    if ya.dtype.kind not in "iuf":
        raise TypeError(f"param 'y' must hold integer class labels, got dtype {ya.dtype} (y[0] = {ya[0].item()!r})")
    if ya.dtype.kind == "f":
        with _np.errstate(invalid="ignore"):  # mod of inf / NaN, flagged by isfinite anyway
            bad = _np.flatnonzero(~_np.isfinite(ya) | (_np.mod(ya, 1) != 0))
        if bad.size:
            raise TypeError(f"param 'y' must hold integer class labels, got y[{bad[0]}] = {ya[bad[0]].item()!r}")
    low = _np.flatnonzero(ya < 0)
    if low.size:
        raise ValueError(f"param 'y' has a negative label y[{low[0]}] = {ya[low[0]].item()!r}")
    high = _np.flatnonzero(ya > _MAX_LABEL)
    if high.size:
        raise ValueError(f"param 'y' label y[{high[0]}] = {ya[high[0]].item()!r} is larger than {_MAX_LABEL}")
    return _np.ascontiguousarray(ya.astype(_np.int32))


@_dataclass
class SearchResult:
    """Outcome of :meth:`DARTS.search`."""

    genotype: _t.Any
    history: _t.List[_t.Dict[str, _t.Any]]
    best_val_acc: float
    ops: _t.List[str]
    seconds: float
    device: str
    alphas: _np.ndarray = _field(repr=False)  # raw alpha logits [2, edges, ops]

    @property
    def val_acc(self) -> float:
        return float(self.history[-1]["val_acc"]) if self.history else float("nan")

    def alpha_history(self, cell: str = "normal") -> _np.ndarray:
        """softmax(alpha) per epoch: [epochs, edges, ops]."""
        if cell not in ("normal", "reduce"):
            raise ValueError(f"param 'cell' = {cell!r} must be 'normal' or 'reduce'")
        return _np.stack([h[f"alpha_{cell}"] for h in self.history])

    def plot(self, **kw: _t.Any):
        return plot_alphas(self, **kw)


class DARTS:
    """DARTS search on image arrays. Defaults follow DARTS' CIFAR-10 search (and Katib's DARTS trial);
    for small images pick fewer ``layers`` / ``channels``.

    Example::

        res = kt.nas.DARTS(layers=3, channels=8).search(X, y, epochs=5, device="cpu", progress=True)

    ``n_threads`` (0: the calling thread's :func:`set_n_threads` setting, by default all cores) applies to this
    search only; ``threads`` is its deprecated alias.
        print(res.genotype.to_katib_string())
    """

    @_renamed_keywords("DARTS", threads="n_threads")
    def __init__(
        self,
        *,
        channels: int = 16,
        layers: int = 8,
        nodes: int = 4,
        multiplier: _t.Optional[int] = None,
        stem_multiplier: int = 3,
        ops: _t.Optional[_t.Sequence[_t.Union[str, _t.Mapping[str, _t.Any]]]] = None,
        batch_size: int = 64,
        w_lr: float = 0.025,
        w_lr_min: float = 0.001,
        w_momentum: float = 0.9,
        w_weight_decay: float = 3e-4,
        w_grad_clip: float = 5.0,
        alpha_lr: float = 3e-4,
        alpha_weight_decay: float = 1e-3,
        alpha_betas: _t.Tuple[float, float] = (0.5, 0.999),
        second_order: bool = False,
        hvp_r: float = 0.01,
        train_portion: float = 0.5,
        num_classes: _t.Optional[int] = None,
        seed: int = 0,
        n_threads: int = 0,
    ) -> None:
        if ops is None:
            op_names = darts_ops()
        elif len(ops) and isinstance(ops[0], _t.Mapping):
            op_names = katib_operations_to_ops(ops)  # type: ignore[arg-type]
        else:
            op_names = [str(o) for o in ops]
        self.settings: _t.Dict[str, _t.Any] = dict(
            channels=channels,
            layers=layers,
            nodes=nodes,
            multiplier=nodes if multiplier is None else multiplier,
            stem_multiplier=stem_multiplier,
            ops=op_names,
            batch_size=batch_size,
            w_lr=w_lr,
            w_lr_min=w_lr_min,
            w_momentum=w_momentum,
            w_weight_decay=w_weight_decay,
            w_grad_clip=w_grad_clip,
            alpha_lr=alpha_lr,
            alpha_weight_decay=alpha_weight_decay,
            alpha_beta1=float(alpha_betas[0]),
            alpha_beta2=float(alpha_betas[1]),
            second_order=bool(second_order),
            hvp_r=hvp_r,
            train_portion=train_portion,
            seed=int(seed),
            n_threads=int(n_threads),
        )
        self.num_classes = num_classes
        self.engine: _t.Optional[_t.Any] = None

    def search(
        self,
        X: _t.Any,
        y: _t.Any,
        *,
        epochs: int = 50,
        device: str = "cpu",
        progress: bool = False,
        callback: _t.Optional[_t.Callable[[_t.Dict[str, _t.Any]], _t.Optional[bool]]] = None,
        image_shape: _t.Optional[_t.Tuple[int, ...]] = None,
    ) -> SearchResult:
        """Search on images ``X`` ([n, h, w] / [n, c, h, w], or flat rows with ``image_shape``) and integer
        labels ``y`` (integers, or floats with integral values, in [0, 2**31 - 2]); bad arguments raise
        ValueError / TypeError naming them before the engine starts. ``callback(epoch_stats)`` may return False to stop early. ``progress`` shows a tqdm bar."""
        epochs = _int_arg("epochs", epochs, 1)
        Xi = _as_images(X, image_shape)
        ya = _as_labels(y, Xi.shape[0])
        classes = int(self.num_classes or int(ya.max()) + 1)
        dev = str(device).lower()
        if dev not in ("cpu", "cuda", "gpu"):
            raise ValueError(f"param 'device' = {device!r} must be 'cpu' or 'cuda'")
        self.engine = DartsEngine(dev, in_channels=int(Xi.shape[1]), num_classes=max(classes, 2), **self.settings)
        bar = None
        on_step = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=0, desc="DARTS", unit="step")

            def on_step(i: int, total: int) -> None:
                if bar.total != total:
                    bar.total = total
                bar.update(1)

        def on_epoch(st: _t.Dict[str, _t.Any]) -> bool:
            if bar is not None:
                bar.set_postfix(epoch=st["epoch"] + 1, val_acc=f"{st['val_acc']:.3f}", loss=f"{st['train_loss']:.3f}")
            if callback is not None:
                r = callback(st)
                return True if r is None else bool(r)
            return True

        t0 = _time.perf_counter()
        try:
            out = self.engine.search(Xi, ya, int(epochs), on_epoch, on_step)
        finally:
            if bar is not None:
                bar.close()
        return SearchResult(
            genotype=out["genotype"],
            history=list(out["history"]),
            best_val_acc=float(out["best_val_acc"]),
            ops=list(self.settings["ops"]),
            seconds=_time.perf_counter() - t0,
            device=dev,
            alphas=_np.array(self.engine.alphas),
        )


def plot_alphas(result: SearchResult, *, ax: _t.Any = None, per_edge: bool = False):
    """Architecture weights over epochs: softmax(alpha) averaged over a cell's edges, one line per op, for
    the normal and the reduction cell (or, with ``per_edge``, one panel per edge of the normal cell).
    Returns the matplotlib Figure: a new one made without pyplot, or the figure of ``ax`` (the backend and
    pyplot's figures are left alone)."""
    from matplotlib.figure import Figure

    if not result.history:
        raise ValueError("param 'result' has no epochs to plot")
    epochs = _np.arange(1, len(result.history) + 1)
    if per_edge:
        a = result.alpha_history("normal")
        E = a.shape[1]
        cols = min(E, 5)
        rows = (E + cols - 1) // cols
        fig = Figure(figsize=(3 * cols, 2.4 * rows))
        axes = fig.subplots(rows, cols, squeeze=False, sharey=True)
        for e in range(rows * cols):
            axx = axes[e // cols][e % cols]
            if e >= E:
                axx.axis("off")
                continue
            for k, name in enumerate(result.ops):
                axx.plot(epochs, a[:, e, k], label=name)
            axx.set_title(f"edge {e}", fontsize=8)
        axes[0][0].legend(fontsize=6)
        fig.suptitle("DARTS normal-cell weights per edge")
        fig.tight_layout()
        return fig
    if ax is None:
        fig = Figure(figsize=(10, 3.6))
        axes = fig.subplots(1, 2, sharey=True)
    else:
        axes = ax if isinstance(ax, (list, tuple, _np.ndarray)) else [ax]
        fig = axes[0].figure
    for axx, cell in zip(axes, ("normal", "reduce")):
        a = result.alpha_history(cell).mean(axis=1)
        for k, name in enumerate(result.ops):
            axx.plot(epochs, a[:, k], marker="o", ms=3, label=name)
        axx.set_title(f"{cell} cell: mean softmax(alpha)")
        axx.set_xlabel("epoch")
    axes[0].set_ylabel("weight")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------------------ data
def standardize(X: _t.Any) -> _np.ndarray:
    """Per-channel standardisation (zero mean, unit variance) of images ``X`` [n, c, h, w]; returns a float32 copy."""
    return _native_call("standardize")(_np.ascontiguousarray(X, dtype=_np.float32))


def _native_call(name: str) -> _t.Callable[..., _t.Any]:
    return getattr(_native, name, _missing)


def load_digits(*, standardize: bool = True) -> _t.Tuple[_np.ndarray, _np.ndarray]:
    """scikit-learn's 8x8 digits as (X [1797, 1, 8, 8] float32, y int32); standardised by default."""
    from sklearn.datasets import load_digits as _ld

    d = _ld()
    X = _np.ascontiguousarray((d.images.astype(_np.float32) / 16.0)[:, None])
    if standardize:
        X = _native_call("standardize")(X)
    return X, d.target.astype(_np.int32)


def _directory(directory: _t.Any) -> str:
    return "" if directory is None else _os.fspath(directory)


def fashion_mnist_available(directory: _t.Any = None, train: bool = True) -> bool:
    """True when :func:`fashion_mnist_dir` (``directory``, else ``$KUBETUNE_SHARED_DATA/fashion-mnist``, else
    Debian's ``/usr/share/datasets/fashion-mnist``) holds both files of the split, plain or ``.gz``."""
    return bool(_native_call("fashion_mnist_available")(_directory(directory), bool(train)))


def load_fashion_mnist(
    directory: _t.Any = None, *, train: bool = True, limit: _t.Optional[int] = None, standardize: bool = True
) -> _t.Tuple[_np.ndarray, _np.ndarray]:
    """Fashion-MNIST (Xiao, Rasul & Vollgraf 2017) as (X [n, 1, 28, 28] float32, y int32), read by the C++ loader
    from :func:`fashion_mnist_dir` (Debian's ``dataset-fashion-mnist`` layout, .gz or raw); at most ``limit``
    samples (None or 0: all). FileNotFoundError when the files are absent, OSError naming the file and field when
    one is malformed."""
    if limit is not None and (not isinstance(limit, _numbers.Integral) or isinstance(limit, bool)):
        raise TypeError(f"param 'limit' = {limit!r} must be an int or None")
    return _native_call("load_fashion_mnist")(
        _directory(directory), bool(train), 0 if limit is None else int(limit), bool(standardize)
    )
