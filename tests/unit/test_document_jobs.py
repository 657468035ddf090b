"""The document jobs' store without a server: limits per key and per server, a dead worker's job
reported failed, expiry."""

from __future__ import annotations

import subprocess
import sys

import pytest

from translator.contract.errors import Unavailable
from translator.documents import jobs


def test_jobs_per_key_and_per_server(tmp_path, monkeypatch):
    store = jobs.JobStore(tmp_path)
    alice, bob = jobs.owner_of(b"alice-key"), jobs.owner_of(b"bob-key")
    assert alice != bob and b"alice" not in alice.encode()
    for _ in range(jobs.MAX_JOBS_PER_KEY):
        store.create("a.txt", "en", "fr", 1, alice)
    with pytest.raises(jobs.JobsPerKey) as refused:
        store.create("a.txt", "en", "fr", 1, alice)
    assert refused.value.status == 429 and refused.value.headers()["Retry-After"]
    state = store.create("b.txt", "en", "fr", 1, bob)
    assert jobs.public(state).keys() == {"id", "status", "filename", "progress", "resultUrl"}
    monkeypatch.setattr(jobs, "MAX_ACTIVE_JOBS", jobs.MAX_JOBS_PER_KEY + 1)
    with pytest.raises(Unavailable):
        store.create("c.txt", "en", "fr", 1, jobs.owner_of(b"carol-key"))


def test_a_dead_workers_job_reads_failed_and_expires(tmp_path, monkeypatch):
    store = jobs.JobStore(tmp_path)
    state = store.create("a.txt", "en", "fr", 3)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    state.update(status="running", pid=int(gone.stdout))
    store.save(state)
    reloaded = store.load(state["id"])
    assert reloaded is not None and reloaded["status"] == "failed" and "restarted" in reloaded["error"]
    assert store.load("../../etc/passwd") is None and store.load("0" * 32) is None
    monkeypatch.setattr(jobs, "KEEP_S", -1.0)
    store.sweep()
    assert store.load(state["id"]) is None
