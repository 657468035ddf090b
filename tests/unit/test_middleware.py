from __future__ import annotations

import asyncio
import json
import socket
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from harness.servers import free_port
from tests import virtual_time
from tests.unit.helpers.asgi import echo_app, run_app
from translator.api.middleware import EdgeMiddleware
from translator.api.routes import languages_body
from translator.contract import limits
from translator.shm.in_flight import SharedInFlight

pytestmark = pytest.mark.pure


async def failing_app(scope, receive, send):
    await receive()
    await send({"type": "http.response.start", "status": 503, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'[{"error": "busy"}]'})


def test_body_over_the_limit_is_413_without_reaching_the_app():
    status, _, payload = run_app(EdgeMiddleware(echo_app, max_body_bytes=2500), b"x" * 3000)
    assert status == 413
    assert json.loads(payload) == {"error": "request body in bytes exceeds the limit of 2500", "limit": 2500}


FORM = [(b"content-type", b"application/x-www-form-urlencoded")]


@pytest.mark.parametrize("path", ["/translation", "/glossaries"])
def test_a_form_to_a_route_that_reads_json_is_415(path):
    status, _, payload = run_app(EdgeMiddleware(echo_app), b"a=1", FORM, path)
    assert status == 415 and "send application/json" in json.loads(payload)["error"]


async def not_found_app(scope, receive, send):
    await receive()
    await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"Not Found"})


@pytest.mark.parametrize("headers", [FORM, [(b"content-type", b"application/xml")], []])
def test_an_unknown_route_is_404_json_whatever_its_body(headers):
    # The media type is the route's to judge (docs/api.md promises a 404 for an unknown route).
    status, _, payload = run_app(EdgeMiddleware(not_found_app), b"a=1", headers, "/nowhere")
    assert status == 404 and json.loads(payload) == {"error": "Not Found"}


@pytest.mark.parametrize("path", ["/v2/translate", "/deepl/v2/translate", "/v2/nowhere"])
def test_deepls_refusals_and_rewritten_errors_have_its_message(path):
    status, _, payload = run_app(EdgeMiddleware(echo_app, max_body_bytes=10), b"x" * 30, path=path)
    message = "request body in bytes exceeds the limit of 10"
    assert status == 413 and json.loads(payload) == {"message": message, "error": message}
    status, _, payload = run_app(EdgeMiddleware(not_found_app), b"text=x", FORM, path)
    assert status == 404 and json.loads(payload) == {"message": "Not Found", "error": "Not Found"}


def test_declared_content_length_over_the_limit_is_413():
    status, _, _ = run_app(EdgeMiddleware(echo_app, max_body_bytes=10), b"", headers=[(b"content-length", b"11")])
    assert status == 413


def test_body_under_the_limit_reaches_the_app_whole():
    status, _, payload = run_app(EdgeMiddleware(echo_app, max_body_bytes=5000), b"y" * 4321)
    assert (status, payload) == (200, b"y" * 4321)


def test_error_responses_are_rewritten_with_retry_after():
    status, headers, payload = run_app(EdgeMiddleware(failing_app), b"{}")
    assert status == 503
    assert json.loads(payload) == {"error": "busy"}
    assert headers[b"retry-after"] == b"5"
    assert int(headers[b"content-length"]) == len(payload)


class Client:
    """The server side of one request as an ASGI server shows it: the body arrives in chunks, and
    every message sent back is recorded with how much of the body had been read by then."""

    def __init__(self, body: bytes, chunk: int = 1000) -> None:
        self.chunks = [body[i : i + chunk] for i in range(0, len(body), chunk)] or [b""]
        self.read = 0
        self.sent: list[tuple[dict, int]] = []

    async def receive(self):
        if not self.chunks:
            await asyncio.sleep(3600)  # a real server blocks here until the client goes
        chunk = self.chunks.pop(0)
        self.read += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": bool(self.chunks)}

    async def send(self, message):
        self.sent.append((message, self.read))

    def run(self, middleware: EdgeMiddleware, headers=()) -> None:
        scope = {"type": "http", "method": "POST", "path": "/translation", "headers": list(headers)}
        asyncio.run(middleware(scope, self.receive, self.send))

    @property
    def status(self) -> int:
        return self.sent[0][0]["status"]

    @property
    def headers(self) -> dict:
        return dict(self.sent[0][0]["headers"])

    def answer(self) -> dict:
        return json.loads(b"".join(m.get("body", b"") for m, _ in self.sent[1:]))


def answered_before_the_end(client: Client) -> tuple[int, int]:
    """(body bytes read when the whole answer had been sent, when the response was completed)."""
    [(_, at_answer)] = [(m, read) for m, read in client.sent if m.get("body")]
    (_, at_end) = client.sent[-1]
    assert client.sent[-1][0] == {"type": "http.response.body", "body": b"", "more_body": False}
    return at_answer, at_end


def full_admission() -> SharedInFlight:
    """An admission count already at its limit (held by this process), in a file of its own."""
    admission = SharedInFlight(1, Path(tempfile.mkdtemp()) / "admission")
    assert admission.try_acquire()
    return admission


@pytest.mark.parametrize(
    ("middleware", "headers", "status"),
    [
        (EdgeMiddleware(echo_app, max_body_bytes=10), [(b"content-length", b"30000")], 413),
        (EdgeMiddleware(echo_app, max_body_bytes=2500), [], 413),  # chunked: found over the limit
        (EdgeMiddleware(echo_app), [(b"content-type", b"application/xml")], 415),
        (EdgeMiddleware(echo_app, admission=full_admission()), [], 429),
    ],
)
def test_early_refusal_answers_at_once_and_discards_the_rest_before_closing(middleware, headers, status):
    client = Client(b"x" * 30000)
    client.run(middleware, headers)
    assert client.status == status and isinstance(client.answer()["error"], str)
    # The rest is not going to be read as a next request on this connection.
    assert client.headers[b"connection"] == b"close"
    at_answer, at_end = answered_before_the_end(client)
    # The whole answer went out before the body was read on; the response (and so the connection)
    # ended only once the whole body had been read: no reset for clients still sending it.
    assert at_answer < 30000 and at_end == 30000


def test_a_body_read_to_its_end_is_refused_without_waiting_or_closing():
    client = Client(b"x" * 3000, chunk=3000)
    client.run(EdgeMiddleware(echo_app, max_body_bytes=2500))
    assert client.status == 413 and b"connection" not in client.headers
    assert client.sent[-1][1] == 3000


@pytest.fixture(scope="module")
def uvicorn_url():
    """The middleware under uvicorn with its h11 protocol, which BentoML 1.4 runs (it installs
    plain `uvicorn`, without httptools): the refusals of a real HTTP server over real sockets."""
    import uvicorn

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        await echo_app(scope, receive, send)

    refusing = {
        "/413": EdgeMiddleware(app),
        "/429": EdgeMiddleware(app, admission=full_admission()),
        "/408": EdgeMiddleware(app, body_timeout_s=0.5),
    }

    async def route(scope, receive, send):
        await refusing.get(scope.get("path"), refusing["/413"])(scope, receive, send)

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(route, host="127.0.0.1", port=port, http="h11", log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def records_body(records: int) -> bytes:
    return json.dumps({"payload": {"records": [{"id": str(i), "text": "a"} for i in range(records)]}}).encode()


# 6 MB of 200,000 short records: urllib got "Connection reset by peer" instead of the 413. A body
# over the limit is a 413 even on a full server (a retry would meet it anyway): the 429 is shown
# with a body just under the limit, unread as well.
BIG_BODIES = {413: records_body(200_000), 429: records_body(130_000)}


@pytest.mark.parametrize(("path", "status"), [("/413", 413), ("/429", 429)])
@pytest.mark.server
def test_urllib_reads_an_early_refusal_of_a_big_body(uvicorn_url, path, status):
    body = BIG_BODIES[status]
    assert (len(body) > limits.MAX_BODY_BYTES) == (status == 413) and len(body) > 3_000_000
    request = urllib.request.Request(
        uvicorn_url + path, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    for _ in range(3):
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=30)
        assert info.value.code == status
        assert isinstance(json.loads(info.value.read())["error"], str)


def test_languages_body_says_which_codes_auto_detects():
    # ast and yi are M2M100 languages the detector cannot name: explicit fromLang only.
    body = languages_body(["ast", "de", "en", "yi"])
    assert body["autoDetect"] == {"fromLang": "auto", "languages": ["de", "en"]}
    assert body["languages"] == body["acceptedCodes"] == ["ast", "de", "en", "yi"]
    assert body["names"]["de"] == "German"  # the names the page and LibreTranslate's list show


def test_languages_body_lists_every_accepted_code_beside_one_a_language():
    body = languages_body(["en", "zh"], {"en": "eng_Latn", "zh": "zho_Hans"}, {"en", "eng_Latn", "zh-Hans"})
    assert body["languages"] == ["en", "zh"] and body["modelCodes"]["zh"] == "zho_Hans"
    assert body["acceptedCodes"] == ["en", "eng_Latn", "zh-Hans"]


def fresh_admission(limit: int) -> SharedInFlight:
    return SharedInFlight(limit, Path(tempfile.mkdtemp()) / "admission")


def test_a_body_still_arriving_holds_no_admission_slot():
    # Admission of one: a client trickling its body must not keep the next client out.
    async def scenario() -> None:
        admission = fresh_admission(1)
        middleware = EdgeMiddleware(echo_app, admission=admission)
        more = asyncio.Event()
        slow_sent: list[dict] = []

        async def slow_receive():
            if not more.is_set():
                await more.wait()
                return {"type": "http.request", "body": b"slow", "more_body": True}
            return {"type": "http.request", "body": b" body", "more_body": False}

        async def slow_send(message):
            slow_sent.append(message)

        scope = {"type": "http", "method": "POST", "path": "/translation", "headers": []}
        slow = asyncio.ensure_future(middleware(scope, slow_receive, slow_send))
        await asyncio.sleep(0.05)
        assert admission.in_flight() == 0
        fast = Client(b"fast body")
        await middleware(scope, fast.receive, fast.send)
        assert fast.status == 200
        more.set()
        await asyncio.wait_for(slow, 5)
        assert slow_sent[0]["status"] == 200 and slow_sent[1]["body"] == b"slow body"
        assert admission.in_flight() == 0

    asyncio.run(scenario())


def test_a_body_slower_than_its_time_limit_is_408_and_the_connection_closes():
    async def never_ends():
        await asyncio.sleep(0.02)
        return {"type": "http.request", "body": b"z", "more_body": True}

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    admission = fresh_admission(4)
    called = []

    async def app(scope, receive, send):
        called.append(scope)

    middleware = EdgeMiddleware(app, admission=admission, body_timeout_s=0.3)
    scope = {"type": "http", "method": "POST", "path": "/translation", "headers": []}

    async def answered_after() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await middleware(scope, never_ends, send)
        return loop.time() - started

    # On a virtual clock: answered at its limit, however busy the machine (never, without one).
    assert virtual_time.run(answered_after()) == pytest.approx(0.3, abs=0.02)
    assert sent[0]["status"] == 408 and (b"connection", b"close") in sent[0]["headers"]
    body = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))
    assert body == {"error": "request body did not arrive within 0.3 s", "limit_s": 0.3}
    assert not called and admission.in_flight() == 0


@pytest.mark.parametrize(
    ("headers", "status"),
    [([(b"content-type", b"application/xml")], 415), ([(b"content-length", b"30000000")], 413)],
)
def test_lingering_after_a_refusal_holds_no_admission_slot(headers, status):
    admission = fresh_admission(2)
    held: list[int] = []

    class Watching(Client):
        async def receive(self):
            held.append(admission.in_flight())
            return await super().receive()

    client = Watching(b"x" * 30000)
    client.run(EdgeMiddleware(echo_app, admission=admission), headers)
    assert client.status == status and client.sent[-1][1] == 30000  # the whole body was discarded
    assert held and set(held) == {0}


def test_a_full_server_refuses_from_the_headers_without_reading_the_body():
    client = Client(b'{"payload": {}}' * 1000, chunk=100)
    client.run(EdgeMiddleware(echo_app, admission=full_admission()))
    at_answer, _ = answered_before_the_end(client)
    assert client.status == 429 and at_answer == 0


@pytest.mark.server
def test_a_trickling_client_reads_the_408_and_is_disconnected(uvicorn_url):
    host, port = uvicorn_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /408 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        started = time.monotonic()
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        assert time.monotonic() - started < 5, "the connection stayed open"
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408") and b"connection: close" in head.lower()
    assert json.loads(body)["error"] == "request body did not arrive within 0.5 s"


def test_bodies_arriving_at_once_are_bounded_in_bytes_received_per_worker():
    # Admission does not bound bodies still arriving: the bytes received of them do.
    async def scenario() -> None:
        middleware = EdgeMiddleware(echo_app, max_arriving_bytes=100)
        more = asyncio.Event()
        first = True

        async def slow_receive():
            nonlocal first
            if first:
                first = False
                return {"type": "http.request", "body": b"x" * 80, "more_body": True}
            await more.wait()
            return {"type": "http.request", "body": b"", "more_body": False}

        sent: list[dict] = []

        async def send(message):
            sent.append(message)

        def scope(length: int | None) -> dict:
            headers = [] if length is None else [(b"content-length", str(length).encode())]
            return {"type": "http", "method": "POST", "path": "/translation", "headers": headers}

        slow = asyncio.ensure_future(middleware(scope(80), slow_receive, send))
        await asyncio.sleep(0.02)
        assert middleware.bodies.arriving == 80
        # 80 received + 50 declared > 100: refused before reading; chunked, refused as it arrives.
        for length in (50, None):
            refused = Client(b"y" * 50)
            await middleware(scope(length), refused.receive, refused.send)
            assert refused.status == 429 and "arriving" in refused.answer()["error"]
        fits = Client(b"z" * 20)
        await middleware(scope(20), fits.receive, fits.send)
        assert fits.status == 200
        more.set()
        await asyncio.wait_for(slow, 5)
        after = Client(b"w" * 90)
        await middleware(scope(90), after.receive, after.send)
        assert after.status == 200 and middleware.bodies.arriving == 0

    asyncio.run(scenario())


def test_connections_that_send_headers_and_no_body_take_no_arriving_bytes():
    # Charged as declared, 200 connections announcing 4 MiB bodies and sending nothing kept every
    # other client out (429) until their 408, 60 s later, and could reconnect at once.
    async def scenario() -> None:
        middleware = EdgeMiddleware(echo_app, max_arriving_bytes=10 * limits.MAX_BODY_BYTES)
        declared = [(b"content-length", str(limits.MAX_BODY_BYTES).encode())]
        chunked = [(b"transfer-encoding", b"chunked")]

        async def nothing():
            await asyncio.sleep(3600)  # headers sent, and not one byte of the body

        silent = [
            asyncio.ensure_future(
                middleware(
                    {"type": "http", "method": "POST", "path": "/translation", "headers": headers},
                    nothing,
                    Client(b"").send,
                )
            )
            for headers in [declared, chunked] * 100
        ]
        await asyncio.sleep(0.05)
        normal = Client(b"n" * 5000)
        await middleware(
            {"type": "http", "method": "POST", "path": "/translation", "headers": [(b"content-length", b"5000")]},
            normal.receive,
            normal.send,
        )
        assert normal.status == 200
        for task in silent:
            task.cancel()
        await asyncio.gather(*silent, return_exceptions=True)
        assert middleware.bodies.arriving == 0

    asyncio.run(scenario())


def test_a_body_cut_short_by_a_disconnect_never_reaches_the_app():
    called = []

    async def app(scope, receive, send):
        called.append(scope)

    messages = [
        {"type": "http.request", "body": b'{"payload": {}}', "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive():
        return messages.pop(0)

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    middleware = EdgeMiddleware(app, admission=fresh_admission(2))
    asyncio.run(middleware({"type": "http", "method": "POST", "path": "/translation", "headers": []}, receive, send))
    assert not called and middleware.bodies.arriving == 0
    # Answered all the same (uvicorn drops it): BentoML's middlewares wait for a response.
    assert sent[0]["status"] == 499


def test_the_slot_is_given_back_when_the_answer_is_ready_and_an_unread_answer_is_counted_until_the_client_goes():
    # A client that never reads its answer (uvicorn's send then waits for it for ever) kept its
    # admission slot as long as it kept the connection: 256 such clients locked everyone out.
    async def scenario() -> None:
        admission = fresh_admission(1)
        middleware = EdgeMiddleware(echo_app, admission=admission, send_timeout_s=0.2, max_untaken_bytes=15)
        held: list[int] = []
        gone = asyncio.Event()

        async def never_read(message):
            held.append(admission.in_flight())
            if message["type"] == "http.response.body":
                await asyncio.sleep(3600)  # the client does not read: flow control blocks here

        body = iter([{"type": "http.request", "body": b"a big answer", "more_body": False}])

        async def stuck_receive():
            if (message := next(body, None)) is not None:
                return message
            await gone.wait()
            return {"type": "http.disconnect"}

        scope = {"type": "http", "method": "POST", "path": "/translation", "headers": []}
        stuck = asyncio.ensure_future(middleware(scope, stuck_receive, never_read))
        await asyncio.sleep(0.5)  # past the send time limit
        assert held == [0, 0]  # the answer started, and its body was sent, with the slot given back
        assert not stuck.done() and middleware.unread.bytes == len(b"a big answer")
        after = Client(b"next")
        await middleware(scope, after.receive, after.send)
        assert after.status == 200 and admission.in_flight() == 0  # under the bound: served
        middleware.unread.bytes += 10  # past it (15 bytes): refused until the client goes
        refused = Client(b"refused")
        await middleware(scope, refused.receive, refused.send)
        assert refused.status == 429 and "not read" in refused.answer()["error"]
        middleware.unread.bytes -= 10
        gone.set()
        await asyncio.wait_for(stuck, 5)
        assert middleware.unread.bytes == 0

    asyncio.run(scenario())


def test_a_failure_of_the_middleware_itself_is_answered_never_left_hanging(monkeypatch):
    # A Priority of u=² once raised a ValueError from the middleware's forecast check: the client
    # waited without an answer. Whatever fails there now gets a JSON 500 and a closed connection.
    middleware = EdgeMiddleware(echo_app)

    def broken(scope):
        raise ValueError("an unforeseen header")

    monkeypatch.setattr(middleware, "_forecast_late", broken)
    client = Client(b"{}")
    client.run(middleware)
    assert client.status == 500 and (b"connection", b"close") in client.sent[0][0]["headers"]
    assert client.answer() == {"error": "internal error before the request was handled"}
