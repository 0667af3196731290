"""kubetune.sched: GPU-sharing allocator (gpushare best-fit, spread, FGD, kubetune), MIG, NVLink, gangs,
a Kubernetes scheduler-extender HTTP server and the Alibaba-trace replay of the FGD paper.

All placement logic lives in C++ (``kubetune._kubetune.sched``); this package re-exports it and adds the owner of
the C++ extender HTTP server, trace helpers and plots. ``kubetune.sched.kube`` connects the extender to a
Kubernetes API server (the ``kubetune-extender`` command).

Data location: the trace readers take their folder as an argument; without one they read
``$KUBETUNE_SHARED_DATA`` (the folder holding ``alibaba-gpu-2023/``). The package never looks outside itself.
"""
from __future__ import annotations

import json as _json
import os as _os
import statistics as _statistics
import threading as _threading
import typing as _typing
from pathlib import Path as _Path

from .._deprecation import renamed_keywords as _renamed_keywords
from .._kubetune import sched as _native
from .._kubetune.sched import (  # the C++ side, re-exported explicitly so type checkers see it
    Allocator as Allocator,
    Cluster as Cluster,
    Extender as Extender,
    ExtenderHttpServer as ExtenderHttpServer,
    GPU_MEM_RESOURCE as GPU_MEM_RESOURCE,
    KubeWriter as KubeWriter,
    Request as Request,
    Snapshot as Snapshot,
    gpushare_allocate_json as gpushare_allocate_json,
    load_trace_cluster as load_trace_cluster,
    load_trace_pods as load_trace_pods,
    mig_feasible_starts as mig_feasible_starts,
    mig_models as mig_models,
    mig_profile as mig_profile,
    policy_names as policy_names,
    replay as replay,
    synthetic_trace as synthetic_trace,
)

if _typing.TYPE_CHECKING:
    from typing import Dict, Iterable, List, Optional, Sequence, Tuple

del annotations  # the future flag stays in effect; the name would be a stray module attribute

__all__ = [
    "Allocator",
    "Cluster",
    "Extender",
    "ExtenderHttpServer",
    "GPU_MEM_RESOURCE",
    "KubeWriter",
    "Request",
    "Snapshot",
    "gpushare_allocate_json",
    "load_trace_cluster",
    "load_trace_pods",
    "mig_feasible_starts",
    "mig_models",
    "mig_profile",
    "policy_names",
    "replay",
    "synthetic_trace",
    "ExtenderServer",
    "SHARED_DATA_ENV",
    "TRACE_VARIANTS",
    "device_plugin_allocate",
    "shared_data_dir",
    "trace_dir",
    "load_trace",
    "replay_seeds",
    "plot_replay",
]

#: The ``openb_pod_list_<variant>.csv`` files of the Alibaba GPU trace 2023.
TRACE_VARIANTS = ("default", "gpushare40", "gpushare80", "multigpu50", "gpuspec25")
#: Environment variable naming the shared data folder (the one holding ``alibaba-gpu-2023/``).
SHARED_DATA_ENV = "KUBETUNE_SHARED_DATA"
_TRACE_FOLDER = "alibaba-gpu-2023"
_NODE_LIST = "openb_node_list_gpu_node.csv"


# ---------------------------------------------------------------- data location
def shared_data_dir(data_dir: Optional[_os.PathLike] = None) -> Optional[_Path]:
    """The shared data folder: ``data_dir`` when given, else ``$KUBETUNE_SHARED_DATA``; None when that is unset
    or not an existing folder. Nothing is guessed from where the package is installed."""
    where = _os.environ.get(SHARED_DATA_ENV) if data_dir is None else data_dir
    if not where:
        return None
    p = _Path(where)
    return p if p.is_dir() else None


def trace_dir(data_dir: Optional[_os.PathLike] = None) -> Optional[_Path]:
    """Folder of the Alibaba GPU trace 2023 (openb CSVs) inside the shared data folder (``data_dir``, else
    ``$KUBETUNE_SHARED_DATA``), or None when it is not there."""
    d = shared_data_dir(data_dir)
    if d is None:
        return None
    t = d / _TRACE_FOLDER
    return t if (t / _NODE_LIST).is_file() else None


def _trace_not_found() -> FileNotFoundError:
    env = _os.environ.get(SHARED_DATA_ENV)
    where = (f"${SHARED_DATA_ENV} is not set" if not env
             else f"${SHARED_DATA_ENV}={env!r} has no {_TRACE_FOLDER}/{_NODE_LIST}")
    return FileNotFoundError(f"Alibaba GPU trace not found ({where}): pass directory= (the {_TRACE_FOLDER} "
                             f"folder) or set {SHARED_DATA_ENV} to the folder that holds {_TRACE_FOLDER}/")


def load_trace(variant: str = "default", directory: Optional[_os.PathLike] = None) -> Tuple["Cluster", List["Request"]]:
    """(Cluster of the 1,213 GPU nodes, pods of ``openb_pod_list_<variant>.csv``).

    ``directory``: the ``alibaba-gpu-2023`` folder; without it, ``trace_dir()`` (from ``$KUBETUNE_SHARED_DATA``).
    FileNotFoundError naming what was looked for when the trace or the variant is absent.
    """
    d = _Path(directory) if directory is not None else trace_dir()
    if d is None:
        raise _trace_not_found()
    pods = d / f"openb_pod_list_{variant}.csv"
    if not pods.is_file():
        raise FileNotFoundError(f"trace variant {variant!r} not found: {pods}")
    return _native.load_trace_cluster(str(d / "openb_node_list_gpu_node.csv")), _native.load_trace_pods(str(pods))


def replay_seeds(
    cluster: "Cluster",
    pods: Sequence["Request"],
    policies: Iterable[str] = ("best_fit", "fgd", "kubetune"),
    seeds: Iterable[int] = range(42, 52),
    **kwargs,
) -> Dict[str, dict]:
    """Replays every policy for every seed; returns {policy: {"runs": [...], "median_unallocated_pct": x}}."""
    out: Dict[str, dict] = {}
    seeds = list(seeds)
    for pol in policies:
        runs = [_native.replay(cluster, list(pods), pol, seed=s, **kwargs) for s in seeds]
        out[pol] = {
            "runs": runs,
            "median_unallocated_pct": _statistics.median(r["at_100"]["unallocated_pct"] for r in runs),
            "median_frag_ratio_pct": _statistics.median(r["at_100"]["frag_ratio_pct"] for r in runs),
        }
    return out


def plot_replay(results: Dict[str, dict], path: Optional[_os.PathLike] = None):
    """Allocation rate and fragmentation ratio against arrived workload, one line per policy (first run of each).

    ``results`` maps a policy name to a replay dict (``sched.replay``) or to ``replay_seeds`` output.
    Returns a matplotlib Figure made without pyplot (the backend and pyplot's figures are left alone; a notebook
    shows the returned Figure); saves it when ``path`` is given.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    ax1, ax2 = fig.subplots(1, 2)
    for pol, res in results.items():
        run = res["runs"][0] if "runs" in res else res
        xs = [p["arrived_pct"] for p in run["curve"]]
        ax1.plot(xs, [p["allocated_pct"] for p in run["curve"]], label=pol)
        ax2.plot(xs, [p["frag_ratio_pct"] for p in run["curve"]], label=pol)
    ax1.plot([0, 130], [0, 130], color="grey", lw=0.5, ls=":")
    ax1.set_xlabel("arrived GPU workload (% of capacity)")
    ax1.set_ylabel("allocated GPU (% of capacity)")
    ax1.set_xlim(0, 130)
    ax1.set_ylim(0, 105)
    ax2.set_xlabel("arrived GPU workload (% of capacity)")
    ax2.set_ylabel("fragmentation / free GPU (%)")
    ax1.legend()
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig


# ---------------------------------------------------------------- device plugin
def device_plugin_allocate(
    container_requests: Sequence[object],
    pods: Sequence[dict],
    devices: Sequence[dict],
    gpu_memory_per_device: int,
    memory_unit: str = "GiB",
    disable_cgpu_isolation: bool = False,
    now_ns: int = 0,
) -> dict:
    """gpushare device plugin's Allocate decision (decided in C++, ``gpushare_allocate_json``).

    ``container_requests``: per container, the units asked (int) or kubelet's fake device IDs (list of str).
    ``pods``: the node's pending pods, v1.Pod dicts or ``{"name", "namespace", "uid", "annotations", "gpu_mem"}``.
    ``devices``: ``[{"uuid": ..., "index": ...}]``. Returns ``{"ok", "path", "error", "pod_index", "pod",
    "gpu_index", "device_uuid", "pod_request", "container_envs", "pod_patch"}``; a gpushare refusal is
    ``ok=False`` with gpushare's error environment, malformed input raises ValueError naming the field.
    """
    request = {
        "container_requests": list(container_requests),
        "pods": list(pods),
        "devices": list(devices),
        "gpu_memory_per_device": gpu_memory_per_device,
        "memory_unit": memory_unit,
        "disable_cgpu_isolation": disable_cgpu_isolation,
        "now_ns": now_ns,
    }
    return _json.loads(_native.gpushare_allocate_json(_json.dumps(request)))


# ---------------------------------------------------------------- scheduler-extender HTTP server
class ExtenderServer:
    """Serves the Kubernetes scheduler-extender protocol over HTTP: a thin owner of the C++
    ``ExtenderHttpServer`` (Boost.Beast, keep-alive, its own threads; the extender runs without the GIL).

    Routes: POST ``<prefix>/{filter,prioritize,bind,preempt,release}`` (and the bare ``/<verb>``) with the JSON
    bodies kube-scheduler sends; GET ``/healthz``, ``/readyz`` (503 until the extender's first sync) and
    ``/metrics`` (Prometheus text). The default prefix matches gpushare's ``/gpushare-scheduler``. Binds to
    ``127.0.0.1`` unless told otherwise; ``port=0`` picks a free port (``address`` tells which). ``n_threads``:
    the server's threads (``threads`` is its deprecated alias, removed in the next release).
    """

    @_renamed_keywords("ExtenderServer", threads="n_threads")
    def __init__(self, extender: "Extender", host: str = "127.0.0.1", port: int = 0,
                 prefix: str = "/gpushare-scheduler", *, n_threads: int = 2, max_body_bytes: int = 64 << 20,
                 max_header_bytes: int = 16 << 10, read_timeout_s: float = 10.0, idle_timeout_s: float = 90.0,
                 max_connections: int = 1024) -> None:
        self.extender = extender
        self.host = host
        self.prefix = prefix.rstrip("/")
        self._server = _native.ExtenderHttpServer(
            extender, host=host, port=port, n_threads=n_threads, prefix=self.prefix, max_body_bytes=max_body_bytes,
            max_header_bytes=max_header_bytes, read_timeout_s=read_timeout_s, idle_timeout_s=idle_timeout_s,
            max_connections=max_connections)
        self._stopped = _threading.Event()

    @property
    def address(self) -> Tuple[str, int]:
        """(host, port) actually bound (the port is known once started)."""
        return self.host, self._server.port

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}{self.prefix}"

    @property
    def running(self) -> bool:
        return self._server.running

    def start(self) -> "ExtenderServer":
        """Listens and serves on the server's own threads; returns self."""
        self._stopped.clear()
        self._server.start()
        return self

    def serve_forever(self) -> None:
        """Serves (starting if needed) until stop() from another thread or KeyboardInterrupt, then stops."""
        if not self.running:
            self.start()
        try:
            while not self._stopped.wait(0.5):  # short waits keep Ctrl-C responsive
                pass
        finally:
            self.stop()

    def stop(self) -> None:
        self._stopped.set()
        self._server.stop()

    def __enter__(self) -> "ExtenderServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

