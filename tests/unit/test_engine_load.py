"""The engine's published queue state (translator/contract/forecast.py, translator/shm/engine_load.py), its publishing
(translator/shm/engine_load.py) and the early refusal the API workers make from it
(translator/api/middleware.py)."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from tests.unit.helpers.asgi import echo_app, run_app
from translator.api.middleware import EdgeMiddleware
from translator.contract.forecast import QueueState
from translator.contract.protocol import Priority
from translator.shm.engine_load import LoadPublisher, LoadReader
from translator.shm.records import Owner

pytestmark = pytest.mark.pure

# A busy engine: 2 s of batch left, full batches of 8 pieces at 5 s, 100 bulk pieces queued.
BUSY = QueueState(running=True, running_left_s=2.0, full_batch_s=5.0, batch_size=8, ahead=(0, 100))
IDLE = QueueState(running=False, running_left_s=0.0, full_batch_s=5.0, batch_size=8, ahead=(0, 0))


def test_the_wait_is_the_engines_prediction_on_a_busy_engine():
    assert BUSY.wait_s(Priority.BULK, 1) == 2.0 + 13 * 5.0  # ceil(101 / 8) full batches
    assert BUSY.wait_s(Priority.BULK, 4) == 2.0 + 13 * 5.0
    assert BUSY.wait_s(Priority.BULK, 5) == 2.0 + 14 * 5.0  # its own batch no longer fits
    assert BUSY.wait_s(Priority.INTERACTIVE, 1) == 2.0 + 5.0  # nothing ahead but the running batch
    assert IDLE.wait_s(Priority.BULK, 100) is None  # nothing ahead: admitted whatever it costs


def test_a_reader_sees_what_every_engine_forecasts_less_the_time_since(tmp_path):
    base = tmp_path / "engine-load"
    reader = LoadReader(base)
    assert reader.late_by(Priority.BULK) is None  # no engine has published: nothing is refused early
    publisher = LoadPublisher(base)
    published = time.monotonic()
    publisher.publish(BUSY, 60.0)
    reader._scanned = float("-inf")  # look for engines now, not a second later
    late = reader.late_by(Priority.BULK)
    # 67 s of wait, 60 s allowed, less the time since it was written: no more than passed here
    assert late is not None and 7.0 - (time.monotonic() - published) <= late <= 7.0
    assert reader.late_by(Priority.INTERACTIVE) is None  # in time: admitted
    # Sized like this worker's recent requests of the priority: the smallest of them.
    for pieces in (16, 9, 24):
        reader.saw(Priority.BULK, pieces)
    late = reader.late_by(Priority.BULK)
    assert late is not None and 12.0 - (time.monotonic() - published) <= late <= 12.0  # 2 + 14 * 5 - 60
    # The queue drains while nothing is published: the wait shrinks with the forecast's age.
    publisher.publish(BUSY, 71.5)
    time.sleep(0.6)
    assert reader.late_by(Priority.BULK) is None
    publisher.close()
    assert not publisher.path.exists()


def test_an_early_refusal_needs_every_engine_to_forecast_it(tmp_path):
    base = tmp_path / "engine-load"
    busy = LoadPublisher(base)
    busy.publish(BUSY, 60.0)
    other = LoadPublisher(base, owner=Owner.of(os.getppid()))  # a second engine process (a live one)
    other.publish(IDLE, 60.0)
    reader = LoadReader(base)
    assert reader.late_by(Priority.BULK) is None  # one engine would admit it
    other.publish(BUSY, 60.0)
    assert reader.late_by(Priority.BULK) is not None
    other.close()  # an engine that stops: its file goes, and the reader forgets it at its next look
    reader._scanned = float("-inf")
    assert reader.late_by(Priority.BULK) is not None
    busy.close()


def test_a_torn_write_is_never_read(tmp_path):
    base = tmp_path / "engine-load"
    publisher = LoadPublisher(base)
    publisher.publish(BUSY, 60.0)
    reader = LoadReader(base)
    read = time.monotonic()
    good = reader.late_by(Priority.BULK)
    # A write caught halfway: its sequence number odd, its values half new.
    me, record = publisher.owner, publisher._records.layout
    torn = record.pack(7, me.pid, me.started, 1, time.monotonic(), 60.0, 1.0, 2.0, 500.0, 8.0, 0.0, 100.0)
    fd = os.open(publisher.path, os.O_WRONLY)
    os.pwrite(fd, torn, 0)
    os.close(fd)
    late = reader.late_by(Priority.BULK)
    # The last whole write, less the time since the first reading (none of the torn one's 6,500 s)
    assert good is not None and late is not None and good - (time.monotonic() - read) <= late <= good
    publisher.close()


def test_the_middleware_refuses_what_the_engine_forecasts_late_before_the_app_sees_it(tmp_path):
    base = tmp_path / "engine-load"
    publisher = LoadPublisher(base)
    publisher.publish(BUSY, 60.0)
    middleware = EdgeMiddleware(echo_app, engine_load=LoadReader(base), refusal_hold_s=0.3)
    body = b'{"payload": {"fromLang": "en", "toLang": "fr", "records": []}}'
    json_type = (b"content-type", b"application/json")
    started = time.monotonic()
    status, headers, payload = run_app(middleware, body, [json_type, (b"priority", b"u=7")])
    # Held before it is answered: a client that resends at once cannot spin.
    assert time.monotonic() - started >= 0.3
    assert status == 503
    assert int(headers[b"retry-after"]) >= 7
    assert b"overloaded" in payload and b"objective" in payload
    assert headers[b"connection"] == b"close"
    # Interactive work is in time: it reaches the app (echoed), and so does a bad header, which
    # the request's own validation answers.
    assert run_app(middleware, body, [json_type])[0] == 200
    assert run_app(middleware, body, [json_type, (b"priority", b"u=99")])[0] == 200
    publisher.publish(IDLE, 60.0)
    assert run_app(middleware, body, [json_type, (b"priority", b"u=7")])[0] == 200
    publisher.close()


def test_routes_that_never_reach_the_engine_are_not_refused_from_its_forecast(tmp_path):
    # /libretranslate/detect answers in the API worker: a busy engine is no reason to refuse it.
    base = tmp_path / "engine-load"
    publisher = LoadPublisher(base)
    publisher.publish(BUSY, 60.0)
    middleware = EdgeMiddleware(echo_app, engine_load=LoadReader(base), refusal_hold_s=0.0)
    headers = [(b"content-type", b"application/json"), (b"priority", b"u=7")]

    def status(path: str) -> int:
        sent: list[dict] = []
        messages = iter([{"type": "http.request", "body": b'{"q": "Hello"}', "more_body": False}])

        async def receive():
            return next(messages)

        async def send(message):
            sent.append(message)

        asyncio.run(middleware({"type": "http", "method": "POST", "path": path, "headers": headers}, receive, send))
        return sent[0]["status"]

    assert status("/libretranslate/detect") == 200
    assert status("/libretranslate/translate") == 503
    assert status("/translation") == 503
    publisher.close()


def test_past_its_bound_of_held_connections_a_refusal_is_answered_at_once(tmp_path):
    base = tmp_path / "engine-load"
    publisher = LoadPublisher(base)
    publisher.publish(BUSY, 60.0)
    middleware = EdgeMiddleware(echo_app, engine_load=LoadReader(base), refusal_hold_s=30.0, held_refusals_max=0)
    body = b'{"payload": {"fromLang": "en", "toLang": "fr", "records": []}}'
    started = time.monotonic()
    status, _, _ = run_app(middleware, body, [(b"content-type", b"application/json"), (b"priority", b"u=7")])
    assert status == 503 and time.monotonic() - started < 10
    publisher.close()


def test_the_file_of_an_engine_that_died_is_not_read(tmp_path):
    base = tmp_path / "engine-load"
    busy = LoadPublisher(base)
    busy.publish(BUSY, 60.0)
    dead = LoadPublisher(base, owner=Owner(2**22 + 7, 0.0))  # above any pid_max: no such process
    dead.publish(IDLE, 60.0)  # stale and in time: it would veto every early refusal
    assert LoadReader(base).late_by(Priority.BULK) is not None
    dead.close()
    busy.close()
