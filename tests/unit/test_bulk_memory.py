"""`m2m-translate --model --memory` (#51): in-process, the memory is read from the store the service's
configuration names (here its local files, under BENTOML_HOME), split off as the service splits a
request, and counted in the summary and the checkpoint; --memory-learn adds a PO file's
translations to it. Through a real server, in tests/e2e/test_bulk_memory.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from fixture.build import load_corpus, sentence_pairs
from m2m_tools.bulk import EXIT_BAD_INPUT, EXIT_OK, main
from translator.memory.memories import Memories
from translator.memory.model import Segment
from translator.memory.store import FileStore

pytestmark = pytest.mark.model

EN_FR = [(text, fr) for src, tgt, text, fr in sentence_pairs(load_corpus()) if (src, tgt) == ("en", "fr")]


def run(*args: str | Path) -> int:
    return main([str(a) for a in args] + ["--no-progress"])


@pytest.fixture
def memories(tmp_path, monkeypatch) -> Memories:
    home = tmp_path / "bentoml-home"
    monkeypatch.setenv("BENTOML_HOME", str(home))
    return Memories(FileStore(home / "memories"))


def test_in_process_the_memorys_records_come_back_verbatim_and_are_counted(fixture_model, memories, tmp_path, capsys):
    people = {EN_FR[1][0]: "Traduit par une personne.", EN_FR[3][0]: "Relu, et corrigé."}

    async def made() -> str:
        info = await memories.create("in-process", "en")
        await memories.add(info.memory_id, [Segment(s, "fr", t) for s, t in people.items()])
        return info.memory_id

    memory_id = asyncio.run(made())
    source = tmp_path / "in.txt"
    source.write_text("".join(f"{text}\n" for text, _ in EN_FR[:5]), encoding="utf-8")
    args = [source, "--output", tmp_path / "out.txt", "--model", fixture_model, "--from", "en", "--to", "fr"]
    args += ["--memory", memory_id, "--chunk-size", "2"]
    assert run(*args) == EXIT_OK
    assert "5 records (0 already done, 5 translated now)" in (err := capsys.readouterr().err)
    assert "0 rejected, 2 from the translation memory" in err, err
    expected = [people.get(text, fr) for text, fr in EN_FR[:5]]
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "".join(f"{t}\n" for t in expected)
    chunks = (tmp_path / "out.txt.m2m-job" / "in.txt.chunks.jsonl").read_text(encoding="utf-8").splitlines()
    assert sum(json.loads(line).get("memory", 0) for line in chunks[1:]) == 2

    # Finished: run again, the count is the checkpoint's.
    assert run(*args) == EXIT_OK
    assert "5 already done, 0 translated now" in (err := capsys.readouterr().err) and "2 from the translation" in err


def test_in_process_learning_from_a_po_file(fixture_model, memories, tmp_path, capsys):
    memory_id = asyncio.run(memories.create("learnt", "en")).memory_id
    person = "Bienvenue, relu par une personne !"
    po = (
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n"Language: fr\\n"\n\n'
        f'msgid "Welcome to Berlin!"\nmsgstr "{person}"\n\n'
        f'msgid "{EN_FR[0][0]}"\nmsgstr ""\n'
    )
    (tmp_path / "app.po").write_text(po, encoding="utf-8")
    args = [tmp_path / "app.po", "--output", tmp_path / "app.fr.po", "--model", fixture_model]
    args += ["--from", "en", "--to", "fr", "--memory", memory_id, "--memory-learn"]
    assert run(*args) == EXIT_OK
    err = capsys.readouterr().err
    assert f"learned 1 segment(s) from 1 file(s) into the translation memory {memory_id} (1 file(s) this run)" in err
    info = asyncio.run(memories.get(memory_id))
    assert info is not None and info.segment_count == 1
    written = (tmp_path / "app.fr.po").read_text(encoding="utf-8")
    assert f'msgstr "{person}"' in written and f'msgstr "{EN_FR[0][1]}"' in written


def test_memory_flags_checked_before_any_work(fixture_model, memories, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text(f"{EN_FR[0][0]}\n", encoding="utf-8")
    base = [source, "--output", tmp_path / "out.txt", "--model", fixture_model, "--from", "en", "--to", "fr"]
    assert run(*base, "--memory", "no-such-memory") == EXIT_BAD_INPUT
    assert "--memory 'no-such-memory': " in (err := capsys.readouterr().err) and "no such translation memory" in err
    assert run(*base, "--memory-learn") == EXIT_BAD_INPUT
    assert "--memory-learn: needs --memory" in capsys.readouterr().err
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "out.txt.m2m-job").exists()


def test_what_the_tool_copies_of_the_service_is_the_same():
    # m2m_tools/bulk.py keeps its own copies so that the Job's image (no rapidfuzz) can run --memory.
    from m2m_tools import bulk
    from translator.api.job_memory import LEARNS_FROM
    from translator.memory.index import base_language

    assert bulk.LEARNS_FROM == LEARNS_FROM
    for code in ("de-DE", "DE", "de_AT", "pt-BR", "sr@latin", "zh-Hans", "en", " fr.UTF-8"):
        assert bulk.base_language(code) == base_language(code)
