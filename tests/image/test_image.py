"""The image tier: the fixture model's CPU image, built as `make image` builds it, run as the cpu
Deployment runs it, with a real container engine, docker or podman (`make test-image`).

Built by deploy/image/build.py (what `make image` runs) into a private BentoML home; run with the
rendered Deployment's env, its ConfigMap file, its emptyDirs as the only writable places, its user,
capabilities, CPU and memory limits, on a free local port. Skipped, with the reason, where no
container engine works (buildah alone builds, but cannot run the pod).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from harness.servers import free_port
from tests.deploy.helpers import (
    Obj,
    body,
    configmap_file,
    container,
    corpus,
    drain_on_sigterm,
    keeps_idle_connections,
    one,
    pod_env,
    probes_answer_within_their_timeouts,
    quantity,
    render,
    repo_config,
    serves_the_fixture,
    wait_for_startup,
)
from tests.image.images import FIXTURE_DIR, Image, build_image, engine_cmd, run_in_image

pytestmark = [pytest.mark.image, pytest.mark.slow]

START_BUDGET_S = 120  # ours, well under the startupProbe's 10 minutes: the fixture loads in seconds
# Measured 746 MB for the fixture (deploy/README.md); the GPU image, CUDA torch, is 5.65 GB.
CPU_IMAGE_MAX_BYTES = 1_200_000_000


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    return build_image("cpu", tmp_path_factory.mktemp("image-home"))


def image_config(image: Image) -> Obj:
    # docker and podman both answer with Docker's shape here; podman also has it under "Config".
    return image.config.get("Config") or image.config["ContainerConfig"]


def test_image_is_tagged_with_the_model_version(image: Image) -> None:
    from translator.store import checkpoint_files, content_version

    version = content_version(checkpoint_files(FIXTURE_DIR))
    assert image.tag.endswith(f":{version}-cpu"), image.tag


def test_image_declares_the_service_port_and_user(image: Image) -> None:
    config = image_config(image)
    port = repo_config()["services"]["Translation"]["http"]["port"]
    assert set(config.get("ExposedPorts", {})) == {f"{port}/tcp"}
    deployment = one(render("cpu"), "Deployment")
    assert [p["containerPort"] for p in container(render("cpu"))["ports"]] == [port]
    assert config["User"] == "bentoml"
    # The Deployment's runAsUser is the image's user, so files the image wrote are its own.
    uid = run_in_image(image, "id -u bentoml").strip()
    assert int(uid) == deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"]


def test_cpu_image_has_no_cuda_no_build_tools_no_caches(image: Image) -> None:
    assert image.size < CPU_IMAGE_MAX_BYTES, f"{image.size / 1e6:.0f} MB"
    # No torch (the CPU engine is CTranslate2) and so none of what comes with PyPI's CUDA torch.
    found = run_in_image(
        image,
        "python -c 'import importlib.util as u; "
        'print(*[m for m in ("torch", "triton", "nvidia") if u.find_spec(m)])\'; '
        "python -c 'import ctranslate2, transformers, bentoml; print(\"imports\")'",
    )
    assert found.split() == ["imports"], found
    # No compilers or VCS (BentoML's Debian template would install build-essential and git).
    tools = run_in_image(image, "for t in gcc cc g++ make git; do command -v $t || true; done")
    assert tools.strip() == "", tools
    # No package caches or lists in the layers (looked at as root: /root is private).
    caches = run_in_image(
        image,
        "du -sk /root/.cache /home/bentoml/.cache /var/lib/apt/lists/*_Packages* 2>/dev/null || true",
        user="0",
    )
    assert caches.strip() == "", caches
    # The model without the checkpoint's weights, which only torch reads: CTranslate2's files alone.
    model = run_in_image(image, "cd /home/bentoml/bento/models && find . -type f | sort").split()
    assert not [path for path in model if path.rsplit("/", 1)[-1] in ("model.safetensors", "pytorch_model.bin")]
    assert any(path.endswith("/ctranslate2/model.bin") for path in model), model
    # The product only: no tests, benchmark, fixture builder or offline tools.
    src = run_in_image(image, "ls /home/bentoml/bento/src").split()
    assert sorted(src) == ["bentoconfiguration.yaml", "bentofile.yaml", "save_model.py", "service.py", "translator"]


def test_bento_in_the_image_pins_cpu_requirements(image: Image) -> None:
    requirements = run_in_image(image, "cat /home/bentoml/bento/env/python/requirements.txt")
    names = {line.split("=")[0].strip().lower() for line in requirements.splitlines() if "==" in line}
    assert "torch" not in names and {"ctranslate2", "transformers", "bentoml"} <= names, names
    labels = yaml.safe_load(run_in_image(image, "cat /home/bentoml/bento/bento.yaml"))["labels"]
    assert labels["device"] == "cpu"


# --------------------------------------------------------------------------- the running pod


@dataclass
class Pod:
    engine: str
    name: str
    url: str
    manifest: Obj  # the container of the rendered cpu Deployment
    startup_s: float

    def log(self) -> str:
        done = engine_cmd(self.engine, "logs", self.name)
        return (done.stdout + done.stderr)[-6000:]

    def state(self) -> dict[str, Any]:
        done = engine_cmd(self.engine, "inspect", "--format", "{{json .State}}", self.name)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


def run_args(objs: list[Obj], config_dir: Path) -> list[str]:
    """`run` flags that make the container what the rendered Deployment makes of it."""
    c = container(objs)
    pod_spec = one(objs, "Deployment")["spec"]["template"]["spec"]
    context = pod_spec["securityContext"] | c["securityContext"]
    args = ["--user", f"{context['runAsUser']}:{context['runAsGroup']}"]
    if context.get("readOnlyRootFilesystem"):
        args.append("--read-only")
    args += [f"--cap-drop={cap}" for cap in context["capabilities"]["drop"]]
    if context.get("allowPrivilegeEscalation") is False:
        args += ["--security-opt", "no-new-privileges"]
    for name, value in pod_env(c).items():
        args += ["--env", f"{name}={value}"]
    limits = c["resources"]["limits"]
    # The CPU limit, capped at this machine's cores (the engines refuse more than there are).
    args += ["--cpus", f"{min(quantity(limits['cpu']), os.cpu_count() or 1):g}"]
    args += ["--memory", f"{int(memory_bytes(limits['memory']))}"]
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    for mount in c["volumeMounts"]:
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            args += ["--volume", f"{config_dir}:{mount['mountPath']}:ro"]
        elif "emptyDir" in volume:
            size = volume["emptyDir"].get("sizeLimit")
            options = "rw,mode=1777" + (f",size={int(memory_bytes(size))}" if size else "")
            args += ["--tmpfs", f"{mount['mountPath']}:{options}"]
        else:
            raise AssertionError(f"volume {volume} not emulated")
    return args


def memory_bytes(value: str) -> float:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "K": 1e3, "M": 1e6, "G": 1e9, "": 1}
    for unit in sorted(units, key=len, reverse=True):
        if value.endswith(unit):
            return float(value[: len(value) - len(unit)] if unit else value) * units[unit]
    raise ValueError(value)


@pytest.fixture(scope="module")
def pod(image: Image) -> Iterator[Pod]:
    objs = render("cpu")
    c = container(objs)
    configmap, key = configmap_file(objs, pod_env(c)["BENTOML_CONFIG"])
    config_dir = Path(tempfile.mkdtemp(prefix="image-config-"))
    (config_dir / key).write_text(configmap["data"][key], encoding="utf-8")
    config_dir.chmod(0o755)
    (config_dir / key).chmod(0o644)
    port = free_port()
    name = f"m2m-image-test-{os.getpid()}"
    args = ["run", "--detach", "--name", name, *run_args(objs, config_dir)]
    if image.engine == "podman":
        args.append("--read-only-tmpfs=false")  # like Kubernetes: writable only where volumes are
    container_port = c["ports"][0]["containerPort"]
    args += ["--publish", f"127.0.0.1:{port}:{container_port}", image.tag]
    started = time.monotonic()
    done = engine_cmd(image.engine, *args)
    assert done.returncode == 0, f"{image.engine} {' '.join(args)}:\n{done.stderr}"
    server = Pod(image.engine, name, f"http://127.0.0.1:{port}", c, 0.0)

    def gone() -> str | None:
        state = server.state()
        return None if state.get("Running") else f"the container stopped ({state}):\n{server.log()}"

    try:
        wait_for_startup(server.url, c["startupProbe"], START_BUDGET_S, gone, server.log)
        server.startup_s = time.monotonic() - started
        yield server
    finally:
        engine_cmd(image.engine, "rm", "--force", name)
        for path in config_dir.iterdir():
            path.unlink()
        config_dir.rmdir()


def test_probes_answer_within_their_timeouts(pod: Pod) -> None:
    probes_answer_within_their_timeouts(pod.url, pod.manifest)


def test_idle_connections_outlive_uvicorns_keep_alive(pod: Pod) -> None:
    # The image's CMD gives `bentoml serve` --timeout-keep-alive (deploy/image/Dockerfile.j2).
    keeps_idle_connections(pod.url)


def test_contract_exactly(pod: Pod) -> None:
    serves_the_fixture(pod.url)
    # Many records, ids and order as sent, every text the fixture's exact translation.
    document = next(d for d in corpus() if (d["src_lang"], d["tgt_lang"]) == ("en", "ja"))
    records = [{"id": f"r{i}", "text": text} for i, text in enumerate(document["source"])]
    payload = {"payload": {"fromLang": "en", "toLang": "ja", "records": records}}
    reply = requests.post(pod.url + "/translation", json=payload, timeout=120)
    assert reply.status_code == 200, reply.text
    expected = [{"id": f"r{i}", "text": text} for i, text in enumerate(document["target"])]
    assert reply.json() == {"result": expected}


def test_priority_requests(pod: Pod) -> None:
    pair = next(p for p in corpus() if (p["src_lang"], p["tgt_lang"]) == ("en", "fr"))
    for urgency in ("u=0", "u=7"):
        reply = requests.post(
            pod.url + "/translation", json=body(pair["source"][1]), headers={"Priority": urgency}, timeout=60
        )
        assert reply.status_code == 200, (urgency, reply.text)
        assert reply.json() == {"result": [{"id": "1", "text": pair["target"][1]}]}
    reply = requests.post(pod.url + "/translation", json=body("Hello."), headers={"Priority": "u=9"}, timeout=60)
    assert reply.status_code == 400 and "Priority" in reply.text, reply.text


def test_pre_stop_hook_runs_in_the_image(pod: Pod) -> None:
    # The kubelet runs it inside the container before SIGTERM: the command must exist there and
    # succeed as the pod's user on the read-only root.
    command = pod.manifest["lifecycle"]["preStop"]["exec"]["command"]
    started = time.monotonic()
    done = engine_cmd(pod.engine, "exec", pod.name, *command, timeout=60)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started >= float(command[-1]) - 1


def test_sigterm_drains_requests_in_flight(pod: Pod) -> None:
    # Last: it stops the container. `stop` with the Deployment's grace period less the preStop
    # sleep (the kubelet's clock runs from the hook's start): SIGTERM, then SIGKILL past it.
    objs = render("cpu")
    grace = one(objs, "Deployment")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    pre_stop = int(pod.manifest["lifecycle"]["preStop"]["exec"]["command"][-1])
    stopper: list[subprocess.Popen[bytes]] = []

    def sigterm() -> None:
        stopper.append(subprocess.Popen([pod.engine, "stop", "--time", str(grace - pre_stop), pod.name]))

    def wait_exit() -> int:
        try:
            stopper[0].wait(timeout=grace - pre_stop + 30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {grace - pre_stop}s after SIGTERM:\n{pod.log()}")
        state = pod.state()
        assert not state["Running"], state
        return int(state["ExitCode"])

    log = pod.log
    drained = drain_on_sigterm(pod.url, sigterm, wait_exit, log)
    text = pod.log()
    for sign in ("Permission denied", "Read-only file system", "PermissionError"):
        assert sign not in text, f"{sign!r} in the server log:\n{text}"
    print(f"\nimage pod: ready {pod.startup_s:.1f}s after start; {drained}")
