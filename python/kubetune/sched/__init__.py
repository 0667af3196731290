"""kubetune.sched: GPU-sharing allocator (gpushare best-fit, spread, FGD, kubetune), MIG, NVLink, gangs,
a Kubernetes scheduler-extender HTTP server and the Alibaba-trace replay of the FGD paper.

All placement logic lives in C++ (``kubetune._kubetune.sched``); this package re-exports it and adds the owner of
the C++ extender HTTP server, trace helpers, plots and the demo section. ``kubetune.sched.kube`` connects the
extender to a Kubernetes API server (the ``kubetune-extender`` command).
"""
from __future__ import annotations

import json
import os
import statistics
import threading
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

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
    "device_plugin_allocate",
    "shared_data_dir",
    "trace_dir",
    "load_trace",
    "replay_seeds",
    "plot_replay",
]

TRACE_VARIANTS = ("default", "gpushare40", "gpushare80", "multigpu50", "gpuspec25")


# ---------------------------------------------------------------- data location
def shared_data_dir() -> Optional[Path]:
    """``../shared/data`` next to the repository root (or ``$KUBETUNE_SHARED_DATA``); None when absent."""
    env = os.environ.get("KUBETUNE_SHARED_DATA")
    if env:
        p = Path(env)
        return p if p.is_dir() else None
    root = Path(__file__).resolve().parents[3]  # python/kubetune/sched/__init__.py -> repository root
    p = root.parent / "shared" / "data"
    return p if p.is_dir() else None


def trace_dir() -> Optional[Path]:
    """Folder of the Alibaba GPU trace 2023 (openb CSVs), or None."""
    d = shared_data_dir()
    if d is None:
        return None
    t = d / "alibaba-gpu-2023"
    return t if (t / "openb_node_list_gpu_node.csv").is_file() else None


def load_trace(variant: str = "default", directory: Optional[os.PathLike] = None) -> Tuple["Cluster", List["Request"]]:
    """(Cluster of the 1,213 GPU nodes, pods of ``openb_pod_list_<variant>.csv``). FileNotFoundError if absent."""
    d = Path(directory) if directory is not None else trace_dir()
    if d is None:
        raise FileNotFoundError("Alibaba GPU trace not found (expected ../shared/data/alibaba-gpu-2023)")
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
            "median_unallocated_pct": statistics.median(r["at_100"]["unallocated_pct"] for r in runs),
            "median_frag_ratio_pct": statistics.median(r["at_100"]["frag_ratio_pct"] for r in runs),
        }
    return out


def plot_replay(results: Dict[str, dict], path: Optional[os.PathLike] = None):
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
    return json.loads(_native.gpushare_allocate_json(json.dumps(request)))


# ---------------------------------------------------------------- scheduler-extender HTTP server
class ExtenderServer:
    """Serves the Kubernetes scheduler-extender protocol over HTTP: a thin owner of the C++
    ``ExtenderHttpServer`` (Boost.Beast, keep-alive, its own threads; the extender runs without the GIL).

    Routes: POST ``<prefix>/{filter,prioritize,bind,preempt,release}`` (and the bare ``/<verb>``) with the JSON
    bodies kube-scheduler sends; GET ``/healthz``, ``/readyz`` (503 until the extender's first sync) and
    ``/metrics`` (Prometheus text). The default prefix matches gpushare's ``/gpushare-scheduler``. Binds to
    ``127.0.0.1`` unless told otherwise; ``port=0`` picks a free port (``address`` tells which).
    """

    def __init__(self, extender: "Extender", host: str = "127.0.0.1", port: int = 0,
                 prefix: str = "/gpushare-scheduler", *, threads: int = 2, max_body_bytes: int = 64 << 20,
                 max_header_bytes: int = 16 << 10, read_timeout_s: float = 10.0, idle_timeout_s: float = 90.0,
                 max_connections: int = 1024) -> None:
        self.extender = extender
        self.host = host
        self.prefix = prefix.rstrip("/")
        self._server = _native.ExtenderHttpServer(
            extender, host=host, port=port, threads=threads, prefix=self.prefix, max_body_bytes=max_body_bytes,
            max_header_bytes=max_header_bytes, read_timeout_s=read_timeout_s, idle_timeout_s=idle_timeout_s,
            max_connections=max_connections)
        self._stopped = threading.Event()

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


# ---------------------------------------------------------------- demo
def _demo(quick: bool = False) -> None:
    """Demo section for ``python -m kubetune.demo``: a short FGD-paper replay, one table."""
    import time

    try:
        cluster, pods = load_trace("default")
        source = "Alibaba openb default trace"
        if quick:  # quick: the FGD-class policies on a seeded synthetic look-alike instead
            raise FileNotFoundError
    except FileNotFoundError:
        cluster, pods = _native.synthetic_trace(300 if quick else 800, 3000 if quick else 6000, 7)
        source = "synthetic trace (seeded)"
    print(f"sched: replay on {source}: {cluster.num_nodes} nodes, {cluster.total_gpus} GPUs, seed 42")
    print(f"  {'policy':<10} {'unallocated@100%':>17} {'frag ratio':>11} {'failed pods':>12} {'time s':>7}")
    for pol in ("best_fit", "fgd", "kubetune"):
        t0 = time.perf_counter()
        r = _native.replay(cluster, list(pods), pol, seed=42, step_pct=5.0)
        dt = time.perf_counter() - t0
        a = r["at_100"]
        print(f"  {pol:<10} {a['unallocated_pct']:>16.2f}% {a['frag_ratio_pct']:>10.1f}% "
              f"{r['pods_failed']:>12d} {dt:>7.2f}")
