"""What an operator's Prometheus sees on a running server: request series bounded whatever paths
clients ask for, counters present from start-up, and every metric the alert rules and the
dashboard name (deploy/monitoring) exported on /metrics."""

from __future__ import annotations

import uuid

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from harness.metrics import samples
from tests.deploy.helpers import repo_config
from tests.deploy.monitoring import EXTERNAL, names_in_dashboard, names_in_rules
from tests.e2e.helpers import CONTRACT_REQUEST, post
from translator.api.route_labels import UNMATCHED
from translator.engine.cache import LOCAL_RESULTS
from translator.engine.observer import DROP_REASONS, REFUSAL_REASONS

pytestmark = pytest.mark.server

REQUEST_METRICS = (
    "bentoml_service_request_total",
    "bentoml_service_request_duration_seconds",
    "bentoml_service_request_in_progress",
)
ROUNDS = 2
PER_ROUND = 40


def request_series(exposition: str) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    """Every sample of BentoML's request metrics, by name and labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items())))
        for family in text_string_to_metric_families(exposition)
        if family.name in REQUEST_METRICS
        for sample in family.samples
    }


def hostile_round(url: str) -> None:
    """What scanners and clients send: unknown paths of every kind, and document ids."""
    session = requests.Session()
    for _ in range(PER_ROUND):
        token = uuid.uuid4().hex
        session.get(f"{url}/{token}", timeout=30)
        session.get(f"{url}/wp-login-{token}.php", timeout=30)
        session.get(f"{url}/documents/{token}", timeout=30)
        session.get(f"{url}/documents/{token}/result", timeout=30)
        session.post(f"{url}/{token}/admin", data=b"x", timeout=30)
        session.delete(f"{url}/glossaries/{token}", timeout=30)


def test_unknown_paths_and_document_ids_add_no_series(server):
    # The first round may add a series per (route, status) it meets for the first time; the second,
    # with as many new paths and ids again, adds none: series follow the routes, not the paths.
    before = request_series(server.metrics())
    hostile_round(server.url)
    after_first = request_series(server.metrics())
    hostile_round(server.url)
    after_second = request_series(server.metrics())
    assert not after_second - after_first, sorted(after_second - after_first)[:10]
    # Routes x statuses x a histogram's buckets: far below one series per request sent. Counted from
    # before the rounds: the session's server has served other tests' routes already.
    added = after_second - before
    assert len(added) < ROUNDS * PER_ROUND * 6, (len(added), sorted(added)[:10])
    endpoints = {dict(labels)["endpoint"] for _, labels in after_second if "endpoint" in dict(labels)}
    # BentoML's metrics middleware labels through translator/api/route_labels.py (a private name of
    # BentoML's, pinned here): unknown paths become one label, ids their route's template.
    assert {UNMATCHED, "/documents/{job}", "/documents/{job}/result", "/glossaries/{glossary_id}"} <= endpoints
    assert all(e == UNMATCHED or e.startswith("/") for e in endpoints)
    assert not [e for e in endpoints if "wp-login" in e or "admin" in e], endpoints


def test_counters_and_the_objective_are_there_from_the_start(server):
    exposition = server.metrics()
    refused = {labels["reason"] for labels, _ in samples(exposition, "translation_refused_requests_total")}
    dropped = {labels["reason"] for labels, _ in samples(exposition, "translation_dropped_pieces_total")}
    lookups = {
        (labels["level"], labels["result"]) for labels, _ in samples(exposition, "translation_cache_lookups_total")
    }
    assert set(REFUSAL_REASONS) <= refused
    assert set(DROP_REASONS) <= dropped
    assert {("local", result) for result in LOCAL_RESULTS} <= lookups
    [(_, objective)] = samples(exposition, "translation_latency_objective_seconds")
    configured = repo_config()["services"]["TranslationEngine"]["batching"]["max_latency_ms"]
    assert objective == configured / 1000


def test_every_metric_the_rules_and_the_dashboard_name_is_exported(server):
    # Traffic first, so that every request histogram and batch histogram has its series.
    assert post(server, CONTRACT_REQUEST).status_code == 200
    assert requests.get(f"{server.url}/languages", timeout=30).status_code == 200
    exposition = server.metrics()
    exported = {
        name
        for family in text_string_to_metric_families(exposition)
        for name in (family.name, *(sample.name for sample in family.samples))
    }
    used = {name for name in names_in_rules() | names_in_dashboard() if ":" not in name}
    missing = used - exported - set(EXTERNAL)
    assert not missing, f"named in deploy/monitoring but not on /metrics: {sorted(missing)}"
    # The names the checks rely on really are there (the parser read them, with their suffixes).
    assert {"translation_batch_pieces_count", "bentoml_service_request_duration_seconds_bucket"} <= exported
