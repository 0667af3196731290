"""Filter + bind cycles of kubetune-extender WITH its Kubernetes writes: the deployable stack end to end.

kube-scheduler's side: one kept-alive HTTP/1.1 connection posting filter (nodeCacheCapable NodeNames) then bind.
Extender: the C++ Extender behind the C++ HTTP server, kept in step by kubetune.sched.kube.ClusterSync, binding
through kubetune.sched.kube.KubeWriter (the official kubernetes client): the gpushare annotation PATCH, then the
pods/binding POST. API server: tests/python/kube_standin.py (a Python stand-in; no API server package is
installable here), so the figures include a Python HTTP server's cost per write, which a real API server replaces
with its own (typically milliseconds: etcd writes).

Usage: PYTHONPATH=python .venv/bin/python benchmarks/python/extender_bind_writes.py [--nodes 1000] [--pods 300]
"""
from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
from kube_standin import KubeStandIn  # noqa: E402

from kubernetes import client as kclient  # noqa: E402

from kubetune import sched  # noqa: E402
from kubetune.sched import kube  # noqa: E402

GPU_MEM = "aliyun.com/gpu-mem"


def node(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i:05d}", "labels": {}},
            "status": {"capacity": {"cpu": "96", "memory": "512Gi", "aliyun.com/gpu-count": "8", GPU_MEM: "256"},
                       "allocatable": {"cpu": "96", "memory": "512Gi"}}}


def pod(j: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p{j}", "namespace": "bench", "uid": f"uid-{j}", "annotations": {}},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {GPU_MEM: str(1 << (j % 4))}}}]},
            "status": {"phase": "Pending"}}


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=300)
    a = ap.parse_args()
    names = [f"node-{i:05d}" for i in range(a.nodes)]
    k = len(names) if len(names) < 100 else max(100, int(len(names) * max(5, 50 - len(names) / 125) / 100))
    with KubeStandIn() as api:
        for i in range(a.nodes):
            api.add_node(node(i))
        core = kclient.CoreV1Api(kclient.ApiClient(kclient.Configuration(host=api.url)))
        ext = sched.Extender(policy="best_fit")
        ext.set_writer(kube.KubeWriter(core))
        sync = kube.ClusterSync(ext, core)
        sync.start(timeout_s=60)
        with sched.ExtenderServer(ext, port=0, n_threads=2) as srv:
            conn = http.client.HTTPConnection("127.0.0.1", srv.address[1])

            def post(verb, body):
                conn.request("POST", f"{srv.prefix}/{verb}", body=json.dumps(body),
                             headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                out = json.loads(r.read())
                assert r.status == 200, out
                return out

            cycles, binds = [], []
            for j in range(a.pods):
                p = pod(j)
                api.add_pod(p)
                window = [names[(j * 7 + t) % len(names)] for t in range(k)]
                t0 = time.perf_counter()
                f = post("filter", {"Pod": p, "NodeNames": window})
                t1 = time.perf_counter()
                b = post("bind", {"PodName": p["metadata"]["name"], "PodNamespace": "bench",
                                  "PodUID": p["metadata"]["uid"], "Node": f["NodeNames"][0]})
                t2 = time.perf_counter()
                assert b["Error"] == "", b
                cycles.append(t2 - t0)
                binds.append(t2 - t1)
            conn.close()
        sync.stop()
        print(f"{a.nodes} nodes, {k} NodeNames, {a.pods} pods, API writes to the Python stand-in")
        print(f"  cycle p50 {pct(cycles, .5):.2f} ms  p99 {pct(cycles, .99):.2f} ms  "
              f"({1 / statistics.mean(cycles):.0f} cycles/s, one connection)")
        print(f"  bind (PATCH + Binding) p50 {pct(binds, .5):.2f} ms  p99 {pct(binds, .99):.2f} ms")
        print(f"  extender: {ext.status()['counters']['bind_ok']} binds ok, {ext.status()['placements']} placements")


if __name__ == "__main__":
    main()
