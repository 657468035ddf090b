"""What `make image` builds from (deploy/image/build.py), and the CPU image's promise that the
product runs without torch; the image itself is built and run by the image tier (tests/image)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from deploy.image.build import (
    GPU_EXTRA,
    GPU_ONLY,
    PORT,
    device_bentofile,
    device_requirements,
    name_problem,
    requirement_name,
    run_hint,
    settings_problems,
)
from harness.corpus import corpus_sentences

pytestmark = pytest.mark.pure

ROOT = Path(__file__).resolve().parents[2]


def pins(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_cpu_requirements_are_the_runtime_pins_less_torch():
    full = pins((ROOT / "requirements.txt").read_text(encoding="utf-8"))
    cpu = pins(device_requirements("cpu"))
    assert "torch" in {requirement_name(p) for p in full}
    assert cpu == [p for p in full if requirement_name(p) not in GPU_ONLY]
    assert not {requirement_name(p) for p in cpu} & set(GPU_ONLY)


def test_gpu_requirements_are_the_runtime_pins_and_cuda_12s_cublas():
    full = pins((ROOT / "requirements.txt").read_text(encoding="utf-8"))
    gpu = pins(device_requirements("gpu"))
    assert gpu == full + pins(GPU_EXTRA.read_text(encoding="utf-8"))
    # CTranslate2's CUDA build dlopens libcublas.so.12; torch's CUDA 13 does not bring it.
    assert [requirement_name(p) for p in gpu if p not in full] == ["nvidia-cublas-cu12"]


@pytest.mark.model
def test_device_bentofile_differs_from_bentofile_yaml_only_in_requirements_and_label(tmp_path):
    out = ROOT / "build" / "image-test" / tmp_path.name
    try:
        bentofile = device_bentofile("cpu", out)
        made = yaml.safe_load(bentofile.read_text(encoding="utf-8"))
        source = yaml.safe_load((ROOT / "bentofile.yaml").read_text(encoding="utf-8"))
        requirements = ROOT / made["python"]["requirements_txt"]
        assert requirements.read_text(encoding="utf-8") == device_requirements("cpu")
        assert made["labels"] == {**source["labels"], "device": "cpu"}
        made["python"]["requirements_txt"] = source["python"]["requirements_txt"]
        del made["labels"]["device"]
        assert made == source
    finally:
        for path in sorted(out.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        out.rmdir()


@pytest.mark.model
def test_the_cpu_engine_runs_without_torch(converted_fixture_model, fixture_model, tmp_path):
    # What the CPU image holds: every runtime pin but torch. torch is made unimportable in a fresh
    # interpreter (None in sys.modules: `import torch` fails, find_spec finds nothing), then the
    # default settings must load the fixture on CTranslate2 and reproduce its corpus exactly, and
    # what needs torch must say so by name instead of failing inside a library.
    en_fr = [(text, target) for src, tgt, text, target in corpus_sentences() if (src, tgt) == ("en", "fr")][:4]
    script = textwrap.dedent(
        """
        import json, sys
        sys.modules["torch"] = None
        from translator.config import Engine
        from translator.contract.protocol import Piece
        from translator.engine.backends import choose, torch_installed
        from translator.engine.translator import Translator
        from translator.store import RegistrationError, register

        converted, plain, pairs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
        out = {"torch_installed": torch_installed(), "choice": choose(Engine(), model_dir=converted)}
        translator = Translator(converted, Engine(warmup=False))
        results = translator.translate([Piece(text=text, source="en", target="fr") for text, _ in pairs])
        out["texts"] = [r.text for r in results]
        for name, call in [
            ("transformers", lambda: choose(Engine(backend="transformers"))),
            ("unconverted", lambda: choose(Engine(), model_dir=plain)),
        ]:
            try:
                call()
                out[name] = None
            except (ValueError, RuntimeError) as exc:  # ConversionMissing is a RuntimeError
                out[name] = str(exc)
        try:
            register(plain, progress=False)
            out["register"] = None
        except RegistrationError as exc:
            out["register"] = str(exc)
        out["torch_loaded"] = sys.modules.get("torch") is not None
        print(json.dumps(out))
        """
    )
    env = {"BENTOML_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(converted_fixture_model), str(fixture_model), json.dumps(en_fr)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["torch_installed"] is False and out["torch_loaded"] is False
    assert out["choice"] == ["ctranslate2", "cpu", "int8"]
    assert out["texts"] == [target for _, target in en_fr]
    assert "needs torch" in out["transformers"]
    assert "no CTranslate2 model" in out["unconverted"] and "save_model.py" in out["unconverted"]
    assert "torch" in out["register"] and "GPU image" in out["register"]


@pytest.mark.model
def test_the_cpu_images_store_entry_is_the_conversion_without_the_weights(fixture_model, tmp_path):
    # make image registers into the user's store (whole entry), then copies the entry less the
    # weights into the CPU image's own store: same tag, same files, CTranslate2 alone.
    def python(home: Path, script: str, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", script, *args],
            cwd=ROOT,
            env={"BENTOML_HOME": str(home), "BENTOML_DO_NOT_TRACK": "true", "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.strip().splitlines()[-1]

    user, image = tmp_path / "user", tmp_path / "image"
    tag = python(
        user,
        "import sys; from translator.store import register; print(register(sys.argv[1], progress=False))",
        str(fixture_model),
    )
    info = json.loads(
        python(
            user,
            "import json, sys; from translator.store import entry_info; print(json.dumps(entry_info(sys.argv[1])))",
            tag,
        )
    )
    copied = json.loads(
        python(
            image,
            textwrap.dedent(
                """
        import json, sys, bentoml
        from translator.config import Engine
        from translator.engine.backends import choose
        from translator.store import add_ctranslate2_only
        tag = add_ctranslate2_only(json.loads(sys.argv[1]))
        model = bentoml.models.get("m2m100:latest")
        try:
            choose(Engine(backend="transformers"), cuda_available=False, model_dir=model.path)
            refused = None
        except ValueError as exc:
            refused = str(exc)
        print(json.dumps({"tag": tag, "latest": str(model.tag), "path": model.path, "refused": refused,
                          "metadata": model.info.metadata, "auto": choose(Engine(), False, model.path)}))
        """
            ),
            json.dumps(info),
        )
    )
    assert copied["tag"] == copied["latest"] == tag
    source, entry = Path(info["path"]), Path(copied["path"])
    files = {p.relative_to(entry).as_posix() for p in entry.rglob("*") if p.is_file()}
    wanted = {p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file()}
    assert files == wanted - {"model.safetensors"}
    converted = "ctranslate2/model.bin"
    assert (entry / converted).read_bytes() == (source / converted).read_bytes()
    assert copied["metadata"]["engines"] == {"ctranslate2": "ctranslate2"}
    assert copied["metadata"]["languages"] == info["metadata"]["languages"]
    assert copied["auto"] == ["ctranslate2", "cpu", "int8"]
    assert "CTranslate2 conversion alone" in copied["refused"]


def test_bentofile_asks_for_nothing_the_dockerfile_template_drops():
    # deploy/image/Dockerfile.j2 replaces BentoML's base-image block, which is where
    # docker.system_packages and a CUDA base would be installed: none may be asked for.
    docker = yaml.safe_load((ROOT / "bentofile.yaml").read_text(encoding="utf-8"))["docker"]
    assert docker["dockerfile_template"] == "deploy/image/Dockerfile.j2"
    assert set(docker) <= {"python_version", "dockerfile_template"}, docker


@pytest.mark.parametrize(
    "name",
    [
        "m2m-translation",
        "localhost/m2m-translation-test",
        "registry.example.com/team/m2m-translation",
        "registry.example.com:5000/team/m2m_translation",
        "localhost:5000/a__b/c.d/e---f",
        "[::1]:5000/m2m",
        "Registry.Example.COM/m2m",  # a host may have capitals; the path may not
    ],
)
def test_registry_names_are_taken(name):
    assert name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("Bad_Name", "uppercase B, N"),
        ("Team-m2m", "uppercase T"),
        ("registry.example.com/Team/m2m", "uppercase T"),
        ("m2m translation", "' ' not allowed"),
        ("m2m-translation:1.0", "carries a tag"),
        ("m2m@sha256:abc", "carries a tag or digest"),
        ("team//m2m", "empty"),
        ("-m2m", "separator at its start"),
        ("m2m___x", "'___'"),
        ("bad_host!/m2m", "' not allowed"),
        ("", "empty"),
        ("a" * 256, "256 characters"),
    ],
)
def test_names_a_registry_refuses_are_named_with_the_reason(name, why):
    problem = name_problem(name)
    assert problem is not None and why in problem, problem


def test_every_bad_variable_is_named_with_its_rule():
    problems = settings_problems("Bad_Name", "tpu", "rkt", "cloud")
    assert [p.split("=")[0] for p in problems] == ["IMAGE", "DEVICE", "ENGINE", "BASE"]
    assert "lowercase" in problems[0] and "registry host" in problems[0]
    assert problems[1] == "DEVICE='tpu': must be one of cpu, gpu"
    assert settings_problems("m2m-translation", "gpu", "podman", "debian") == []


def test_the_run_hint_uses_the_services_port_and_the_build_containers_settings():
    assert run_hint("docker", "m2m:1-cpu", {}) == "docker run --rm -p 9527:9527 m2m:1-cpu"
    conf = "/repo/deploy/image/containers.conf"
    assert run_hint("podman", "m2m:1-cpu", {"CONTAINERS_CONF": conf}) == (
        f"CONTAINERS_CONF={conf} podman run --rm -p 9527:9527 m2m:1-cpu"
    )
    assert run_hint("podman", "m2m:1-cpu", {}) == "podman run --rm -p 9527:9527 m2m:1-cpu"
    # The port the image's service listens on: the bundled configuration's.
    config = yaml.safe_load((ROOT / "bentoconfiguration.yaml").read_text(encoding="utf-8"))
    assert config["services"]["Translation"]["http"]["port"] == PORT


@pytest.mark.processes
def test_make_image_with_a_bad_name_stops_in_seconds_naming_image():
    started = time.monotonic()
    done = subprocess.run(
        ["make", "--no-print-directory", "image", "IMAGE=Bad_Name"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.monotonic() - started
    assert done.returncode != 0
    assert "IMAGE='Bad_Name'" in done.stderr and "lowercase" in done.stderr, done.stderr
    # Nothing ran after the check: no virtualenv step, no engine install, no build.
    assert not [step for step in ("setup", "install-engine", "build.py --model-id") if step in done.stdout], done.stdout
    assert elapsed < 10, f"{elapsed:.1f} s"
