"""The kustomize overlays, rendered by a real kubectl and checked offline.

Every rendered object is validated against the Kubernetes OpenAPI schemas (strict: unknown fields
fail) of the oldest and newest versions we claim, and the objects are cross-checked against each
other and against bentoconfiguration.yaml. tests/deploy/test_bento.py then runs the server the
way the rendered cpu Deployment would.
"""

from __future__ import annotations

import copy
import math

import pytest
import yaml

from tests.deploy.helpers import (
    DEPLOY,
    K8S_VERSIONS,
    OVERLAYS,
    ROOT,
    Obj,
    adapter_rules,
    assert_invalid_for_kubernetes,
    assert_valid_for_kubernetes,
    configmap_file,
    container,
    env_of,
    one,
    render,
    repo_config,
)

pytestmark = pytest.mark.processes

# BentoML's own health routes (the stand-in pod test in test_bento.py calls them for real).
BENTOML_ROUTES = {"/livez", "/healthz", "/readyz", "/metrics"}
# /readyz waits this long for the inner service before it answers (fixed in BentoML 1.4).
READYZ_DEPENDENCY_TIMEOUT_S = 5


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def objs(overlay: str) -> list[Obj]:
    return render(overlay)


def test_configmap_source_is_the_repository_file() -> None:
    # Kustomize cannot read ../../bentoconfiguration.yaml (load restrictor), so the base keeps a
    # copy; it must not drift from the file `bentoml serve` and the bento use.
    copy_path = DEPLOY / "base" / "bentoconfiguration.yaml"
    assert copy_path.read_bytes() == (ROOT / "bentoconfiguration.yaml").read_bytes(), (
        "deploy/base/bentoconfiguration.yaml differs from bentoconfiguration.yaml: "
        "cp bentoconfiguration.yaml deploy/base/bentoconfiguration.yaml"
    )


def test_rendered_kinds(objs: list[Obj]) -> None:
    kinds = sorted(o["kind"] for o in objs)
    assert kinds == sorted(["ConfigMap", "Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"])
    # A Service named `bentoml` injects BENTOML_PORT=tcp://... into pods with service links.
    assert all(o["metadata"]["name"] != "bentoml" for o in objs)


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_objects_match_the_kubernetes_schemas(objs: list[Obj], version: str) -> None:
    assert_valid_for_kubernetes(objs, version)


def test_the_validator_rejects_a_broken_deployment(objs: list[Obj]) -> None:
    # Guards the test above against a validator that accepts anything.
    broken = copy.deepcopy(one(objs, "Deployment"))
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["timeoutSecond"] = 10
    assert_invalid_for_kubernetes(broken)


def test_container_port_is_the_configured_port(objs: list[Obj]) -> None:
    ports = {p["name"]: p for p in container(objs)["ports"]}
    configured = repo_config()["services"]["Translation"]["http"]["port"]
    assert ports["http"]["containerPort"] == configured
    # Nothing may move the server off that port: PORT/BENTOML_PORT beat the config file.
    assert not {"PORT", "BENTOML_PORT"} & set(env_of(container(objs)))
    assert one(objs, "Deployment")["spec"]["template"]["spec"]["enableServiceLinks"] is False
    # The image's entrypoint and CMD (`bentoml serve --timeout-keep-alive 620 $BENTO_PATH`) run: no
    # command/args override.
    assert "command" not in container(objs) and "args" not in container(objs)


def test_bentoml_config_points_at_the_mounted_configmap(objs: list[Obj]) -> None:
    path = env_of(container(objs))["BENTOML_CONFIG"]["value"]
    configmap, key = configmap_file(objs, path)
    assert key in configmap["data"], f"ConfigMap {configmap['metadata']['name']} has no key {key}"
    assert configmap["data"][key] == (ROOT / "bentoconfiguration.yaml").read_text(encoding="utf-8")
    # The generator's hash suffix is what rolls the pods when the settings change.
    assert configmap["metadata"]["name"].startswith("translator-config-")


def test_api_keys_come_from_an_optional_secret_into_the_variable_the_docs_name(objs: list[Obj]) -> None:
    # Optional: without the Secret the pod starts (keys off by default); with keys_env set and no
    # Secret, the service itself refuses to start (tests/e2e/test_auth.py).
    source = env_of(container(objs))["TRANSLATOR_API_KEYS"]["valueFrom"]["secretKeyRef"]
    assert source == {"name": "translator-api-keys", "key": "keys", "optional": True}
    guide = (ROOT / "deploy" / "README.md").read_text(encoding="utf-8")
    assert "kubectl create secret generic translator-api-keys" in guide and "keys_env: TRANSLATOR_API_KEYS" in guide


def test_probes(objs: list[Obj]) -> None:
    c = container(objs)
    port_names = {p["name"] for p in c["ports"]}
    for name in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = c[name]
        assert probe["httpGet"]["path"] in BENTOML_ROUTES
        assert probe["httpGet"]["port"] in port_names
    assert c["livenessProbe"]["httpGet"]["path"] == "/livez"  # must not depend on the engine
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["startupProbe"]["httpGet"]["path"] == "/readyz"  # covers the model load
    assert c["readinessProbe"]["timeoutSeconds"] > READYZ_DEPENDENCY_TIMEOUT_S
    assert c["startupProbe"]["timeoutSeconds"] > READYZ_DEPENDENCY_TIMEOUT_S
    startup = c["startupProbe"]
    assert startup["failureThreshold"] * startup["periodSeconds"] >= 300, "model loading takes minutes"


def test_termination_covers_draining(objs: list[Obj]) -> None:
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    command = container(objs)["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    pre_stop = int(command[1])
    configmap, key = configmap_file(objs, env_of(container(objs))["BENTOML_CONFIG"]["value"])
    timeout = yaml.safe_load(configmap["data"][key])["services"]["Translation"]["traffic"]["timeout"]
    assert pod["terminationGracePeriodSeconds"] > pre_stop + timeout


def test_runs_as_the_image_user_on_a_read_only_root(objs: list[Obj]) -> None:
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    c = container(objs)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 1034
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    volumes = {v["name"]: v for v in pod["volumes"]}
    writable = {m["mountPath"] for m in c["volumeMounts"] if "emptyDir" in volumes[m["name"]]}
    # Where BentoML writes (exercised as UID 1034 on a read-only tree in test_bento.py).
    assert writable == {"/tmp", "/var/lib/bentoml"}
    assert env_of(c)["TMPDIR"]["value"] == "/tmp"
    assert env_of(c)["BENTOML_HOME"]["value"] == "/var/lib/bentoml"


def test_resources_and_thread_count(overlay: str, objs: list[Obj]) -> None:
    c = container(objs)
    requests, limits = c["resources"]["requests"], c["resources"]["limits"]
    for name in ("cpu", "memory"):
        assert name in requests and name in limits
    omp = env_of(c)["OMP_NUM_THREADS"]["valueFrom"]["resourceFieldRef"]
    assert omp["resource"] == "limits.cpu" and "cpu" in limits
    assert math.ceil(float(limits["cpu"])) >= 1
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    if overlay == "gpu":
        assert int(limits["nvidia.com/gpu"]) == 1
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
        assert env_of(c)["NVIDIA_DRIVER_CAPABILITIES"]["value"] == "compute,utility"
    else:
        assert "nvidia.com/gpu" not in limits and "nvidia.com/gpu" not in requests
        assert "tolerations" not in pod


def test_service_reaches_the_pods(objs: list[Obj]) -> None:
    service = one(objs, "Service")
    pod_labels = one(objs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    [port] = service["spec"]["ports"]
    named = {p["name"]: p["containerPort"] for p in container(objs)["ports"]}
    assert port["targetPort"] in named, "targetPort must name a container port"
    assert port["port"] == named[port["targetPort"]] == 9527


def test_pdb_selects_the_pods(objs: list[Obj]) -> None:
    pdb = one(objs, "PodDisruptionBudget")
    deployment = one(objs, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert pdb["spec"]["selector"] == deployment["spec"]["selector"]
    assert pdb["spec"]["maxUnavailable"] == 1
    assert one(objs, "HorizontalPodAutoscaler")["spec"]["minReplicas"] > pdb["spec"]["maxUnavailable"]


def test_hpa(overlay: str, objs: list[Obj]) -> None:
    hpa = one(objs, "HorizontalPodAutoscaler")
    deployment = one(objs, "Deployment")
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"], target["name"]) == (
        deployment["apiVersion"],
        deployment["kind"],
        deployment["metadata"]["name"],
    )
    assert "replicas" not in deployment["spec"], "the HPA owns the replica count"
    assert hpa["spec"]["minReplicas"] >= 2 and hpa["spec"]["maxReplicas"] > hpa["spec"]["minReplicas"]

    metrics = hpa["spec"]["metrics"]
    pods = [m["pods"] for m in metrics if m["type"] == "Pods"]
    assert len(pods) == 1
    served = {rule["name"]["as"] for rule in adapter_rules()}
    assert pods[0]["metric"]["name"] in served, "the HPA reads a metric prometheus-adapter does not serve"
    assert pods[0]["target"]["type"] == "AverageValue"
    cpu = [m["resource"] for m in metrics if m["type"] == "Resource" and m["resource"]["name"] == "cpu"]
    if overlay == "cpu":
        assert cpu and cpu[0]["target"]["type"] == "Utilization"
        assert 0 < cpu[0]["target"]["averageUtilization"] < 100
    else:
        assert not cpu, "GPU pods scale on load, not on host CPU"

    behavior = hpa["spec"]["behavior"]
    # Scale down far more slowly than up: a new pod costs minutes of model loading.
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] >= 300
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] > behavior["scaleUp"]["stabilizationWindowSeconds"]
    assert all(p["type"] == "Pods" and p["value"] == 1 for p in behavior["scaleDown"]["policies"])


def test_adapter_rules_are_per_pod_and_read_metrics_the_engine_exports() -> None:
    from translator.engine import metrics

    exported = {metrics.PREDICTED_WAIT._name, metrics.QUEUE_PIECES._name}
    rules = adapter_rules()
    assert exported <= {rule["name"]["matches"].strip("^$") for rule in rules}
    for rule in rules:
        assert rule["resources"]["overrides"]["pod"] == {"resource": "pod"}
        assert rule["resources"]["overrides"]["namespace"] == {"resource": "namespace"}
        assert "by (<<.GroupBy>>)" in rule["metricsQuery"]


def test_hpa_scales_on_the_schedulers_predicted_wait(objs: list[Obj]) -> None:
    hpa = one(objs, "HorizontalPodAutoscaler")
    [pods] = [m["pods"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods"]
    assert pods["metric"]["name"] == "translator_predicted_wait_seconds"
