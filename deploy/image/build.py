"""The bento and its OCI image for one kind of node: what `make image` runs.

    python deploy/image/build.py [--model-id ID] [--device cpu|gpu] [--engine auto|docker|podman|buildah]
                                 [--base auto|registry|debian] [--name m2m-translation]

1. registers the checkpoint with save_model.py (hub id or local directory), which makes it the
   latest version of `m2m100` in the BentoML store (BENTOML_HOME);
2. builds the bento from bentofile.yaml, pinned to that version (TRANSLATOR_MODEL). The CPU image
   gets the runtime pins less torch: its engine is CTranslate2 int8, which needs no torch at run
   time, while PyPI's Linux torch is the CUDA build, with gigabytes of NVIDIA libraries; and the
   model less the checkpoint's weights, which only torch reads (its bento is built in a store of
   its own, build/image/cpu/home). The GPU image keeps torch (CUDA) and the whole model;
3. `bentoml containerize` with the container engine found (a Docker daemon, else podman, else
   buildah), the image tagged NAME:<model version>-<device>;
4. prints that tag, last.

The base image BentoML's Dockerfile starts from (`python:3.11-slim`) is put in the engine's store
first (`--base`): pulled from Docker Hub, or built from a Debian mirror (deploy/image/debian-base.sh)
for networks that cannot reach Docker Hub; by default the one already there, else pulled, else built.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BASE_IMAGE = "docker.io/library/python:3.11-slim"  # what BentoML's Debian template starts FROM
DEVICES = ("cpu", "gpu")
ENGINES = ("docker", "podman", "buildah")
# The port the service listens on in the image (bentoconfiguration.yaml's, which the image bundles).
PORT = 9527
# Runtime pins the CPU image leaves out (requirements.txt keeps them for development and the GPU image).
GPU_ONLY = ("torch",)
# Pins the GPU image adds (CUDA 12's cuBLAS for CTranslate2 beside torch's CUDA 13).
GPU_EXTRA = Path(__file__).resolve().parent / "requirements-gpu.txt"


class ImageError(Exception):
    """A step failed; the message says which and why."""


BASES = ("auto", "registry", "debian")
# An image repository as registries take it (the OCI distribution spec's `<name>`, as docker's
# reference grammar reads it): optional registry host (a domain or IP, optional port) then path
# components of lowercase letters and digits, separated by `.`, `_`, `__` or dashes.
_COMPONENT = r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*"
_HOST_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_HOST_PART}(?:\.{_HOST_PART})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
NAME_RULE = (
    "an image repository name: lowercase letters and digits, separated by '.', '_', '__' or '-', in path "
    "components joined by '/', after an optional registry host[:port]/ (e.g. registry.example.com:5000/team/m2m); "
    "no tag (make image adds :<model version>-<device>), at most 255 characters"
)
MAX_NAME = 255


def name_problem(name: str) -> str | None:
    """Why `name` is not an image repository a registry takes, or None."""
    if not name:
        return "it is empty"
    if len(name) > MAX_NAME:
        return f"it has {len(name)} characters"
    first, _, rest = name.partition("/")
    # As docker reads a reference: the first component is a registry host if it has a dot or a
    # port, or is localhost; else it is part of the path.
    if rest and ("." in first or ":" in first or first == "localhost"):
        if not re.fullmatch(_HOST, first):
            return f"{first!r} is not a registry host[:port]"
        path = rest
    else:
        path = name
    for component in path.split("/"):
        if ":" in component or "@" in component:
            return f"{component!r} carries a tag or digest"
        if not re.fullmatch(_COMPONENT, component):
            upper = sorted({ch for ch in component if ch.isupper()})
            other = sorted({ch for ch in component if not (ch.isascii() and (ch.isalnum() or ch in "._-"))})
            if upper:
                why = f"uppercase {', '.join(upper)}"
            elif other:
                why = f"{', '.join(repr(ch) for ch in other)} not allowed"
            else:
                why = "empty, or a separator at its start or end, or '...' / '___'"
            return f"path component {component!r}: {why}"
    return None


def settings_problems(name: str, device: str, engine: str, base: str) -> list[str]:
    """The `make image` variables that cannot work, each named with its rule, found before any work."""
    problems = []
    if (why := name_problem(name)) is not None:
        problems.append(f"IMAGE={name!r}: {why}; IMAGE must be {NAME_RULE}")
    for variable, value, allowed in (
        ("DEVICE", device, DEVICES),
        ("ENGINE", engine, ("auto", *ENGINES)),
        ("BASE", base, BASES),
    ):
        if value not in allowed:
            problems.append(f"{variable}={value!r}: must be one of {', '.join(allowed)}")
    return problems


def requirement_name(line: str) -> str:
    return re.split(r"[\s=<>!~\[;@]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")


def device_requirements(device: str, source: Path = ROOT / "requirements.txt") -> str:
    """requirements.txt for the device's image: with GPU_EXTRA for the GPU, without torch for the CPU."""
    lines = source.read_text(encoding="utf-8").splitlines()
    if device == "gpu":
        lines += GPU_EXTRA.read_text(encoding="utf-8").splitlines()
    if device == "cpu":
        lines = [
            line
            for line in lines
            if not line.strip() or line.lstrip().startswith("#") or requirement_name(line) not in GPU_ONLY
        ]
    return "\n".join(lines) + "\n"


def device_bentofile(device: str, out: Path) -> Path:
    """bentofile.yaml with the device's requirements and a `device` label, written under `out`;
    paths in it stay relative to the repository root, the build context."""
    out.mkdir(parents=True, exist_ok=True)
    requirements = out / "requirements.txt"
    requirements.write_text(device_requirements(device), encoding="utf-8")
    import yaml  # here: the settings check (`--check`) runs before the virtualenv exists

    config = yaml.safe_load((ROOT / "bentofile.yaml").read_text(encoding="utf-8"))
    config["python"]["requirements_txt"] = requirements.relative_to(ROOT).as_posix()
    config.setdefault("labels", {})["device"] = device
    bentofile = out / "bentofile.yaml"
    bentofile.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return bentofile


def engine_works(engine: str) -> bool:
    """An engine that can build here: docker needs its daemon, podman its storage."""
    if not shutil.which(engine):
        return False
    if engine == "buildah":
        probe = [engine, "images", "--quiet"]
    elif engine == "docker":
        # `docker info` exits 0 with the daemon out of reach (it reports ServerErrors); this does not.
        probe = [engine, "version", "--format", "{{.Server.Version}}"]
    else:
        probe = [engine, "info", "--format", "{{json .}}"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def find_engine(wanted: str) -> str:
    if wanted != "auto":
        if not engine_works(wanted):
            raise ImageError(f"container engine {wanted} not found or not working (`{wanted} info` failed)")
        return wanted
    for engine in ENGINES:
        if engine_works(engine):
            return engine
    raise ImageError(
        "no container engine works here: start a Docker daemon, or install podman or buildah "
        "(Debian: apt-get install podman buildah)"
    )


def image_exists(engine: str, image: str) -> bool:
    if engine == "buildah":
        probe = [engine, "inspect", "--type", "image", image]
    else:
        probe = [engine, "image", "inspect", image]
    try:
        return subprocess.run(probe, capture_output=True, timeout=60).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def ensure_base(engine: str, base: str) -> None:
    """The image BentoML's Dockerfile starts from, in the engine's store before the build.

    registry: pulled (Docker Hub); debian: built from the Debian mirror, anew; auto: the one in the
    store if there is one, else pulled, else built from the mirror (a network without Docker Hub)."""
    if base == "auto" and image_exists(engine, BASE_IMAGE):
        print(f"base image {BASE_IMAGE} is in the {engine} store: using it", file=sys.stderr)  # noqa: T201
        return
    if base in ("registry", "auto"):
        pull = [engine, "pull", BASE_IMAGE]
        try:
            done = subprocess.run(pull, capture_output=True, text=True, timeout=1800)
        except subprocess.TimeoutExpired:
            done = subprocess.CompletedProcess(pull, 1, "", "timed out after 30 minutes")
        if done.returncode == 0:
            return
        if base == "registry":
            raise ImageError(f"{' '.join(pull)} failed: {done.stderr.strip()[-500:]} (BASE=debian builds it offline)")
        print(f"{BASE_IMAGE} cannot be pulled here; building it from the Debian mirror", file=sys.stderr)  # noqa: T201
    run(["bash", str(HERE / "debian-base.sh"), engine], "building the base image from the Debian mirror")


def run(cmd: list[str], what: str, env: dict[str, str] | None = None, cwd: Path = ROOT, capture: bool = True) -> str:
    """Runs a step, its progress on stderr; returns its stdout (`capture=False`: on stderr too)."""
    print(f"==> {what}: {' '.join(cmd)}", file=sys.stderr)  # noqa: T201 - progress of a CLI
    done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE if capture else sys.stderr, text=True)
    if done.returncode != 0:
        raise ImageError(f"{what} failed (exit {done.returncode}): {' '.join(cmd)}\n{(done.stdout or '')[-3000:]}")
    return done.stdout or ""


def ctranslate2_only_store(model_tag: str, home: Path) -> Path:
    """A BentoML home of its own for the CPU image's bento, holding `model_tag` without the
    checkpoint's weights (translator.store.add_ctranslate2_only): the CPU image has no torch, so
    CTranslate2 is its only engine and the weights (half of the entry) would be dead bytes. The
    store `make image` registered into keeps the whole entry, and stays what `latest` says."""
    python = sys.executable
    info = run(
        [
            python,
            "-c",
            "import json, sys; from translator.store import entry_info; print(json.dumps(entry_info(sys.argv[1])))",
            model_tag,
        ],
        "reading the model's store entry",
    )
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    run(
        [
            python,
            "-c",
            "import json, sys; from translator.store import add_ctranslate2_only as add; add(json.loads(sys.argv[1]))",
            info.strip().splitlines()[-1],
        ],
        "copying its CTranslate2 model into the CPU image's store",
        {**os.environ, "BENTOML_HOME": str(home)},
    )
    return home


def build(model_id: str, device: str, engine: str, base: str, name: str) -> tuple[str, str]:
    """The engine that built it and the image's tag."""
    engine = find_engine(engine)
    ensure_base(engine, base)
    python = sys.executable
    model_tag = run([python, "save_model.py", "--model-id", model_id, "--quiet"], "registering the model")
    model_tag = model_tag.split()[-1]
    work = ROOT / "build" / "image" / device
    bentofile = device_bentofile(device, work)
    env = {**os.environ, "TRANSLATOR_MODEL": model_tag}
    if device == "cpu":
        env["BENTOML_HOME"] = str(ctranslate2_only_store(model_tag, work / "home"))
    out = run(
        [python, "-m", "bentoml", "build", "-f", str(bentofile), "--output", "tag", "."], "building the bento", env
    )
    found = re.findall(r"__tag__:(\S+)", out)
    if not found:
        raise ImageError(f"bentoml build printed no tag:\n{out[-2000:]}")
    bento_tag = found[-1]
    image_tag = f"{name}:{model_tag.split(':')[1]}-{device}"
    # BentoML 1.4.39 re-renders the Dockerfile of a bento with a dockerfile_template from a copy of
    # the bento in a temporary directory, and refuses to read the template there unless that
    # directory lies under the working directory (bentoml/BentoML#5566, open): both are pointed at
    # build/image/. The image tier (tests/image) builds through this path.
    scratch = ROOT / "build" / "image" / "containerize"
    scratch.mkdir(parents=True, exist_ok=True)
    run(
        [python, "-m", "bentoml", "containerize", bento_tag, "--backend", engine, "--image-tag", image_tag],
        f"building the {device} image with {engine}",
        {**env, "TMPDIR": str(scratch)},
        cwd=scratch.parent,
        capture=False,  # minutes of build output: shown as it comes
    )
    return engine, image_tag


def run_hint(engine: str, image_tag: str, env: Mapping[str, str] | None = None) -> str:
    """The command that runs the image just built, as printed at the end: on the port the service
    listens on, and with the containers settings this build used (podman reads the same ones)."""
    settings_env: Mapping[str, str] = os.environ if env is None else env
    command = f"run --rm -p {PORT}:{PORT} {image_tag}"
    if engine == "docker":
        return f"docker {command}"
    conf = settings_env.get("CONTAINERS_CONF")
    settings = f"CONTAINERS_CONF={conf} " if conf else ""
    hint = f"{settings}podman {command}"
    if engine == "buildah" and not shutil.which("podman"):
        hint += "   (buildah builds only: install podman, which reads the same image store)"
    return hint


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-id", default="facebook/m2m100_418M", help="hub id or local directory")
    # No argparse `choices`: settings_problems names the make variable and its rule instead.
    parser.add_argument(
        "--device", default="cpu", help=f"the nodes it runs on: {', '.join(DEVICES)} (default: %(default)s)"
    )
    parser.add_argument("--engine", default="auto", help=f"container engine: auto, {', '.join(ENGINES)}")
    parser.add_argument(
        "--base",
        default="auto",
        help="python:3.11-slim from the registry (Docker Hub), or built from a Debian mirror; auto: the one in "
        "the engine's store, else the registry's, else the mirror's (default: %(default)s)",
    )
    parser.add_argument("--name", default="m2m-translation", help="image name, with a registry to push to")
    parser.add_argument("--check", action="store_true", help="check the settings and stop (no work: seconds)")
    args = parser.parse_args(argv)
    problems = settings_problems(args.name, args.device, args.engine, args.base)
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)  # noqa: T201 - CLI output
        return 2
    if args.check:
        return 0
    if Path(args.model_id).expanduser().exists():
        args.model_id = str(Path(args.model_id).expanduser().resolve())  # the steps run from the repository
    try:
        engine, tag = build(args.model_id, args.device, args.engine, args.base, args.name)
    except ImageError as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        return 1
    # BentoML's own hint above names port 3000 and none of the settings: this one runs as printed.
    print(f"built {tag}; to run it: {run_hint(engine, tag)}", file=sys.stderr)  # noqa: T201 - CLI output
    print(tag)  # noqa: T201 - the tag, last, for scripts
    return 0


if __name__ == "__main__":
    sys.exit(main())
