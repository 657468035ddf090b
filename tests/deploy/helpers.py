"""Rendering the kustomize overlays with a real kubectl, reading and validating what they render,
and checking a pod that runs them: the stand-in pod (tests/deploy/test_bento.py) and the image
(tests/image)."""

from __future__ import annotations

import functools
import http.client
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
OVERLAYS = ("cpu", "gpu")
INSTALLER = DEPLOY / "tools" / "install-kubectl.sh"
ADAPTER_VALUES = DEPLOY / "monitoring" / "prometheus-adapter-values.yaml"
# Oldest and newest Kubernetes the manifests are validated for (PDB unhealthyPodEvictionPolicy and
# HPA behavior need >= 1.27; kubernetes-validate carries schemas up to 1.37).
K8S_VERSIONS = ("1.30.0", "1.37.0")

Obj = dict[str, Any]


@functools.cache
def kubectl() -> Path:
    """The pinned kubectl, installed (once, cached under build/tools) by the project's script."""
    done = subprocess.run(
        ["bash", str(INSTALLER)],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{INSTALLER.name} failed:\n{done.stderr[-3000:]}"
    path = Path(done.stdout.strip().splitlines()[-1])
    assert path.is_file(), path
    return path


@functools.cache
def render_text(overlay: str) -> str:
    return render_dir_text(DEPLOY / "overlays" / overlay)


@functools.cache
def render_dir_text(directory: Path) -> str:
    done = subprocess.run(
        [str(kubectl()), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"kubectl kustomize {directory} failed:\n{done.stderr}"
    return done.stdout


def render(overlay: str) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(render_text(overlay)) if doc]


def render_dir(directory: Path) -> list[Obj]:
    """Any kustomization under deploy/ (the overlays, the jobs), rendered."""
    return [doc for doc in yaml.safe_load_all(render_dir_text(directory)) if doc]


def _kubernetes_validate() -> Any:
    # Imported when first needed: the e2e tests import this module too, and need no Kubernetes schemas.
    try:
        import kubernetes_validate
    except ImportError as exc:  # pragma: no cover - a set-up problem, reported as such
        raise ImportError("tests/deploy needs kubernetes-validate: pip install -r requirements-dev.txt") from exc
    return kubernetes_validate


def assert_valid_for_kubernetes(objs: list[Obj], version: str) -> None:
    """Every object valid against the Kubernetes OpenAPI schemas of `version`; strict: unknown
    fields fail."""
    validator = _kubernetes_validate()
    for obj in objs:
        try:
            validator.validate(obj, version, strict=True)
        except validator.ValidationError as exc:
            pytest.fail(f"{obj['kind']}/{obj['metadata']['name']} is invalid for Kubernetes {version}: {exc}")


def assert_invalid_for_kubernetes(obj: Obj) -> None:
    """`obj` refused by the newest schemas: what guards the check above against a validator that
    accepts anything."""
    validator = _kubernetes_validate()
    with pytest.raises(validator.ValidationError):
        validator.validate(obj, K8S_VERSIONS[-1], strict=True)


def one(objs: list[Obj], kind: str) -> Obj:
    found = [o for o in objs if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def container(objs: list[Obj]) -> Obj:
    containers = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def env_of(c: Obj) -> dict[str, Obj]:
    return {e["name"]: e for e in c.get("env", [])}


def configmap_file(objs: list[Obj], path: str) -> tuple[Obj, str]:
    """The ConfigMap and key that the container sees at `path`, following its volume mounts."""
    c = container(objs)
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in c.get("volumeMounts", []):
        prefix = mount["mountPath"].rstrip("/") + "/"
        if not path.startswith(prefix):
            continue
        source = volumes[mount["name"]].get("configMap")
        assert source is not None, f"{path} is mounted from {volumes[mount['name']]}, not a ConfigMap"
        key = mount.get("subPath") or path[len(prefix) :]
        maps = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == source["name"]]
        assert len(maps) == 1, f"no ConfigMap named {source['name']} in the rendered objects"
        return maps[0], key
    raise AssertionError(f"nothing is mounted at {path}")


def repo_config() -> Obj:
    return yaml.safe_load((ROOT / "bentoconfiguration.yaml").read_text(encoding="utf-8"))


def adapter_rules() -> list[Obj]:
    return yaml.safe_load(ADAPTER_VALUES.read_text(encoding="utf-8"))["rules"]["custom"]


# --------------------------------------------------------------------------- a pod, as the kubelet sees it


def quantity(value: str) -> float:
    units = {"m": 1e-3, "": 1.0}
    number, unit = re.fullmatch(r"([0-9.]+)(m?)", str(value)).groups()  # type: ignore[union-attr]
    return float(number) * units[unit]


def pod_env(c: Obj, path: Callable[[str], str] = lambda value: value) -> dict[str, str]:
    """The Deployment's env as the kubelet would resolve it (only the sources it uses); `path` maps
    a value (a path in the container) to where the pod's filesystem is, for the stand-in pod."""
    out = {}
    for item in c.get("env", []):
        if "value" in item:
            out[item["name"]] = path(item["value"])
            continue
        source = item["valueFrom"]
        if "secretKeyRef" in source:
            # No Secret exists in the test pod's namespace: an optional reference leaves the
            # variable unset, as the kubelet does; any other would keep the container from starting.
            assert source["secretKeyRef"].get("optional") is True, f"{item['name']} needs a Secret"
            continue
        ref = source["resourceFieldRef"]
        resource_kind, resource = ref["resource"].split(".")
        amount = quantity(c["resources"][resource_kind][resource]) / quantity(ref.get("divisor", "1"))
        out[item["name"]] = str(math.ceil(amount))
    return out


def probe(url: str, spec: Obj) -> tuple[int, float]:
    started = time.monotonic()
    response = requests.get(url + spec["httpGet"]["path"], timeout=spec["timeoutSeconds"])
    return response.status_code, time.monotonic() - started


def probes_answer_within_their_timeouts(url: str, manifest: Obj) -> None:
    """The container's startup, readiness and liveness probes, each answered 200 within its timeout."""
    for name in ("startupProbe", "readinessProbe", "livenessProbe"):
        spec = manifest[name]
        status, elapsed = probe(url, spec)
        assert status == 200, f"{name} {spec['httpGet']['path']} -> {status}"
        assert elapsed < spec["timeoutSeconds"], f"{name} took {elapsed:.1f}s"


def wait_for_startup(
    url: str, startup: Obj, budget_s: float, gone: Callable[[], str | None], log: Callable[[], str]
) -> float:
    """Polls the startup probe as the kubelet does (each try within its timeout) until it passes;
    the seconds it took. `gone` says why the server is no longer there, or None while it is.

    Before the engine gate (translator/api/engine_gate.py), a /readyz sent while the engine loaded stayed
    open until traffic.timeout and delayed the exit on SIGTERM by as much; now it answers 503 at
    once until the model is loaded and the dispatcher warmed up, so polling it is safe.
    """
    started = time.monotonic()
    assert budget_s <= startup["periodSeconds"] * startup["failureThreshold"], "budget past the probe's"
    while time.monotonic() - started < budget_s:
        reason = gone()
        if reason:
            pytest.fail(reason)
        try:
            status, elapsed = probe(url, startup)
        except requests.RequestException:
            status, elapsed = 0, 0.0
        assert elapsed < startup["timeoutSeconds"], f"/readyz took {elapsed:.1f}s during start-up"
        if status == 200:
            return time.monotonic() - started
        time.sleep(0.5)
    pytest.fail(f"not up within {budget_s:.0f}s:\n{log()}")


def corpus() -> list[dict[str, Any]]:
    lines = (ROOT / "fixture" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def en_sentences() -> list[str]:
    return [sentence for item in corpus() if item["src_lang"] == "en" for sentence in item["source"]]


def body(text: str, record_id: str = "1") -> dict[str, Any]:
    return {"payload": {"fromLang": "en", "toLang": "fr", "records": [{"id": record_id, "text": text}]}}


def serves_the_fixture(url: str) -> None:
    """The fixture reproduces its corpus exactly: the right answer proves the bundled fixture (not
    a decoy, not another model) is what the pod serves, through the contract's exact shape."""
    pair = next(p for p in corpus() if (p["src_lang"], p["tgt_lang"]) == ("en", "fr"))
    languages = requests.get(url + "/languages", timeout=10).json()["languages"]
    assert {"en", "fr"} <= set(languages)
    reply = requests.post(url + "/translation", json=body(pair["source"][0]), timeout=60)
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"result": [{"id": "1", "text": pair["target"][0]}]}


def keeps_idle_connections(url: str, idle_s: float = 6.0) -> None:
    """A connection left idle longer than uvicorn's default keep-alive (5 s) still takes the next
    request: the server was started with --timeout-keep-alive (translator/contract/limits.py says
    why), a hidden `bentoml serve` flag pinned here on a running server."""
    address = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)

    def ask() -> tuple[int, str | None]:
        connection.request("POST", "/translation", json.dumps(body("Hello.")), {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        return response.status, response.getheader("Connection")

    try:
        answers = [ask()]
        first = connection.sock
        time.sleep(idle_s)
        answers.append(ask())
        # The same socket both times: http.client opens a new one only after the old one is closed.
        assert connection.sock is first
        assert answers == [(200, None), (200, None)], answers
    finally:
        connection.close()


def engine_calls(url: str) -> float:
    """Requests' calls at the engine now (its channel's calls in flight)."""
    from harness.metrics import samples

    found = samples(requests.get(url + "/metrics", timeout=10).text, "translation_engine_calls_in_flight")
    assert found, "/metrics has no translation_engine_calls_in_flight"
    return sum(value for _, value in found)


def in_progress(url: str, metric: str, endpoint: str = "/translation") -> float:
    """The HPA's signal, read as prometheus-adapter reads it: the series for POST /translation."""
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    found = False
    for family in text_string_to_metric_families(requests.get(url + "/metrics", timeout=10).text):
        for sample in family.samples:
            if sample.name == metric and sample.labels.get("endpoint") == endpoint:
                total += sample.value
                found = True
    assert found, f'/metrics has no {metric}{{endpoint="{endpoint}"}} series'
    return total


IN_FLIGHT = 20
SENTENCES_PER_REQUEST = 40


def drain_on_sigterm(
    url: str, sigterm: Callable[[], None], wait_exit: Callable[[], int], log: Callable[[], str]
) -> str:
    """IN_FLIGHT requests of many sentences each, all at the engine, then `sigterm()` (SIGTERM to
    the container's PID 1, as the kubelet sends it), then `wait_exit()` (its exit code, within the
    grace period). Every request in flight must be answered, its own record back whole; one sent after the signal
    refused cleanly; the exit code 0. Returns a line of what happened, for the test's output."""
    # The series the prometheus-adapter rules read (and so the HPA) must exist under these names.
    series = {re.match(r"(\w+)\{", rule["seriesQuery"]).group(1) for rule in adapter_rules()}  # type: ignore[union-attr]
    exposed = requests.get(url + "/metrics", timeout=10).text
    assert all(name in exposed for name in series), f"/metrics lacks one of {series}"
    metric = "bentoml_service_request_in_progress"
    assert metric in series
    # Many sentences per record, each numbered apart ("... milk 417."), so that neither the sentence
    # cache nor the engine's deduplication can make the work cheap: the corpus has 48 English
    # sentences, and 20 requests of them rotated were two batches, done before a loaded machine's
    # first read of the gauge (CI failed so). Numbered, they are 800 pieces: requests span many
    # batches and stay in flight while the signal comes. The fixture still ends each with its mark.
    sentences = en_sentences()

    def text_for(i: int) -> str:
        numbered = []
        for k in range(SENTENCES_PER_REQUEST):
            sentence = sentences[(i + k) % len(sentences)]
            numbered.append(f"{sentence[:-1]} {i * SENTENCES_PER_REQUEST + k}{sentence[-1]}")
        return " ".join(numbered)

    results: list[tuple[int, float, Any, int]] = []
    lock = threading.Lock()

    def send(i: int) -> None:
        outcome: tuple[int, float, Any, int]
        try:
            reply = requests.post(url + "/translation", json=body(text_for(i), str(i)), timeout=300)
            try:
                outcome = (reply.status_code, time.monotonic(), reply.json(), i)
            except ValueError:
                outcome = (reply.status_code, time.monotonic(), reply.text, i)
        except requests.RequestException as exc:
            outcome = (0, time.monotonic(), repr(exc), i)
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(IN_FLIGHT)]
    for thread in threads:
        thread.start()
    # At least half of them in flight at once (on the gauge the HPA reads): how many more get there
    # before the first finishes depends on the machine's speed, which a test must not.
    deadline = time.monotonic() + 30
    while in_progress(url, metric) < IN_FLIGHT // 2:
        assert time.monotonic() < deadline, f"fewer than {IN_FLIGHT // 2} requests ever in flight at once"
        time.sleep(0.05)

    # Then all of them at the engine, as in Kubernetes, where SIGTERM follows the preStop sleep and
    # so finds every request long past the API worker's few milliseconds of parsing. A request the
    # API worker has not yet handed on when the engine stops accepting connections is answered 503
    # with Retry-After (tests/unit/test_engine_client.py), and must not take the others with it.
    while engine_calls(url) + len(results) < IN_FLIGHT:
        assert time.monotonic() < deadline, "the requests never all reached the engine"
        time.sleep(0.05)

    signalled = time.monotonic()
    sigterm()
    # A request arriving after the signal (Kubernetes has removed the pod from its endpoints by
    # then, but a client may hold an old connection) is refused cleanly: no 500, no hang.
    time.sleep(0.5)
    late_started = time.monotonic()
    try:
        late: Any = requests.post(url + "/translation", json=body(text_for(0), "late"), timeout=60).status_code
    except requests.ConnectionError:
        late = "refused"
    late_s = time.monotonic() - late_started
    code = wait_exit()
    exited = time.monotonic() - signalled
    for thread in threads:
        thread.join(timeout=10)

    assert len(results) == IN_FLIGHT, f"{IN_FLIGHT - len(results)} requests got no answer"
    failed = [r for r in results if r[0] != 200]
    assert not failed, f"{len(failed)} in-flight requests failed: {failed[:3]}\n{log()}"
    # Each its own record back, with as many sentences as it sent (the fixture keeps the count).
    for _, _, data, i in results:
        [record] = data["result"]
        assert record["id"] == str(i) and record["text"].strip(), data
        assert len(re.findall(r"[.!?。！？]", record["text"])) >= SENTENCES_PER_REQUEST // 2, record["text"][:200]
    finished_after = sum(1 for r in results if r[1] > signalled)
    assert finished_after >= IN_FLIGHT // 4, f"only {finished_after} answered after SIGTERM: no drain exercised"
    assert code == 0, f"exit code {code} after SIGTERM:\n{log()}"
    assert late in ("refused", 200, 503) and late_s < 30, f"a request after SIGTERM got {late} in {late_s:.1f}s"
    last = max(r[1] for r in results) - signalled
    return (
        f"{finished_after}/{IN_FLIGHT} requests answered after SIGTERM, the last {last:.1f}s after it; "
        f"exited {exited:.1f}s after SIGTERM (code {code}); a request sent after SIGTERM: {late} in {late_s:.2f}s"
    )
