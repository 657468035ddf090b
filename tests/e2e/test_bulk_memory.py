"""End to end: `m2m-translate --memory` (#51) through the session's real `bentoml serve`: every
request names the memory, the records it holds come back as people wrote them, the summary counts
them (a finished job run again too, from its checkpoint), a .docx's paragraphs likewise, a PO file
learnt with --memory-learn (once, however often the job runs), and a memory the server lacks
refused before any work. In-process, in tests/unit/test_bulk_memory.py."""

from __future__ import annotations

import json

import pytest
import requests

from tests.e2e.bulk_helpers import corpus_job, read_jsonl, translate
from tests.e2e.helpers import docx_of, paragraphs_of, translation_of

pytestmark = [pytest.mark.server, pytest.mark.slow]

PEOPLE = {
    "Welcome to our shop.": "Bienvenue dans notre boutique ! (relu)",
    "Where is the library?": "Où se trouve la bibliothèque ? (relu)",
}


def memory_of(server, name: str, segments: dict[str, str]) -> str:
    body = {
        "name": name,
        "sourceLang": "en",
        "segments": [{"source": s, "target": t, "targetLang": "fr"} for s, t in segments.items()],
    }
    created = requests.post(f"{server.url}/memories", json=body, timeout=30)
    assert created.status_code == 201, created.text
    return created.json()["memoryId"]


def en_fr_corpus(path, extra: list[str]) -> list[tuple[str, str]]:
    """A JSONL of the corpus's en-fr sentences and `extra` between them; (text, model's) of each."""
    model = [(t, translation_of(t, "en", "fr")) for t in _en_fr_sentences()[:6]]
    rows = model[:3] + [(t, "") for t in extra] + model[3:]
    path.write_text(
        "".join(json.dumps({"id": f"r{i}", "text": text}) + "\n" for i, (text, _) in enumerate(rows)),
        encoding="utf-8",
    )
    return rows


def _en_fr_sentences() -> list[str]:
    from harness.corpus import corpus_sentences

    return [text for source, target, text, _ in corpus_sentences() if (source, target) == ("en", "fr")]


def test_a_corpus_run_takes_the_memorys_records_verbatim_and_counts_them(server, tmp_path):
    memory_id = memory_of(server, "bulk", PEOPLE)
    people = [s for s in PEOPLE if s not in _en_fr_sentences()[:6]]
    rows = en_fr_corpus(tmp_path / "in.jsonl", people)
    common = ["--url", server.url, "--from", "en", "--to", "fr", "--chunk-size", "2", "--records-per-request", "2"]
    args = ["in.jsonl", "--output", "out.jsonl", *common, "--memory", memory_id]

    done = translate(args, tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{len(rows)} records (0 already done, {len(rows)} translated now)" in done.stderr, done.stderr
    assert "0 rejected, 2 from the translation memory" in done.stderr, done.stderr
    out = read_jsonl(tmp_path / "out.jsonl")
    assert [r["text"] for r in out] == [PEOPLE.get(text) or model for text, model in rows]

    # Run again: nothing translated, and the count comes from the checkpoint's chunks.
    again = translate(args, tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"{len(rows)} already done, 0 translated now" in again.stderr, again.stderr
    assert "2 from the translation memory" in again.stderr, again.stderr

    # The same corpus without the memory: a job of its own (the memory is in the checkpoint key),
    # the model's texts, and no count in its summary.
    plain = translate(["in.jsonl", "--output", "plain.jsonl", *common], tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "translation memory" not in plain.stderr, plain.stderr
    for (text, model), record in zip(rows, read_jsonl(tmp_path / "plain.jsonl"), strict=True):
        assert record["text"] == model if model else record["text"] != PEOPLE[text]


def test_a_docx_with_a_memory(server, tmp_path):
    memory_id = memory_of(server, "bulk-docx", PEOPLE)
    model = _en_fr_sentences()[0]
    (tmp_path / "shop.docx").write_bytes(docx_of([*PEOPLE, model]))
    args = ["shop.docx", "--output", "boutique.docx", "--url", server.url, "--from", "en", "--to", "fr"]
    done = translate([*args, "--memory", memory_id], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 from the translation memory" in done.stderr, done.stderr
    assert paragraphs_of((tmp_path / "boutique.docx").read_bytes()) == [
        *PEOPLE.values(),
        translation_of(model, "en", "fr"),
    ]


def test_memory_learn_adds_a_po_files_translations_once(server, tmp_path):
    created = requests.post(f"{server.url}/memories", json={"name": "bulk-learnt", "sourceLang": "en"}, timeout=30)
    memory_id = created.json()["memoryId"]
    person = "Bienvenue à Berlin, relu par une personne !"
    model = _en_fr_sentences()[0]
    po = (
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n"Language: fr\\n"\n\n'
        f'msgid "Welcome to Berlin!"\nmsgstr "{person}"\n\n'
        f'msgid "{model}"\nmsgstr ""\n'
    )
    (tmp_path / "app.po").write_text(po, encoding="utf-8")
    (tmp_path / "news.txt").write_text(f"Welcome to Berlin!\n{model}\n", encoding="utf-8")
    args = ["app.po", "--output", "app.fr.po", "--url", server.url, "--from", "en", "--to", "fr"]
    args += ["--memory", memory_id, "--memory-learn"]
    for run in range(2):
        done = translate(args, tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"learned 1 segment(s) from 1 file(s) into the translation memory {memory_id}" in done.stderr
        assert f"({1 - run} file(s) this run)" in done.stderr, done.stderr
    info = requests.get(f"{server.url}/memories/{memory_id}", timeout=10).json()
    assert info["segmentCount"] == 1, info  # the second run added nothing
    assert f'msgstr "{translation_of(model, "en", "fr")}"' in (tmp_path / "app.fr.po").read_text(encoding="utf-8")

    # The next file with that sentence gets the person's translation.
    later = ["news.txt", "--output", "news.fr.txt", "--url", server.url, "--from", "en", "--to", "fr"]
    done = translate([*later, "--memory", memory_id], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 from the translation memory" in done.stderr, done.stderr
    assert (tmp_path / "news.fr.txt").read_text(encoding="utf-8") == f"{person}\n{translation_of(model, 'en', 'fr')}\n"

    # Learning from a file with no translations people made beside it is refused before any work.
    refused = translate([*later, "--output", "x.txt", "--memory", memory_id, "--memory-learn"], tmp_path)
    assert refused.returncode == 2 and "--memory-learn: no input is a document" in refused.stderr, refused.stderr
    assert not (tmp_path / "x.txt").exists()


def test_a_memory_the_server_lacks_is_refused_before_any_work(server, tmp_path):
    corpus_job(tmp_path / "in.jsonl", repeat_to=4)
    unknown = "00000000-0000-0000-0000-000000000000"
    done = translate(["in.jsonl", "--output", "out.jsonl", "--url", server.url, "--memory", unknown], tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"--memory '{unknown}': {server.url} has no such translation memory" in done.stderr, done.stderr
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "out.jsonl.m2m-job").exists()
    other = requests.post(f"{server.url}/memories", json={"name": "german", "sourceLang": "de"}, timeout=30)
    args = ["in.jsonl", "--output", "out.jsonl", "--url", server.url, "--from", "en", "--to", "fr"]
    done = translate([*args, "--memory", other.json()["memoryId"]], tmp_path)
    assert done.returncode == 2 and "the memory 'german' is from 'de', --from is 'en'" in done.stderr, done.stderr
