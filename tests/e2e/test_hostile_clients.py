"""Clients that hold what others need, on a running server: connections that announce a body and
send nothing, and clients that never read their answer. Each was found by a probe of the running
service (a fresh-eyes review) to keep every normal client out with 429.

One server with a small admission (16) and the sentence cache off, shared by the tests here.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from harness.load import LoadResult, closed_loop
from harness.servers import Server, register, start_server
from tests.e2e.helpers import config_with, numbered_jobs
from translator.contract import limits

pytestmark = [pytest.mark.server, pytest.mark.slow]

SMALL_ADMISSION = 16


@pytest.fixture(scope="module")
def small_server(fixture_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("hostile")

    def small(services: dict) -> None:
        services["Translation"]["translation"]["admission"]["max_concurrency"] = SMALL_ADMISSION
        services["TranslationEngine"]["translation"]["cache"]["size"] = 0

    config = config_with(tmp, small)
    home = tmp / "home"
    home.mkdir()
    srv = start_server(home, register(fixture_model, home), tmp / "server.log", config=config)
    yield srv
    srv.stop()


def normal_clients(url: str) -> LoadResult:
    return asyncio.run(closed_loop(url, numbered_jobs(20, 2), 4, timeout=120))


def test_connections_that_announce_a_body_and_send_nothing_keep_nobody_out(small_server: Server) -> None:
    # Each body was charged its declared length (the byte limit when chunked) against the bytes a
    # worker may be receiving (64 bodies' worth): 200 such connections got every normal request
    # refused with 429 until their 408, 60 s later.
    address = urlsplit(small_server.url)
    silent: list[socket.socket] = []
    try:
        for index in range(200):
            sock = socket.create_connection((address.hostname, address.port), timeout=10)
            framing = (
                f"Content-Length: {limits.MAX_BODY_BYTES}" if index % 2 else "Transfer-Encoding: chunked"
            ).encode()
            sock.sendall(
                b"POST /translation HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + framing + b"\r\n\r\n"
            )
            silent.append(sock)
        result = normal_clients(small_server.url)
        assert result.kinds == {"ok": 20}, (result.kinds, result.first_failure, small_server.log()[-2000:])
    finally:
        for sock in silent:
            sock.close()


def unread_answer_request(host: str) -> bytes:
    """A request whose answer (about 3 MB: 1,024 records of 488 control characters, each written
    as \\u0001) is far larger than the socket buffers, and costs the model nothing (no letters)."""
    records = [{"id": str(i), "text": "\u0001" * 488} for i in range(limits.MAX_RECORDS_PER_REQUEST)]
    body = json.dumps({"payload": {"fromLang": "en", "toLang": "fr", "records": records}}).encode()
    head = f"POST /translation HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
    return head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def test_clients_that_never_read_their_answer_keep_nobody_out(small_server: Server) -> None:
    # The admission slot was held until the answer was sent, and uvicorn waits for a client that
    # does not read for ever: more such clients than the admission limit got every normal request
    # refused with 429 for as long as they kept their connections open.
    address = urlsplit(small_server.url)
    request = unread_answer_request(address.netloc)
    stuck: list[socket.socket] = []
    try:
        for _ in range(SMALL_ADMISSION + 4):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(30)
            sock.connect((address.hostname, address.port))
            stuck.append(sock)
            sock.sendall(request)
            # One at a time: the first bytes of its answer arrive (it was computed), and no more
            # is read. (Sent all at once, 17 bodies complete before the first answer starts could
            # meet an admission of 16 without any client stuck.)
            assert sock.recv(12).startswith(b"HTTP/1.1 200")
        result = normal_clients(small_server.url)
        assert result.kinds == {"ok": 20}, (result.kinds, result.first_failure, small_server.log()[-2000:])
    finally:
        for sock in stuck:
            sock.close()


def test_a_client_gone_mid_body_leaves_nothing_that_stops_the_server_from_stopping(
    fixture_model: Path, tmp_path: Path
) -> None:
    # A request whose client left mid-body was dropped without an answer; BentoML's middlewares
    # around ours wait for one, so that API worker never finished its shutdown: the server's stop
    # took its 60 s and a SIGKILL, and the worker lived on, orphaned.
    home = tmp_path / "home"
    home.mkdir()
    srv = start_server(home, register(fixture_model, home), tmp_path / "server.log")
    try:
        address = urlsplit(srv.url)
        with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
            sock.sendall(b"POST /translation HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
            sock.sendall(b"Content-Length: 1000\r\n\r\n{ ")
            time.sleep(1)
        time.sleep(1)
    finally:
        started = time.monotonic()
        code = srv.stop(timeout=30)
    assert code == 0 and time.monotonic() - started < 30, (code, srv.log()[-2000:])
