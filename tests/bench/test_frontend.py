"""`python -m bench.frontend`: the request-path benchmark, end to end on short points, so it cannot rot.

Starts real servers (the simulated backend, instant and GPU-shaped) and drives them with wrk; a
checked pass of every request comes first, so a server that answers wrong fails here. Skipped where
wrk is not installed (`.ci/run` installs it; `apt-get install wrk`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = [
    pytest.mark.server,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed (apt-get install wrk)"),
]


def test_every_point_and_load_is_measured_without_a_failed_request(tmp_path: Path, fixture_model: Path) -> None:
    # One GPU-shaped batch limit: each is a server of its own, and a second ran the same code (#52:
    # CI time; the grid's other limits are the benchmark's, not the smoke's).
    command = [sys.executable, "-m", "bench.frontend", "--points", "instant,gpu-shaped", "--duration", "1",
               "--gpu-batches", "512", "--name", "smoke", "--output", str(tmp_path / "results"),
               "--home", str(tmp_path / "home"), "--logs", str(tmp_path / "logs")]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    rows = json.loads((tmp_path / "results" / "smoke.json").read_text())["rows"]
    assert [(r["point"], r["load"]) for r in rows] == [
        ("instant", "livez"),
        ("instant", "1 record"),
        ("instant", "16 records"),
        ("instant", "LibreTranslate 1 text"),
        *[("gpu-shaped", load) for load in ("livez", "1 record x 256", "1 record x 512", "1 record x 1024")],
    ]
    assert [r["batch_limit"] for r in rows if r["point"] == "gpu-shaped"] == [512] * 4
    for row in rows:
        assert row["requests"] > 0 and row["non_2xx"] == 0 and row["socket_errors"] == 0, row
        if row["pieces_per_request"]:
            # Every piece went through the scheduler: batches were formed and measured.
            assert row["batches"] > 0 and row["mean_batch_pieces"] >= 1, row
            assert row["engine_cpu_ms_per_request"] > 0 and row["api_cpu_ms_per_request"] > 0, row
            # The model loop's time between batches (its linger, under load) is read from the metrics.
            assert row["gap_ms_per_batch"] is not None and row["gap_ms_per_batch"] >= 0, row
    assert all(r["vs_offline_limit"] > 0 for r in rows if r["point"] == "gpu-shaped" and r["pieces_per_request"])
    report = (tmp_path / "results" / "smoke.md").read_text()
    assert "| gpu-shaped | 512 | 1 record x 512 |" in report and "| gap ms/batch |" in report
