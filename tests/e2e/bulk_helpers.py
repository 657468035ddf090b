"""Running `m2m-translate` from the e2e tests: the installed script, its run, its JSONL output;
shared by tests/e2e/test_bulk.py and test_bulk_memory.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fixture.build import load_corpus, sentence_pairs

SCRIPTS = Path(sys.executable).parent
# Records of a corpus job: enough for several chunks and a resume in the middle.
RECORDS = 400


def script(name: str) -> str:
    path = SCRIPTS / name
    assert path.is_file(), f"{path} is missing: `make setup` installs the project (pip install -e .)"
    return str(path)


def translate(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BENTOML_CONFIG")}
    return subprocess.run(
        [script("m2m-translate"), *args, "--no-progress"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def corpus_job(path: Path, repeat_to: int = RECORDS) -> list[dict[str, Any]]:
    """A JSONL input of ``repeat_to`` records plus the expected output line of each."""
    pairs = sentence_pairs(load_corpus())
    rows, expected = [], []
    for i in range(repeat_to):
        source, target, text, translation = pairs[i % len(pairs)]
        rows.append({"id": f"doc-{i}", "text": text, "fromLang": source, "toLang": target})
        expected.append({"id": f"doc-{i}", "text": translation})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return expected
