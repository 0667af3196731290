"""The GPU scheduler extender's Kubernetes side (official ``kubernetes`` client): the ``KubeWriter`` that bind
writes through, ``ClusterSync`` (list + watch of nodes and pods feeding the extender's state) and the
``kubetune-extender`` command.

Every decision stays in the C++ extender; this module only moves JSON between it and the API server. Objects are
passed on as the API server's raw JSON (``_preload_content=False``, watch events as dicts): the client's models are
never built, which saves their cost and sidesteps the client's failing deserialisation of a Binding reply.
"""
from __future__ import annotations

import argparse as _argparse
import contextlib as _contextlib
import functools as _functools
import json as _json
import logging as _logging
import math as _math
import socket as _socket
import sys as _sys
import threading as _threading
import time as _time
import typing as _typing

import urllib3 as _urllib3
from kubernetes import client as _kclient
from kubernetes import config as _kconfig
from kubernetes import watch as _kwatch
from kubernetes.client.exceptions import ApiException as _ApiException

from .. import _kubetune
from .._cli import LOG_LEVELS as _LOG_LEVELS
from .._cli import StopSignal as _StopSignal
from .._cli import setup_logging as _setup_logging
from . import ExtenderServer as _ExtenderServer

if _typing.TYPE_CHECKING:
    from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

del annotations  # the future flag stays in effect; the name would be a stray module attribute

_native = _kubetune.sched
_log = _logging.getLogger("kubetune.sched.kube")

__all__ = ["DEFAULT_REQUEST_TIMEOUT", "KubeApiError", "KubeWriter", "ClusterSync", "main"]

# (connect, read) seconds for the one-shot calls; a watch's read timeout is its timeoutSeconds plus _WATCH_GRACE_S.
DEFAULT_REQUEST_TIMEOUT = (5.0, 60.0)
_WATCH_GRACE_S = 5.0
_NO_ANSWER = (_ApiException, _urllib3.exceptions.HTTPError, OSError)
_MEANING = {
    0: "no answer from the API server",
    404: "HTTP 404 not found",
    409: "HTTP 409 conflict (pod already bound, or replaced: uid precondition failed)",
    410: "HTTP 410 gone",
}


# ---------------------------------------------------------------- errors
class KubeApiError(RuntimeError):
    """A Kubernetes API call failed. ``call``: what was done; ``pod``: ``namespace/name`` (or the resource);
    ``status``: the HTTP status (0: no answer)."""

    def __init__(self, call: str, pod: str, status: int, detail: str) -> None:
        self.call, self.pod, self.status = call, pod, status
        meaning = _MEANING.get(status, f"HTTP {status}")
        super().__init__(f"{call} {pod}: {meaning}: {detail}")


def _detail(exc: BaseException) -> str:
    """The API server's Status message when there is one, else the exception's own text."""
    if isinstance(exc, _ApiException):
        try:
            return _json.loads(exc.body or "")["message"]
        except (TypeError, ValueError, KeyError):
            return str(exc.reason)
    return f"{type(exc).__name__}: {exc}"


@_contextlib.contextmanager
def _calling(call: str, what: str) -> Iterator[None]:
    """Maps client failures of one call to KubeApiError naming the call, the object and the status."""
    try:
        yield
    except _NO_ANSWER as exc:
        status = (exc.status or 0) if isinstance(exc, _ApiException) else 0
        raise KubeApiError(call, what, status, _detail(exc)) from exc


def _body(resp: Any) -> str:
    """Reads a raw (``_preload_content=False``) response fully and hands its connection back to the pool."""
    try:
        return resp.data.decode("utf-8")
    finally:
        resp.release_conn()


# ---------------------------------------------------------------- bind writes
class KubeWriter(_native.KubeWriter):
    """The extender's API writes over ``CoreV1Api``; called from the C++ server threads (which take the GIL).

    Every method raises KubeApiError on failure; the extender then rolls the bind back and answers the error.
    """

    def __init__(self, core_v1_api: _kclient.CoreV1Api,
                 request_timeout: Tuple[float, float] = DEFAULT_REQUEST_TIMEOUT) -> None:
        super().__init__()
        self._api = core_v1_api
        self._timeout = request_timeout

    def get_pod(self, ns: str, name: str) -> str:
        with _calling("get pod", f"{ns}/{name}"):
            return _body(self._api.read_namespaced_pod(name, ns, _preload_content=False,
                                                       _request_timeout=self._timeout))

    def patch_pod_annotations(self, ns: str, name: str, uid: str, annotations: Mapping[str, str]) -> None:
        metadata: Dict[str, Any] = {"annotations": dict(annotations)}
        if uid:  # the API server treats a uid in a patch as a precondition (409 when the pod was replaced)
            metadata["uid"] = uid
        with _calling("patch pod annotations", f"{ns}/{name}"):
            _body(self._api.patch_namespaced_pod(name, ns, {"metadata": metadata}, _preload_content=False,
                                                 _request_timeout=self._timeout))

    def create_binding(self, ns: str, name: str, uid: str, node: str) -> None:
        binding = _kclient.V1Binding(
            metadata=_kclient.V1ObjectMeta(name=name, uid=uid or None),  # uid: precondition again
            target=_kclient.V1ObjectReference(api_version="v1", kind="Node", name=node))
        with _calling("create binding", f"{ns}/{name} to node {node}"):
            _body(self._api.create_namespaced_pod_binding(name, ns, binding, _preload_content=False,
                                                          _request_timeout=self._timeout))


# ---------------------------------------------------------------- list + watch
def _interrupt(resp: Any) -> None:
    """Ends a read blocked on a watch stream now (its reader sees the stream end)."""
    sock = getattr(getattr(resp, "connection", None), "sock", None)
    if sock is not None:
        with _contextlib.suppress(OSError):
            sock.shutdown(_socket.SHUT_RDWR)


def _is_gone(exc: BaseException) -> bool:
    """410 Gone: the watch's resourceVersion is compacted away (an HTTP 410 or an ERROR event with code 410,
    which the client raises as ApiException(410))."""
    return isinstance(exc, _ApiException) and exc.status == 410


class ClusterSync:
    """Keeps an Extender's cluster state in step with the API server.

    ``start()`` runs two daemon threads (``kt-sync-node``, ``kt-sync-pod``). The first to run lists pods, then nodes
    (that order: a pod bound between the two lists arrives by the pod watch), and calls ``extender.sync``; ``synced``
    is set then. Each thread then watches its kind from the list's resourceVersion and forwards every event to
    ``extender.node_event`` / ``pod_event``, tracking the last resourceVersion (BOOKMARK events included). A watch
    ending by its ``watch_timeout_s`` re-watches from there; 410 Gone (a watch gap) relists both kinds and syncs
    again (``resyncs`` counts every sync after the first); other failures back off exponentially within
    ``backoff_s`` and re-watch. ``resync_period_s > 0`` also relists that often (off by default). ``stop()`` ends
    both threads within about a second: their open streams are shut down.
    """

    KINDS = ("node", "pod")

    def __init__(self, extender: Any, core_v1_api: _kclient.CoreV1Api, *, watch_timeout_s: int = 30,
                 backoff_s: Tuple[float, float] = (0.2, 5.0), resync_period_s: float = 0.0,
                 request_timeout: Tuple[float, float] = DEFAULT_REQUEST_TIMEOUT) -> None:
        if not (isinstance(watch_timeout_s, int) and watch_timeout_s >= 1):
            raise ValueError(f"watch_timeout_s must be a whole number of seconds >= 1, got {watch_timeout_s!r}")
        if not (len(backoff_s) == 2 and 0 < backoff_s[0] <= backoff_s[1]):
            raise ValueError(f"backoff_s must be (first, most) with 0 < first <= most, got {backoff_s!r}")
        if not resync_period_s >= 0:
            raise ValueError(f"resync_period_s must be >= 0 (0: off), got {resync_period_s!r}")
        self._extender = extender
        self._api = core_v1_api
        self._watch_timeout_s = watch_timeout_s
        self._backoff_s = backoff_s
        self._resync_period_s = resync_period_s
        self._request_timeout = request_timeout
        self._forward = {"node": extender.node_event, "pod": extender.pod_event}
        self._list = {"node": core_v1_api.list_node, "pod": core_v1_api.list_pod_for_all_namespaces}
        self.synced = _threading.Event()
        self.resyncs = 0
        self.event_errors = 0  # events the extender refused (logged, skipped)
        self.last_error: Optional[BaseException] = None
        self._stop = _threading.Event()
        self._relist_lock = _threading.Lock()  # one relist at a time
        self._lock = _threading.Lock()  # the fields below, and event order against a relist
        self._stale = True  # a relist is due
        self._gen = 0  # bumped by every relist: watches of an older generation are superseded
        self._rv: Dict[str, Optional[str]] = dict.fromkeys(self.KINDS)
        self._streams: Dict[str, Any] = {}  # kind -> open watch response
        self._last_sync = 0.0
        self._threads: List[_threading.Thread] = []

    # ------------------------------------------------------------ lifecycle
    def start(self, timeout_s: Optional[float] = None) -> "ClusterSync":
        """Starts the threads; with ``timeout_s``, waits that long for the first sync (TimeoutError otherwise,
        naming the last failure)."""
        if self._threads:
            raise RuntimeError("ClusterSync already started")
        self._stop.clear()
        self._threads = [_threading.Thread(target=self._run, args=(kind,), name=f"kt-sync-{kind}", daemon=True)
                         for kind in self.KINDS]
        for t in self._threads:
            t.start()
        if timeout_s is not None and not self.synced.wait(timeout_s):
            raise TimeoutError(f"no sync with the API server within {timeout_s} s (last error: {self.last_error})")
        return self

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        with self._lock:
            for resp in self._streams.values():
                _interrupt(resp)
        for t in self._threads:
            t.join(timeout_s)
        self._threads = []

    def __enter__(self) -> "ClusterSync":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------ one thread per kind
    def _run(self, kind: str) -> None:
        watcher = _kwatch.Watch(return_type="object")  # events stay dicts: the extender parses the JSON itself
        failures = 0
        while not self._stop.is_set():
            with self._lock:
                due = self._resync_period_s and _time.monotonic() - self._last_sync >= self._resync_period_s
                self._stale = self._stale or bool(due)
                gen, rv, stale = self._gen, self._rv[kind], self._stale
            try:
                if stale:
                    self._relist()
                else:
                    self._watch(watcher, kind, gen, rv)
                failures = 0
            except Exception as exc:  # noqa: BLE001 - a watcher thread must survive any failure
                if self._stop.is_set():
                    return
                with self._lock:
                    if gen != self._gen:  # interrupted by another thread's relist: watch the new generation
                        continue
                    if _is_gone(exc):
                        _log.info("%s watch from resourceVersion %s: gone (compacted); relisting", kind, rv)
                        self._stale = True
                        continue
                failures += 1
                self.last_error = exc
                delay = min(self._backoff_s[1], self._backoff_s[0] * 2 ** (failures - 1))
                _log.warning("%s %s failed (%s); retrying in %.1f s", kind, "list" if stale else "watch", exc, delay)
                self._stop.wait(delay)

    def _relist(self) -> None:
        with self._relist_lock:
            with self._lock:
                if not self._stale:  # the other thread relisted meanwhile
                    return
            lists = {kind: self._list_text(kind) for kind in ("pod", "node")}  # pods first (see the class doc)
            rvs = {kind: _json.loads(text)["metadata"]["resourceVersion"] for kind, text in lists.items()}
            with self._lock:
                if self._stop.is_set():
                    return
                self._extender.sync(lists["node"], lists["pod"])
                self._rv.update(rvs)
                self._gen += 1
                self._stale = False
                self._last_sync = _time.monotonic()
                for resp in self._streams.values():  # watches of the old generation end now
                    _interrupt(resp)
                if self.synced.is_set():
                    self.resyncs += 1
                self.synced.set()
            _log.info("synced with the API server (nodes at resourceVersion %s, pods at %s)", rvs["node"], rvs["pod"])

    def _list_text(self, kind: str) -> str:
        with _calling("list", f"{kind}s"):
            return _body(self._list[kind](_preload_content=False, _request_timeout=self._request_timeout))

    def _watch_seconds(self) -> int:
        """The watch's timeoutSeconds: watch_timeout_s, shortened to end by the next periodic resync."""
        if not self._resync_period_s:
            return self._watch_timeout_s
        left = self._resync_period_s - (_time.monotonic() - self._last_sync)
        return max(1, min(self._watch_timeout_s, _math.ceil(left)))

    def _watch(self, watcher: _kwatch.Watch, kind: str, gen: int, rv: Optional[str]) -> None:
        seconds = self._watch_seconds()
        stream = watcher.stream(self._opener(kind, gen), resource_version=rv, timeout_seconds=seconds,
                                allow_watch_bookmarks=True,
                                _request_timeout=(self._request_timeout[0], seconds + _WATCH_GRACE_S))
        try:
            for event in stream:
                obj = event["raw_object"]
                with self._lock:
                    if gen != self._gen or self._stop.is_set():
                        return
                    if event["type"] != "BOOKMARK":
                        self._deliver(kind, event["type"], obj)
                    self._rv[kind] = (obj.get("metadata") or {}).get("resourceVersion") or self._rv[kind]
        finally:
            stream.close()
            with self._lock:
                self._streams.pop(kind, None)

    def _opener(self, kind: str, gen: int):
        """The list call Watch.stream makes, recording the open stream so stop() and relists can end it."""
        fn = self._list[kind]

        @_functools.wraps(fn)
        def open_stream(*args: Any, **kwargs: Any) -> Any:
            resp = fn(*args, **kwargs)
            with self._lock:
                self._streams[kind] = resp
                if gen != self._gen or self._stop.is_set():  # superseded while connecting
                    _interrupt(resp)
            return resp

        return open_stream

    def _deliver(self, kind: str, type_: str, obj: dict) -> None:
        """Caller holds the lock. An event the extender refuses is logged and skipped: the watch goes on."""
        try:
            self._forward[kind](type_, _json.dumps(obj))
        except (ValueError, KeyError, RuntimeError) as exc:
            self.event_errors += 1
            name = (obj.get("metadata") or {}).get("name")
            _log.warning("%s %s event for %r refused by the extender: %s", kind, type_, name, exc)


# ---------------------------------------------------------------- kubetune-extender
def _positive(kind: type):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise _argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value <= 0:
            raise _argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
        return value

    return parse


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise _argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise _argparse.ArgumentTypeError(f"port must be 0..65535 (0 picks one), got {port}")
    return port


def _http_url(text: str) -> str:
    if not text.startswith(("http://", "https://")):
        raise _argparse.ArgumentTypeError(f"expected an http:// or https:// URL, got {text!r}")
    return text.rstrip("/")


def _parser() -> _argparse.ArgumentParser:
    p = _argparse.ArgumentParser(
        prog="kubetune-extender",
        description="kube-scheduler extender for shared GPUs (gpushare-compatible), state kept from the "
                    "Kubernetes API.")
    p.add_argument("--host", default="0.0.0.0", help="address to listen on (default %(default)s)")
    p.add_argument("--port", type=_port, default=12345,
                   help="port (default %(default)s, gpushare-scheduler-extender's; 0 picks one)")
    p.add_argument("--threads", type=_positive(int), default=2, help="HTTP server threads (default %(default)s)")
    p.add_argument("--prefix", default="/gpushare-scheduler", help="URL prefix of the verbs (default %(default)s)")
    # fgd and kubetune score against a typical-workload distribution the command line cannot give yet.
    p.add_argument("--policy", default="best_fit", choices=("best_fit", "gpushare", "binpack", "spread"),
                   help="placement policy (default %(default)s, gpushare's binpack)")
    p.add_argument("--gpu-mem-unit", default="GiB", choices=("GiB", "MiB"),
                   help="unit of aliyun.com/gpu-mem, as the gpushare device plugin reports it (default %(default)s)")
    api = p.add_mutually_exclusive_group()
    api.add_argument("--kubeconfig", metavar="PATH",
                     help="kubeconfig file (default: in-cluster service account, else ~/.kube/config)")
    api.add_argument("--api-server", metavar="URL", type=_http_url,
                     help="API server URL without credentials (kubectl proxy, tests)")
    p.add_argument("--log-level", default="INFO", choices=_LOG_LEVELS,
                   help="stderr log level (default %(default)s)")
    p.add_argument("--max-body-bytes", type=_positive(int), default=64 << 20,
                   help="largest request body accepted (default %(default)s)")
    p.add_argument("--read-timeout", type=_positive(float), default=10.0,
                   help="seconds to receive one request (default %(default)s)")
    p.add_argument("--idle-timeout", type=_positive(float), default=90.0,
                   help="seconds an idle keep-alive connection stays open (default %(default)s)")
    return p


def _kube_configuration(args: _argparse.Namespace) -> _kclient.Configuration:
    cfg = _kclient.Configuration()
    if args.api_server:
        cfg.host = args.api_server
    elif args.kubeconfig:
        _kconfig.load_kube_config(config_file=args.kubeconfig, client_configuration=cfg)
    else:
        try:
            _kconfig.load_incluster_config(client_configuration=cfg)
        except _kconfig.ConfigException:
            _kconfig.load_kube_config(client_configuration=cfg)
    return cfg


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    _setup_logging(args.log_level)
    try:
        cfg = _kube_configuration(args)
        extender = _native.Extender(policy=args.policy, gpu_mem_unit_mib=1024 if args.gpu_mem_unit == "GiB" else 1,
                                    max_body_bytes=args.max_body_bytes)
        server = _ExtenderServer(extender, args.host, args.port, args.prefix, n_threads=args.threads,
                                 max_body_bytes=args.max_body_bytes, read_timeout_s=args.read_timeout,
                                 idle_timeout_s=args.idle_timeout)
    except _kconfig.ConfigException as exc:
        where = f"--kubeconfig {args.kubeconfig}" if args.kubeconfig else "in-cluster, then ~/.kube/config"
        parser.error(f"cannot configure the Kubernetes client ({where}): {exc}")  # exits 2
    except ValueError as exc:  # the C++ side names the option and value
        parser.error(str(exc))
    api = _kclient.CoreV1Api(_kclient.ApiClient(cfg))
    extender.set_writer(KubeWriter(api))
    stop = _StopSignal()
    try:
        server.start()  # liveness at once; /readyz turns 200 after the first sync
    except (OSError, RuntimeError) as exc:
        _log.error("cannot listen on %s:%d: %s", args.host, args.port, exc)
        return 1
    sync = ClusterSync(extender, api).start()
    # Readiness line for wrappers and tests (stdout: the address actually bound).
    print(f"kubetune-extender listening on {server.url} (API server {cfg.host})", flush=True)
    _log.info("signal %d: stopping", stop.wait())
    sync.stop()
    server.stop()
    return 0


if __name__ == "__main__":
    _sys.exit(main())
