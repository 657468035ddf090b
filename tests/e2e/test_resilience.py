"""Load, overload and faults, against real servers: nothing lost, no 500, no hang, honest refusals.

- sustained load: thousands of requests at high concurrency on the session server, all exact;
- overload: a burst far beyond a small server's admission and latency limits;
- the engine process killed: outside a container (respawned) and inside one (the server exits);
- readiness turns true only after the engine has loaded the model and run its calibration batches.
"""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests

from harness.corpus import corpus_sentences
from harness.load import Job, job, run_load
from harness.metrics import histogram_totals
from harness.servers import Server, register, start_server
from tests.e2e.helpers import config_with, metric_value, request_for
from translator.contract.limits import REFUSAL_HOLD_S
from translator.engine.admission import EXPIRY_GRACE_FRACTION, EXPIRY_GRACE_MIN_S

pytestmark = [pytest.mark.server, pytest.mark.slow]

SUSTAINED_REQUESTS = 2000
SUSTAINED_CONCURRENCY = 64
# Per request of the background traffic: longer than any answer the tests accept, so that a hang
# shows up as a timeout raised in the test.
CLIENT_TIMEOUT_S = 120.0
# The storm's latency objective, and how late past its expiry an answer may reach a client whose
# API worker shares 2 busy cores with 64 others.
STORM_OBJECTIVE_S = 1
EXPIRY_SLACK_S = 2.0


def request_of(rng: random.Random, pool: list[tuple[str, str, str, str]], records: int) -> Job:
    first = rng.choice(pool)
    same_pair = [p for p in pool if p[:2] == first[:2]]
    chosen = [first, *(rng.choice(same_pair) for _ in range(records - 1))]
    return job(first[0], first[1], [p[2] for p in chosen], [p[3] for p in chosen], prefix="r")


def test_sustained_load_has_no_500_and_loses_nothing(server: Server) -> None:
    # The dependency client's pool recycling (bentoml-notes) aborted in-flight calls as 500s after
    # every 100 calls; thousands of calls at high concurrency show it stays fixed.
    rng = random.Random(7)
    pool = corpus_sentences()
    jobs = [request_of(rng, pool, rng.choice((1,) * 7 + (16,))) for _ in range(SUSTAINED_REQUESTS)]
    load = run_load(server.url, jobs, SUSTAINED_CONCURRENCY, timeout=300)
    assert load.requests == SUSTAINED_REQUESTS
    # Anything but "ok": not a 200, or records not exactly the expected ones, in order.
    assert load.kinds == {"ok": SUSTAINED_REQUESTS}, f"{dict(load.kinds)}; {server.log()[-3000:]}"
    print(f"\n{SUSTAINED_REQUESTS} requests at concurrency {SUSTAINED_CONCURRENCY}: {load.seconds:.1f}s, all exact")


@pytest.fixture(scope="module")
def fresh_home(fixture_model: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    # Servers of their own: these tests kill processes and overload them on purpose. One BentoML
    # home per server, since servers sharing one share (and reset) its metrics directory.
    home = tmp_path_factory.mktemp("bentoml-home-faults")
    return home, register(fixture_model, home)


def test_overload_burst_gets_fast_honest_refusals(fixture_model: Path, tmp_path_factory) -> None:
    tmp = tmp_path_factory.mktemp("overload")
    home = tmp / "home"
    home.mkdir()
    tag = register(fixture_model, home)

    def small(services: dict) -> None:
        # Admission of 16 requests at once, and a queue the scheduler keeps under a second: the
        # burst below (6400 sentences) is tens of seconds of work for the fixture on 2 cores.
        services["Translation"]["translation"]["admission"]["max_concurrency"] = 16
        services["TranslationEngine"]["batching"]["max_latency_ms"] = 1000

    srv = start_server(home, tag, tmp / "server.log", config=config_with(tmp, small))
    try:
        rng = random.Random(11)
        pool = corpus_sentences()
        burst = run_load(srv.url, [request_of(rng, pool, 16) for _ in range(400)], concurrency=400, timeout=300)
        kinds = burst.kinds
        assert set(kinds) <= {"ok", "HTTP 429", "HTTP 503"}, f"{dict(kinds)}\n{srv.log()[-3000:]}"
        refused = [o for o in burst.outcomes if o.status in (429, 503)]
        assert kinds["ok"] > 0 and refused, f"the burst did not overload the server: {dict(kinds)}"
        for outcome in refused:
            data = outcome.data
            assert isinstance(data, dict) and isinstance(data.get("error"), str) and data["error"], data
            assert outcome.headers.get("retry-after", "").isdigit(), (outcome.status, outcome.headers)
        refusal_times = sorted(o.seconds for o in refused)
        assert refusal_times[len(refusal_times) // 2] < 5, f"refusals are slow: median {refusal_times}"
        assert max(o.seconds for o in burst.outcomes) < 60
        # Once the burst is over, the same server answers normally (at a load it can carry).
        after = run_load(srv.url, [request_of(rng, pool, 16) for _ in range(20)], concurrency=1)
        assert after.kinds == {"ok": 20}
        print(f"\nburst of 400 x 16 records: {dict(kinds)}; median refusal {refusal_times[len(refused) // 2]:.3f}s")
    finally:
        srv.stop()


def test_a_storm_of_bulk_retries_is_refused_from_the_headers_beside_interactive_work(
    fixture_model: Path, tmp_path_factory
) -> None:
    # Bulk clients that send again at once after a 503 (no Retry-After honoured), about twice the
    # work the engine can answer within max_latency_ms: once the engine's queue is full, its
    # published state (translator/shm/engine_load.py) lets the API workers refuse them from
    # the headers, before the body is read, parsed or sent to the engine, and after a pause;
    # interactive requests beside the storm are answered, exactly.
    tmp = tmp_path_factory.mktemp("storm")
    home = tmp / "home"
    home.mkdir()
    tag = register(fixture_model, home)

    def small(services: dict) -> None:
        services["TranslationEngine"]["batching"]["max_latency_ms"] = STORM_OBJECTIVE_S * 1000
        # The corpus is small: with the cache on, every sentence would be answered from it.
        services["TranslationEngine"]["translation"]["cache"]["size"] = 0

    srv = start_server(home, tag, tmp / "server.log", config=config_with(tmp, small))
    try:
        rng = random.Random(13)
        pool = corpus_sentences()
        interactive_jobs = [request_of(rng, pool, 1) for _ in range(30)]
        storm_jobs = (dataclasses.replace(request_of(rng, pool, 16), headers={"Priority": "u=7"}) for _ in iter(int, 1))
        results: dict[str, Any] = {}
        storm = threading.Thread(
            target=lambda: results.update(storm=run_load(srv.url, storm_jobs, 64, seconds=12, timeout=120))
        )
        storm.start()
        time.sleep(2)  # the queue fills
        results["interactive"] = run_load(srv.url, interactive_jobs, 2, timeout=120)
        storm.join(timeout=180)
        assert not storm.is_alive()
        interactive, bulk = results["interactive"], results["storm"]
        assert interactive.kinds == {"ok": len(interactive_jobs)}, f"{dict(interactive.kinds)}\n{srv.log()[-3000:]}"
        assert set(bulk.kinds) <= {"ok", "HTTP 503", "HTTP 429", "HTTP 504"}, dict(bulk.kinds)
        # A bulk request admitted on a prediction that the storm then proved wrong (its batches
        # share 2 cores with 64 clients' requests) is answered 504 at its deadline plus the grace
        # (1 s + 1 s here), never held longer: seen twice in 961 answers on an AVX-512 Xeon, and
        # more often with another server busy beside this one.
        expires_s = STORM_OBJECTIVE_S + max(EXPIRY_GRACE_MIN_S, EXPIRY_GRACE_FRACTION * STORM_OBJECTIVE_S)
        expired = [o for o in bulk.outcomes if o.status == 504]
        assert all(
            isinstance(o.data, dict) and o.data.get("error") and o.seconds < expires_s + EXPIRY_SLACK_S for o in expired
        ), [(o.seconds, o.data) for o in expired]
        refused = [o for o in bulk.outcomes if o.status == 503]
        early = [o for o in refused if "objective" in str(o.data)]
        assert all(o.headers.get("retry-after", "").isdigit() for o in refused)
        # The mechanism, not a share of outcomes (which depends on how fast this machine answers
        # the storm: 371 of 811 from the headers on a busy 2-core EPYC, most on a quiet one):
        # refusals were made from the headers, and held (limits.REFUSAL_HOLD_S, or their
        # Retry-After) so that these clients, which resend at once, cannot spin; every other
        # refusal is the engine's admission's, counted by it, for those that passed in the moment
        # a batch freed room.
        assert early, f"none of {len(refused)} refusals was made from the headers"
        held = min(REFUSAL_HOLD_S, min(int(o.headers["retry-after"]) for o in early))
        assert min(o.seconds for o in early) >= held * 0.9, sorted(o.seconds for o in early)[:5]
        by_engine = [o for o in refused if "objective" not in str(o.data)]
        assert all("would be answered in about" in str(o.data) for o in by_engine), [o.data for o in by_engine][:3]
        engine_refused = metric_value(srv, "translation_refused_requests_total", reason="deadline")
        assert engine_refused >= len(by_engine), (engine_refused, len(by_engine))
        print(
            f"\nstorm: {dict(bulk.kinds)} in 12 s, {len(early)} refused from the headers, {engine_refused:.0f} by the "
            f"engine; interactive p50 {sorted(interactive.latencies_s)[len(interactive.latencies_s) // 2]:.2f}s"
        )
    finally:
        srv.stop()


def engine_process(srv: Server) -> psutil.Process:
    children = psutil.Process(srv.process.pid).children(recursive=True)
    [engine] = [p for p in children if "--service-name TranslationEngine" in " ".join(p.cmdline())]
    return engine


def warmup_pieces() -> int:
    return 1 + 32  # Translator.calibration_batches at max_batch_size 32


def pieces_seen(srv: Server) -> float:
    pieces, batches = histogram_totals(srv.metrics(), "translation_batch_pieces")
    assert batches > 0, "no translation_batch_pieces in /metrics"
    return pieces


class Traffic:
    """Requests sent continuously from a few threads, every outcome kept with its time.

    What goes wrong in a thread (a timeout, an exception of the client) is raised again in the test
    when the traffic stops, as is a thread that does not stop: a lost failure would pass the test."""

    def __init__(self, url: str, threads: int = 6) -> None:
        self.url = url
        self.outcomes: list[tuple[float, float, int, Any, dict]] = []
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        pool = [s for s in corpus_sentences() if s[:2] == ("en", "fr")]
        # Several sentences per record: requests span batches and are in flight when the kill comes.
        text = " ".join(p[2] for p in pool[:8])
        self.expected = {"result": [{"id": "1", "text": " ".join(p[3] for p in pool[:8])}]}
        self.body = request_for("en", "fr", [("1", text)])
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(threads)]

    def __enter__(self) -> Traffic:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.stop.set()
        deadline = time.monotonic() + CLIENT_TIMEOUT_S + 10
        for thread in self.threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        if exc_type is not None:
            return  # the test's own failure comes first
        if self.errors:
            raise AssertionError(f"{len(self.errors)} traffic thread(s) failed: {self.errors!r}") from self.errors[0]
        alive = sum(thread.is_alive() for thread in self.threads)
        assert not alive, f"{alive} traffic thread(s) still running {CLIENT_TIMEOUT_S + 10:.0f}s after the stop"

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.outcomes.append(self.send())
        except BaseException as exc:
            self.errors.append(exc)

    def send(self) -> tuple[float, float, int, Any, dict]:
        started = time.monotonic()
        try:
            response = requests.post(f"{self.url}/translation", json=self.body, timeout=CLIENT_TIMEOUT_S)
        except requests.ConnectionError:
            time.sleep(0.2)
            return started, time.monotonic(), 0, None, {}
        try:
            data = response.json()
        except ValueError:
            data = response.text  # reported by check_outcomes with its status
        return started, time.monotonic(), response.status_code, data, dict(response.headers)


def test_a_failure_in_a_traffic_thread_fails_the_test() -> None:
    # An URL requests refuses outright: every thread fails at once, and the test must hear of it.
    with pytest.raises(AssertionError, match="traffic thread\\(s\\) failed: .*InvalidURL"):
        with Traffic("http://[::1") as traffic:
            time.sleep(0.2)
    assert len(traffic.errors) == len(traffic.threads)


def check_outcomes(traffic: Traffic, killed_at: float, allow_refused_connections: bool) -> None:
    for started, ended, status, data, headers in traffic.outcomes:
        if status == 200:
            assert data == traffic.expected, data
        elif status == 503:
            assert isinstance(data.get("error"), str) and "engine" in data["error"], data
            assert headers.get("retry-after", headers.get("Retry-After", "")).isdigit(), headers
        elif status == 0:
            assert allow_refused_connections and started > killed_at, "connection refused while serving"
        else:
            raise AssertionError(f"HTTP {status}: {data}")
        # Never a hang: answered (or refused) within seconds, even for requests caught by the kill.
        if ended > killed_at:
            assert ended - max(started, killed_at) < 10, (
                f"answered {ended - killed_at:.1f}s after the kill, HTTP {status}, sent {started - killed_at:+.1f}s "
                f"from it: {str(data)[:200]}"
            )


# Requests the traffic must have sent, and had answered, once the server is ready again.
AFTER_RECOVERY_REQUESTS = 6


def ready_again(srv: Server, killed_at: float, traffic: Traffic) -> float:
    """Seconds from the kill until /readyz says ready again (a new engine loaded and warmed up), 120
    at most; then traffic until AFTER_RECOVERY_REQUESTS requests sent after it have been answered
    (counted, not timed: 2 s more saw none sent and answered on a busy machine, whose requests
    then took longer than that)."""
    deadline = time.monotonic() + 120
    while requests.get(f"{srv.url}/readyz", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, f"no recovery within 120 s:\n{srv.log()[-3000:]}"
        time.sleep(0.5)
    recovered = time.monotonic() - killed_at
    deadline = time.monotonic() + 120
    while len(after_recovery(traffic, killed_at, recovered)) < AFTER_RECOVERY_REQUESTS:
        assert time.monotonic() < deadline, f"fewer than {AFTER_RECOVERY_REQUESTS} requests answered in 120 s"
        time.sleep(0.2)
    return recovered


def after_recovery(traffic: Traffic, killed_at: float, recovered: float) -> list[tuple[float, float, int, Any, dict]]:
    # Readiness is one worker's view; the other worker's gate rechecks twice a second.
    return [o for o in list(traffic.outcomes) if o[0] > killed_at + recovered + 1.0]


def check_recovery(traffic: Traffic, killed_at: float, recovered: float) -> Counter[int]:
    """The traffic's outcomes around a kill the server recovered from: each one honest, some 503s,
    and only 200s once it was ready again. The statuses counted."""
    check_outcomes(traffic, killed_at, allow_refused_connections=False)
    statuses = Counter(o[2] for o in traffic.outcomes)
    assert statuses[503] > 0 and statuses[200] > 0, statuses
    answered = after_recovery(traffic, killed_at, recovered)
    assert answered and all(o[2] == 200 for o in answered), Counter(o[2] for o in answered)
    return statuses


def test_engine_death_outside_a_container_is_503_then_recovers(fresh_home) -> None:
    home, tag = fresh_home
    srv = start_server(home, tag, home / "server-respawn.log")
    try:
        # Ready means the calibration batches have been through the scheduler (and the model).
        assert pieces_seen(srv) >= warmup_pieces()
        with Traffic(srv.url) as traffic:
            time.sleep(2)
            engine_process(srv).kill()
            killed_at = time.monotonic()
            time.sleep(1)
            # Every API worker refuses at once, also one that had no call in flight when the engine
            # died (it sees the process gone); one such worker had waited for the respawned engine.
            for _ in range(6):
                probe_started = time.monotonic()
                response = requests.post(f"{srv.url}/translation", json=traffic.body, timeout=60)
                assert response.status_code == 503, (time.monotonic() - probe_started, response.text)
                assert time.monotonic() - probe_started < 2, response.text
            assert requests.get(f"{srv.url}/readyz", timeout=10).status_code == 503
            # Outside a container the arbiter respawns the engine; the API turns ready once it has
            # loaded and warmed up, and answers again without a restart.
            recovered = ready_again(srv, killed_at, traffic)
        statuses = check_recovery(traffic, killed_at, recovered)
        print(f"\nengine killed: {dict(statuses)}; ready again after {recovered:.1f}s")
    finally:
        srv.stop()


def test_engine_death_in_a_container_is_503_then_the_server_exits(fresh_home, monkeypatch) -> None:
    # The generated image sets BENTOML_CONTAINERIZED: dead workers are not respawned, and the
    # server exits so that Kubernetes restarts the container.
    home, tag = fresh_home
    monkeypatch.setenv("BENTOML_CONTAINERIZED", "true")
    srv = start_server(home, tag, home / "server-container.log")
    try:
        with Traffic(srv.url) as traffic:
            time.sleep(2)
            engine_process(srv).kill()
            killed_at = time.monotonic()
            code = srv.process.wait(timeout=90)
            exited = time.monotonic() - killed_at
            time.sleep(1)
        check_outcomes(traffic, killed_at, allow_refused_connections=True)
        assert code != 0, "a server whose engine died must not report success"
        assert Counter(o[2] for o in traffic.outcomes)[503] > 0
        print(f"\nin a container: server exited with {code} {exited:.1f}s after the engine was killed")
    finally:
        srv.stop(timeout=0)  # and any worker the exit left behind


def test_model_runner_death_is_503_then_a_new_engine_serves(fresh_home, tmp_path: Path) -> None:
    # generate in a process of its own (translator/engine/model_runner.py): its death is the engine's.
    home, tag = fresh_home

    def process_runner(services: dict) -> None:
        engine = services["TranslationEngine"]["translation"]["engine"]
        engine.update(backend="transformers", runner="process")

    srv = start_server(home, tag, home / "server-runner.log", config=config_with(tmp_path, process_runner))
    try:
        engine = engine_process(srv)
        [runner] = [p for p in engine.children() if "translator.engine.model_runner" in " ".join(p.cmdline())]
        with Traffic(srv.url) as traffic:
            time.sleep(2)
            runner.kill()
            killed_at = time.monotonic()
            # The engine exits after refusing its callers; outside a container a new one (and runner)
            # starts, loads and warms up.
            assert psutil.wait_procs([engine], timeout=30)[0], "the engine outlived its model runner"
            recovered = ready_again(srv, killed_at, traffic)
        check_recovery(traffic, killed_at, recovered)
        new_engine = engine_process(srv)
        assert new_engine.pid != engine.pid
        assert any("translator.engine.model_runner" in " ".join(p.cmdline()) for p in new_engine.children())
        assert "model runner process" in srv.log() and "the engine process exits" in srv.log()
    finally:
        srv.stop()
