"""End to end: `m2m-eval --url` against the session's real `bentoml serve`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixture.testset import EVAL_DIR, JSONL_FILE
from harness.servers import ROOT
from m2m_tools.evaluation.evaluate import main

pytestmark = [pytest.mark.server, pytest.mark.slow]

JSONL = EVAL_DIR / JSONL_FILE


def checkpoint_state(output: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted((output / "checkpoints").iterdir())}


def test_every_direction_scores_100_through_the_api_and_matches_in_process(server, fixture_model, tmp_path, capsys):
    http_out = tmp_path / "http"
    args = ["--data", str(JSONL), "--url", server.url, "--output", str(http_out), "--no-progress"]
    # Small requests and chunks, many in flight: the server's batching merges them.
    tuning = ["--concurrency", "8", "--records-per-request", "2", "--chunk-size", "16"]
    assert main([*args, *tuning]) == 0
    report = json.loads((http_out / "report.json").read_text(encoding="utf-8"))
    assert len(report["directions"]) == 12
    assert {(d["bleu"], d["chrf"]) for d in report["directions"].values()} == {(100.0, 100.0)}
    assert report["system"] == {"label": server.url, "kind": "url", "url": server.url, "name": None}
    assert "| **average** (12) | 190 | 100.00 | 100.00 |" in capsys.readouterr().out

    # Finished: the same command translates nothing and prints the same report.
    before = checkpoint_state(http_out)
    assert main([*args, *tuning]) == 0
    assert checkpoint_state(http_out) == before
    assert json.loads((http_out / "report.json").read_text(encoding="utf-8")) == report

    # The in-process path runs the service's own pipeline: same scores, so the gate passes.
    local_out = tmp_path / "local"
    local_args = ["--data", str(JSONL), "--model", str(fixture_model), "--output", str(local_out), "--no-progress"]
    assert main(local_args) == 0
    capsys.readouterr()
    assert main(["compare", str(local_out / "report.json"), str(http_out / "report.json"), "--max-drop", "0"]) == 0
    assert "PASS" in capsys.readouterr().out


def test_unsupported_direction_is_refused_before_translating(server, tmp_path, capsys):
    data = tmp_path / "t.jsonl"
    data.write_text(json.dumps({"src_lang": "en", "tgt_lang": "xx", "source": "Hi.", "reference": "x"}) + "\n")
    code = main(["--data", str(data), "--url", server.url, "--output", str(tmp_path / "o"), "--no-progress"])
    assert code == 3
    assert "does not support direction(s) en-xx (unknown: xx)" in capsys.readouterr().err
    assert not (tmp_path / "o" / "checkpoints").exists()


def test_the_installed_command_runs_outside_the_repository(server, tmp_path):
    # The console script `make setup` installs, from a directory with no `translator` package in it.
    command = Path(sys.executable).parent / "m2m-eval"
    assert command.is_file(), f"{command} is missing: `make setup` installs the project (pip install -e .)"
    assert ROOT not in tmp_path.parents
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    args = ["--data", str(JSONL), "--url", server.url, "--output", "out", "--directions", "en-fr", "--no-progress"]
    done = subprocess.run([str(command), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "| en-fr | 15 | 100.00 | 100.00 |" in done.stdout
    assert json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))["average"]["bleu"] == 100.0
