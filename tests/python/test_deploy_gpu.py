"""deploy/gpu: the kubetune-extender manifests, scheduler configuration and image agree with each other and with
what the extender serves and needs.

Static checks (no cluster): every YAML document parses; the ClusterRole grants exactly what the extender uses; the
Deployment is a single Recreate replica whose probes hit /healthz and /readyz on its container port; the Service and
the scheduler config's urlPrefix reach that port; the scheduler config uses only KubeSchedulerConfiguration v1
Extender field names, the verbs the server serves and both managed resources with ignoredByScheduler; the image's
entry point is the kubetune-extender console script with an extra that exists. Live checks (when the extension
is built): kubetune-extender's own argument parser accepts the Deployment's and the image's arguments, and the real
C++ server, started on 127.0.0.1, serves every configured verb under urlPrefix's path and the probes' paths.
"""
from __future__ import annotations

import http.client
import json
import re
import shlex
from urllib.parse import urlsplit

import pytest

from conftest import ROOT

yaml = pytest.importorskip("yaml")

DEPLOY = ROOT / "deploy" / "gpu"
NAMESPACE = "kube-system"
NAME = "kubetune-extender"
# The verbs the extender's HTTP server serves under its prefix (Extender::handle: filter, prioritize, bind, preempt;
# `release` is a library verb kube-scheduler never calls, so it stays out of the scheduler config).
SERVED_VERBS = {"filterVerb": "filter", "prioritizeVerb": "prioritize", "bindVerb": "bind", "preemptVerb": "preempt"}
MANAGED_RESOURCES = {"aliyun.com/gpu-mem", "aliyun.com/gpu-core.percentage"}
# The JSON names of kubescheduler.config.k8s.io/v1 Extender and ExtenderManagedResource (k8s.io/kube-scheduler,
# config/v1/types.go): a misspelt key is silently dropped by kube-scheduler's lenient decoding of some versions.
EXTENDER_FIELDS = {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb", "enableHTTPS",
                   "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable"}
MANAGED_RESOURCE_FIELDS = {"name", "ignoredByScheduler"}
# (API group, resource, verb) the extender uses: list/watch nodes and pods, get a pod, patch its annotations, create
# its Binding. Nothing else.
LEAST_PRIVILEGE = {("", "nodes", v) for v in ("get", "list", "watch")} | \
                  {("", "pods", v) for v in ("get", "list", "watch", "patch")} | {("", "pods/binding", "create")}


# ---------------------------------------------------------------- loading
def _documents():
    docs = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs.append((path.name, doc))
    return docs


def _one(kind: str, name: str = NAME) -> dict:
    found = [d for _, d in _documents() if d.get("kind") == kind and d.get("metadata", {}).get("name") == name]
    assert len(found) == 1, f"expected one {kind} {name!r} in deploy/gpu, found {len(found)}"
    return found[0]


def _scheduler_config() -> dict:
    found = [d for _, d in _documents() if d.get("kind") == "KubeSchedulerConfiguration"]
    assert len(found) == 1
    return found[0]


def _container(deployment: dict) -> dict:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def _container_port(container: dict, port) -> int:
    """A probe's or Service's port, by number or by the container port's name."""
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    return ports[port] if isinstance(port, str) else port


def _args(container: dict) -> dict:
    """--flag=value / --flag value arguments of the container as {flag: value}."""
    out, args = {}, list(container.get("args", []))
    while args:
        a = args.pop(0)
        assert a.startswith("--"), a
        flag, eq, value = a[2:].partition("=")
        out[flag] = value if eq else args.pop(0)
    return out


def _native_sched(feature: str):
    """The extension's sched module, skipping when it predates ``feature`` (an in-place build older than the sources)."""
    from kubetune import _kubetune

    if not hasattr(_kubetune.sched, feature):
        pytest.skip(f"the built extension has no sched.{feature}: rebuild it (scripts/build.sh)")
    return _kubetune.sched


def _kube_cli():
    pytest.importorskip("kubernetes")
    _native_sched("KubeWriter")
    from kubetune.sched import kube

    return kube


def _request(port: int, method: str, path: str, body: str = "") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, body=body.encode(), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def _dockerfile_final_stage() -> list:
    """(instruction, argument) of the Dockerfile's last stage, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text())
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    steps = [tuple(ln.split(None, 1)) + ("",) for ln in lines]
    last_from = max(i for i, s in enumerate(steps) if s[0].upper() == "FROM")
    return [(s[0].upper(), s[1].strip()) for s in steps[last_from:]]


# ---------------------------------------------------------------- tests
def test_every_document_parses_and_has_a_kind():
    docs = _documents()
    files = {f for f, _ in docs}
    assert {"extender.yaml", "scheduler-config.yaml", "example-pod.yaml"} <= files
    for f, d in docs:
        assert d.get("apiVersion") and d.get("kind"), f"{f}: document without apiVersion/kind"
    kinds = sorted(d["kind"] for f, d in docs if f == "extender.yaml")
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "ServiceAccount"]


def test_rbac_is_exactly_least_privilege():
    role = _one("ClusterRole")
    granted = set()
    for rule in role["rules"]:
        assert set(rule) <= {"apiGroups", "resources", "verbs"}, f"unexpected rule keys {sorted(rule)}"
        for group in rule["apiGroups"]:
            for res in rule["resources"]:
                for verb in rule["verbs"]:
                    assert "*" not in (group, res, verb), rule
                    granted.add((group, res, verb))
    assert granted == LEAST_PRIVILEGE

    sa = _one("ServiceAccount")
    assert sa["metadata"]["namespace"] == NAMESPACE
    binding = _one("ClusterRoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]
    assert _one("Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == NAME


def test_deployment_is_one_recreated_replica_in_kube_system():
    dep = _one("Deployment")
    assert dep["metadata"]["namespace"] == NAMESPACE
    assert dep["spec"]["replicas"] == 1
    assert dep["spec"]["strategy"] == {"type": "Recreate"}
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_probes_hit_healthz_and_readyz_on_the_container_port():
    c = _container(_one("Deployment"))
    port = int(_args(c)["port"])
    assert [p["containerPort"] for p in c["ports"]] == [port]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = c[probe]["httpGet"]
        assert get["path"] == path
        assert _container_port(c, get["port"]) == port
        assert get.get("scheme", "HTTP") == "HTTP"


def test_container_is_locked_down_and_bounded():
    pod = _one("Deployment")["spec"]["template"]["spec"]
    c = _container(_one("Deployment"))
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] is True
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert "privileged" not in sc or sc["privileged"] is False
    assert not pod.get("hostNetwork") and not pod.get("hostPID")
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(c["resources"][kind]), kind
    # The read-only root needs the writable /tmp the image uses as its working directory.
    tmp = [m for m in c["volumeMounts"] if m["mountPath"] == "/tmp"]
    assert len(tmp) == 1
    assert {v["name"]: v for v in pod["volumes"]}[tmp[0]["name"]].get("emptyDir") is not None


def test_service_and_scheduler_url_reach_the_container_port():
    dep, svc = _one("Deployment"), _one("Service")
    c = _container(dep)
    port = int(_args(c)["port"])
    assert svc["metadata"]["namespace"] == NAMESPACE
    assert svc["spec"].get("type", "ClusterIP") == "ClusterIP"
    assert svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
    (sp,) = svc["spec"]["ports"]
    assert sp["port"] == port
    assert _container_port(c, sp.get("targetPort", sp["port"])) == port

    (ext,) = _scheduler_config()["extenders"]
    url = urlsplit(ext["urlPrefix"])
    assert url.scheme == "http"
    assert url.hostname == f"{svc['metadata']['name']}.{NAMESPACE}.svc"
    assert url.port == sp["port"]
    assert url.path == _args(c)["prefix"] == "/gpushare-scheduler"


def test_scheduler_config_extender_fields_verbs_and_resources():
    cfg = _scheduler_config()
    assert cfg["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    (ext,) = cfg["extenders"]
    assert set(ext) <= EXTENDER_FIELDS, f"not Extender v1 fields: {sorted(set(ext) - EXTENDER_FIELDS)}"
    verbs = {k: v for k, v in ext.items() if k.endswith("Verb")}
    assert verbs == SERVED_VERBS
    assert ext["weight"] == 1
    assert ext["enableHTTPS"] is False
    assert ext["nodeCacheCapable"] is True
    assert ext["httpTimeout"] == "30s"
    assert ext["ignorable"] is False
    for r in ext["managedResources"]:
        assert set(r) <= MANAGED_RESOURCE_FIELDS, sorted(r)
        assert r["ignoredByScheduler"] is True, r["name"]
    names = [r["name"] for r in ext["managedResources"]]
    assert sorted(names) == sorted(MANAGED_RESOURCES)


def test_deployment_unit_matches_and_example_pod_is_managed():
    args = _args(_container(_one("Deployment")))
    assert args["gpu-mem-unit"] in ("GiB", "MiB")
    assert args["policy"] in ("best_fit", "gpushare", "binpack", "spread")
    pod = _one("Pod", "gpu-share-example")
    (c,) = pod["spec"]["containers"]
    limits = c["resources"]["limits"]
    assert limits["aliyun.com/gpu-mem"] == 4
    assert set(limits) <= MANAGED_RESOURCES | {"cpu", "memory"}


def test_dockerfile_runs_kubetune_extender_unprivileged_on_the_port():
    stage = _dockerfile_final_stage()
    by = {}
    for ins, arg in stage:
        by.setdefault(ins, []).append(arg)
    assert json.loads(by["ENTRYPOINT"][-1]) == ["kubetune-extender"]
    c = _container(_one("Deployment"))
    port = int(_args(c)["port"])
    assert by["EXPOSE"] == [str(port)]
    user = by["USER"][-1].split(":")[0]
    assert user.isdigit() and int(user) != 0
    pod_sc = _one("Deployment")["spec"]["template"]["spec"]["securityContext"]
    assert pod_sc["runAsUser"] == int(user)
    cmd = json.loads(by["CMD"][-1])
    assert cmd[cmd.index("--port") + 1] == str(port)


def test_dockerfile_extra_and_console_script_exist_in_pyproject():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"].get("kubetune-extender") == "kubetune.sched.kube:main"
    extras = [shlex.split(a)[0].split("=", 1)[1] for ins, a in _dockerfile_final_stage()
              if ins == "ARG" and a.startswith("KUBETUNE_EXTRAS=")]
    assert len(extras) == 1
    # pip only warns about an unknown extra: the image would then lack the Kubernetes client.
    deps = project["optional-dependencies"][extras[0]]
    assert any(re.match(r"kubernetes\b", d) for d in deps), deps


def test_kubetune_extender_accepts_the_deployment_and_image_arguments():
    kube = _kube_cli()

    def parse(argv):
        try:
            return kube._parser().parse_args(argv)
        except SystemExit:  # argparse refused a flag or a value (its message is on stderr)
            pytest.fail(f"kubetune-extender refuses the arguments {argv}")

    c = _container(_one("Deployment"))
    ns = parse(c["args"])
    assert ns.port == c["ports"][0]["containerPort"]
    assert ns.prefix == urlsplit(_scheduler_config()["extenders"][0]["urlPrefix"]).path
    assert ns.host == "0.0.0.0"  # reachable through the Service
    assert ns.kubeconfig is None and ns.api_server is None  # in-cluster ServiceAccount credentials
    cmd = dict(_dockerfile_final_stage())["CMD"]
    assert parse(json.loads(cmd)).port == ns.port


def test_configured_verbs_and_probe_paths_are_served_by_the_real_server():
    native = _native_sched("ExtenderHttpServer")
    from kubetune import sched

    c = _container(_one("Deployment"))
    args = _args(c)
    (ext,) = _scheduler_config()["extenders"]
    prefix = urlsplit(ext["urlPrefix"]).path
    extender = native.Extender(policy=args["policy"], gpu_mem_unit_mib=1024 if args["gpu-mem-unit"] == "GiB" else 1)
    with sched.ExtenderServer(extender, "127.0.0.1", 0, args["prefix"]) as srv:
        port = srv.address[1]
        assert _request(port, "POST", f"{prefix}/no-such-verb", "{}") == 404  # the control: unknown paths are 404
        for key in SERVED_VERBS:
            status = _request(port, "POST", f"{prefix}/{ext[key]}", "{}")
            assert status not in (404, 405), f"{key} {ext[key]!r}: HTTP {status}"
        assert _request(port, "GET", c["livenessProbe"]["httpGet"]["path"]) == 200
        # Not synced with an API server: not ready, so the Service would send kube-scheduler nothing yet.
        assert _request(port, "GET", c["readinessProbe"]["httpGet"]["path"]) == 503
