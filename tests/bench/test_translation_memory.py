"""`python -m bench.translation_memory` (#51), end to end on a small memory, so it cannot rot: the
in-process index's figures, and a live server with a memory named against none, every request
answered. Skipped where wrk is not installed (`.ci/run` installs it)."""

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


def test_the_index_and_the_served_memory_are_measured(tmp_path: Path, fixture_model: Path) -> None:
    command = [sys.executable, "-m", "bench.translation_memory", "--index-sizes", "5000", "--segments", "20000",
               "--duration", "1", "--rounds", "1", "--name", "smoke", "--output", str(tmp_path / "results"),
               "--home", str(tmp_path / "home"), "--logs", str(tmp_path / "logs"),
               "--model", str(fixture_model)]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    page = json.loads((tmp_path / "results" / "smoke.json").read_text())
    (index,) = page["memory"]
    assert index["segments"] == 5000 and index["rss_mib"] > 0
    # Every renumbered source found its template; nearly every edited one its source.
    assert (
        index["substituted_found"] == "2000/2000"
        or index["substituted_found"].split("/")[0] == index["substituted_found"].split("/")[1]
    )
    found, asked = map(int, index["fuzzy_recall"].split("/"))
    assert found >= 0.95 * asked
    rows = page["served"]["rows"]
    assert [r["load"] for r in rows] == ["without a memory", "with a memory named"]
    for row in rows:
        assert row["requests"] > 0 and row["non_2xx"] == 0 and row["socket_errors"] == 0, row
    assert "a memory of 20,000 segments" in (tmp_path / "results" / "smoke.md").read_text()
