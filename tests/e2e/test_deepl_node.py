"""DeepL's official Node client, deepl-node (npm, pinned by tests/e2e/deepl_node/package-lock.json's
integrity hashes), against the session's live server, configured as its README says: text,
languages, usage, v2 and v3 glossaries (v3 sent as forms with `dictionaries[i].key` fields, #50),
documents, translation memories (#51) and errors. Installed with `npm ci` into build/deepl-node/
(cached) from the registry."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import requests
from filelock import FileLock

from harness.corpus import corpus_sentences

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


def calls(url: str, key: str, work: Path, memory_id: str) -> dict[str, dict]:
    done = subprocess.run(
        ["node", "calls.mjs", url, key, str(work), memory_id],
        cwd=installed(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {line["call"]: line for line in map(json.loads, done.stdout.splitlines())}


def translation_of(text: str, source: str, target: str) -> str:
    return next(t for s, g, src, t in corpus_sentences() if (s, g, src) == (source, target, text))


HELD = "Welcome to Berlin!"  # a corpus sentence: the memory's answer, not the model's
PEOPLE = {
    (HELD, "de"): "Herzlich willkommen in Berlin! (von Hand)",
    (HELD, "fr"): "Bienvenue à Berlin ! (à la main)",
    ("Page 1 of 10", "de"): "Seite 1 von 10",
}


def memory(url: str) -> str:
    """A translation memory made through the native API (#51), as a person's work would be; its id."""
    segments = [{"source": s, "targetLang": lang, "target": t} for (s, lang), t in PEOPLE.items()]
    segments[0]["targetLang"] = "de-DE"  # a region: DeepL's listing gives the language
    created = requests.post(
        f"{url}/memories", json={"name": "handbook", "sourceLang": "en", "segments": segments}, timeout=30
    )
    assert created.status_code == 201, created.text
    return created.json()["memoryId"]


@pytest.fixture(scope="module")
def run(server, tmp_path_factory) -> tuple[str, dict[str, dict]]:
    """calls.mjs run once for the module's tests: the memory's id and every call's answer."""
    memory_id = memory(server.url)
    return memory_id, calls(server.url, "any-key-when-keys-are-off", tmp_path_factory.mktemp("deepl-node"), memory_id)


def test_deepl_node_s_calls_all_succeed(run):
    _, answers = run
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


def test_deepl_node_s_translation_memory_calls_work(run):
    """deepl-node 1.28's translation-memory calls (#51) on a memory made through the native API:
    listed, got and paged as deepl-node parses DeepL's answers; translateText and translateDocument
    with it answer a person's translation verbatim and the model's for the rest; DeepL's import and
    export jobs are the 403 that names POST /memories; deleted, it is DeepL's 404."""
    memory_id, answers = run
    listed = answers["listTranslationMemories"]["value"]
    assert listed is not None, "the memory is not in listTranslationMemories()"
    described = ("name", "sourceLanguage", "targetLanguages", "segmentCount")
    assert {k: listed[k] for k in described} == {
        "name": "handbook",
        "sourceLanguage": "en",
        "targetLanguages": ["de", "fr"],
        "segmentCount": 3,  # a translation each: two of "Welcome to Berlin!", one of "Page 1 of 10"
    }
    assert listed["translationMemoryId"] == memory_id and listed["creationTime"] is not None  # a valid Date
    got = answers["getTranslationMemory"]["value"]
    assert {k: got[k] for k in described} == {k: listed[k] for k in described}
    assert answers["getTranslationMemory(info)"]["value"] == memory_id
    assert answers["listTranslationMemories(page)"]["value"] == [1, 0]
    assert answers["listTranslationMemorySegments(page 1)"]["value"] == {
        "sources": [HELD],
        "targets": [[["de", PEOPLE[HELD, "de"]], ["fr", PEOPLE[HELD, "fr"]]]],
        "segmentCount": 3,
        "more": True,
    }
    assert answers["listTranslationMemorySegments(page 2)"]["value"] == {
        "sources": ["Page 1 of 10"],
        "targets": [[["de", "Seite 1 von 10"]]],
        "segmentCount": 3,
        "more": False,
    }
    assert answers["listTranslationMemorySegments(filter)"]["value"] == ["Page 1 of 10"]
    assert answers["listTranslationMemorySegments(filter, case)"]["value"] == []

    not_held = "Tickets are cheaper for students."
    model_de = translation_of(not_held, "en", "de")
    assert answers["translateText+memory"]["value"] == PEOPLE[HELD, "de"]
    assert answers["translateText+memory+threshold"]["value"] == [PEOPLE[HELD, "de"], model_de, "Seite 4 von 12"]
    assert answers["translateText+memory(fr)"]["value"] == [
        PEOPLE[HELD, "fr"],
        translation_of("Where is the library?", "en", "fr"),
    ]
    assert answers["translateDocument+memory"]["value"] == ["done", f"{PEOPLE[HELD, 'de']}\n\n{model_de}\n"]

    for job in ("memory-import", "memory-export", "memory-job", "memory-export-to-file"):
        error = answers[f"error:{job}"]["error"]
        assert error.startswith("AuthorizationError: ") and "POST /memories" in error, (job, error)
    assert answers["deleteTranslationMemory"]["ok"]
    assert answers["error:deleted-memory"]["error"].startswith("DeepLError: Not found, ")
    assert answers["error:translate-deleted-memory"]["error"].startswith("DeepLError: Not found, ")
    assert memory_id in answers["error:translate-deleted-memory"]["error"]
