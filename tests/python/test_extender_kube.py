"""The GPU extender's Kubernetes side end to end: the real C++ Extender and ExtenderHttpServer, the real
``kubernetes`` client (list, watch, read, patch, binding) and ``kubetune.sched.kube`` against the API server
stand-in of kube_standin.py (no Kubernetes API server is installable here)."""
from __future__ import annotations

import http.client
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")
from kubernetes import client as kclient  # noqa: E402

from kube_standin import KubeStandIn  # noqa: E402
from kubetune import sched  # noqa: E402
from kubetune.sched import kube  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
GPU_MEM = "aliyun.com/gpu-mem"
GPUSHARE_ANNOTATIONS = {"ALIYUN_COM_GPU_MEM_IDX", "ALIYUN_COM_GPU_MEM_POD", "ALIYUN_COM_GPU_MEM_DEV",
                        "ALIYUN_COM_GPU_MEM_ASSIGNED", "ALIYUN_COM_GPU_MEM_ASSUME_TIME"}


# ---------------------------------------------------------------- objects as the API server shows them
def gs_node(name: str, gpus: int = 2, gib_per_gpu: int = 16, annotations=None) -> dict:
    """A node with gpushare's device plugin: aliyun.com/gpu-count and the node's total aliyun.com/gpu-mem (GiB)."""
    res = {"cpu": "32", "memory": "128Gi", "pods": "110", "aliyun.com/gpu-count": str(gpus),
           GPU_MEM: str(gpus * gib_per_gpu)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "nvidia.com/gpu.product": "Tesla-T4"},
                         "annotations": dict(annotations or {})},
            "status": {"capacity": dict(res), "allocatable": dict(res)}}


def gs_pod(name: str, gib: int = 4, node: str = "", gpu: int = -1, phase: str = "Pending", ns: str = "ml") -> dict:
    """A pod asking aliyun.com/gpu-mem; with ``gpu >= 0`` bound earlier by gpushare (its annotations set)."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": ns, "annotations": {}},
           "spec": {"schedulerName": "default-scheduler",
                    "containers": [{"name": "main", "image": "train:1",
                                    "resources": {"limits": {GPU_MEM: str(gib)}, "requests": {"cpu": "1"}}}]},
           "status": {"phase": phase}}
    if node:
        pod["spec"]["nodeName"] = node
    if gpu >= 0:
        pod["metadata"]["annotations"].update({
            "ALIYUN_COM_GPU_MEM_IDX": str(gpu), "ALIYUN_COM_GPU_MEM_POD": str(gib), "ALIYUN_COM_GPU_MEM_DEV": "16",
            "ALIYUN_COM_GPU_MEM_ASSIGNED": "true", "ALIYUN_COM_GPU_MEM_ASSUME_TIME": "1700000000000000000"})
    return pod


def wait_for(pred, timeout: float = 5.0, what: str = "condition"):
    """Polls pred until it returns a truthy value (returned) or the deadline passes (AssertionError)."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {value!r})")
        time.sleep(0.02)


def free_gib(ext) -> dict:
    """{node: [free GiB of each GPU]}: where the allocator's placements sit."""
    a = ext.allocator()
    return {name: [g["memory_free"] / 1024 for g in a.node_state(i)["gpus"]]
            for i, name in enumerate(a.cluster.node_names())}


def raw_lists(core) -> tuple:
    return (core.list_node(_preload_content=False).data.decode(),
            core.list_pod_for_all_namespaces(_preload_content=False).data.decode())


# ---------------------------------------------------------------- fixtures
@pytest.fixture
def api():
    with KubeStandIn() as standin:
        yield standin


@pytest.fixture
def core(api):
    cfg = kclient.Configuration()
    cfg.host = api.url
    api_client = kclient.ApiClient(cfg)
    yield kclient.CoreV1Api(api_client)
    api_client.close()


@pytest.fixture
def ext(core):
    e = sched.Extender(policy="best_fit")
    e.set_writer(kube.KubeWriter(core))
    return e


@pytest.fixture
def synced(api, core, ext):
    """The extender kept in step with the stand-in (short watches so re-watching is exercised too)."""
    s = kube.ClusterSync(ext, core, watch_timeout_s=2, backoff_s=(0.05, 0.5))
    yield s
    s.stop()


@pytest.fixture
def server(ext):
    with sched.ExtenderServer(ext, host="127.0.0.1", port=0, n_threads=2) as srv:
        yield srv


class SchedulerClient:
    """kube-scheduler's side of the protocol: JSON POSTs over one kept-alive HTTP/1.1 connection."""

    def __init__(self, srv) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", srv.address[1], timeout=10)
        self.prefix = srv.prefix

    def post(self, verb: str, payload: dict):
        self.conn.request("POST", f"{self.prefix}/{verb}", body=json.dumps(payload),
                          headers={"Content-Type": "application/json"})
        resp = self.conn.getresponse()
        body = resp.read().decode()
        assert resp.status == 200, (resp.status, body)
        return json.loads(body)

    def schedule(self, pod: dict, nodes, node: str) -> dict:
        """filter over nodes, then bind to node; returns the bind result."""
        res = self.post("filter", {"Pod": pod, "NodeNames": list(nodes)})
        assert res["Error"] == "" and node in res["NodeNames"], res
        md = pod["metadata"]
        return self.post("bind", {"PodName": md["name"], "PodNamespace": md["namespace"], "PodUID": md["uid"],
                                  "Node": node})

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def scheduler(server):
    c = SchedulerClient(server)
    yield c
    c.close()


# ---------------------------------------------------------------- state from lists
def test_sync_rebuilds_placements_on_recorded_gpus(api, core, ext, synced):
    api.add_node(gs_node("node-a", gpus=2))
    api.add_node(gs_node("node-b", gpus=4))
    api.add_pod(gs_pod("p0", 6, "node-a", gpu=1, phase="Running"))
    api.add_pod(gs_pod("p1", 10, "node-b", gpu=3, phase="Running"))
    api.add_pod(gs_pod("p2", 4, "node-b", gpu=3, phase="Running"))  # shares GPU 3 with p1
    api.add_pod(gs_pod("done", 8, "node-a", gpu=0, phase="Succeeded"))  # finished: holds nothing
    api.add_pod(gs_pod("waiting", 4))  # not bound yet
    cpu_only = gs_pod("web", 0, "node-a", phase="Running")
    cpu_only["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}}
    api.add_pod(cpu_only)
    assert not ext.ready
    synced.start(timeout_s=5)
    st = ext.status()
    assert st["ready"] and (st["nodes"], st["gpus"], st["placements"]) == (2, 6, 3)
    # exactly the recorded GPUs: p0 on node-a GPU 1, p1 + p2 on node-b GPU 3; the finished pod holds nothing
    assert free_gib(ext) == {"node-a": [16, 10], "node-b": [16, 16, 16, 2]}
    a = ext.allocator()
    assert [a.placement_by_name(f"ml/{p}")["gpus"] for p in ("p0", "p1", "p2")] == [[1], [3], [3]]
    assert a.placement_by_name("ml/done") is None and a.placement_by_name("ml/waiting") is None
    # one list of each kind, pods first, then one watch of each kind from the list's resourceVersion
    lists = [r["path"] for r in api.requests if "watch" not in r["query"]]
    assert lists == ["/api/v1/pods", "/api/v1/nodes"]
    watches = wait_for(lambda: [r for r in api.requests if "watch" in r["query"]], what="watches")
    assert {w["query"]["resourceVersion"][0] for w in watches} == {str(api.resource_version)}
    assert all(w["query"]["allowWatchBookmarks"] == ["true"] for w in watches)


# ---------------------------------------------------------------- watch events
def test_pod_deleted_or_succeeded_frees_its_gpu(api, ext, synced):
    api.add_node(gs_node("node-a"))
    api.add_pod(gs_pod("p0", 6, "node-a", gpu=0, phase="Running"))
    api.add_pod(gs_pod("p1", 6, "node-a", gpu=1, phase="Running"))
    synced.start(timeout_s=5)
    assert ext.status()["placements"] == 2 and free_gib(ext) == {"node-a": [10, 10]}
    api.delete_pod("ml", "p0")
    wait_for(lambda: free_gib(ext) == {"node-a": [16, 10]}, what="p0 released")
    api.modify_pod("ml", "p1", lambda p: p["status"].update(phase="Succeeded"))
    wait_for(lambda: free_gib(ext) == {"node-a": [16, 16]}, what="p1 released")
    assert ext.status()["placements"] == 0 and ext.status()["counters"]["releases"] == 2
    # a pod bound by someone else (gpushare annotations) is adopted on its recorded GPU
    api.add_pod(gs_pod("p2", 3, "node-a", gpu=1, phase="Running"))
    wait_for(lambda: free_gib(ext) == {"node-a": [16, 13]}, what="p2 adopted on GPU 1")


def _filter(ext, pod: dict, nodes) -> dict:
    return json.loads(ext.filter(json.dumps({"Pod": pod, "NodeNames": list(nodes)})))


def test_node_added_removed_resized_and_unhealthy(api, ext, synced):
    api.add_node(gs_node("node-a", gpus=2))
    api.add_node(gs_node("node-b", gpus=1))
    api.add_pod(gs_pod("on-b", 6, "node-b", gpu=0, phase="Running"))
    synced.start(timeout_s=5)
    big = gs_pod("big", 12)
    # added: filter sees it
    assert _filter(ext, big, ["node-c"])["NodeNames"] in (None, [])
    api.add_node(gs_node("node-c", gpus=1))
    wait_for(lambda: _filter(ext, big, ["node-c"])["NodeNames"] == ["node-c"], what="node-c schedulable")
    # deleted: its placements go with it
    api.delete_node("node-b")
    wait_for(lambda: ext.status()["nodes"] == 2, what="node-b gone")
    assert ext.status()["placements"] == 0 and set(free_gib(ext)) == {"node-a", "node-c"}
    # resized: 2 -> 4 GPUs (gpushare's totals grow with the count)
    assert ext.status()["gpus"] == 3

    def grow(node):
        for res in ("capacity", "allocatable"):
            node["status"][res].update({"aliyun.com/gpu-count": "4", GPU_MEM: "64"})

    api.modify_node("node-a", grow)
    wait_for(lambda: ext.status()["gpus"] == 5, what="node-a resized")
    # a GPU marked unhealthy takes no pod
    api.modify_node("node-a", lambda n: n["metadata"]["annotations"].update({"kubetune.io/unhealthy-gpus": "1"}))
    wait_for(lambda: ext.allocator().gpu_healthy("node-a", 1) is False, what="GPU 1 unhealthy")
    a = ext.allocator()
    for k in range(3):  # three 12 GiB pods fill GPUs 0, 2 and 3; GPU 1 is never chosen
        got = a.place_on(sched.Request(name=f"x/{k}", gpu_memory_mib=12 << 10), a.cluster.find_node("node-a"))
        assert got is not None and got["gpus"] != [1]
    assert _filter(ext, big, ["node-a"])["NodeNames"] in (None, [])


def test_watch_gap_relists_and_equals_a_fresh_sync(api, core, ext, synced):
    api.add_node(gs_node("node-a"))
    api.add_pod(gs_pod("p0", 6, "node-a", gpu=0, phase="Running"))
    api.add_pod(gs_pod("p1", 6, "node-a", gpu=1, phase="Running"))
    synced.start(timeout_s=5)
    wait_for(lambda: len([r for r in api.requests if "watch" in r["query"]]) >= 2, what="watches open")
    # the watcher falls behind: these changes are never sent as events, then the history is compacted
    api.pause_watches()
    api.delete_pod("ml", "p0")
    api.add_node(gs_node("node-b", gpus=4))
    api.add_pod(gs_pod("p2", 10, "node-b", gpu=2, phase="Running"))
    api.modify_pod("ml", "p1", lambda p: p["status"].update(phase="Failed"))
    api.compact()
    wait_for(lambda: synced.resyncs == 1, what="a relist after 410 Gone")
    api.resume_watches()
    fresh = sched.Extender(policy="best_fit")
    fresh.sync(*raw_lists(core))
    st, want = ext.status(), fresh.status()
    assert (st["nodes"], st["gpus"], st["placements"]) == (want["nodes"], want["gpus"], want["placements"]) == (2, 6, 1)
    assert free_gib(ext) == free_gib(fresh) == {"node-a": [16, 16], "node-b": [16, 16, 6, 16]}
    # watching goes on from the relist
    api.delete_pod("ml", "p2")
    wait_for(lambda: free_gib(ext)["node-b"] == [16] * 4, what="p2 released after the relist")
    assert synced.resyncs == 1


# ---------------------------------------------------------------- bind through the HTTP server
def test_bind_over_http_patches_annotations_then_binds(api, ext, synced, scheduler):
    api.add_node(gs_node("node-a"))
    api.add_node(gs_node("node-b"))
    pod = api.add_pod(gs_pod("train-0", 10))
    synced.start(timeout_s=5)
    res = scheduler.schedule(pod, ["node-a", "node-b"], "node-b")
    assert res["Error"] == "", res
    writes = [r for r in api.requests if r["method"] in ("PATCH", "POST")]
    assert [(r["method"], r["path"]) for r in writes] == [
        ("PATCH", "/api/v1/namespaces/ml/pods/train-0"), ("POST", "/api/v1/namespaces/ml/pods/train-0/binding")]
    patch, binding = writes[0]["body"], writes[1]["body"]
    assert set(patch["metadata"]["annotations"]) == GPUSHARE_ANNOTATIONS
    assert patch["metadata"]["uid"] == pod["metadata"]["uid"]  # the uid precondition
    assert binding["target"] == {"apiVersion": "v1", "kind": "Node", "name": "node-b"}
    assert binding["metadata"] == {"name": "train-0", "uid": pod["metadata"]["uid"]}
    stored = api.pod("ml", "train-0")
    assert stored["spec"]["nodeName"] == "node-b"
    anno = stored["metadata"]["annotations"]
    assert anno["ALIYUN_COM_GPU_MEM_POD"] == "10" and anno["ALIYUN_COM_GPU_MEM_ASSIGNED"] == "false"
    used = [g for g, free in enumerate(free_gib(ext)["node-b"]) if free == 6]
    assert used == [int(anno["ALIYUN_COM_GPU_MEM_IDX"])] and free_gib(ext)["node-a"] == [16, 16]
    # the watch then confirms the bind; the placement stays exactly one
    wait_for(lambda: ext.status()["counters"]["pod_events"] >= 2, what="the patch and bind events seen")
    assert ext.status()["placements"] == 1 and ext.status()["binding"] == 0


def test_bind_failure_rolls_back_and_retry_succeeds(api, ext, synced, scheduler):
    api.add_node(gs_node("node-a"))
    pod = api.add_pod(gs_pod("train-1", 8))
    synced.start(timeout_s=5)
    api.fail_next("POST", r"/pods/train-1/binding$", 500)
    res = scheduler.schedule(pod, ["node-a"], "node-a")
    assert "train-1" in res["Error"] and "500" in res["Error"], res
    assert ext.status()["placements"] == 0 and free_gib(ext) == {"node-a": [16, 16]}
    res = scheduler.schedule(pod, ["node-a"], "node-a")
    assert res["Error"] == "", res
    assert ext.status()["placements"] == 1 and api.pod("ml", "train-1")["spec"]["nodeName"] == "node-a"
    counters = ext.status()["counters"]
    assert counters["rollbacks"] == 1 and counters["bind_ok"] == 1


def test_bind_of_pod_bound_meanwhile_is_a_conflict_without_leak(api, ext, synced, scheduler):
    api.add_node(gs_node("node-a"))
    api.add_node(gs_node("node-b"))
    pod = api.add_pod(gs_pod("train-2", 8))
    synced.start(timeout_s=5)
    api.pause_watches()  # someone else binds it; the extender has not heard yet
    api.modify_pod("ml", "train-2", lambda p: p["spec"].update(nodeName="node-b"))
    res = scheduler.schedule(pod, ["node-a", "node-b"], "node-a")
    assert "train-2" in res["Error"] and "409" in res["Error"] and "already assigned" in res["Error"], res
    assert ext.status()["placements"] == 0 and free_gib(ext) == {"node-a": [16, 16], "node-b": [16, 16]}
    api.resume_watches()  # now the extender hears of the other bind and adopts it where it is
    wait_for(lambda: sorted(free_gib(ext)["node-b"]) == [8, 16], what="adopted on node-b")
    assert ext.status()["placements"] == 1 and free_gib(ext)["node-a"] == [16, 16]


# ---------------------------------------------------------------- KubeWriter and ClusterSync on their own
def test_kube_writer_errors_name_call_pod_and_status(api, core):
    api.add_pod(gs_pod("w", 2, "node-a"))
    w = kube.KubeWriter(core)
    assert json.loads(w.get_pod("ml", "w"))["spec"]["nodeName"] == "node-a"
    with pytest.raises(kube.KubeApiError, match=r"get pod ml/ghost: HTTP 404 not found") as ei:
        w.get_pod("ml", "ghost")
    assert ei.value.status == 404
    with pytest.raises(kube.KubeApiError, match=r"patch pod annotations ml/w: HTTP 409 conflict.*UID in precondition"):
        w.patch_pod_annotations("ml", "w", "not-its-uid", {"a": "1"})
    with pytest.raises(kube.KubeApiError, match=r"create binding ml/w to node n2: HTTP 409.*already assigned"):
        w.create_binding("ml", "w", "", "n2")
    w.patch_pod_annotations("ml", "w", "", {"a": "1"})
    assert api.pod("ml", "w")["metadata"]["annotations"] == {"a": "1"}
    cfg = kclient.Configuration()
    cfg.host = "http://127.0.0.1:9"  # discard port: nothing listens
    cfg.retries = 0
    dead_client = kclient.ApiClient(cfg)
    with pytest.raises(kube.KubeApiError, match=r"get pod ml/w: no answer from the API server") as ei:
        kube.KubeWriter(kclient.CoreV1Api(dead_client), request_timeout=(1, 1)).get_pod("ml", "w")
    assert ei.value.status == 0
    dead_client.close()


def test_cluster_sync_threads_stop_promptly(api, core, ext):
    api.add_node(gs_node("node-a"))
    s = kube.ClusterSync(ext, core, watch_timeout_s=30)
    s.start(timeout_s=5)
    threads = {t.name: t for t in threading.enumerate() if t.name.startswith("kt-sync-")}
    assert set(threads) == {"kt-sync-node", "kt-sync-pod"} and all(t.daemon for t in threads.values())
    wait_for(lambda: len([r for r in api.requests if "watch" in r["query"]]) == 2, what="both watches open")
    t0 = time.monotonic()
    s.stop()
    assert time.monotonic() - t0 < 1.0
    assert not any(t.is_alive() for t in threads.values())


def test_cluster_sync_retries_a_failed_list_and_validates_options(api, core, ext):
    with pytest.raises(ValueError, match="watch_timeout_s"):
        kube.ClusterSync(ext, core, watch_timeout_s=0)
    with pytest.raises(ValueError, match="backoff_s"):
        kube.ClusterSync(ext, core, backoff_s=(1.0, 0.5))
    api.add_node(gs_node("node-a"))
    api.fail_next("GET", r"^/api/v1/pods$", 503)
    s = kube.ClusterSync(ext, core, backoff_s=(0.05, 0.1))
    try:
        s.start(timeout_s=5)
        assert isinstance(s.last_error, kube.KubeApiError) and s.last_error.status == 503
        assert ext.status()["nodes"] == 1
    finally:
        s.stop()


def test_rewatch_after_timeout_resumes_from_bookmark(api, core, ext):
    api.add_node(gs_node("node-a"))
    s = kube.ClusterSync(ext, core, watch_timeout_s=1)
    try:
        s.start(timeout_s=5)
        api.add_pod(gs_pod("p0", 2, "node-a", phase="Running"))  # moves the global resourceVersion, not the nodes'
        rv = str(api.resource_version)
        node_watch_rvs = lambda: [r["query"]["resourceVersion"][0] for r in api.requests_of("GET", "^/api/v1/nodes$")
                                  if "watch" in r["query"]]
        # the node watch ends after 1 s with a BOOKMARK at rv; only the bookmark can carry it there
        wait_for(lambda: rv in node_watch_rvs(), timeout=5, what="a node re-watch from the bookmark")
        assert s.resyncs == 0 and ext.status()["placements"] == 1
    finally:
        s.stop()


def test_periodic_resync(api, core, ext):
    api.add_node(gs_node("node-a"))
    s = kube.ClusterSync(ext, core, watch_timeout_s=30, resync_period_s=0.5)
    try:
        s.start(timeout_s=5)
        wait_for(lambda: s.resyncs >= 1, timeout=5, what="a periodic relist (the watch is cut short for it)")
        assert ext.status()["counters"]["syncs"] >= 2
    finally:
        s.stop()


def test_kubeconfig_flag_configures_the_client(api, tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({  # JSON is YAML
        "apiVersion": "v1", "kind": "Config", "current-context": "standin",
        "clusters": [{"name": "standin", "cluster": {"server": api.url}}],
        "users": [{"name": "u", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "u"}}]}))
    cfg = kube._kube_configuration(kube._parser().parse_args(["--kubeconfig", str(path)]))
    assert cfg.host == api.url
    api_client = kclient.ApiClient(cfg)
    try:
        with pytest.raises(kube.KubeApiError, match="ml/ghost: HTTP 404"):
            kube.KubeWriter(kclient.CoreV1Api(api_client)).get_pod("ml", "ghost")
    finally:
        api_client.close()
    assert api.requests[-1]["headers"]["authorization"] == "Bearer t0ken"


# ---------------------------------------------------------------- the kubetune-extender command
def test_bad_flags_exit_2(capsys):
    for argv, message in ((["--port", "70000"], "0..65535"), (["--policy", "magic"], "invalid choice"),
                          (["--api-server", "ftp://x"], "http://"), (["--gpu-mem-unit", "KiB"], "invalid choice"),
                          (["--threads", "0"], "must be > 0"),
                          (["--kubeconfig", "/nonexistent/kubeconfig"], "--kubeconfig /nonexistent/kubeconfig")):
        with pytest.raises(SystemExit) as ei:
            kube.main(argv)
        assert ei.value.code == 2
        assert message in capsys.readouterr().err


def _get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.read().decode()


def test_console_script_serves_syncs_binds_and_stops_on_sigterm(api):
    api.add_node(gs_node("node-a"))
    pod = api.add_pod(gs_pod("cli-0", 6))
    api.fail_next("GET", r"^/api/v1/pods$", 500, times=1000)  # lists fail: live, not ready
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubetune.sched.kube", "--api-server", api.url, "--host", "127.0.0.1", "--port", "0",
         "--log-level", "WARNING"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert select.select([proc.stdout], [], [], 15)[0], "kubetune-extender printed nothing within 15 s"
        line = proc.stdout.readline()
        m = re.search(r"listening on (http://127\.0\.0\.1:(\d+))/gpushare-scheduler", line)
        assert m, (line, proc.stderr.read() if proc.poll() is not None else "")
        base = m.group(1)
        assert _get(base + "/healthz")[0] == 200
        assert _get(base + "/readyz")[0] == 503
        api.clear_failures()
        wait_for(lambda: _get(base + "/readyz")[0] == 200, what="/readyz 200 after the first sync")
        srv = type("Srv", (), {"address": ("127.0.0.1", int(m.group(2))), "prefix": "/gpushare-scheduler"})
        client = SchedulerClient(srv)
        try:
            assert client.schedule(pod, ["node-a"], "node-a")["Error"] == ""
        finally:
            client.close()
        assert api.pod("ml", "cli-0")["spec"]["nodeName"] == "node-a"
        assert "kubetune_extender_placements 1" in _get(base + "/metrics")[1]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
        proc.stdout.close()
        proc.stderr.close()
