"""Tests of kubetune.sched: allocator rules, MIG, gangs, NVLink, errors, replay, plot and the HTTP extender."""
from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kubetune import sched

# The shared data folder comes from $KUBETUNE_SHARED_DATA (tests/python/conftest.py sets it to ../shared/data).
TRACE = Path(os.environ.get("KUBETUNE_SHARED_DATA", "/nonexistent")) / "alibaba-gpu-2023"


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
    from kubetune.demo import sched as demo_sched

    demo_sched.run(quick=True)
    out = capsys.readouterr().out
    assert "synthetic trace (seeded): 300 nodes" in out
    assert "kubetune" in out and "fgd" in out and "best_fit" in out
    assert not hasattr(sched, "_demo")  # no demo code in the library module


# ---------------------------------------------------------------- data location (argument, else the environment)
def _fake_trace(root: Path) -> Path:
    """A two-node, one-pod openb trace under root/alibaba-gpu-2023 (the readers' columns)."""
    t = root / "alibaba-gpu-2023"
    t.mkdir(parents=True)
    (t / "openb_node_list_gpu_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nnode-0,96000,786432,8,T4\nnode-1,64000,262144,2,T4\n")
    (t / "openb_pod_list_default.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
        "scheduled_time\npod-0,1000,1024,1,500,,LS,Running,0,100,1\n")
    return t


def test_data_location_is_an_argument_or_the_environment(tmp_path, monkeypatch):
    trace = _fake_trace(tmp_path / "data")
    monkeypatch.delenv("KUBETUNE_SHARED_DATA", raising=False)
    # Nothing is guessed from the package's own location.
    assert sched.shared_data_dir() is None and sched.trace_dir() is None
    with pytest.raises(FileNotFoundError, match=r"\(\$KUBETUNE_SHARED_DATA is not set\): pass directory="):
        sched.load_trace()
    # An argument wins ...
    assert sched.shared_data_dir(tmp_path / "data") == tmp_path / "data"
    assert sched.trace_dir(tmp_path / "data") == trace
    assert sched.trace_dir(tmp_path) is None and sched.shared_data_dir(tmp_path / "nope") is None
    cluster, pods = sched.load_trace("default", trace)
    assert (cluster.num_nodes, cluster.total_gpus, len(pods)) == (2, 10, 1)
    # ... else the environment variable.
    monkeypatch.setenv(sched.SHARED_DATA_ENV, str(tmp_path / "data"))
    assert sched.shared_data_dir() == tmp_path / "data" and sched.trace_dir() == trace
    cluster, pods = sched.load_trace()
    assert (cluster.num_nodes, len(pods)) == (2, 1)
    with pytest.raises(FileNotFoundError, match="trace variant 'gpushare40' not found"):
        sched.load_trace("gpushare40")
    monkeypatch.setenv(sched.SHARED_DATA_ENV, str(tmp_path))
    assert sched.trace_dir() is None
    with pytest.raises(FileNotFoundError, match=r"KUBETUNE_SHARED_DATA=.* has no alibaba-gpu-2023/"):
        sched.load_trace()


def test_extender_server_n_threads_and_deprecated_threads():
    ext = sched.Extender(policy="best_fit")
    with sched.ExtenderServer(ext, port=0, n_threads=3) as srv:
        assert srv.running
    with pytest.warns(DeprecationWarning, match=r"ExtenderServer\(threads=\.\.\.\) is deprecated .* n_threads="):
        srv = sched.ExtenderServer(ext, port=0, threads=2)
    assert not srv.running
    with pytest.raises(TypeError, match="got both n_threads= and its deprecated alias threads="):
        sched.ExtenderServer(ext, port=0, threads=2, n_threads=2)


# ---------------------------------------------------------------- typical tasks, MIG tables, node totals, health
def test_typical_task_on_absent_model_counts_as_fragment():
    c = sched.Cluster()
    c.add_node("t4", cpu_milli=64000, gpus=2, gpu_memory_mib=16384, model="T4")
    a = sched.Allocator(c, "best_fit")
    work = [sched.Request(cpu_milli=1000, gpu_count=1, gpu_milli=500, models=["A10"]) for _ in range(50)]
    work += [sched.Request(cpu_milli=1000, gpu_count=1) for _ in range(50)]
    st = a.stats(workload=work)
    # A10 exists nowhere: for the A10 typical task all 2000 free milli are fragment; the whole-GPU task fits with
    # no smaller GPU (0). GPU-weighted popularity: 50*1.5 = 75 vs 50*2 = 100 -> weights 75/175 and 100/175.
    assert st["fragmentation_milli"] == pytest.approx(2000 * 75 / 175)
    ok = [sched.Request(cpu_milli=1000, gpu_count=1, gpu_milli=500, models=["A10", "T4"]) for _ in range(50)]
    assert a.stats(workload=ok + work[50:])["fragmentation_milli"] == pytest.approx(0.0)


@pytest.mark.parametrize("model,names,gb", [
    ("A100-40GB", ["1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"],
     [5, 5, 10, 10, 20, 20, 40]),
    ("A100-80GB", ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"],
     [10, 10, 20, 20, 40, 40, 80]),
    ("H100-80GB", ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"],
     [10, 10, 20, 20, 40, 40, 80]),
])
def test_mig_profile_table_per_model(model, names, gb):
    table = {m["name"]: m for m in sched.mig_models()}
    profiles = table[model]["profiles"]
    assert [p["name"] for p in profiles] == names
    assert [p["memory_gb"] for p in profiles] == gb
    assert [p["max_instances"] for p in profiles] == [7, 1, 4, 3, 2, 1, 1]
    assert [p["compute_slices"] for p in profiles] == [1, 1, 1, 2, 3, 4, 7]
    assert [p["media_extensions"] for p in profiles] == [False, True] + [False] * 5
    # a node of that model places max_instances of each profile, no more
    for p in profiles:
        c = sched.Cluster()
        c.add_node("m", cpu_milli=1000, gpus=1, model=model, mig=True)
        a = sched.Allocator(c)
        n = 0
        while n < 10 and a.place(sched.Request(mig_profile=p["name"])) is not None:
            n += 1
        assert n == p["max_instances"], p["name"]


def test_mig_profile_errors_name_profile_and_model():
    with pytest.raises(ValueError, match=r"'1g\.5gb' does not exist on GPU model 'H100'"):
        sched.mig_profile("1g.5gb", model="H100")
    with pytest.raises(ValueError, match="give the GPU model"):
        sched.mig_feasible_starts("1g.10gb")
    assert sched.mig_feasible_starts("1g.10gb", [("1g.10gb", 0)], model="A100-40GB") == [2, 4, 6]
    assert sched.mig_feasible_starts("1g.10gb", [("1g.10gb", 0)], model="H100") == [1, 2, 3, 4, 5, 6]
    c = sched.Cluster()
    c.add_node("h", cpu_milli=1000, gpus=1, model="H100", mig=True)
    with pytest.raises(ValueError, match="1g.5gb.*H100"):
        sched.Allocator(c).place_on(sched.Request(mig_profile="1g.5gb"), 0)
    with pytest.raises(ValueError, match="no MIG profile table"):
        c.add_node("t", cpu_milli=1000, gpus=1, model="T4", mig=True)


def test_gpushare_node_total_gives_per_gpu_memory():
    node = {
        "metadata": {"name": "gs-0", "labels": {"nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB"}},
        "status": {"capacity": {"cpu": "32", "memory": "128Gi", "aliyun.com/gpu-mem": "31",
                                "aliyun.com/gpu-count": "2"}},
    }
    c = sched.Cluster()
    c.add_kube_node(node)
    assert c.node(0)["gpu_memory_mib"] == 15 * 1024  # 31 // 2 GiB, as gpushare divides
    assert c.node(0)["gpus"] == 2 and c.node(0)["cpu_milli"] == 32000
    c.add_node("explicit", cpu_milli=1000, gpus=4, gpu_memory_total_mib=64 * 1024, gpu_memory_unit_mib=1024)
    assert c.node(1)["gpu_memory_mib"] == 16 * 1024
    del node["status"]["capacity"]["aliyun.com/gpu-count"]
    node["metadata"]["name"] = "gs-1"
    with pytest.raises(ValueError, match="aliyun.com/gpu-count"):
        c.add_kube_node(node)
    with pytest.raises(ValueError, match="disagrees"):
        c.add_node("bad", cpu_milli=1, gpus=2, gpu_memory_mib=8192, gpu_memory_total_mib=32768,
                   gpu_memory_unit_mib=1024)


def test_unhealthy_gpu_reported_excluded_and_releasable():
    a = sched.Allocator(_cluster(), "gpushare")
    p = a.place_on(sched.Request(name="ml/x", gpu_memory_mib=8192), 0)
    assert p["gpus"] == [0]
    evict = a.set_gpu_health("node-a", 0, False)
    assert [e["id"] for e in evict] == [p["id"]]
    assert a.unhealthy_gpus() == [(0, 0)]
    assert a.place_on(sched.Request(gpu_memory_mib=4096), 0)["gpus"] == [1]
    st = a.stats()
    assert (st["gpu_milli_capacity"], st["unhealthy_gpus"], st["placements_on_unhealthy"]) == (2000, 1, 1)
    assert a.node_state(0)["gpus"][0]["healthy"] is False
    assert [q["id"] for q in a.placements_on_unhealthy()] == [p["id"]]
    a.release(p["id"])
    a.check_invariants()
    assert a.placements_on_unhealthy() == []
    assert a.place_on(sched.Request(gpu_count=1), 0) is None
    a.set_gpu_health(0, 0, True)
    assert a.gpu_healthy(0, 0) is True
    assert a.place_on(sched.Request(gpu_count=1), 0)["gpus"] == [0]
    with pytest.raises(ValueError, match="gpu = 9"):
        a.set_gpu_health(0, 9, False)
    with pytest.raises(KeyError):
        a.set_gpu_health("ghost", 0, False)


# ---------------------------------------------------------------- device plugin Allocate
def _assumed(name, mem, t, idx):
    return {"name": name, "namespace": "ml", "gpu_mem": mem,
            "annotations": {"ALIYUN_COM_GPU_MEM_ASSIGNED": "false", "ALIYUN_COM_GPU_MEM_ASSUME_TIME": str(t),
                            "ALIYUN_COM_GPU_MEM_IDX": str(idx)}}


def test_device_plugin_allocate_oldest_matching_pod():
    devices = [{"uuid": "GPU-a", "index": 0}, {"uuid": "GPU-b", "index": 1}]
    pods = [_assumed("young", 4, 200, 0), _assumed("old", 4, 100, 1), _assumed("older-but-8", 8, 50, 0)]
    d = sched.device_plugin_allocate([2, 2], pods, devices, gpu_memory_per_device=16, now_ns=12345)
    assert d["ok"] and d["path"] == "assumed_pod"
    assert d["pod"] == {"name": "old", "namespace": "ml", "uid": ""}
    assert d["gpu_index"] == 1 and d["device_uuid"] == "GPU-b"
    assert d["container_envs"] == [{
        "NVIDIA_VISIBLE_DEVICES": "1", "ALIYUN_COM_GPU_MEM_IDX": "1", "ALIYUN_COM_GPU_MEM_POD": "4",
        "ALIYUN_COM_GPU_MEM_CONTAINER": "2", "ALIYUN_COM_GPU_MEM_DEV": "16"}] * 2
    assert d["pod_patch"] == {"ALIYUN_COM_GPU_MEM_ASSIGNED": "true", "ALIYUN_COM_GPU_MEM_ASSUME_TIME": "12345"}
    # no pod asks 3 on a two-GPU node: gpushare's error environment
    e = sched.device_plugin_allocate([3], pods, devices, gpu_memory_per_device=16, memory_unit="MiB")
    assert not e["ok"] and e["path"] == "error" and "aliyun.com/gpu-mem = 3" in e["error"]
    assert e["container_envs"][0]["NVIDIA_VISIBLE_DEVICES"] == "no-gpu-has-3MiB-to-run"
    assert e["container_envs"][0]["ALIYUN_COM_GPU_MEM_IDX"] == "-1"
    # one GPU: used directly, by UUID
    s = sched.device_plugin_allocate([3], pods, devices[:1], gpu_memory_per_device=16)
    assert s["path"] == "single_device" and s["container_envs"][0]["NVIDIA_VISIBLE_DEVICES"] == "GPU-a"


def test_device_plugin_reads_extender_bind_annotations():
    alloc = sched.Allocator(_cluster(), "gpushare")
    ext = sched.Extender(alloc)
    pod = {"metadata": {"name": "w", "namespace": "ml"},
           "spec": {"containers": [{"resources": {"limits": {sched.GPU_MEM_RESOURCE: "6"}}}]}}
    assert json.loads(ext.filter(json.dumps({"Pod": pod, "NodeNames": ["node-a"]})))["NodeNames"] == ["node-a"]
    b = json.loads(ext.bind(json.dumps({"PodName": "w", "PodNamespace": "ml", "Node": "node-a"})))
    pod["metadata"]["annotations"] = b["Annotations"]
    d = sched.device_plugin_allocate([6], [pod], [{"uuid": "GPU-0", "index": 0}, {"uuid": "GPU-1", "index": 1}],
                                     gpu_memory_per_device=16)
    assert d["ok"] and str(d["gpu_index"]) == b["Annotations"]["ALIYUN_COM_GPU_MEM_IDX"]


def test_device_plugin_bad_input_names_the_field():
    with pytest.raises(ValueError, match="container_requests"):
        sched.device_plugin_allocate([], [], [], gpu_memory_per_device=16)
    with pytest.raises(ValueError, match="memory_unit"):
        sched.device_plugin_allocate([1], [], [], gpu_memory_per_device=16, memory_unit="KiB")
    with pytest.raises(ValueError, match=r"devices\[1\].*duplicated"):
        sched.device_plugin_allocate([1], [], [{"uuid": "a", "index": 0}, {"uuid": "b", "index": 0}],
                                     gpu_memory_per_device=16)
    with pytest.raises(ValueError, match="gpu_memory_per_device"):
        sched.device_plugin_allocate([1], [], [], gpu_memory_per_device=True)


def test_every_native_name_is_reexported():
    from kubetune import _kubetune
    native = {n for n in dir(_kubetune.sched) if not n.startswith("_")}
    assert native <= set(sched.__all__) and all(getattr(sched, n) is getattr(_kubetune.sched, n) for n in native)
