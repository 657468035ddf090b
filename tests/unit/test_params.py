"""One reader of a request's parameters for every API (#50): query, JSON, URL-encoded and multipart
forms, as many texts by form as by JSON, DeepL's `name[i].key` lists, read once a request."""

from __future__ import annotations

import asyncio
import json
import urllib.parse

import pytest
from starlette.requests import Request

from translator.api.params import MAX_FORM_FIELDS, fold_indexed, read_params
from translator.contract import limits
from translator.contract.errors import InvalidRequest, PayloadTooLarge

pytestmark = pytest.mark.pure


def request(body: bytes, content_type: str, query: str = "") -> Request:
    chunks = [body]

    async def receive():
        return {"type": "http.request", "body": chunks.pop(0) if chunks else b"", "more_body": False}

    headers = [(b"content-type", content_type.encode())]
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v2/translate",
        "headers": headers,
        "query_string": query.encode(),
    }
    return Request(scope, receive)


def params_of(body: bytes, content_type: str, query: str = "") -> dict:
    return asyncio.run(read_params(request(body, content_type, query)))


def test_as_many_texts_by_form_as_by_json():
    # Starlette's default stopped a form at 1,000 fields: 1,000 texts were a 400 (#50).
    texts = [f"text {i}" for i in range(limits.MAX_RECORDS_PER_REQUEST)]
    form = urllib.parse.urlencode([("text", t) for t in texts] + [("target_lang", "DE")]).encode()
    assert params_of(form, "application/x-www-form-urlencoded")["text"] == texts
    assert params_of(json.dumps({"text": texts}).encode(), "application/json")["text"] == texts


def test_a_form_past_its_fields_is_a_413_naming_the_limit():
    form = urllib.parse.urlencode([("q", "x")] * (MAX_FORM_FIELDS + 1)).encode()
    with pytest.raises(PayloadTooLarge, match=f"form fields exceeds the limit of {MAX_FORM_FIELDS}"):
        params_of(form, "application/x-www-form-urlencoded")


def test_deepl_node_s_dictionaries_form_reads_as_deepl_python_s_json():
    fields = [
        ("name", "My glossary"),
        ("dictionaries[0].source_lang", "en"),
        ("dictionaries[0].target_lang", "de"),
        ("dictionaries[0].entries", "Hello\tHallo"),
        ("dictionaries[0].entries_format", "tsv"),
        ("dictionaries[1].source_lang", "de"),
        ("dictionaries[1].target_lang", "en"),
        ("dictionaries[1].entries", "Hallo\tHello"),
        ("dictionaries[1].entries_format", "tsv"),
    ]
    as_json = {
        "name": "My glossary",
        "dictionaries": [
            {"source_lang": "en", "target_lang": "de", "entries": "Hello\tHallo", "entries_format": "tsv"},
            {"source_lang": "de", "target_lang": "en", "entries": "Hallo\tHello", "entries_format": "tsv"},
        ],
    }
    assert params_of(urllib.parse.urlencode(fields).encode(), "application/x-www-form-urlencoded") == as_json
    assert params_of(json.dumps(as_json).encode(), "application/json") == as_json


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"d[1].a": "x"}, "d[0] is missing"),
        ({"d[0].a": "x", "d[2].a": "y"}, "d[1] is missing"),
        ({"d": "whole", "d[0].a": "x"}, "given both whole and as d[i] fields"),
    ],
)
def test_a_list_with_a_gap_or_given_twice_is_a_400_naming_it(fields, problem):
    with pytest.raises(InvalidRequest, match=problem.replace("[", r"\[").replace("]", r"\]")):
        fold_indexed(fields)


def test_query_then_body_and_read_once_a_request():
    one = request(b"text=Hello&text=World", "application/x-www-form-urlencoded", "auth_key=k")
    first = asyncio.run(read_params(one))
    assert first == {"auth_key": "k", "text": ["Hello", "World"]}
    first["text"] = "changed by a caller"
    assert asyncio.run(read_params(one)) == {"auth_key": "k", "text": ["Hello", "World"]}  # the body read once
