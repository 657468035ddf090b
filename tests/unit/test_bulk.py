"""m2m-translate (m2m_tools.bulk) in-process with the fixture model: formats, folders, rejects, resume.

Through a real server, and killed with SIGKILL, in tests/e2e/test_bulk.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

import pytest

from fixture.build import load_corpus, sentence_pairs
from harness.servers import stand_in_server
from m2m_tools.bulk import EXIT_BAD_INPUT, EXIT_OK, EXIT_REJECTS, _hint, main
from m2m_tools.corpus import FileUnit, plan_units
from m2m_tools.jobs.http_runner import HttpRunner
from m2m_tools.jobs.job import Invalid, Item, Options, run_job
from m2m_tools.jobs.options import runner_from_args
from translator.contract import limits
from translator.contract.errors import RECORD_FAILED

pytestmark = pytest.mark.model

PAIRS = sentence_pairs(load_corpus())
EN_FR = [(text, fr) for src, tgt, text, fr in PAIRS if (src, tgt) == ("en", "fr")]


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def run(*args: str | Path) -> int:
    return main([str(a) for a in args] + ["--no-progress"])


def test_text_file_line_for_line(fixture_model, tmp_path, capsys):
    # A blank line is a record too: every input line has its output line, ending as it did (a
    # Windows-edited file stays CRLF; a last line without an end gets none).
    source = tmp_path / "in.txt"
    source.write_bytes(f"{EN_FR[0][0]}\r\n\r\n{EN_FR[1][0]}\n{EN_FR[2][0]}".encode())
    assert run(source, "--output", tmp_path / "out.txt", "--model", fixture_model, "--from", "en", "--to", "fr") == 0
    assert (tmp_path / "out.txt").read_bytes() == f"{EN_FR[0][1]}\r\n\r\n{EN_FR[1][1]}\n{EN_FR[2][1]}".encode()
    assert "4 records (0 already done, 4 translated now), 3 sentences" in capsys.readouterr().err


def test_jsonl_with_per_line_languages_and_every_kind_of_reject(fixture_model, tmp_path, capsys):
    ja = next((text, out) for src, tgt, text, out in PAIRS if (src, tgt) == ("en", "ja"))
    rows = [
        json.dumps({"id": 1, "text": EN_FR[0][0]}),  # --from/--to
        json.dumps({"id": "b", "text": ja[0], "toLang": "ja"}),  # its own target
        "",  # not a record
        json.dumps({"id": "long", "text": "x" * (limits.MAX_CHARS_PER_RECORD + 1)}),
        "{broken",
        json.dumps({"id": "nolang", "text": "Hi.", "fromLang": None}),
        json.dumps({"id": "xx", "text": "Hi.", "fromLang": "xx"}),
        json.dumps({"text": "no id"}),
        json.dumps({"id": "notarget", "text": "Hi.", "toLang": None}),
        json.dumps({"id": "last", "text": EN_FR[2][0]}),
    ]
    (tmp_path / "in.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    output = tmp_path / "out.jsonl"
    code = run(tmp_path / "in.jsonl", "--output", output, "--model", fixture_model, "--from", "en", "--to", "fr")
    assert code == EXIT_REJECTS
    out = jsonl(output)
    # Every record, in order; blank lines are not records.
    assert [r["id"] for r in out] == [1, "b", "long", None, "nolang", "xx", None, "notarget", "last"]
    assert (out[0], out[1], out[-1]) == (
        {"id": 1, "text": EN_FR[0][1]},
        {"id": "b", "text": ja[1]},
        {"id": "last", "text": EN_FR[2][1]},
    )
    rejects = jsonl(tmp_path / "out.jsonl.rejects.jsonl")
    assert {r["line"]: r["reason"] for r in rejects} == {
        4: "text: length in characters exceeds the limit of 20000 (got 20001)",
        5: "line 5: not valid JSON (Expecting property name enclosed in double quotes at column 2)",
        6: "no source language: give fromLang on the line, or --from for the whole job",
        7: "fromLang: unsupported language code 'xx'; GET /languages lists the supported codes",
        8: "line 8: missing field 'id'",
        9: "no target language: give toLang on the line, or --to for the whole job",
    }
    # The output carries the same reasons, on the records' own lines.
    assert [(r["id"], r["error"]) for r in out if "error" in r] == [(r["id"], r["reason"]) for r in rejects]
    assert all(r["text"] is None for r in out if "error" in r)
    assert "9 records" in capsys.readouterr().err


def test_a_folder_is_translated_file_by_file(fixture_model, tmp_path):
    source = tmp_path / "in"
    (source / "sub").mkdir(parents=True)
    (source / "a.txt").write_text(f"{EN_FR[0][0]}\n{EN_FR[1][0]}\n", encoding="utf-8")
    (source / "sub" / "b.jsonl").write_text(json.dumps({"id": "x", "text": EN_FR[2][0]}) + "\n", encoding="utf-8")
    (source / ".hidden").write_text("ignored\n", encoding="utf-8")
    (source / "empty.txt").write_text("", encoding="utf-8")
    out = tmp_path / "out"
    assert run(source, "--output", out, "--model", fixture_model, "--from", "en", "--to", "fr") == EXIT_OK
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "a.txt",
        "empty.txt",
        "sub/b.jsonl",
    ]
    assert lines(out / "a.txt") == [EN_FR[0][1], EN_FR[1][1], ""]
    assert jsonl(out / "sub" / "b.jsonl") == [{"id": "x", "text": EN_FR[2][1]}]
    assert (out / "empty.txt").read_text() == ""
    assert not (tmp_path / "out.rejects.jsonl").exists()


def test_bad_invocations_exit_2(fixture_model, tmp_path, capsys):
    assert run(tmp_path / "nope.txt", "--output", tmp_path / "o.txt", "--model", fixture_model) == EXIT_BAD_INPUT
    assert "no such file or folder" in capsys.readouterr().err
    (tmp_path / "in.txt").write_text("Hi.\n", encoding="utf-8")
    assert run(tmp_path / "in.txt", "--output", tmp_path / "in.txt", "--model", fixture_model) == EXIT_BAD_INPUT
    assert "would overwrite the input" in capsys.readouterr().err
    assert run(tmp_path / "in.txt", "--output", tmp_path / "o.txt", "--model", tmp_path / "none") == EXIT_BAD_INPUT


@pytest.mark.pure
def test_a_language_code_refused_up_front_comes_with_a_hint_even_without_langcodes(monkeypatch):
    languages = frozenset({"en", "pt", "zh"})
    assert _hint("EN", languages) == "did you mean 'en'?"
    assert _hint("xx", languages) == "it takes en, pt, zh"
    assert _hint("xx", frozenset(f"l{i:02d}" for i in range(30)), shown=2) == "it takes l00, l01, and 28 more"
    # The Job's image (requirements-tools.txt) has no langcodes, which a region or script needs.
    monkeypatch.setitem(sys.modules, "langcodes", None)
    assert _hint("pt-AO", languages) == "it takes en, pt, zh"


def test_the_engine_of_an_in_process_job_is_chosen_on_the_command_line(
    fixture_model, converted_fixture_model, tmp_path, capsys
):
    (tmp_path / "in.txt").write_text(EN_FR[0][0] + "\n", encoding="utf-8")
    for engine, model in (("transformers:float32", fixture_model), ("ctranslate2:int8", converted_fixture_model)):
        output = tmp_path / f"{engine.replace(':', '-')}.txt"
        assert (
            run(
                tmp_path / "in.txt",
                "--output",
                output,
                "--model",
                model,
                "--engine",
                engine,
                "--from",
                "en",
                "--to",
                "fr",
            )
            == 0
        )
        assert lines(output) == [EN_FR[0][1], ""], engine
    for engine, message in (
        ("ctranslate2:int8", "python -m translator.engine.backends.ctranslate2_convert"),  # not converted
        ("ctranslate2:float16", "CTranslate2 on the CPU computes in float32 or int8"),
        ("onnx:int8", "Input should be 'auto', 'transformers', 'compiled', 'ctranslate2' or 'simulated'"),
        ("transformers", "expected BACKEND:DTYPE"),
        ("transformers:int8_float16", "needs backend ctranslate2"),
    ):
        code = run(tmp_path / "in.txt", "--output", tmp_path / "o.txt", "--model", fixture_model, "--engine", engine)
        assert code == EXIT_BAD_INPUT, engine
        assert message in capsys.readouterr().err, engine
    code = run(
        tmp_path / "in.txt",
        "--output",
        tmp_path / "o.txt",
        "--url",
        "http://127.0.0.1:9",
        "--engine",
        "ctranslate2:int8",
    )
    assert code == EXIT_BAD_INPUT
    assert "--engine applies to --model" in capsys.readouterr().err


def test_the_engine_asked_for_is_the_one_in_the_jobs_identity(fixture_model, converted_fixture_model):
    # A job's checkpoints are keyed on its runner's identity: a job resumed on another engine or
    # precision must not reuse the chunks of the first.
    identities = {}
    for engine, model in (
        ("transformers:float32", converted_fixture_model),
        ("transformers:int8", converted_fixture_model),
        ("ctranslate2:int8", converted_fixture_model),
        (None, fixture_model),  # auto, not converted: transformers
    ):
        args = argparse.Namespace(url=None, model=model, engine=engine)
        identities[engine] = runner_from_args(args, ValueError).identity["engine"]
    assert identities == {
        "transformers:float32": ["transformers", "cpu", "float32"],
        "transformers:int8": ["transformers", "cpu", "int8"],
        "ctranslate2:int8": ["ctranslate2", "cpu", "int8"],
        None: ["transformers", "cpu", "int8"],
    }


@pytest.mark.pure
def test_units_key_on_content_and_settings(tmp_path):
    (tmp_path / "a.txt").write_text("One.\nTwo.\n", encoding="utf-8")
    [unit] = plan_units(tmp_path / "a.txt", tmp_path / "o.txt", source="en", target="fr", forced_format=None).units
    assert (unit.size, list(unit.entries())) == (2, [Item("One.", "en", "fr"), Item("Two.", "en", "fr")])
    other_target = FileUnit(unit.path, unit.output, unit.format, unit.name, "en", "de")
    (tmp_path / "a.txt").write_text("One.\nTwo!\n", encoding="utf-8")
    other_text = FileUnit(unit.path, unit.output, unit.format, unit.name, "en", "fr")
    assert len({unit.key, other_target.key, other_text.key}) == 3
    [as_jsonl] = plan_units(
        tmp_path / "a.txt", tmp_path / "o.txt", source="en", target="fr", forced_format="jsonl"
    ).units
    assert isinstance(next(as_jsonl.entries()), Invalid)


@pytest.mark.server
def test_a_record_the_server_refuses_is_found_and_rejected_alone(tmp_path):
    """A 4xx for a request of several records: each is sent again alone, only the culprit is rejected."""
    from aiohttp import web

    posts: list[int] = []

    async def translation(request: web.Request) -> web.Response:
        records = (await request.json())["payload"]["records"]
        posts.append(len(records))
        if any(r["text"] == "poison" for r in records):
            return web.json_response({"error": "payload.records.0.text: something the server refuses"}, status=422)
        return web.json_response({"result": [{"id": r["id"], "text": r["text"].upper()} for r in records]})

    async def scenario() -> None:
        async with stand_in_server([web.post("/translation", translation)]) as url:
            (tmp_path / "in.txt").write_text("a\nb\npoison\nc\n", encoding="utf-8")
            plan = plan_units(tmp_path / "in.txt", tmp_path / "out.txt", source="en", target="fr", forced_format=None)
            units = plan.units
            http = HttpRunner(url, concurrency=2)
            options = Options(chunk_size=4, records_per_request=4, progress=False)

            def written(state):
                state.unit.write_output(state.log, state.done)

            summary = await asyncio.to_thread(run_job, units, http, tmp_path / "state", options, on_unit_done=written)
            assert summary.rejects == 1
            assert units[0].rejected == [
                {
                    "file": "in.txt",
                    "line": 3,
                    "id": 3,
                    "reason": f"POST {url}/translation answered 422: "
                    "payload.records.0.text: something the server refuses",
                }
            ]

    asyncio.run(scenario())
    assert posts[0] == 4 and sorted(posts[1:]) == [1, 1, 1, 1]
    assert lines(tmp_path / "out.txt") == ["A", "B", "", "C", ""]


@pytest.mark.server
def test_a_record_the_engine_cannot_translate_is_set_aside_and_the_job_goes_on(tmp_path):
    """A 500 whose kind says one record fails (it will fail again): not retried, not the end of the
    job; the record is found, rejected alone, and the job ends with the count."""
    from aiohttp import web

    posts: list[int] = []

    async def translation(request: web.Request) -> web.Response:
        records = (await request.json())["payload"]["records"]
        posts.append(len(records))
        for index, record in enumerate(records):
            if record["text"] == "poison":
                body = {
                    "error": f"record {record['id']!r} could not be translated: RuntimeError: boom",
                    "kind": RECORD_FAILED,
                    "record": record["id"],
                    "field": f"payload.records.{index}.text",
                }
                return web.json_response(body, status=500)
        return web.json_response({"result": [{"id": r["id"], "text": r["text"].upper()} for r in records]})

    async def scenario() -> None:
        async with stand_in_server([web.post("/translation", translation)]) as url:
            (tmp_path / "in.txt").write_text("a\nb\npoison\nc\n", encoding="utf-8")
            plan = plan_units(tmp_path / "in.txt", tmp_path / "out.txt", source="en", target="fr", forced_format=None)
            units = plan.units
            options = Options(chunk_size=4, records_per_request=4, progress=False)

            def written(state):
                state.unit.write_output(state.log, state.done)

            summary = await asyncio.to_thread(
                run_job, units, HttpRunner(url, concurrency=2), tmp_path / "state", options, on_unit_done=written
            )
            assert summary.rejects == 1
            [rejected] = units[0].rejected
            assert rejected["line"] == 3 and "answered 500" in rejected["reason"] and "boom" in rejected["reason"]

    asyncio.run(scenario())
    # The request of four, then each record alone: nothing retried, no back-off.
    assert posts[0] == 4 and sorted(posts[1:]) == [1, 1, 1, 1]
    assert lines(tmp_path / "out.txt") == ["A", "B", "", "C", ""]


@pytest.mark.server
def test_a_full_server_gets_fewer_requests_in_flight_and_the_job_finishes(tmp_path):
    """The service refuses (503 + Retry-After) what it cannot answer in time. A job with more
    requests in flight than that must slow down and finish, not spend its retries and stop."""
    from aiohttp import web

    capacity = 3
    state = {"in_flight": 0, "max_admitted": 0, "refused": 0}

    async def translation(request: web.Request) -> web.Response:
        records = (await request.json())["payload"]["records"]
        if state["in_flight"] >= capacity:
            state["refused"] += 1
            return web.json_response({"error": "the engine is overloaded"}, status=503, headers={"Retry-After": "0"})
        state["in_flight"] += 1
        state["max_admitted"] = max(state["max_admitted"], state["in_flight"])
        try:
            await asyncio.sleep(0.02)
            return web.json_response({"result": [{"id": r["id"], "text": r["text"].upper()} for r in records]})
        finally:
            state["in_flight"] -= 1

    async def scenario() -> HttpRunner:
        async with stand_in_server([web.post("/translation", translation)]) as url:
            texts = [f"line {i}" for i in range(200)]
            (tmp_path / "in.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
            plan = plan_units(tmp_path / "in.txt", tmp_path / "out.txt", source="en", target="fr", forced_format=None)
            units = plan.units
            # Two retries would not survive the first wave of refusals without the adaptive limit.
            http = HttpRunner(url, concurrency=16, max_retries=2, backoff_s=0.01)
            options = Options(chunk_size=50, records_per_request=2, progress=False)

            def written(job_state):
                job_state.unit.write_output(job_state.log, job_state.done)

            summary = await asyncio.to_thread(run_job, units, http, tmp_path / "state", options, on_unit_done=written)
            assert summary.rejects == 0
            return http

    http = asyncio.run(scenario())
    assert lines(tmp_path / "out.txt") == [f"LINE {i}" for i in range(200)] + [""]
    assert state["refused"] > 0 and state["max_admitted"] <= capacity
    assert http._slots is not None and http._slots.limit < 16  # it learned to send fewer


@pytest.mark.pure
def test_in_flight_limit_halves_once_per_round_of_refusals_and_grows_back():
    from m2m_tools.jobs.http_runner import InFlightLimit

    limit = InFlightLimit(16)
    limit.refused(sent_in_round=0)
    limit.refused(sent_in_round=0)  # the same wave of requests: no second halving
    assert limit.limit == 8
    limit.refused(sent_in_round=1)
    assert limit.limit == 4
    for _ in range(4):
        limit.succeeded()
    assert limit.limit == 5  # one more per round of successes
    for _ in range(200):
        limit.succeeded()
    assert limit.limit == 16


@pytest.mark.parametrize(("concurrency", "expected"), [(1, 2), (32, 2), (64, 3), (100, 5)])
@pytest.mark.pure
def test_enough_chunks_in_flight_to_keep_the_requests_going(concurrency, expected):
    # 256-record chunks at 8 records a request are 32 requests: one chunk more than the
    # concurrency needs, so a chunk finishing never leaves the runner idle.
    assert Options(chunk_size=256, records_per_request=8).in_flight(concurrency) == expected
