from __future__ import annotations

import json

import pytest

from translator.store import RegistrationError, checkpoint_files, content_version, model_name, resolve

pytestmark = pytest.mark.pure


@pytest.mark.parametrize(
    ("model_id", "name"),
    [
        ("facebook/m2m100_418M", "m2m100_418m"),
        ("/data/My Checkpoint/", "my-checkpoint"),
        ("build/fixture-model", "fixture-model"),
    ],
)
def test_model_name(model_id, name):
    assert model_name(model_id) == name


def make_checkpoint(path, model_type="m2m_100"):
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"model_type": model_type}))
    for name in ("vocab.json", "sentencepiece.bpe.model", "model.safetensors"):
        (path / name).write_bytes(name.encode())
    return path


def test_checkpoint_files_and_version_are_stable(tmp_path):
    directory = make_checkpoint(tmp_path / "ckpt")
    files = checkpoint_files(directory)
    assert {f.name for f in files} == {"config.json", "vocab.json", "sentencepiece.bpe.model", "model.safetensors"}
    assert content_version(files) == content_version(checkpoint_files(directory))


def test_version_changes_with_content(tmp_path):
    directory = make_checkpoint(tmp_path / "ckpt")
    before = content_version(checkpoint_files(directory))
    (directory / "model.safetensors").write_bytes(b"other weights")
    assert content_version(checkpoint_files(directory)) != before


def test_not_m2m100(tmp_path):
    with pytest.raises(RegistrationError, match="model_type 'bert'"):
        checkpoint_files(make_checkpoint(tmp_path / "bert", model_type="bert"))


def test_missing_files_are_named(tmp_path):
    directory = make_checkpoint(tmp_path / "ckpt")
    # The tokenizer_config names the family: an M2M100 checkpoint without its vocab.json.
    (directory / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "M2M100Tokenizer"}))
    (directory / "vocab.json").unlink()
    (directory / "model.safetensors").unlink()
    with pytest.raises(RegistrationError, match="missing vocab.json, model.safetensors or pytorch_model.bin"):
        checkpoint_files(directory)


@pytest.mark.parametrize("tokenizer_files", [("sentencepiece.bpe.model",), ("tokenizer.json",), ()])
def test_nllb_checkpoint_needs_one_tokenizer_form(tmp_path, tokenizer_files):
    """NLLB-200 checkpoints ship sentencepiece.bpe.model and/or tokenizer.json, no vocab.json."""
    directory = make_checkpoint(tmp_path / "ckpt")
    for name in ("vocab.json", "sentencepiece.bpe.model"):
        (directory / name).unlink()
    (directory / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "NllbTokenizer"}))
    for name in tokenizer_files:
        (directory / name).write_bytes(name.encode())
    if not tokenizer_files:
        with pytest.raises(RegistrationError, match="read as nllb.*missing sentencepiece.bpe.model or tokenizer.json"):
            checkpoint_files(directory)
        return
    assert {f.name for f in checkpoint_files(directory)} == {
        "config.json",
        "model.safetensors",
        "tokenizer_config.json",
        *tokenizer_files,
    }


def test_local_path_that_does_not_exist(tmp_path):
    with pytest.raises(RegistrationError, match="not a directory"):
        resolve(str(tmp_path / "absent"))


def test_offline_hub_id_fails_fast_with_advice(monkeypatch):
    import socket

    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # read when huggingface_hub was imported
    # Fast because the network is never tried (its timeouts and retries are what took minutes):
    # watched, not timed.
    tried: list[object] = []

    def no_network(*args, **kwargs):
        tried.append(args)
        raise OSError("the test's network is off")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    with pytest.raises(RegistrationError, match="pass its path"):
        resolve("facebook/m2m100_418M-not-cached")
    assert tried == []
