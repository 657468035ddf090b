"""m2m-eval (m2m_tools.evaluation) on the job runner: loaders, checkpoints, scoring, resume, the gate.

The in-process tests use the fixture model, which reproduces its corpus exactly: scores on the
shipped test set must be exactly 100, and any resume bug shows up as a changed hypothesis.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from fixture.testset import EVAL_DIR, FLORES_DIR, JSONL_FILE, differences, eval_files, fixture_eval_files
from harness.servers import stand_in_server
from m2m_tools.evaluation.compare import compare_reports
from m2m_tools.evaluation.data import DataError, load_eval_data
from m2m_tools.evaluation.evaluate import RunOptions, evaluate, main
from m2m_tools.evaluation.report import build_report, direction_entry, load_report
from m2m_tools.evaluation.score import Scoring, score
from m2m_tools.jobs.checkpoint import CheckpointError, Chunk, ChunkLog, exclusive
from m2m_tools.jobs.http_runner import BULK_PRIORITY, HttpRunner, retry_delay
from m2m_tools.jobs.job import chunk_ranges
from m2m_tools.jobs.local_runner import LocalRunner
from m2m_tools.jobs.runner import RequestRejected, RunnerError, plan_requests
from translator.config import Engine
from translator.contract import limits
from translator.contract.protocol import Piece, PieceResult

pytestmark = pytest.mark.pure

FLORES = EVAL_DIR / FLORES_DIR
JSONL = EVAL_DIR / JSONL_FILE
TIMING_KEYS = {"seconds", "sentences_per_second"}


def without_timings(value):
    """A report with its timing fields removed: what must not change across resumes."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    return value


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- shipped test set


def test_shipped_eval_set_matches_the_fixture_corpus():
    assert differences() == [], "run `python -m fixture.testset` to regenerate fixture/eval"
    for relative, content in fixture_eval_files().items():
        assert (EVAL_DIR / relative).read_text(encoding="utf-8") == content


def test_both_shipped_formats_hold_the_same_segments():
    flores, jsonl = load_eval_data(FLORES), load_eval_data(JSONL)
    assert flores.directions == jsonl.directions
    assert len(flores.directions) == 12
    # Both directions of every corpus pair, each with its corpus sentences.
    en_ja = flores.directions["en-ja"]
    assert en_ja.sources[0] == "Life is like a box of chocolates."
    assert en_ja.references[0] == "人生はチョコレートの箱のようなものだ。"
    assert flores.directions["ja-en"].sources == en_ja.references


def test_eval_files_merge_documents_written_in_reverse_directions():
    corpus = [
        {"src_lang": "en", "tgt_lang": "fr", "source": ["A."], "target": ["B."]},
        {"src_lang": "fr", "tgt_lang": "en", "source": ["C."], "target": ["D."]},
    ]
    files = eval_files(corpus)
    assert files["flores/en-fr.en"] == "A.\nD.\n"
    assert files["flores/en-fr.fr"] == "B.\nC.\n"
    assert "flores/fr-en.fr" not in files
    assert files["flores/directions.txt"].splitlines()[1:] == ["en-fr", "fr-en"]


# --------------------------------------------------------------------------- loaders and their errors


def test_flores_folder_of_lang_txt_files_scores_every_pair_without_a_directions_list(tmp_path):
    for lang, text in {"en": "One.\nTwo.\n", "fr": "Un.\nDeux.\n", "de": "Eins.\r\nZwei.\r\n"}.items():
        write(tmp_path / f"{lang}.txt", text)
    write(tmp_path / "README.md", "not a language")
    data = load_eval_data(tmp_path)
    assert data.format == "flores"
    assert sorted(data.directions) == ["de-en", "de-fr", "en-de", "en-fr", "fr-de", "fr-en"]
    assert data.directions["en-de"].references == ("Eins.", "Zwei.")  # CRLF stripped


def test_directions_list_and_subset_keep_their_order(tmp_path):
    write(tmp_path / "en.txt", "One.\n")
    write(tmp_path / "fr.txt", "Un.\n")
    write(tmp_path / "directions.txt", "# comment\nfr-en\n\nen-fr  # trailing comment\n")
    assert list(load_eval_data(tmp_path).directions) == ["fr-en", "en-fr"]
    assert list(load_eval_data(tmp_path, ["en-fr"]).directions) == ["en-fr"]


def test_line_separators_inside_a_segment_do_not_shift_lines(tmp_path):
    write(tmp_path / "en.txt", "a\u2028b\x0c.\nTwo.\n")
    write(tmp_path / "fr.txt", "Un.\nDeux.\n")
    assert load_eval_data(tmp_path).directions["en-fr"].sources == ("a\u2028b\x0c.", "Two.")


def test_misaligned_files_are_named_with_their_line_counts(tmp_path):
    write(tmp_path / "news.en", "One.\nTwo.\nThree.\n")
    write(tmp_path / "news.fr", "Un.\nDeux.\n")
    with pytest.raises(DataError, match=r"line-aligned.*news\.en: 3, news\.fr: 2"):
        load_eval_data(tmp_path)


def test_unknown_direction_in_the_directions_list(tmp_path):
    write(tmp_path / "a.en", "One.\n")
    write(tmp_path / "a.fr", "Un.\n")
    write(tmp_path / "b.de", "Eins.\n")
    write(tmp_path / "b.es", "Uno.\n")
    write(tmp_path / "directions.txt", "en-de\n")
    with pytest.raises(DataError, match=r"direction en-de is unknown: no set has files for both 'en' and 'de'"):
        load_eval_data(tmp_path)


def test_unknown_direction_asked_for(tmp_path):
    with pytest.raises(DataError, match=r"'en-ko' is not in the test set .*it has: en-ja, ja-en"):
        load_eval_data(JSONL, ["en-ko"])
    with pytest.raises(DataError, match=r"'enfr' is not a direction; write it as SRC-TGT"):
        load_eval_data(JSONL, ["enfr"])


def test_bad_directions_file(tmp_path):
    write(tmp_path / "en.txt", "One.\n")
    write(tmp_path / "fr.txt", "Un.\n")
    write(tmp_path / "directions.txt", "en-fr\nen-en\n")
    with pytest.raises(DataError, match=r"directions.txt:2: 'en-en' translates a language into itself"):
        load_eval_data(tmp_path)


def test_jsonl_loader_groups_by_direction_in_first_seen_order(tmp_path):
    rows = [
        {"src_lang": "fr", "tgt_lang": "en", "source": "Un.", "reference": "One.", "id": 7},
        {"src_lang": "en", "tgt_lang": "fr", "source": "Two.", "reference": "Deux."},
        {"src_lang": "fr", "tgt_lang": "en", "source": "Trois.", "reference": "Three."},
    ]
    path = write(tmp_path / "t.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    data = load_eval_data(path)
    assert data.format == "jsonl"
    assert list(data.directions) == ["fr-en", "en-fr"]
    assert data.directions["fr-en"].sources == ("Un.", "Trois.")
    assert data.segments == 3


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"t\.jsonl:2: not valid JSON"),
        ('["a"]', r"t\.jsonl:2: expected a JSON object"),
        ('{"src_lang": "en", "tgt_lang": "fr", "source": "a"}', r"t\.jsonl:2: missing field\(s\) reference"),
        ('{"src_lang": "en", "tgt_lang": "fr", "source": 1, "reference": "b"}', r"source must be strings"),
        ('{"src_lang": "en-US", "tgt_lang": "fr", "source": "a", "reference": "b"}', r"src_lang 'en-US' is not"),
    ],
)
def test_malformed_jsonl_names_the_line(tmp_path, line, message):
    good = json.dumps({"src_lang": "en", "tgt_lang": "fr", "source": "a", "reference": "b"})
    path = write(tmp_path / "t.jsonl", f"{good}\n{line}\n")
    with pytest.raises(DataError, match=message):
        load_eval_data(path)


def test_missing_and_empty_data(tmp_path):
    with pytest.raises(DataError, match="no such file or folder"):
        load_eval_data(tmp_path / "nope")
    with pytest.raises(DataError, match="no language files"):
        load_eval_data(tmp_path)


def test_requests_respect_the_service_limits():
    assert plan_requests(["a"] * 5, 2) == [range(0, 2), range(2, 4), range(4, 5)]
    big = "x" * limits.MAX_CHARS_PER_RECORD
    per_request = limits.MAX_CHARS_PER_REQUEST // limits.MAX_CHARS_PER_RECORD
    spans = plan_requests([big] * (per_request + 1), 1000)
    assert [len(s) for s in spans] == [per_request, 1]


def test_a_segment_over_the_service_limit_fails_before_translating(tmp_path):
    big = "x" * (limits.MAX_CHARS_PER_RECORD + 1)
    path = write(
        tmp_path / "t.jsonl", json.dumps({"src_lang": "en", "tgt_lang": "fr", "source": big, "reference": "x"})
    )
    with pytest.raises(DataError, match=r"en-fr: segment 0 has 20001 characters"):
        evaluate(load_eval_data(path), HttpRunner("http://127.0.0.1:9"), tmp_path / "out", RunOptions(progress=False))
    assert not (tmp_path / "out" / "checkpoints").exists()


def test_chunks_are_contiguous_runs_of_what_is_missing():
    assert chunk_ranges([range(0, 5)], 2) == [range(0, 2), range(2, 4), range(4, 5)]
    assert chunk_ranges([range(3, 5), range(8, 11)], 4) == [range(3, 5), range(8, 11)]
    assert chunk_ranges([], 4) == []


# --------------------------------------------------------------------------- retries


def test_retry_after_seconds_and_http_date_are_honoured():
    assert retry_delay(1, "3", base=1, cap=60) == 3
    assert retry_delay(1, "600", base=1, cap=60) == 60
    assert retry_delay(1, "Wed, 21 Oct 2015 07:28:10 GMT", base=1, cap=60, now=1445412480.0) == pytest.approx(10)
    for attempt in (1, 3, 10):
        delay = retry_delay(attempt, None, base=1, cap=8)
        assert min(8, 2 ** (attempt - 1)) * 0.5 <= delay <= min(8, 2 ** (attempt - 1))
    assert 0.5 <= retry_delay(1, "soon", base=1, cap=60) <= 1  # unparseable: backoff


# --------------------------------------------------------------------------- checkpoints


def test_checkpoint_drops_a_torn_last_line_and_appends_after_it(tmp_path):
    path = tmp_path / "en-fr.hyp.jsonl"
    log = ChunkLog(path, "k", 6)
    log.started(0, 2, "run-1")
    log.append(Chunk(0, ["a", "b"], {}, 2, 1.0, "run-1"))
    log.append(Chunk(2, ["c", None], {1: "too long"}, 1, 1.0, "run-1"))
    with path.open("ab") as handle:
        handle.write(b'{"start": 4, "texts": ["e", "f"], "seconds": 1.0}')  # no newline: killed mid-write
    done = ChunkLog(path, "k", 6).load()
    assert done.missing(6) == [range(4, 6)]
    assert (done.records, done.rejects, done.sentences, done.seconds) == (4, 1, 3, 2.0)
    assert done.started == {"run-1": [(0, 2)]}
    assert [(c.texts, c.rejects) for c in log.read(done)] == [(["a", "b"], {}), (["c", None], {1: "too long"})]
    log.append(Chunk(4, ["e", "f"], {}, 2, 1.0))
    assert ChunkLog(path, "k", 6).load().missing(6) == []


def test_checkpoint_for_other_inputs_is_moved_aside_not_reused(tmp_path, caplog):
    ChunkLog(tmp_path / "en-fr.hyp.jsonl", "old-key", 2).append(Chunk(0, ["a"], {}, 1, 1.0))
    with caplog.at_level(logging.WARNING):
        done = ChunkLog(tmp_path / "en-fr.hyp.jsonl", "new-key", 2).load()
    assert done.spans == {}
    assert "made for other inputs" in caplog.text
    assert not (tmp_path / "en-fr.hyp.jsonl").exists()
    assert len(list(tmp_path.glob("en-fr.hyp.jsonl.stale-*"))) == 1


@pytest.mark.parametrize(
    "line",
    [
        b"garbage",
        b'{"start": 0, "texts": ["again"]}',  # overlaps the first chunk
        b'{"start": 3, "texts": ["x", "y"]}',  # past the end
        b'{"start": 1, "texts": [null]}',  # a missing text without a reason
    ],
)
def test_checkpoint_damaged_inside_is_an_error(tmp_path, line):
    log = ChunkLog(tmp_path / "en-fr.hyp.jsonl", "k", 4)
    log.append(Chunk(0, ["a"], {}, 1, 1.0))
    with log.path.open("ab") as handle:
        handle.write(line + b"\n")
    log.append(Chunk(2, ["b"], {}, 1, 1.0))
    with pytest.raises(CheckpointError, match=r"en-fr.hyp.jsonl:3: "):
        log.load()


def test_two_runs_cannot_share_an_output_folder(tmp_path):
    data = load_eval_data(JSONL, ["en-fr"])
    with exclusive(tmp_path), pytest.raises(CheckpointError, match="another job is writing to"):
        evaluate(data, HttpRunner("http://127.0.0.1:9"), tmp_path, RunOptions(progress=False))


# --------------------------------------------------------------------------- scoring


def test_tokenizer_follows_the_target_language():
    auto = Scoring()
    assert [auto.tokenizer_for(code) for code in ("en", "zh", "ja", "jpn_Jpan", "th")] == [
        "13a",
        "zh",
        "char",
        "char",
        "char",
    ]
    assert Scoring(tokenize="intl").tokenizer_for("ja") == "intl"


def test_scores_and_signatures():
    refs = ["The cat sat on the mat today.", "It was a sunny day in Paris."]
    perfect = score(refs, refs, "en", Scoring())
    assert (perfect["bleu"], perfect["chrf"]) == (100.0, 100.0)
    assert "tok:13a" in perfect["bleu_signature"] and "nc:6" in perfect["chrf_signature"]
    worse = score(["The cat sat on the mat.", "It was a rainy day in Paris."], refs, "en", Scoring())
    assert 0 < worse["bleu"] < 100 and 0 < worse["chrf"] < 100
    sentence = "人生はチョコレートの箱のようなものだ。"
    japanese = score([sentence], [sentence], "ja", Scoring())
    assert japanese["bleu"] == 100.0 and "tok:char" in japanese["bleu_signature"]


# --------------------------------------------------------------------------- in-process with the fixture model


class CountingTranslator:
    """Wraps the real Translator: records what it was asked, and can die after some engine calls."""

    def __init__(self, inner, fail_on_call: int | None = None):
        self.inner = inner
        self.fail_on_call = fail_on_call
        self.calls = 0
        self.texts: list[tuple[str, str, str]] = []

    @property
    def languages(self) -> list[str]:
        return self.inner.languages

    @property
    def codes(self):
        return self.inner.codes

    @property
    def num_beams(self) -> int:
        return self.inner.num_beams

    @property
    def max_batch_tokens(self) -> int:
        return self.inner.max_batch_tokens

    def count_tokens(self, piece: Piece) -> int:
        return self.inner.count_tokens(piece)

    def translate(self, pieces: Sequence[Piece]) -> list[PieceResult]:
        self.calls += 1
        if self.fail_on_call is not None and self.calls >= self.fail_on_call:
            raise RuntimeError(f"simulated kill on engine call {self.calls}")
        self.texts += [(p.source, p.target, p.text) for p in pieces]
        return self.inner.translate(pieces)


@pytest.fixture(scope="module")
def translator(fixture_model: Path):
    from translator.engine.translator import Translator

    return Translator(fixture_model, Engine(warmup=False))


def local(fixture_model: Path, inner, fail_on_call: int | None = None) -> tuple[LocalRunner, CountingTranslator]:
    counting = CountingTranslator(inner, fail_on_call)
    return LocalRunner(fixture_model, translator=counting), counting


# One direction per BLEU tokenizer (char, zh, 13a) plus both ways of a non-English pair; the e2e test
# scores all twelve through the server.
EXACT_DIRECTIONS = ["en-ja", "en-zh", "zh-en", "de-fr", "fr-de"]


@pytest.mark.model
def test_in_process_scores_the_fixture_exactly_100(fixture_model, translator, tmp_path):
    backend, counting = local(fixture_model, translator)
    data = load_eval_data(FLORES, EXACT_DIRECTIONS)
    # One chunk at a time, so engine calls can be counted; by default chunks of several directions
    # are in flight together and share engine calls.
    options = RunOptions(chunk_size=64, records_per_request=4, chunks_in_flight=1, progress=False)
    report = evaluate(data, backend, tmp_path, options)
    assert {name: (d["bleu"], d["chrf"]) for name, d in report["directions"].items()} == {
        name: (100.0, 100.0) for name in EXACT_DIRECTIONS
    }
    assert report["average"] == {"bleu": 100.0, "chrf": 100.0, "directions": 5}
    assert report["segments"] == data.segments and report["sentences_per_second"] > 0
    # One merged engine call per chunk (each direction fits in one), not one per request.
    assert counting.calls == 5
    assert {d["bleu_signature"].split("|")[3] for d in report["directions"].values()} == {
        "tok:char",
        "tok:zh",
        "tok:13a",
    }
    for name in ("report.json", "report.md", "heatmap.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert (tmp_path / "heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert load_report(tmp_path / "report.json") == report
    assert "| en-ja | 18 | 100.00 | 100.00 |" in (tmp_path / "report.md").read_text(encoding="utf-8")


@pytest.mark.model
def test_killed_run_resumes_without_redoing_finished_chunks(fixture_model, translator, tmp_path):
    data = load_eval_data(JSONL, ["en-fr", "fr-en"])
    options = RunOptions(chunk_size=4, records_per_request=2, chunks_in_flight=1, progress=False)

    clean, _ = local(fixture_model, translator)
    expected = evaluate(data, clean, tmp_path / "clean", options)

    # en-fr: 15 segments = 4 chunks (engine calls 1-4); fr-en dies on its 2nd chunk (call 6).
    dying, _ = local(fixture_model, translator, fail_on_call=6)
    with pytest.raises(RuntimeError, match="simulated kill on engine call 6"):
        evaluate(data, dying, tmp_path / "run", options)
    assert (tmp_path / "run" / "checkpoints" / "en-fr.score.json").exists()
    assert not (tmp_path / "run" / "checkpoints" / "fr-en.score.json").exists()
    assert not (tmp_path / "run" / "report.json").exists()

    resumed, counting = local(fixture_model, translator)
    report = evaluate(data, resumed, tmp_path / "run", options)
    fr_en = data.directions["fr-en"]
    # Only fr-en's chunks after the first: en-fr was finished, fr-en's first chunk was saved.
    assert counting.texts == [("fr", "en", text) for text in fr_en.sources[4:]]
    assert without_timings(report) == without_timings(expected)
    assert report["directions"]["fr-en"]["bleu"] == 100.0

    # Finished: a re-run translates nothing, even with an engine that would fail at once.
    idle, counting = local(fixture_model, translator, fail_on_call=1)
    again = evaluate(data, idle, tmp_path / "run", options)
    assert counting.calls == 0
    assert again == report


@pytest.mark.model
def test_changed_data_is_not_served_from_a_stale_checkpoint(fixture_model, translator, tmp_path, caplog):
    source = tmp_path / "data"
    shutil.copytree(FLORES, source)
    options = RunOptions(chunk_size=8, records_per_request=4, progress=False)
    backend, _ = local(fixture_model, translator)
    evaluate(load_eval_data(source, ["en-fr"]), backend, tmp_path / "out", options)

    lines = (source / "en-fr.en").read_text(encoding="utf-8").splitlines()
    (source / "en-fr.en").write_text("\n".join(lines[1:] + lines[:1]) + "\n", encoding="utf-8")
    backend, counting = local(fixture_model, translator)
    with caplog.at_level(logging.WARNING):
        report = evaluate(load_eval_data(source, ["en-fr"]), backend, tmp_path / "out", options)
    assert len(counting.texts) == 15  # translated again, not reused
    assert "made for other inputs" in caplog.text
    assert report["directions"]["en-fr"]["bleu"] < 100  # sources rotated against their references


@pytest.mark.model
def test_unsupported_language_fails_before_translating(fixture_model, translator, tmp_path):
    path = write(
        tmp_path / "t.jsonl", json.dumps({"src_lang": "en", "tgt_lang": "xx", "source": "Hi.", "reference": "x"}) + "\n"
    )
    backend, counting = local(fixture_model, translator)
    with pytest.raises(RunnerError, match=r"does not support direction\(s\) en-xx \(unknown: xx\)"):
        evaluate(load_eval_data(path), backend, tmp_path / "out", RunOptions(progress=False))
    assert counting.calls == 0


@pytest.mark.model
def test_cli_rerun_of_a_finished_run_only_prints_the_report(fixture_model, translator, tmp_path, capsys):
    backend, _ = local(fixture_model, translator)
    options = RunOptions(chunk_size=256, records_per_request=8, progress=False)
    first = evaluate(load_eval_data(FLORES, ["en-ja", "zh-en"]), backend, tmp_path, options)
    # The CLI builds its own LocalRunner, which would load the model only if it had work to do.
    code = main(
        ["--data", str(FLORES), "--model", str(fixture_model), "--output", str(tmp_path)]
        + ["--directions", "en-ja,zh-en", "--no-progress"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "| en-ja | 18 | 100.00 | 100.00 |" in out and "| zh-en | 15 | 100.00 | 100.00 |" in out
    assert load_report(tmp_path) == first


def test_cli_reports_bad_data_with_exit_code_2(tmp_path, capsys):
    write(tmp_path / "x.en", "One.\nTwo.\n")
    write(tmp_path / "x.fr", "Un.\n")
    code = main(["--data", str(tmp_path), "--model", str(tmp_path), "--output", str(tmp_path / "o"), "--no-progress"])
    assert code == 2
    assert "line-aligned" in capsys.readouterr().err


# --------------------------------------------------------------------------- HTTP client against a fake server


@pytest.mark.server
def test_http_backend_retries_429_and_503_and_runs_requests_concurrently(tmp_path):
    from aiohttp import web

    data = load_eval_data(JSONL, ["en-fr", "fr-en"])
    answers = {
        (d.direction.source, src): ref
        for d in data.directions.values()
        for src, ref in zip(d.sources, d.references, strict=True)
    }
    state = {"posts": 0, "in_flight": 0, "max_in_flight": 0, "priorities": set()}

    async def translation(request: web.Request) -> web.Response:
        state["posts"] += 1
        state["priorities"].add(request.headers.get("Priority"))
        if state["posts"] == 1:
            return web.json_response({"error": "overloaded"}, status=503, headers={"Retry-After": "0"})
        if state["posts"] == 2:
            return web.json_response({"error": "too many requests"}, status=429, headers={"Retry-After": "0"})
        body = (await request.json())["payload"]
        state["in_flight"] += 1
        state["max_in_flight"] = max(state["max_in_flight"], state["in_flight"])
        await asyncio.sleep(0.01)
        state["in_flight"] -= 1
        result = [{"id": r["id"], "text": answers[body["fromLang"], r["text"]]} for r in body["records"]]
        return web.json_response({"result": result})

    async def languages(_: web.Request) -> web.Response:
        return web.json_response({"languages": ["en", "fr"]})

    async def scenario() -> dict:
        async with stand_in_server([web.post("/translation", translation), web.get("/languages", languages)]) as url:
            backend = HttpRunner(url + "/", concurrency=3, backoff_s=0.01)
            options = RunOptions(chunk_size=15, records_per_request=2, progress=False)
            report = await asyncio.to_thread(evaluate, data, backend, tmp_path, options)
            assert backend.retries == 2
            return report

    report = asyncio.run(scenario())
    assert report["average"]["bleu"] == 100.0
    assert report["system"]["url"].endswith(f"{report['system']['url'].rsplit(':', 1)[1]}")
    assert 2 <= state["max_in_flight"] <= 3
    assert state["priorities"] == {BULK_PRIORITY}  # every request at bulk priority


@pytest.mark.server
def test_http_backend_does_not_retry_a_client_error(tmp_path):
    from aiohttp import web

    posts = []

    async def translation(_: web.Request) -> web.Response:
        posts.append(1)
        return web.json_response({"error": "payload.toLang: unsupported language code 'xx'"}, status=400)

    async def scenario() -> None:
        async with stand_in_server([web.post("/translation", translation)]) as url:
            backend = HttpRunner(url)
            await backend.start()
            try:
                refused = r"answered 400: payload.toLang: unsupported language code 'xx'"
                with pytest.raises(RequestRejected, match=refused):
                    await backend.translate("en", "xx", ["Hi."])
                # /languages is not routed here: the run goes on without the up-front check.
                assert await backend.languages() is None
            finally:
                await backend.close()

    asyncio.run(scenario())
    assert len(posts) == 1


# --------------------------------------------------------------------------- the comparison gate


@pytest.fixture
def two_reports(tmp_path):
    scores = {"bleu": 30.0, "chrf": 55.0, "bleu_signature": "sig-b", "chrf_signature": "sig-c"}
    directions = [direction_entry(name, name[:2], name[3:], 10, scores, 1.0) for name in ("en-fr", "fr-en", "en-ja")]
    report = build_report(directions, system={"label": "x"}, data={"path": "d"}, settings={})
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    for path in (old, new):
        write(path, json.dumps(report))
    return old, new


def edit(path: Path, change) -> None:
    report = json.loads(path.read_text(encoding="utf-8"))
    change(report)
    path.write_text(json.dumps(report), encoding="utf-8")


def test_compare_passes_identical_reports(two_reports, capsys):
    old, new = two_reports
    assert main(["compare", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "| en-fr | 30.00 | 30.00 | +0.00 | ok |" in out and "PASS" in out


def test_compare_fails_on_a_planted_regression(two_reports, capsys):
    old, new = two_reports
    edit(new, lambda r: r["directions"]["fr-en"].update(bleu=28.5))
    assert main(["compare", str(old), str(new), "--max-drop", "1.0"]) == 1
    out = capsys.readouterr().out
    assert "| fr-en | 30.00 | 28.50 | -1.50 | REGRESSION |" in out and "FAIL" in out
    # The same drop within a looser threshold, or on another metric, passes.
    assert main(["compare", str(old), str(new), "--max-drop", "1.5"]) == 0
    assert main(["compare", str(old), str(new), "--metric", "chrf"]) == 0


def test_compare_fails_when_a_direction_is_missing_and_lists_new_ones(two_reports, capsys):
    old, new = two_reports

    def drop_and_add(report):
        report["directions"].pop("en-ja")
        report["directions"]["ja-en"] = {**report["directions"]["en-fr"], "direction": "ja-en"}

    edit(new, drop_and_add)
    assert main(["compare", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "| en-ja | 30.00 | - | - | MISSING |" in out
    assert "| ja-en | - | 30.00 | - | new |" in out


def test_compare_flags_scores_with_different_signatures(two_reports):
    old, new = two_reports
    edit(new, lambda r: r["directions"]["en-ja"].update(bleu_signature="other"))
    rows = compare_reports(load_report(old), load_report(new))
    assert [r.note for r in rows if r.direction == "en-ja"] == ["signatures differ: sig-b vs other"]


def test_compare_rejects_what_is_not_a_report(tmp_path, capsys):
    write(tmp_path / "a.json", '{"x": 1}')
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "missing.json")]) == 2
    assert "not an evaluation report" in capsys.readouterr().err
