"""Load test for POST /translation.

Headless, against a local server (`make serve` or `make serve-fixture`):

    locust -f locustfile.py --headless -H http://127.0.0.1:9527 -u 32 -r 8 -t 2m --csv build/locust

Users send the request shapes that the per-request design this service replaces could not keep up
with: one-record and sixteen-record requests, sent faster than one model answers them one by one,
in mixed language pairs, plus long multi-sentence texts. Sentences come from the fixture corpus, so
with the fixture model every answer can also be checked exactly (`--check-exact`).
"""

from __future__ import annotations

import random

from locust import HttpUser, between, events, task

from harness.corpus import corpus_sentences
from harness.load import check_answer, job
from translator.text.segment import UNSPACED_LANGUAGES

# (source language, target language, source text, expected text) for both directions.
_SENTENCES = corpus_sentences()


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    parser.add_argument(
        "--check-exact", action="store_true", default=False, help="fail answers that differ from the corpus"
    )


class TranslationUser(HttpUser):
    wait_time = between(0.0, 0.05)

    def _send(self, name: str, items: list[tuple[str, str, str, str]], expected: list[str]) -> None:
        # The answer is checked as every other load of this project checks it (harness/).
        exact = expected if self.environment.parsed_options.check_exact else None
        request = job(items[0][0], items[0][1], [it[2] for it in items], exact)
        with self.client.post("/translation", json=request.body, name=name, catch_response=True) as response:
            try:
                data = response.json()
            except ValueError:
                data = response.text
            kind, _ = check_answer(request, response.status_code, data)
            if kind != "ok":
                response.failure(f"{kind}: {response.text[:200]}")

    def _same_pair(self, count: int) -> list[tuple[str, str, str, str]]:
        first = random.choice(_SENTENCES)
        pool = [s for s in _SENTENCES if s[:2] == first[:2]]
        return [random.choice(pool) for _ in range(count)]

    @task(6)
    def one_record(self) -> None:
        item = random.choice(_SENTENCES)
        self._send("1 record", [item], [item[3]])

    @task(3)
    def sixteen_records(self) -> None:
        items = self._same_pair(16)
        self._send("16 records", items, [it[3] for it in items])

    @task(1)
    def long_text(self) -> None:
        # Every sentence of one pair in one record: split, batched with others, rejoined.
        items = self._same_pair(12)
        # Japanese and Chinese sentences touch; the service puts a space between their
        # translations only when the target language writes with spaces.
        unspaced_source = items[0][0] in UNSPACED_LANGUAGES
        joiner = "" if unspaced_source else " "
        target_joiner = "" if unspaced_source and items[0][1] in UNSPACED_LANGUAGES else " "
        text = joiner.join(it[2] for it in items)
        expected = target_joiner.join(it[3] for it in items)
        self._send("long text", [(items[0][0], items[0][1], text, expected)], [expected])
