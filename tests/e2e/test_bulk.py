"""End to end: `m2m-translate` (the installed console script, run from outside the repository)
through the session's real `bentoml serve` and in-process, killed with SIGKILL and resumed; a
folder's files and languages checked against the server before any request.

The input is the fixture corpus's sentences, repeated with distinct ids, in every language pair of
the corpus (fromLang/toLang per line): the fixture reproduces its corpus exactly, so every
translation is known.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from fixture.build import load_corpus, sentence_pairs
from harness.servers import ROOT
from tests.e2e.bulk_helpers import RECORDS, corpus_job, read_jsonl, script, translate
from translator.contract import limits

pytestmark = [pytest.mark.server, pytest.mark.slow]


def checkpoint_lines(output: Path, name: str) -> list[dict[str, Any]]:
    path = output.with_name(output.name + ".m2m-job") / f"{name}.chunks.jsonl"
    if not path.exists():
        return []
    complete = path.read_bytes().rsplit(b"\n", 1)[0]
    return [json.loads(line) for line in complete.split(b"\n")[1:] if line]


def test_through_the_server_and_in_process_the_files_are_identical(server, fixture_model, tmp_path):
    work = tmp_path / "outside-the-repository"
    work.mkdir()
    assert ROOT not in work.parents
    expected = corpus_job(work / "corpus.jsonl")
    # Two records that cannot be translated, amid the others: too long, and an unknown language.
    with (work / "corpus.jsonl").open("a", encoding="utf-8") as handle:
        too_long = "x" * (limits.MAX_CHARS_PER_RECORD + 1)
        handle.write(json.dumps({"id": "too-long", "text": too_long, "fromLang": "en", "toLang": "fr"}) + "\n")
        handle.write(json.dumps({"id": "klingon", "text": "Hello.", "fromLang": "en", "toLang": "tlh"}) + "\n")
    tuning = ["--chunk-size", "64", "--records-per-request", "4", "--concurrency", "16"]

    http = translate(["corpus.jsonl", "--output", "http.jsonl", "--url", server.url, *tuning], work)
    local = translate(["corpus.jsonl", "--output", "local.jsonl", "--model", str(fixture_model), *tuning], work)
    for done in (http, local):
        assert done.returncode == 1, done.stderr  # records were rejected
        assert f"{RECORDS + 2} records" in done.stderr and "2 rejected" in done.stderr, done.stderr

    assert (work / "http.jsonl").read_bytes() == (work / "local.jsonl").read_bytes()
    out = read_jsonl(work / "http.jsonl")
    assert out[:RECORDS] == expected  # every id once, in order, exact
    assert [(r["id"], r["text"]) for r in out[RECORDS:]] == [("too-long", None), ("klingon", None)]
    rejects = read_jsonl(work / "http.jsonl.rejects.jsonl")
    assert rejects == read_jsonl(work / "local.jsonl.rejects.jsonl")
    assert [(r["line"], r["id"]) for r in rejects] == [(RECORDS + 1, "too-long"), (RECORDS + 2, "klingon")]
    assert "exceeds the limit of 20000 (got 20001)" in rejects[0]["reason"]
    assert "unsupported language code 'tlh'" in rejects[1]["reason"]

    # Plain text, ids = line numbers: the translations back, line for line.
    en_ja = [(text, ja) for src, tgt, text, ja in sentence_pairs(load_corpus()) if (src, tgt) == ("en", "ja")] * 3
    (work / "en.txt").write_text("".join(f"{text}\n" for text, _ in en_ja), encoding="utf-8")
    done = translate(["en.txt", "--output", "ja.txt", "--url", server.url, "--from", "en", "--to", "ja"], work)
    assert done.returncode == 0, done.stderr
    assert (work / "ja.txt").read_text(encoding="utf-8") == "".join(f"{ja}\n" for _, ja in en_ja)
    assert not (work / "ja.txt.rejects.jsonl").exists()


def test_killed_with_sigkill_and_resumed_redoes_only_the_chunks_in_flight(server, tmp_path):
    work = tmp_path / "job"
    work.mkdir()
    expected = corpus_job(work / "corpus.jsonl")
    chunk_size, in_flight = 16, 2
    args = ["corpus.jsonl", "--output", "out.jsonl", "--url", server.url, "--no-progress"]
    args += ["--chunk-size", str(chunk_size), "--chunks-in-flight", str(in_flight), "--records-per-request", "4"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = subprocess.Popen(
        [script("m2m-translate"), *args], cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 300
        while sum(1 for line in checkpoint_lines(work / "out.jsonl", "corpus.jsonl") if "texts" in line) < 2:
            assert process.poll() is None, f"finished before the kill: {process.stderr.read()!r}"  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "no chunk finished in time"
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)  # no cleanup, no flush: as the OOM killer or a node loss
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
    assert not (work / "out.jsonl").exists(), "an output file was written before the job finished"
    before = checkpoint_lines(work / "out.jsonl", "corpus.jsonl")
    finished_before = {line["start"] for line in before if "texts" in line}
    [first_run] = {line["run"] for line in before if "started" in line}
    started_before = {line["started"] for line in before if "started" in line}
    in_flight_at_kill = started_before - finished_before
    assert 0 < len(finished_before) < RECORDS // chunk_size, "the kill did not land mid-run"
    assert len(in_flight_at_kill) <= in_flight

    done = subprocess.run(
        [script("m2m-translate"), *args], cwd=work, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    assert read_jsonl(work / "out.jsonl") == expected  # every id exactly once, in order, exact
    after = checkpoint_lines(work / "out.jsonl", "corpus.jsonl")
    second = [line for line in after[len(before) :] if line["run"] != first_run]
    assert len(second) == len(after) - len(before)  # the first run wrote nothing after the kill
    redone = {line["start"] for line in second if "texts" in line}
    # Nothing finished before the kill was translated again; of what the first run had started,
    # only the chunks in flight at the kill were.
    assert not redone & finished_before
    assert redone & started_before <= in_flight_at_kill
    assert finished_before | redone == set(range(0, RECORDS, chunk_size))
    assert f"{len(finished_before) * chunk_size} already done" in done.stderr, done.stderr

    # Finished: the same command again translates nothing (no chunk even started) and writes the
    # same file.
    checkpoint = work / "out.jsonl.m2m-job" / "corpus.jsonl.chunks.jsonl"
    state = checkpoint.read_bytes()
    output = (work / "out.jsonl").read_bytes()
    again = subprocess.run(
        [script("m2m-translate"), *args], cwd=work, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert again.returncode == 0, again.stderr
    assert checkpoint.read_bytes() == state
    assert (work / "out.jsonl").read_bytes() == output
    assert f"{RECORDS} already done, 0 translated now" in again.stderr


def test_a_folder_of_documents_through_the_server_and_in_process_is_the_same(server, fixture_model, tmp_path):
    # A .docx's bold run goes as `format: "html"` to the server: its tags placed around its words.
    from harness import documents

    (a, ta), (b, tb), (c, tc), *_ = [
        (s, t) for src, tgt, s, t in sentence_pairs(load_corpus()) if (src, tgt) == ("en", "de")
    ]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "report.docx").write_bytes(documents.docx([[(a + " ", False), (b, True)], [(c, True)]]))
    (tmp_path / "in" / "film.srt").write_bytes(documents.srt([a, f"{b}\r\n{c}"]))
    languages = ["--from", "en", "--to", "de"]
    http = translate(["in", "--output", "http", "--url", server.url, *languages], tmp_path)
    local = translate(["in", "--output", "local", "--model", str(fixture_model), *languages], tmp_path)
    for done in (http, local):
        assert done.returncode == 0, done.stderr
    docx = (tmp_path / "http" / "report.docx").read_bytes()
    assert documents.docx_runs(docx) == [[(ta + " ", False), (tb, True)], [(tc, True)]]
    assert docx == (tmp_path / "local" / "report.docx").read_bytes()
    assert (tmp_path / "http" / "film.srt").read_bytes() == documents.srt([ta, f"{tb}\r\n{tc}"])


def test_a_folder_is_checked_against_the_server_before_any_request(server, tmp_path, capsys):
    """`--to` is checked against the server's /languages and every file is read before the first
    request: all the problems in one run, nothing written. Skipping the unreadable files, the
    others come back with their permissions and line endings. The module's main is called here
    (not the installed script) so that this checkout's code is what runs."""
    from harness import documents
    from m2m_tools.bulk import EXIT_BAD_INPUT, EXIT_REJECTS, main

    (a, ta), (b, tb), *_ = [(s, t) for src, tgt, s, t in sentence_pairs(load_corpus()) if (src, tgt) == ("en", "de")]
    source = tmp_path / "in"
    source.mkdir()
    (source / "report.docx").write_bytes(documents.docx([[(a, False)], [(b, True)]]))
    (source / "lines.txt").write_bytes(f"{a}\r\n{b}\r\n".encode())  # a Windows-edited corpus
    modes = {"report.docx": 0o644, "lines.txt": 0o640}
    for name, mode in modes.items():
        (source / name).chmod(mode)
    unreadable = documents.unreadable(documents.docx([[(a, False)]]))
    for name, (data, _) in unreadable.items():
        (source / name).write_bytes(data)
    out = tmp_path / "out"

    def run(*args: str) -> int:
        return main([str(source), "--output", str(out), "--url", server.url, "--from", "en", *args, "--no-progress"])

    assert run("--to", "xx") == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "error: 4 problem(s); nothing was translated or written" in err, err
    assert f"--to 'xx': {server.url} does not translate this language" in err
    for name, (_, why) in unreadable.items():
        assert f"{source / name}: " in err and why in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]  # no output, checkpoint or rejects

    assert run("--to", "de", "--skip-unreadable") == EXIT_REJECTS
    assert "3 unreadable file(s) skipped" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["lines.txt", "report.docx"]
    assert documents.docx_runs((out / "report.docx").read_bytes()) == [[(ta, False)], [(tb, True)]]
    assert (out / "lines.txt").read_bytes() == f"{ta}\r\n{tb}\r\n".encode()
    assert {name: (out / name).stat().st_mode & 0o777 for name in modes} == modes
    rejects = read_jsonl(tmp_path / "out.rejects.jsonl")
    assert [r["file"] for r in rejects] == sorted(unreadable)
