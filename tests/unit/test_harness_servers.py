"""The test servers' launcher (harness/servers.py): a server is ready when it answers on its port
with its own processes listening there, never on another process's answer (#52: a free port is
free when picked, and another test's server may bind it first)."""

from __future__ import annotations

import http.server
import sys
import threading

import pytest

from harness.servers import free_port, spawn, wait_ready

pytestmark = pytest.mark.processes


class Ready(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the handler's name in http.server
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def someone_elses_server():
    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Ready)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield port
    server.shutdown()
    server.server_close()


def test_another_process_answering_on_the_port_is_not_the_server_being_ready(someone_elses_server, tmp_path):
    # The server being waited for has not bound its port (it sleeps); this test process answers there.
    waiting = spawn(
        "late", [sys.executable, "-c", "import time; time.sleep(60)"], {}, tmp_path / "late.log", someone_elses_server
    )
    try:
        with pytest.raises(RuntimeError, match="not ready after 3s"):
            wait_ready(waiting, "/", timeout=3)
    finally:
        waiting.stop(timeout=5)


def test_a_server_answering_on_its_own_port_is_ready(tmp_path):
    port = free_port()
    command = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    server = spawn("own", command, {}, tmp_path / "own.log", port)
    try:
        assert wait_ready(server, "/", timeout=60) is server and server.listening()
    finally:
        server.stop(timeout=5)
