"""Tests of kubetune.sched: allocator rules, MIG, gangs, NVLink, errors, replay, plot and the HTTP extender."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kubetune import sched

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO.parent / "shared" / "data" / "alibaba-gpu-2023"


def _cluster():
    c = sched.Cluster()
    c.add_node("node-a", cpu_milli=64000, memory_mib=262144, gpus=2, gpu_memory_mib=16384, model="T4")
    c.add_node("node-b", cpu_milli=64000, memory_mib=262144, gpus=1, gpu_memory_mib=16384, model="T4")
    return c


def test_gpushare_least_free_memory_that_fits():
    c = sched.Cluster()
    c.add_node("n", cpu_milli=64000, gpus=3, gpu_memory_mib=16384, model="T4")
    a = sched.Allocator(c, "gpushare")
    assert a.place_on(sched.Request(gpu_memory_mib=8192), 0)["gpus"] == [0]
    assert a.place_on(sched.Request(gpu_memory_mib=12288), 0)["gpus"] == [1]
    # GPU0 has 8 GiB, GPU1 4 GiB, GPU2 16 GiB: a 4 GiB pod takes GPU1, a 6 GiB pod GPU0.
    assert a.place_on(sched.Request(gpu_memory_mib=4096), 0)["gpus"] == [1]
    assert a.place_on(sched.Request(gpu_memory_mib=6144), 0)["gpus"] == [0]
    assert a.node_state(0)["gpus"][0]["memory_free"] == 2048
    a.check_invariants()


def test_fgd_fragmentation_reported_and_typical_needed():
    c, pods = sched.synthetic_trace(20, 200, 3)
    a = sched.Allocator(c, "fgd", workload=pods)
    for r in pods[:60]:
        a.place(r)
    st = a.stats(workload=pods)
    assert 0.0 <= st["fragmentation_ratio"] <= 1.0
    assert st["gpu_milli_allocated"] > 0
    with pytest.raises(ValueError, match="typical"):
        sched.Allocator(c, "fgd")


def test_mig_geometry():
    assert sched.mig_feasible_starts("3g.20gb", [("3g.20gb", 0)]) == [4]
    assert sched.mig_feasible_starts("1g.5gb", [("3g.20gb", 0), ("3g.20gb", 4)]) == []
    assert sched.mig_feasible_starts("3g.20gb", [("4g.20gb", 0)]) == [4]
    assert sched.mig_feasible_starts("1g.5gb", [("3g.20gb", 0), ("2g.10gb", 4)]) == [6]
    with pytest.raises(ValueError, match="mig_profile"):
        sched.mig_feasible_starts("9g.1gb")


def test_gang_all_or_nothing_and_nvlink():
    c = sched.Cluster()
    c.add_node("a", cpu_milli=32000, gpus=2, model="T4")
    c.add_node("b", cpu_milli=32000, gpus=2, model="T4")
    a = sched.Allocator(c, "best_fit")
    three = [sched.Request(gpu_count=2, gang="g") for _ in range(3)]
    assert a.place_gang(three) is None
    assert a.stats()["gpu_milli_allocated"] == 0
    assert len(a.place_gang(three[:2])) == 2

    d = sched.Cluster()
    d.add_node("dgx", cpu_milli=96000, gpus=8, model="V100M32", nvlink_islands=2)
    b = sched.Allocator(d, "best_fit")
    ids = [b.place(sched.Request(gpu_count=1))["id"] for _ in range(4)]
    b.release(ids[3])
    assert b.place(sched.Request(gpu_count=2))["gpus"] == [4, 5]


def test_bad_input_errors_name_the_field():
    with pytest.raises(ValueError, match="gpu_milli"):
        sched.Request(gpu_count=2, gpu_milli=300)
    with pytest.raises(ValueError, match="cpu_milli"):
        sched.Request(cpu_milli=-5)
    with pytest.raises(ValueError, match="policy"):
        sched.Allocator(_cluster(), "magic")
    with pytest.raises(KeyError):
        sched.Allocator(_cluster()).release(12345)
    with pytest.raises(ValueError, match="cluster JSON"):
        sched.Cluster.from_json("{")


def test_snapshot_restore_and_concurrency():
    c, pods = sched.synthetic_trace(30, 300, 5)
    a = sched.Allocator(c, "kubetune", workload=pods)
    snap = a.snapshot()
    errors = []

    def work(k):
        try:
            for r in pods[k::4]:
                a.place(r)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    a.check_invariants()
    assert a.stats()["placements"] > 0
    a.restore(snap)
    assert a.stats()["placements"] == 0


def test_replay_synthetic_and_plot(tmp_path):
    c, pods = sched.synthetic_trace(100, 1200, 11)
    res = sched.replay_seeds(c, pods, policies=("best_fit", "kubetune"), seeds=[1, 2], step_pct=5.0)
    for pol, r in res.items():
        assert len(r["runs"]) == 2
        a100 = r["runs"][0]["at_100"]
        assert a100["arrived_pct"] >= 100.0
        assert a100["unallocated_pct"] == pytest.approx(a100["arrived_pct"] - a100["allocated_pct"])
        assert r["median_unallocated_pct"] >= 0.0
    fig = sched.plot_replay(res, tmp_path / "replay.png")
    assert (tmp_path / "replay.png").stat().st_size > 1000
    assert len(fig.axes) == 2


@pytest.mark.skipif(not (TRACE / "openb_pod_list_default.csv").is_file(), reason="Alibaba trace absent")
def test_trace_best_fit_close_to_paper():
    cluster = sched.load_trace_cluster(str(TRACE / "openb_node_list_gpu_node.csv"))
    pods = sched.load_trace_pods(str(TRACE / "openb_pod_list_default.csv"))
    assert cluster.num_nodes == 1213 and cluster.total_gpus == 6212 and len(pods) == 8152
    r = sched.replay(cluster, pods, "best_fit", seed=42, step_pct=5.0)
    assert r["at_100"]["unallocated_pct"] == pytest.approx(7.09, abs=1.0)


def _post(url, payload):
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status, json.loads(resp.read().decode())


def test_extender_over_http():
    alloc = sched.Allocator(_cluster(), "gpushare")
    ext = sched.Extender(alloc)
    pod = {
        "metadata": {"name": "train-0", "namespace": "ml"},
        "spec": {"containers": [{"resources": {"limits": {sched.GPU_MEM_RESOURCE: "10", "cpu": "2"}}}]},
    }
    with sched.ExtenderServer(ext, host="127.0.0.1", port=0) as srv:
        assert srv.address[0] == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.address[1]}/healthz", timeout=10) as r:
            assert r.read() == b"ok"
        args = {"Pod": pod, "NodeNames": ["node-a", "node-b"]}
        code, res = _post(srv.url + "/filter", args)
        assert code == 200 and res["Error"] == "" and sorted(res["NodeNames"]) == ["node-a", "node-b"]
        code, prio = _post(srv.url + "/prioritize", args)
        assert {h["Host"]: h["Score"] for h in prio} == {"node-a": 0, "node-b": 10}
        code, b = _post(srv.url + "/bind", {"PodName": "train-0", "PodNamespace": "ml", "PodUID": "u1",
                                            "Node": "node-b"})
        assert b["Error"] == ""
        assert b["Annotations"]["ALIYUN_COM_GPU_MEM_IDX"] == "0"
        assert b["Annotations"]["ALIYUN_COM_GPU_MEM_POD"] == "10"
        assert alloc.node_state(1)["gpus"][0]["memory_free"] == 6 * 1024
        # node-b is now too small for another 10 GiB pod
        pod2 = json.loads(json.dumps(pod))
        pod2["metadata"]["name"] = "train-1"
        code, res = _post(srv.url + "/filter", {"Pod": pod2, "NodeNames": ["node-a", "node-b"]})
        assert res["NodeNames"] == ["node-a"] and "node-b" in res["FailedNodes"]
        code, rel = _post(srv.url + "/release", {"PodName": "train-0", "PodNamespace": "ml"})
        assert rel["Error"] == ""
        with pytest.raises(urllib.error.HTTPError) as ei:
            _post(srv.url + "/prioritize", {"NodeNames": []})  # no Pod -> 400
        assert ei.value.code == 400
        ei.value.close()  # HTTPError keeps the response socket open
    alloc.check_invariants()


def test_demo_quick(capsys):
    sched._demo(quick=True)
    out = capsys.readouterr().out
    assert "kubetune" in out and "fgd" in out and "best_fit" in out
