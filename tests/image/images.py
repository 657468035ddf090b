"""Building the fixture model's image as `make image` does, and running commands in it: shared by
the image tier's modules (the CPU image run as the cpu Deployment; the GPU image's libraries)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from deploy.image.build import ImageError, find_engine
from tests.deploy.helpers import ROOT, Obj

FIXTURE_DIR = ROOT / "build" / "fixture-model"


@dataclass
class Image:
    engine: str
    tag: str
    config: Obj  # `<engine> image inspect`, the first element
    build_s: float

    @property
    def size(self) -> int:
        return int(self.config["Size"])


def engine_cmd(engine: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([engine, *args], capture_output=True, text=True, timeout=timeout)


def build_image(device: str, home: Path) -> Image:
    """deploy/image/build.py on the fixture model for `device`, in the BentoML home `home`; the test
    is skipped, with the reason, where no engine here can build and run it."""
    try:
        engine = find_engine(os.environ.get("IMAGE_ENGINE", "auto"))
    except ImageError as exc:
        pytest.skip(f"no container engine: {exc}")
    if engine not in ("docker", "podman"):
        pytest.skip(
            f"{engine} builds images but does not inspect or run them as this tier does: it needs docker or podman"
        )
    from fixture.build import build_fixture

    build_fixture(FIXTURE_DIR)
    env = {**os.environ, "BENTOML_HOME": str(home), "BENTOML_DO_NOT_TRACK": "true"}
    env.pop("BENTOML_CONFIG", None)
    env.pop("TRANSLATOR_MODEL", None)
    command = [
        sys.executable,
        "deploy/image/build.py",
        "--model-id",
        str(FIXTURE_DIR),
        "--device",
        device,
        "--engine",
        engine,
        "--base",
        os.environ.get("IMAGE_BASE", "auto"),
        "--name",
        "localhost/m2m-translation-test",
    ]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    build_s = time.monotonic() - started
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout[-2000:]}\n{done.stderr[-5000:]}"
    tag = done.stdout.strip().splitlines()[-1]  # printed last
    inspected = engine_cmd(engine, "image", "inspect", tag)
    assert inspected.returncode == 0, inspected.stderr
    config = json.loads(inspected.stdout)[0]
    print(f"\nimage {tag}: built in {build_s:.0f}s with {engine}, {int(config['Size']) / 1e6:.0f} MB")
    return Image(engine, tag, config, build_s)


def run_in_image(image: Image, script: str, user: str | None = None) -> str:
    args = ["run", "--rm", "--network", "none", "--entrypoint", "sh"]
    if user:
        args += ["--user", user]
    done = engine_cmd(image.engine, *args, image.tag, "-c", script, timeout=600)
    assert done.returncode == 0, f"{script}:\n{done.stdout}\n{done.stderr}"
    return done.stdout
