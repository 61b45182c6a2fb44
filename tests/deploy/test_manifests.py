"""The deployment files agree with each other and with the app (ports, health path, affinity cookie)."""

from __future__ import annotations

import json
import re

import pytest

from .conftest import NGINX_SITE, ROOT

DEPLOY = ROOT / "deploy"
HEALTH = "/_stcore/health"


def cookie_name() -> str:
    m = re.search(r"map \$cookie_(\w+) \$attnlab_route", NGINX_SITE.read_text(encoding="utf-8"))
    assert m, "deploy/nginx.conf: no route-cookie map"
    return m.group(1)


def test_dockerfile_serves_the_app_as_documented():
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert lines[0] == "FROM python:3.11-slim"
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0"), "the app must not run as root"
    cmd = [line for line in lines if line.startswith("CMD [")][-1]  # not the HEALTHCHECK's CMD
    assert json.loads(cmd[4:]) == [
        "streamlit", "run", "app.py", "--server.port", "8501", "--server.address", "0.0.0.0",
        "--browser.gatherUsageStats", "false"]
    health = text[text.index("HEALTHCHECK"):]
    assert f"http://localhost:8501{HEALTH}" in health.split("CMD", 1)[1].splitlines()[0]
    # the CPU index is a build argument, never a hard-coded index
    assert 'ARG TORCH_INDEX_URL=""' in lines
    assert not any("download.pytorch.org" in line for line in lines), "the torch index must stay a build argument"
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    for path in (".git", ".venv", "tests", ".streamlit/secrets.toml"):
        assert path in ignored, f".dockerignore lets {path} into the image"


def test_compose_and_kubernetes_manifests_agree():
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed: the manifests were not parsed")
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    app, proxy = compose["services"]["app"], compose["services"]["nginx"]
    assert (DEPLOY / app["build"]["context"] / app["build"]["dockerfile"]).resolve() == ROOT / "Dockerfile"
    assert "./nginx.conf:/etc/nginx/conf.d/default.conf:ro" in proxy["volumes"]
    assert proxy["depends_on"]["app"]["condition"] == "service_healthy"
    assert "server app:8501 " in NGINX_SITE.read_text(encoding="utf-8"), "nginx.conf must point at the compose service"

    docs = [doc for f in sorted((DEPLOY / "k8s").glob("*.yaml")) for doc in yaml.safe_load_all(f.read_text("utf-8")) if doc]
    k8s = {doc["kind"]: doc for doc in docs if doc.get("metadata", {}).get("name", "attention-lab") == "attention-lab"}
    kustomized = set(k8s["Kustomization"]["resources"])
    assert kustomized == {f.name for f in (DEPLOY / "k8s").glob("*.yaml")} - {"kustomization.yaml"}
    dep, svc, ing = k8s["Deployment"], k8s["Service"], k8s["Ingress"]
    assert dep["spec"]["replicas"] == 2
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert svc["spec"]["selector"].items() <= labels.items(), "the Service selects no pod of the Deployment"
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": 8501}
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": HEALTH, "port": "http"}, probe
    res = container["resources"]
    assert {"cpu", "memory"} <= res["requests"].keys() and "memory" in res["limits"]
    assert dep["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    assert [p["targetPort"] for p in svc["spec"]["ports"]] == ["http"]

    # the live classes: every replica on one Redis (compose's service "redis", the k8s Service attention-lab-redis)
    assert app["environment"]["ATTN_LAB_STORE"] == "redis://redis:6379/0" and "redis" in compose["services"]
    store = {e["name"]: e["value"] for e in container["env"]}["ATTN_LAB_STORE"]
    redis = {(d["kind"], d.get("metadata", {}).get("name")): d for d in docs}
    redis_svc = redis[("Service", "attention-lab-redis")]
    assert store == f"redis://{redis_svc['metadata']['name']}:{redis_svc['spec']['ports'][0]['port']}/0"
    redis_pods = redis[("Deployment", "attention-lab-redis")]["spec"]["template"]["metadata"]["labels"]
    assert redis_svc["spec"]["selector"].items() <= redis_pods.items(), "the Redis Service selects no Redis pod"

    notes = ing["metadata"]["annotations"]
    assert ing["spec"]["ingressClassName"] == "nginx"
    assert notes["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    assert notes["nginx.ingress.kubernetes.io/session-cookie-name"] == cookie_name()
    assert int(notes["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    (rule,) = ing["spec"]["rules"]
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == svc["metadata"]["name"]
    assert backend["port"]["name"] in {p["name"] for p in svc["spec"]["ports"]}


def test_every_way_of_serving_sets_the_same_malloc_arenas():
    """The image, scripts/run.sh and the benchmarks' servers run with the same MALLOC_ARENA_MAX (what BENCHMARKS.md
    measured: a class's session threads keep 200–400 MB more with one arena per thread)."""
    from bench.serve import SERVER_ENV

    value = SERVER_ENV["MALLOC_ARENA_MAX"]
    assert re.search(rf"^\s*MALLOC_ARENA_MAX={value}\s*$", (ROOT / "Dockerfile").read_text(encoding="utf-8"), re.M)
    run = (ROOT / "scripts" / "run.sh").read_text(encoding="utf-8")
    assert f'export MALLOC_ARENA_MAX="${{MALLOC_ARENA_MAX:-{value}}}"' in run
    assert run.index("MALLOC_ARENA_MAX") < run.index("streamlit run")
