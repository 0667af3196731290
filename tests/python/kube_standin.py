"""A stand-in of the few Kubernetes API server endpoints the GPU extender uses, for tests.

No Kubernetes API server is installable here, so this serves them on 127.0.0.1 (``ThreadingHTTPServer``,
HTTP/1.1 keep-alive) and the real ``kubernetes`` client code path (``CoreV1Api`` list, watch, read, patch and
binding calls, ``kubernetes.watch.Watch``) runs against it unchanged. Wire behaviour follows the API server's
documented semantics (https://kubernetes.io/docs/reference/using-api/api-concepts/):

* ``GET /api/v1/nodes`` and ``GET /api/v1/pods``: a List whose ``metadata.resourceVersion`` is the current global
  resourceVersion. With ``watch=true``: newline-delimited ``{"type", "object"}`` events after ``resourceVersion``
  (absent or ``0``: ADDED for every current object first), chunked, ending after ``timeoutSeconds`` (with a
  BOOKMARK first when ``allowWatchBookmarks=true``) or when the stand-in stops. A resourceVersion older than the
  retained history (see ``compact``) gets one ERROR event whose object is a Status with code 410, as the API server
  answers a compacted resourceVersion.
* ``GET|PATCH /api/v1/namespaces/{ns}/pods/{name}``: read, and merge of ``metadata.annotations`` (merge and
  strategic-merge patches are the same for a string map; ``null`` deletes). A ``metadata.uid`` in the patch is a
  precondition: 409 when it is not the pod's.
* ``POST /api/v1/namespaces/{ns}/pods/{name}/binding``: sets ``spec.nodeName`` (404 unknown pod, 409 already bound
  or uid precondition failed; an unknown node still binds, as in Kubernetes).

Test controls: add/modify/delete of nodes and pods (each bumps the global resourceVersion and emits the event),
``pause_watches()`` / ``resume_watches()``, ``compact()`` (a paused watcher then has a gap: 410),
``fail_next(method, path_regex, status, times)`` / ``clear_failures()`` and ``requests`` (what was received, in order).
"""
from __future__ import annotations

import copy
import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

_POD_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)(/binding)?$")
_KIND_LIST = {"/api/v1/nodes": ("node", "NodeList"), "/api/v1/pods": ("pod", "PodList")}


def status_object(code: int, reason: str, message: str) -> dict:
    """A metav1.Status failure, the body of every API server error."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class KubeStandIn:
    """The stand-in server; ``with KubeStandIn() as api: api.url`` (``http://127.0.0.1:<port>``)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._rv = 1
        # per kind (the API server keeps one watch cache per resource): newest resourceVersion compacted away
        self._floors = {"node": 0, "pod": 0}
        self._objects: Dict[str, Dict[str, dict]] = {"node": {}, "pod": {}}
        self._events: List[Tuple[int, str, str, dict]] = []  # (rv, kind, type, object)
        self._failures: List[Tuple[str, re.Pattern, int]] = []
        self._stopping = False
        self._paused = False
        self.requests: List[dict] = []  # {"method", "path", "query", "body", "headers" (lower-case)}, in order
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: Optional[threading.Thread] = None

    # ------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> "KubeStandIn":
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="kube-standin",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()  # open watches end now
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "KubeStandIn":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------ test controls
    def add_node(self, node: dict) -> dict:
        return self._put("node", node, "ADDED")

    def modify_node(self, name: str, mutate: Callable[[dict], None]) -> dict:
        return self._mutate("node", name, mutate)

    def delete_node(self, name: str) -> dict:
        return self._delete("node", name)

    def add_pod(self, pod: dict) -> dict:
        return self._put("pod", pod, "ADDED")

    def modify_pod(self, ns: str, name: str, mutate: Callable[[dict], None]) -> dict:
        return self._mutate("pod", f"{ns}/{name}", mutate)

    def delete_pod(self, ns: str, name: str) -> dict:
        return self._delete("pod", f"{ns}/{name}")

    def pod(self, ns: str, name: str) -> dict:
        with self._cond:
            return copy.deepcopy(self._objects["pod"][f"{ns}/{name}"])

    @property
    def resource_version(self) -> int:
        with self._cond:
            return self._rv

    def compact(self) -> None:
        """Forgets the event history: a watch from an older resourceVersion, and an open watch that has not sent
        everything yet (see ``pause_watches``), get 410 Gone."""
        with self._cond:
            for r, kind, _, _ in self._events:
                self._floors[kind] = max(self._floors[kind], r)
            self._events.clear()
            self._cond.notify_all()

    def pause_watches(self) -> None:
        """Open and new watches send nothing until ``resume_watches`` (a watcher falling behind)."""
        with self._cond:
            self._paused = True

    def resume_watches(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def fail_next(self, method: str, path_regex: str, status: int, times: int = 1) -> None:
        """The next ``times`` requests matching method and path (``re.search``) get ``status`` with a Status body."""
        with self._cond:
            self._failures.extend([(method.upper(), re.compile(path_regex), status)] * times)

    def clear_failures(self) -> None:
        with self._cond:
            self._failures.clear()

    def requests_of(self, method: str, path_regex: str) -> List[dict]:
        pat = re.compile(path_regex)
        with self._cond:
            return [r for r in self.requests if r["method"] == method and pat.search(r["path"])]

    # ------------------------------------------------------------ object store
    @staticmethod
    def _key(kind: str, obj: dict) -> str:
        md = obj["metadata"]
        return md["name"] if kind == "node" else f"{md.get('namespace', 'default')}/{md['name']}"

    def _emit(self, kind: str, type_: str, obj: dict) -> dict:
        """Caller holds the lock: stamps a fresh resourceVersion and records the event."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        self._events.append((self._rv, kind, type_, copy.deepcopy(obj)))
        self._cond.notify_all()
        return copy.deepcopy(obj)

    def _put(self, kind: str, obj: dict, type_: str) -> dict:
        obj = copy.deepcopy(obj)
        md = obj.setdefault("metadata", {})
        md.setdefault("uid", str(uuid.uuid4()))
        if kind == "pod":
            md.setdefault("namespace", "default")
        with self._cond:
            self._objects[kind][self._key(kind, obj)] = obj
            return self._emit(kind, type_, obj)

    def _mutate(self, kind: str, key: str, mutate: Callable[[dict], None]) -> dict:
        with self._cond:
            obj = self._objects[kind][key]
            mutate(obj)
            return self._emit(kind, "MODIFIED", obj)

    def _delete(self, kind: str, key: str) -> dict:
        with self._cond:
            return self._emit(kind, "DELETED", self._objects[kind].pop(key))

    def _list(self, kind: str, list_kind: str) -> dict:
        with self._cond:
            items = [copy.deepcopy(o) for o in self._objects[kind].values()]
            return {"kind": list_kind, "apiVersion": "v1", "metadata": {"resourceVersion": str(self._rv)},
                    "items": items}

    def _take_failure(self, method: str, path: str) -> Optional[int]:
        with self._cond:
            for i, (m, pat, status) in enumerate(self._failures):
                if m == method and pat.search(path):
                    del self._failures[i]
                    return status
        return None

    # ------------------------------------------------------------ pod writes (return (status, body))
    def _patch_pod(self, key: str, patch: dict) -> Tuple[int, dict]:
        with self._cond:
            pod = self._objects["pod"].get(key)
            if pod is None:
                return 404, status_object(404, "NotFound", f'pods "{key.split("/")[1]}" not found')
            md = patch.get("metadata") or {}
            if md.get("uid") and md["uid"] != pod["metadata"]["uid"]:
                return 409, status_object(409, "Conflict", f"Precondition failed: UID in precondition: {md['uid']}, "
                                                            f"UID in object meta: {pod['metadata']['uid']}")
            annotations = pod["metadata"].setdefault("annotations", {})
            for k, v in (md.get("annotations") or {}).items():
                if v is None:
                    annotations.pop(k, None)
                else:
                    annotations[k] = v
            return 200, self._emit("pod", "MODIFIED", pod)

    def _bind_pod(self, key: str, binding: dict) -> Tuple[int, dict]:
        name = key.split("/")[1]
        with self._cond:
            pod = self._objects["pod"].get(key)
            if pod is None:
                return 404, status_object(404, "NotFound", f'pods "{name}" not found')
            uid = (binding.get("metadata") or {}).get("uid")
            if uid and uid != pod["metadata"]["uid"]:
                return 409, status_object(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": '
                                                            f"Precondition failed: UID in precondition: {uid}")
            bound = pod.setdefault("spec", {}).get("nodeName")
            if bound:
                return 409, status_object(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": '
                                                            f'pod {name} is already assigned to node "{bound}"')
            pod["spec"]["nodeName"] = binding["target"]["name"]
            self._emit("pod", "MODIFIED", pod)
            return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    # ------------------------------------------------------------ watch
    def _watch(self, handler: "BaseHTTPRequestHandler", kind: str, query: dict) -> None:
        rv = int((query.get("resourceVersion") or ["0"])[0] or 0)
        timeout = float((query.get("timeoutSeconds") or ["1800"])[0])
        bookmarks = (query.get("allowWatchBookmarks") or ["false"])[0].lower() == "true"
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

        def send(type_: str, obj: dict) -> None:
            data = json.dumps({"type": type_, "object": obj}).encode() + b"\n"
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        try:
            with self._cond:
                initial = [copy.deepcopy(o) for o in self._objects[kind].values()] if rv == 0 else []
                rv = rv or self._rv
            for obj in initial:
                send("ADDED", obj)
            position = self._stream_events(send, kind, rv, time.monotonic() + timeout)
            if position is None:
                send("ERROR", status_object(410, "Expired", f"too old resource version: {rv} ({self._floors[kind]})"))
            elif bookmarks:
                send("BOOKMARK", {"kind": kind.capitalize(), "apiVersion": "v1",
                                  "metadata": {"resourceVersion": str(position)}})
            handler.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client went away
            handler.close_connection = True

    def _stream_events(self, send, kind: str, after: int, deadline: float) -> Optional[int]:
        """Sends the kind's events after ``after`` until the deadline; returns the resourceVersion up to which
        everything was sent, or None when the position was compacted away (the watcher fell behind)."""
        while True:
            with self._cond:
                if after < self._floors[kind]:
                    return None
                pending = [] if self._paused else [(r, t, o) for r, k, t, o in self._events if k == kind and r > after]
                if not pending:
                    if not self._paused:
                        after = self._rv  # nothing of this kind up to here
                    left = deadline - time.monotonic()
                    if self._stopping or left <= 0:
                        return after
                    self._cond.wait(min(left, 0.5))
                    continue
            for r, t, o in pending:
                send(t, o)
                after = r

    # ------------------------------------------------------------ HTTP
    def _handler_class(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: without TCP_NODELAY the second waits for the client's delayed
            # ACK (~40 ms per call), which the API server (Go's net/http) never does.
            disable_nagle_algorithm = True

            def log_message(self, *args):  # quiet
                pass

            def _reply(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _dispatch(self, method: str) -> None:
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                with api._cond:
                    api.requests.append({"method": method, "path": parts.path, "query": query, "body": body,
                                         "headers": {k.lower(): v for k, v in self.headers.items()}})
                injected = api._take_failure(method, parts.path)
                if injected is not None:
                    self._reply(injected, status_object(injected, "InternalError" if injected >= 500 else "Injected",
                                                        f"injected failure {injected} for {method} {parts.path}"))
                    return
                self._route(method, parts.path, query, body)

            def _route(self, method: str, path: str, query: dict, body: Optional[dict]) -> None:
                if method == "GET" and path in _KIND_LIST:
                    kind, list_kind = _KIND_LIST[path]
                    if (query.get("watch") or ["false"])[0].lower() == "true":
                        api._watch(self, kind, query)
                    else:
                        self._reply(200, api._list(kind, list_kind))
                    return
                m = _POD_PATH.match(path)
                if m is None:
                    self._reply(404, status_object(404, "NotFound", f"the server could not find {path}"))
                    return
                key = f"{m.group(1)}/{m.group(2)}"
                if m.group(3) and method == "POST":
                    self._reply(*api._bind_pod(key, body or {}))
                elif not m.group(3) and method == "PATCH":
                    self._reply(*api._patch_pod(key, body or {}))
                elif not m.group(3) and method == "GET":
                    with api._cond:
                        pod = copy.deepcopy(api._objects["pod"].get(key))
                    if pod is None:
                        self._reply(404, status_object(404, "NotFound", f'pods "{m.group(2)}" not found'))
                    else:
                        self._reply(200, pod)
                else:
                    self._reply(405, status_object(405, "MethodNotAllowed", f"{method} {path}"))

            def do_GET(self):
                self._dispatch("GET")

            def do_PATCH(self):
                self._dispatch("PATCH")

            def do_POST(self):
                self._dispatch("POST")

        return Handler
