"""Rendering the kustomize overlays with a real kubectl, and reading what they render."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
OVERLAYS = ("cpu", "gpu")
INSTALLER = DEPLOY / "tools" / "install-kubectl.sh"
ADAPTER_VALUES = DEPLOY / "monitoring" / "prometheus-adapter-values.yaml"

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
