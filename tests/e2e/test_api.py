"""End to end: one real `bentoml serve` (the session's `server`), hit concurrently."""

from __future__ import annotations

import asyncio
import json
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import aiohttp
import psutil
import pytest
import requests

from harness.corpus import corpus_documents
from harness.metrics import samples
from tests.deploy.helpers import keeps_idle_connections
from tests.e2e.helpers import (
    CONTRACT_REQUEST,
    CONTRACT_RESPONSE,
    batch_size_observations,
    documents,
    post,
    request_for,
)
from translator.contract import limits
from translator.shm.engine_process import channel_path, engine_pids

pytestmark = pytest.mark.server


def test_contract_example_exact(server):
    response = post(server, CONTRACT_REQUEST)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == CONTRACT_RESPONSE


def test_contract_example_reversed(server):
    body = request_for("ja", "en", [("123", "人生はチョコレートの箱のようなものだ。")])
    assert post(server, body).json() == {"result": [{"id": "123", "text": "Life is like a box of chocolates."}]}


def test_concurrent_mixed_pairs_all_exact(server):
    docs = documents()
    # Several documents per request, every pair of languages, 32 requests in flight together.
    jobs = []
    for start in range(0, len(docs), 3):
        chunk = docs[start : start + 3]
        src, tgt = chunk[0][0], chunk[0][1]
        same = [d for d in chunk if (d[0], d[1]) == (src, tgt)]
        jobs.append((request_for(src, tgt, [(f"r{start}-{i}", d[2]) for i, d in enumerate(same)]), same))
    with ThreadPoolExecutor(max_workers=32) as pool:
        responses = list(pool.map(lambda job: post(server, job[0]), jobs))
    for (body, same), response in zip(jobs, responses, strict=True):
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        assert [r["id"] for r in result] == [r["id"] for r in body["payload"]["records"]]
        assert [r["text"] for r in result] == [d[3] for d in same]


def test_multi_paragraph_text_keeps_its_layout(server):
    docs = [d for d in corpus_documents() if d.pair == ("en", "fr")][:3]
    source = "  " + "\n\n".join(" ".join(d.sources) for d in docs[:2]) + "\n" + "  ".join(docs[2].sources) + "\n"
    expected = "  " + "\n\n".join(" ".join(d.targets) for d in docs[:2]) + "\n" + "  ".join(docs[2].targets) + "\n"
    response = post(server, request_for("en", "fr", [("doc", source)]))
    assert response.json() == {"result": [{"id": "doc", "text": expected}]}


def test_ids_echoed_in_order_duplicates_and_blank_text(server):
    records = [("b", "Please do not be late."), ("a", ""), ("b", "   "), ("0", "Please do not be late.")]
    response = post(server, request_for("en", "ja", records))
    assert response.json() == {
        "result": [
            {"id": "b", "text": "遅れないでください。"},
            {"id": "a", "text": ""},
            {"id": "b", "text": "   "},
            {"id": "0", "text": "遅れないでください。"},
        ]
    }


def test_empty_records(server):
    assert post(server, request_for("en", "ja", [])).json() == {"result": []}


def test_languages_endpoint(server):
    response = requests.get(f"{server.url}/languages", timeout=10)
    assert response.status_code == 200
    assert {"en", "ja", "fr", "de", "es", "zh"} <= set(response.json()["languages"])


def test_batches_merge_pieces_across_requests(server):
    before = batch_size_observations(server.metrics())
    one_sentence = [d for d in documents() if "." in d[2] and d[2].count(".") == 1][:40]
    with ThreadPoolExecutor(max_workers=40) as pool:
        list(pool.map(lambda d: post(server, request_for(d[0], d[1], [("x", d[2])])), one_sentence))
    after = batch_size_observations(server.metrics())
    merged = (after[float("inf")] - after.get(1.0, 0.0)) - (before.get(float("inf"), 0.0) - before.get(1.0, 0.0))
    assert merged > 0, f"no batch larger than 1 under 40 concurrent one-record requests: {after}"


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (request_for("xx", "ja", [("1", "Hi.")]), 400, "payload.fromLang: unsupported language code 'xx'"),
        (request_for("en", "qq", [("1", "Hi.")]), 400, "payload.toLang: unsupported language code 'qq'"),
        (
            {"payload": {"fromLang": "en", "toLang": "ja", "records": [{"text": "a"}]}},
            400,
            "payload.records.0.id: Field required",
        ),
        ({"payload": {"fromLang": "en", "records": []}}, 400, "payload.toLang: Field required"),
        (
            {"payload": {"fromLang": "en", "toLang": "ja", "records": [{"id": 5, "text": "a"}]}},
            400,
            "payload.records.0.id: Input should be a valid string",
        ),
        (
            {"payload": {"fromLang": "en", "toLang": "ja", "records": "no"}},
            400,
            "payload.records: Input should be a valid array",
        ),
        ({}, 400, "payload: Field required"),
        ([1, 2], 400, "Input should be an object"),
    ],
)
def test_bad_input_is_a_json_object_naming_the_field(server, body, status, message):
    response = post(server, body)
    assert response.status_code == status
    payload = response.json()
    assert isinstance(payload, dict)
    assert message in payload["error"]


def test_invalid_json_and_unsupported_media_type(server):
    response = requests.post(
        f"{server.url}/translation", data=b'{"payload": ', headers={"content-type": "application/json"}, timeout=10
    )
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]
    response = requests.post(
        f"{server.url}/translation", data=b"\xff\xfe", headers={"content-type": "application/json"}, timeout=10
    )
    assert response.status_code == 400 and isinstance(response.json(), dict)
    response = requests.post(f"{server.url}/translation", files={"f": b"x"}, timeout=10)
    assert response.status_code == 415 and "application/json" in response.json()["error"]


def test_limits_answer_413_with_the_limit(server):
    too_many = request_for("en", "ja", [(str(i), "a") for i in range(limits.MAX_RECORDS_PER_REQUEST + 1)])
    response = post(server, too_many)
    assert response.status_code == 413
    assert str(limits.MAX_RECORDS_PER_REQUEST) in response.json()["error"]

    too_long = request_for("en", "ja", [("1", "a" * (limits.MAX_CHARS_PER_RECORD + 1))])
    response = post(server, too_long)
    assert response.status_code == 413 and "payload.records.0.text" in response.json()["error"]

    huge = json.dumps(request_for("en", "ja", [("1", "a" * (limits.MAX_BODY_BYTES + 10))]))
    response = requests.post(
        f"{server.url}/translation", data=huge, headers={"content-type": "application/json"}, timeout=30
    )
    assert response.status_code == 413
    assert response.json()["limit"] == limits.MAX_BODY_BYTES


def test_unknown_route_and_method_are_json(server):
    response = requests.get(f"{server.url}/nowhere", timeout=10)
    assert response.status_code == 404 and response.json() == {"error": "Not Found"}
    response = requests.get(f"{server.url}/translation", timeout=10)
    assert response.status_code == 405 and isinstance(response.json(), dict)


def test_an_unknown_route_is_404_json_whatever_its_body(server):
    xml = {"data": b"<a/>", "headers": {"content-type": "text/xml"}}
    for kwargs in ({"data": {"a": "1"}}, {"files": {"f": b"x"}}, xml):
        response = requests.post(f"{server.url}/nowhere", timeout=10, **kwargs)
        assert response.status_code == 404 and response.json() == {"error": "Not Found"}, kwargs


# Short: pydantic quotes short inputs whole in its message (BentoML's traceback printed it).
MARKER = "zq7mark"


def test_client_mistakes_are_one_info_line_without_content(server):
    # BentoML logs its input model's refusals as ERROR with a traceback quoting the request; the
    # service rewrites that record (translator/api/client_errors.py, on a logger BentoML does not
    # publish: this pins it). Each bad input carries MARKER, which must not reach the log.
    url = f"{server.url}/translation"
    since = server.log_size()
    glossary = {"entries": [{"source": f"{MARKER}{i}"} for i in range(10_001)]}
    bad = [
        ({"json": {"payload": {"fromLang": MARKER, "toLang": "de"}}}, 400),  # records missing
        ({"data": b"", "headers": {"content-type": "application/json"}}, 400),  # empty body
        ({"data": f'{{"payload": "{MARKER}'.encode(), "headers": {"content-type": "application/json"}}, 400),
        ({"json": {"payload": {"fromLang": "en", "toLang": "de", "records": [{"text": MARKER}]}}}, 400),
        ({"json": {"payload": {"fromLang": "en", "toLang": "de", "records": [], MARKER: MARKER}}}, 400),
        ({"json": {"payload": {"fromLang": "en", "toLang": "de", "records": MARKER}}}, 400),
        ({"json": {"payload": {**request_for("en", "de", [("1", MARKER)])["payload"], "glossary": glossary}}}, 413),
    ]
    for kwargs, status in bad:
        assert requests.post(url, timeout=60, **kwargs).status_code == status, kwargs
    deadline = time.monotonic() + 10
    while server.log(since).count("path=/translation") < len(bad) and time.monotonic() < deadline:
        time.sleep(0.2)
    log = server.log(since)
    assert log.count("path=/translation") >= len(bad), "the access log did not show this test's requests"
    assert MARKER not in log
    assert "[ERROR]" not in log and "Traceback" not in log
    lines = [line for line in log.splitlines() if "POST /translation: 400" in line]
    assert len(lines) == 6 and all("[INFO]" in line for line in lines), log
    said = ("payload.records (missing)", "payload (missing)", "request body (json_invalid)")
    for problem in (*said, "payload.records.0.id (missing)", "payload.records (list_type)"):
        assert any(f"POST /translation: 400 {problem}" in line for line in lines), problem


def test_an_idle_connection_outlives_uvicorns_keep_alive(server):
    # With uvicorn's 5 s, clients reusing a connection as the server closed it lost POSTs without
    # an answer under load (the bench smoke's overload, on CI).
    keeps_idle_connections(server.url)


def test_no_translation_request_in_the_log_was_answered_500(server):
    # Requests of its own first (good, malformed, incomplete), so that it proves something when run
    # alone; after the tests above it covers theirs too. BentoML's own /readyz answers 500 while
    # starting: only the API's answers count.
    url = f"{server.url}/translation"
    before = len([line for line in server.log().splitlines() if "path=/translation" in line])
    assert requests.post(url, json=CONTRACT_REQUEST, timeout=60).status_code == 200
    assert requests.post(url, data="{", headers={"content-type": "application/json"}, timeout=60).status_code == 400
    assert requests.post(url, json={"payload": {}}, timeout=60).status_code == 400
    deadline = time.monotonic() + 10
    while True:
        answers = [line for line in server.log().splitlines() if "path=/translation" in line]
        if len(answers) >= before + 3 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert len(answers) >= before + 3, "the access log did not show this test's requests"
    assert not [line for line in answers if "status=500" in line]


# 200,000 short records, about 6 MB: Python's urllib got "Connection reset by peer" instead of the
# 413, since the server closed while the body was still arriving (translator/api/refusal.py).
BIG_BODY = json.dumps(request_for("en", "ja", [(str(i), "a") for i in range(200_000)])).encode()
REFUSALS = {
    413: ("application/json", f"exceeds the limit of {limits.MAX_BODY_BYTES}"),
    415: ("application/xml", "is not supported; send application/json"),
}


def with_urllib(url: str, data: bytes, content_type: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def with_requests(url: str, data: bytes, content_type: str) -> tuple[int, bytes]:
    response = requests.post(url, data=data, headers={"Content-Type": content_type}, timeout=60)
    return response.status_code, response.content


def with_aiohttp(url: str, data: bytes, content_type: str) -> tuple[int, bytes]:
    async def post() -> tuple[int, bytes]:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
            async with session.post(url, data=data, headers={"Content-Type": content_type}) as response:
                return response.status, await response.read()

    return asyncio.run(post())


def with_curl(url: str, data: bytes, content_type: str) -> tuple[int, bytes]:
    with tempfile.NamedTemporaryFile(suffix=".json") as body:
        body.write(data)
        body.flush()
        done = subprocess.run(
            [
                "curl",
                "-sS",
                "--max-time",
                "60",
                "-H",
                f"Content-Type: {content_type}",
                "--data-binary",
                f"@{body.name}",
                "-w",
                "\n%{http_code}",
                url,
            ],
            capture_output=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    answer, _, status = done.stdout.rpartition(b"\n")
    return int(status), answer


@pytest.mark.parametrize("status", sorted(REFUSALS))
@pytest.mark.parametrize("client", [with_urllib, with_requests, with_aiohttp, with_curl], ids=lambda f: f.__name__)
def test_early_refusals_of_a_big_body_are_readable_by_every_client(server, client, status):
    assert len(BIG_BODY) > limits.MAX_BODY_BYTES
    content_type, message = REFUSALS[status]
    for _ in range(3):  # a reset was not a matter of luck: it happened every time
        got, answer = client(f"{server.url}/translation", BIG_BODY, content_type)
        assert got == status, answer[:300]
        assert message in json.loads(answer)["error"]
    assert post(server, CONTRACT_REQUEST).json() == CONTRACT_RESPONSE


def test_the_api_workers_call_the_engine_on_its_channel_under_uvloop_and_httptools(server):
    """What the request path's speed rests on (bench/results/frontend.md): the engine channel, not
    BentoML's HTTP between services, and uvicorn's C event loop and parser, which it takes only
    when they are installed."""
    for _ in range(4):  # both API workers have had a request, most likely
        assert post(server, CONTRACT_REQUEST).json() == CONTRACT_RESPONSE
    [engine] = engine_pids(server.pid)
    workers = [p for p in psutil.Process(server.pid).children() if p.pid != engine]
    for process in [psutil.Process(engine), *workers]:
        maps = Path(f"/proc/{process.pid}/maps").read_text()
        assert "uvloop/loop." in maps, f"process {process.pid} runs without uvloop"
    for worker in workers:
        assert "httptools/parser/" in Path(f"/proc/{worker.pid}/maps").read_text()
    channel = str(channel_path(engine, server.pid))
    ends = [c for c in psutil.Process(engine).net_connections(kind="unix") if c.laddr == channel]
    # The listening socket, and one accepted connection per API worker that has called.
    assert len(ends) >= 2, ends


def test_the_engine_reports_its_batch_limits_on_metrics(server):
    # The shipped file leaves them to the device: on this CPU, the measured defaults.
    limits = {labels["limit"]: value for labels, value in samples(server.metrics(), "translation_batch_limit")}
    assert limits == {"pieces": 32, "tokens": 8192}
