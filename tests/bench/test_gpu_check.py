"""`make gpu-check` (bench/gpu_check.sh) on the CPU, in its rehearsal mode: the whole check stays
within its deadline, a step gets what is left of it, one with nothing left is skipped, and the page
says what each step came to. The steps' own work is rehearsed by hand before a device call (too long
for the suite); this keeps the plumbing a lent machine relies on from rotting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parent.parent.parent


def gpu_check(out: Path, parts: str, deadline_s: int) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "OUT": str(out),
        "PYTHON": sys.executable,
        "GPU_CHECK_REHEARSAL": "1",
        "GPU_CHECK_PARTS": parts,
        "GPU_CHECK_DEADLINE_S": str(deadline_s),
    }
    return subprocess.run(
        ["bash", "bench/gpu_check.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_a_step_gets_what_is_left_of_the_deadline_and_the_page_says_how_each_ended(tmp_path: Path) -> None:
    # 60 s in all: the tests step (budget 100 s) runs within the 50 s left (10 s are the kill's grace),
    # and here it passes with every GPU test skipped.
    done = gpu_check(tmp_path, "tests", 60)
    assert done.returncode == 0, done.stdout + done.stderr
    page = json.loads((tmp_path / "gpu-check.json").read_text())
    [tests] = page["steps"]
    assert tests["step"] == "tests" and tests["outcome"] == "ok"
    assert tests["budget_s"] <= 50 and tests["seconds"] <= tests["budget_s"]
    assert "skipped" in tests["said"][0]  # pytest's summary line: no CUDA here
    markdown = (tmp_path / "gpu-check.md").read_text()
    assert f"| tests | {tests['budget_s']} | {tests['seconds']} | ok |" in markdown
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpu-check-logs.tar.gz", "gpu-check.json", "gpu-check.md"]


def test_steps_past_the_deadline_are_skipped_and_the_check_fails(tmp_path: Path) -> None:
    # 25 s in all: under 20 s would be left for the first step, so none starts.
    done = gpu_check(tmp_path, "tests,service", 25)
    assert done.returncode == 1, done.stdout + done.stderr
    page = json.loads((tmp_path / "gpu-check.json").read_text())
    assert [(s["step"], s["outcome"]) for s in page["steps"]] == [
        (name, "skipped: the check's 25 s spent")
        for name in (
            "tests",
            "service-transformers-thread",
            "service-transformers-process",
            "service-transformers-process-16records",
            "service-auto-process",
        )
    ]
    assert page["service"] == [] and "skipped: the check's 25 s spent" in (tmp_path / "gpu-check.md").read_text()


def test_leftovers_are_the_checks_own_processes_never_others_by_name() -> None:
    # A process named like a BentoML server that the check did not start (another team's, on a
    # shared GPU machine) survives; one the check started, in a session of its own as BentoML's
    # workers are, dies with the processes of its group.
    script = """
    set -u
    bash -c 'exec -a "python -m bentoml serve other _bentoml_impl.worker" sleep 120' &
    other=$!
    source bench/own_processes.sh
    mark_own_processes test
    setsid bash -c 'sleep 120 & wait' &
    ours=$!
    sleep 0.5
    child=$(ps -o pid= --ppid "$ours" | tr -d ' ')
    end_own_leftovers
    sleep 0.5
    for name in other ours child; do
        stat=$(ps -o stat= -p "${!name}" | cut -c1)
        if [ -n "$stat" ] && [ "$stat" != Z ]; then echo "$name alive"; else echo "$name ended"; fi
    done
    kill "$other"
    """
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.split("\n")[:3] == ["other alive", "ours ended", "child ended"], done.stdout + done.stderr


@pytest.mark.pure
def test_no_script_ends_processes_by_name() -> None:
    pattern = ("pkill", "killall", "kill -f", "pgrep -f")
    found = [
        f"{path.relative_to(ROOT)}: {line.strip()}"
        for path in ROOT.rglob("*")
        if path.suffix in (".sh", ".py", ".mk", "") and path.is_file() and not _skipped(path)
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
        if any(p in line for p in pattern) and not line.lstrip().startswith("#")
    ]
    assert not found, found


def _skipped(path: Path) -> bool:
    parts = path.relative_to(ROOT).parts
    return parts[0] in (".venv", "build", ".git", "node_modules") or path.name == "test_gpu_check.py"
