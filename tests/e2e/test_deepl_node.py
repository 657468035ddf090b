"""DeepL's official Node client, deepl-node (npm, pinned by tests/e2e/deepl_node/package-lock.json's
integrity hashes), against the session's live server, configured as its README says: text,
languages, usage, v2 and v3 glossaries (v3 sent as forms with `dictionaries[i].key` fields, #50),
documents and errors. Installed with `npm ci` into build/deepl-node/ (cached) from the registry."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from filelock import FileLock

pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).with_name("deepl_node")
INSTALLED = ROOT / "build" / "deepl-node"


def installed() -> Path:
    """deepl-node and its dependencies as the lock file pins them, installed once."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are needed (Debian's nodejs and npm; .ci/run installs them)", pytrace=False)
    INSTALLED.mkdir(parents=True, exist_ok=True)
    with FileLock(str(INSTALLED) + ".lock"):
        lock = (CLIENT / "package-lock.json").read_bytes()
        done_for = INSTALLED / "package-lock.json"
        if not done_for.exists() or done_for.read_bytes() != lock:
            shutil.copy(CLIENT / "package.json", INSTALLED / "package.json")
            shutil.copy(CLIENT / "package-lock.json", INSTALLED / "package-lock.json.next")
            (INSTALLED / "package-lock.json.next").replace(INSTALLED / "package-lock.json")
            done = subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
                cwd=INSTALLED,
                capture_output=True,
                text=True,
                timeout=300,
            )
            if done.returncode != 0:
                done_for.unlink(missing_ok=True)  # tried again next time
            assert done.returncode == 0, done.stderr[-2000:]
        shutil.copy(CLIENT / "calls.mjs", INSTALLED / "calls.mjs")
    return INSTALLED


def calls(url: str, key: str, work: Path) -> dict[str, dict]:
    done = subprocess.run(
        ["node", "calls.mjs", url, key, str(work)], cwd=installed(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {line["call"]: line for line in map(json.loads, done.stdout.splitlines())}


def test_deepl_node_s_calls_all_succeed(server, tmp_path):
    answers = calls(server.url, "any-key-when-keys-are-off", tmp_path)
    failed = {name: a["error"] for name, a in answers.items() if not a["ok"] and not name.startswith("error:")}
    assert failed == {}
    assert answers["translateText"]["value"] == "人生はチョコレートの箱のようなものだ。"
    assert answers["getGlossaryEntries"]["value"] == {"Hello": "Hallo"}
    assert answers["createMultilingualGlossaryWithCsv"]["value"] == [1]
    assert answers["getMultilingualGlossary"]["value"] == 2
    assert answers["updateMultilingualGlossaryDictionary"]["value"] == [2, 1]  # merged into en->de
    assert answers["replaceMultilingualGlossaryDictionary"]["value"] == 1
    assert answers["updateMultilingualGlossaryName"]["value"] == "renamed"
    assert answers["translateDocument"]["value"] == ["done", "人生はチョコレートの箱のようなものだ。"]
    # Refusals reach the client as DeepL's errors, with DeepL's wording.
    assert answers["error:bad-target"]["error"].startswith("DeepLError: ")
    assert answers["error:unknown-glossary"]["error"].startswith("GlossaryNotFoundError: ")
