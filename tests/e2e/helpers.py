"""What the end-to-end modules share: the contract's example, requests built from the fixture
corpus (so every answer is known), a server's configuration with one edit, and its metrics."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from pathlib import Path

import requests
import yaml

from harness.corpus import corpus_documents, corpus_sentences
from harness.load import Job, job
from harness.metrics import histogram_buckets, samples
from harness.servers import ROOT

CONTRACT_REQUEST = {
    "payload": {
        "fromLang": "en",
        "toLang": "ja",
        "records": [{"id": "123", "text": "Life is like a box of chocolates."}],
    }
}
CONTRACT_RESPONSE = {"result": [{"id": "123", "text": "人生はチョコレートの箱のようなものだ。"}]}


def post(server, body, **kwargs):
    return requests.post(f"{server.url}/translation", json=body, timeout=120, **kwargs)


def request_for(src, tgt, records):
    return {"payload": {"fromLang": src, "toLang": tgt, "records": [{"id": i, "text": t} for i, t in records]}}


def documents():
    """Each corpus document in both directions, as (src, tgt, source text, expected text)."""
    return [(d.source_lang, d.target_lang, " ".join(d.sources), " ".join(d.targets)) for d in corpus_documents()]


def create_glossary(server, name: str, source: str, target: str, entries: dict[str, str]) -> dict:
    """A stored glossary made through the native API (201 checked); its JSON."""
    body = {
        "name": name,
        "sourceLang": source,
        "targetLang": target,
        "entries": [{"source": s, "target": t} for s, t in entries.items()],
    }
    created = requests.post(f"{server.url}/glossaries", json=body, timeout=30)
    assert created.status_code == 201, created.text
    return created.json()


def numbered_jobs(count: int, records: int) -> list[Job]:
    """Distinct en→fr requests (texts numbered, so the engine cannot deduplicate them away)."""
    pool = [s for s in corpus_sentences() if s[:2] == ("en", "fr")]
    return [job("en", "fr", [f"({i}) {pool[(i + k) % len(pool)][2]}" for k in range(records)]) for i in range(count)]


def config_with(directory: Path, edit: Callable[[dict], object]) -> Path:
    """The repository's bentoconfiguration.yaml with `edit` applied to its `services`."""
    config = yaml.safe_load((ROOT / "bentoconfiguration.yaml").read_text())
    edit(config["services"])
    path = directory / "bentoconfiguration.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def metric_value(server, name: str, **labels: str) -> float:
    """A sample's value summed over the label sets that have `labels` (0 when there is none)."""
    return sum(v for lab, v in samples(server.metrics(), name) if labels.items() <= lab.items())


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `condition` until it holds; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not seen within {timeout:.0f}s: {what}"
        time.sleep(0.05)


def batch_size_observations(metrics: str, metric: str = "translation_batch_pieces") -> dict[float, float]:
    """Cumulative bucket counts of a batch size histogram of the engine, summed over label sets."""
    return histogram_buckets(metrics, metric)


def largest_batch_seen(metrics: str, metric: str = "translation_batch_pieces") -> float:
    """The smallest bucket bound that holds every observation: an upper bound of the largest batch."""
    buckets = batch_size_observations(metrics, metric)
    total = buckets.get(float("inf"), 0.0)
    return min(le for le, count in buckets.items() if count == total)


def peak_rss(pid: int) -> int:
    """A process's peak resident memory so far, in bytes (the kernel's high-water mark: a 1 GB
    buffer freed before a later read still shows here)."""
    line = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def api_workers(server) -> list[int]:
    """The pids of the server's API workers: its children but the engine."""
    import psutil

    from translator.shm.engine_process import engine_pids

    [engine] = engine_pids(server.pid)
    return [p.pid for p in psutil.Process(server.pid).children() if p.pid != engine]


def translation_of(text: str, source: str, target: str) -> str:
    return next(t for s, g, src, t in corpus_sentences() if (s, g, src) == (source, target, text))


def docx_of(paragraphs: list[str]) -> bytes:
    import docx

    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def paragraphs_of(data: bytes) -> list[str]:
    import docx

    return [p.text for p in docx.Document(io.BytesIO(data)).paragraphs]


def finished(server, job: dict, timeout: float = 120) -> dict:
    """A native document job's state once it is done or failed (polled)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        state = requests.get(f"{server.url}/documents/{job['id']}", timeout=10).json()
        if state["status"] in ("done", "failed"):
            return state
        time.sleep(0.2)
    raise AssertionError(f"job {job['id']} not finished in {timeout} s")
