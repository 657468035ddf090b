"""`python save_model.py --model-id DIR` then plain `bentoml serve`: no TRANSLATOR_MODEL, no tag to copy.

Every checkpoint is registered under one name and the last one registered is `latest`, which the
service loads by default. A decoy checkpoint (same shapes, scrambled weights) registered first
proves the server does not just take whichever version it finds.
"""

from __future__ import annotations

import pytest
import requests

from fixture.build import load_corpus
from harness.servers import decoy_checkpoint, register, start_server
from translator.config import MODEL_NAME

pytestmark = [pytest.mark.server, pytest.mark.slow]


def test_plain_bentoml_serve_serves_the_last_registered_checkpoint(fixture_model, tmp_path):
    home = tmp_path / "bentoml-home"  # private: no other test's models in this store
    broken = decoy_checkpoint(fixture_model, tmp_path / "older-checkpoint")
    broken_tag = register(broken, home)
    tag = register(fixture_model, home)
    assert tag.split(":")[0] == broken_tag.split(":")[0] == MODEL_NAME and tag != broken_tag

    server = start_server(home, None, tmp_path / "server.log")
    try:
        document = next(d for d in load_corpus() if (d["src_lang"], d["tgt_lang"]) == ("en", "ja"))
        body = {
            "payload": {
                "fromLang": "en",
                "toLang": "ja",
                "records": [{"id": str(i), "text": text} for i, text in enumerate(document["source"])],
            }
        }
        reply = requests.post(f"{server.url}/translation", json=body, timeout=120)
        assert reply.status_code == 200, reply.text
        # The fixture reproduces its corpus exactly: only the fixture answers this.
        assert [r["text"] for r in reply.json()["result"]] == document["target"]
    finally:
        server.stop()
