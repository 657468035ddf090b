"""Registering an M2M100 or NLLB-200 checkpoint (one architecture, two tokenizers) in the
BentoML model store.

The store is what `bentoml build` references and `bentoml containerize` copies into the image, so
the service never touches the Hugging Face hub at start-up (no download during a readiness probe,
no surprise in an offline cluster).

Every checkpoint is registered under one name, `translator.config.MODEL_NAME`, with a hash of its
files as the version, so `m2m100:latest` (what the service loads unless TRANSLATOR_MODEL pins a
version) is always the checkpoint registered last, re-registrations included. Where it came from
(hub id or directory) is in the model's labels and metadata.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from translator.config import MODEL_NAME
from translator.contract.language_codes import LanguageCodes
from translator.engine import tokenization
from translator.engine.backends import WEIGHT_FILES, is_converted, torch_installed
from translator.engine.backends.ctranslate2_backend import CONVERTED_DIR
from translator.engine.backends.ctranslate2_convert import convert, converted_path

logger = logging.getLogger(__name__)

DEFAULT_MODEL_ID = "facebook/m2m100_418M"

# The batchable method of the engine service and the dimension BentoML concatenates along;
# recorded in the model's signatures so that tools reading the store know how to batch it.
BATCHABLE_METHOD = "translate"
BATCH_DIM = 0
SIGNATURES = {BATCHABLE_METHOD: {"batchable": True, "batch_dim": BATCH_DIM}}

# What a checkpoint needs: weights (one of the two forms), config, the tokenizer of its family
# (translator/engine/tokenization.py: M2M100's vocab.json + sentencepiece.bpe.model, NLLB's
# sentencepiece.bpe.model and/or tokenizer.json), generation config.
_REQUIRED = ("config.json",)
_TOKENIZER_FILES = ("vocab.json", "sentencepiece.bpe.model", "tokenizer.json")
_OPTIONAL = ("generation_config.json", "tokenizer_config.json", "special_tokens_map.json")
_HUB_PATTERNS = [*_REQUIRED, *_TOKENIZER_FILES, *_OPTIONAL, "model.safetensors"]
_CHUNK = 8 * 1024 * 1024


class RegistrationError(RuntimeError):
    """The checkpoint cannot be found, fetched or recognised as M2M100 or NLLB-200."""


@dataclass(frozen=True)
class Source:
    model_id: str
    directory: Path
    kind: str  # "local" or "hub"
    revision: str | None


def model_name(model_id: str) -> str:
    """A short label from a hub id or a directory: `facebook/m2m100_418M` -> `m2m100_418m`."""
    base = Path(model_id.rstrip("/")).name or "m2m100"
    name = re.sub(r"[^a-z0-9_.-]+", "-", base.lower()).strip("-.") or "m2m100"
    return name[:63]


def resolve(model_id: str) -> Source:
    path = Path(model_id).expanduser()
    if path.is_dir():
        return Source(model_id, path.resolve(), "local", None)
    if path.exists() or model_id.startswith((".", "/", "~")):
        raise RegistrationError(f"{model_id}: not a directory (expected a Hugging Face model directory)")
    return _from_hub(model_id)


def _from_hub(model_id: str) -> Source:
    # Short timeouts: offline, a hub id must fail in seconds with a useful message, not after
    # minutes of retries.
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "5")
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "30")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError, RepositoryNotFoundError

    try:
        directory = snapshot_download(model_id, allow_patterns=_HUB_PATTERNS)
        if not (Path(directory) / "model.safetensors").exists():
            directory = snapshot_download(model_id, allow_patterns=[*_HUB_PATTERNS, "pytorch_model.bin"])
    except RepositoryNotFoundError as exc:
        raise RegistrationError(f"{model_id}: no such model on the Hugging Face hub") from exc
    except (LocalEntryNotFoundError, OSError) as exc:
        raise RegistrationError(
            f"{model_id}: not in the local Hugging Face cache and the hub cannot be reached "
            f"({type(exc).__name__}). Download the checkpoint where the hub is reachable "
            "(e.g. `huggingface-cli download facebook/m2m100_418M --local-dir ./m2m100_418M`), "
            "copy the directory here, and pass its path: "
            "`python save_model.py --model-id ./m2m100_418M` or `MODEL_ID=./m2m100_418M make serve`."
        ) from exc
    directory_path = Path(directory)
    return Source(model_id, directory_path, "hub", directory_path.name)


def checkpoint_files(directory: Path) -> list[Path]:
    kind = tokenization.family(directory)
    missing = [name for name in _REQUIRED if not (directory / name).is_file()]
    for alternatives in tokenization.required_files(kind):
        if not any((directory / name).is_file() for name in alternatives):
            missing.append(" or ".join(alternatives))
    weights = [name for name in WEIGHT_FILES if (directory / name).is_file()]
    if not weights:
        missing.append(" or ".join(WEIGHT_FILES))
    if missing:
        raise RegistrationError(
            f"{directory}: not an M2M100 or NLLB-200 checkpoint (read as {kind}), missing {', '.join(missing)}"
        )
    try:
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except ValueError as exc:
        raise RegistrationError(f"{directory}: config.json is not valid JSON ({exc})") from exc
    if config.get("model_type") != "m2m_100":
        raise RegistrationError(
            f"{directory}: config.json has model_type {config.get('model_type')!r}, expected 'm2m_100'"
        )
    tokenizer = [name for name in _TOKENIZER_FILES if (directory / name).is_file()]
    names = [*_REQUIRED, *tokenizer, weights[0], *(n for n in _OPTIONAL if (directory / n).is_file())]
    return [directory / name for name in names]


def content_version(files: list[Path]) -> str:
    """A version derived from the files' bytes, so re-registering the same checkpoint is a no-op."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(_CHUNK), b""):
                digest.update(chunk)
    return digest.hexdigest()[:16]


def languages(directory: Path) -> tuple[str, list[str]]:
    """The checkpoint's family and its own language codes (`en`... or `eng_Latn`...)."""
    size = json.loads((directory / "config.json").read_text(encoding="utf-8")).get("vocab_size")
    try:
        tokenizer = tokenization.ModelTokenizer(directory, size)
    except Exception as exc:  # noqa: BLE001 - transformers' errors for a broken tokenizer are many
        raise RegistrationError(f"{directory}: its tokenizer cannot be loaded ({type(exc).__name__}: {exc})") from exc
    if not tokenizer.languages:
        raise RegistrationError(f"{directory}: its {tokenizer.family} tokenizer names no language tokens")
    return tokenizer.family, tokenizer.languages


def register(model_id: str = DEFAULT_MODEL_ID, *, progress: bool = True) -> str:
    """Put the checkpoint in the store as the latest version of the one name; return its tag."""
    import bentoml
    from bentoml.exceptions import NotFound

    if not torch_installed():
        # Checked before anything is copied: the conversion would fail after the copy.
        raise RegistrationError(
            "registering converts the checkpoint for CTranslate2, which reads its weights with torch, and torch "
            "is not installed here (the CPU image ships CTranslate2 alone): register with the GPU image or "
            "on a machine with requirements.txt installed"
        )
    source = resolve(model_id)
    files = checkpoint_files(source.directory)
    tag = f"{MODEL_NAME}:{content_version(files)}"
    try:
        stored = bentoml.models.get(tag)
    except NotFound:
        pass
    else:
        if str(bentoml.models.get(f"{MODEL_NAME}:latest").tag) == tag:
            if not is_converted(Path(stored.path)) and ctranslate2_unavailable() is None:
                # An entry made before the CTranslate2 conversion existed: converted in place
                # (staged, then renamed), never deleted first, so a conversion that fails (memory,
                # disk) leaves this entry serving on transformers rather than an older one.
                logger.info("%s is in the store as %s without its CTranslate2 conversion; converting", model_id, tag)
                _convert(source.directory, Path(stored.path))
            logger.info("%s already in the store as %s, the latest", model_id, tag)
            return tag
        # Registered before, but another checkpoint came after it: registering this one again
        # must make it what serves (a rollback), and `latest` follows the newest creation time,
        # so the entry is made anew rather than reused.
        logger.info("%s is in the store as %s, but not the latest; registering it again", model_id, tag)
        bentoml.models.delete(tag)

    family, model_languages = languages(source.directory)
    codes = LanguageCodes(model_languages, family)
    metadata: dict[str, Any] = {
        "source": source.model_id,
        "source_kind": source.kind,
        "architecture": "M2M100ForConditionalGeneration",
        # Read by the API workers, which load no tokenizer (translator/contract/language_codes.py):
        # `languages` what they list, one code per language; the model's own codes beside.
        "family": family,
        "languages": codes.listed,
        "model_languages": model_languages,
        "batchable_method": BATCHABLE_METHOD,
        "batch_dim": BATCH_DIM,
        "registered_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if source.revision:
        metadata["revision"] = source.revision
    # Prepared for every engine there is (translator/engine/backends): the transformers backends read
    # the checkpoint's files, CTranslate2 its conversion in a subdirectory.
    why = ctranslate2_unavailable()
    if why is None:
        import ctranslate2

        metadata["engines"] = {"transformers": ".", "ctranslate2": CONVERTED_DIR}
        metadata["ctranslate2_version"] = ctranslate2.__version__
    else:
        # A machine without it (the lent GPU machines: its CUDA build needs CUDA 12's cuBLAS): the
        # entry serves on transformers, and save_model.py run again where it is installed converts it.
        logger.warning("registering %s without its CTranslate2 conversion: %s", model_id, why)
        metadata["engines"] = {"transformers": "."}
        metadata["ctranslate2_unavailable"] = why
    with bentoml.models.create(
        tag,
        labels={"family": family, "source_kind": source.kind, "checkpoint": model_name(model_id)},
        metadata=metadata,
        signatures=SIGNATURES,  # type: ignore[arg-type]
    ) as model:
        _copy(files, Path(model.path), progress=progress)
        if why is None:
            logger.info("converting %s for CTranslate2", model_id)
            _convert(source.directory, Path(model.path))
    logger.info("registered %s as %s, now %s:latest", model_id, tag, MODEL_NAME)
    return tag


def ctranslate2_unavailable() -> str | None:
    """Why the checkpoint cannot be converted for CTranslate2 here, None where it can."""
    try:
        import ctranslate2  # noqa: F401
    except ImportError as exc:
        return f"ctranslate2 cannot be imported here ({exc}); the model serves on transformers"
    return None


def entry_info(tag: str) -> dict[str, Any]:
    """Where a store entry lies and what was recorded with it, for `add_ctranslate2_only`."""
    import bentoml

    model = bentoml.models.get(tag)
    return {
        "tag": str(model.tag),
        "path": model.path,
        "labels": dict(model.info.labels),
        "metadata": dict(model.info.metadata),
    }


def add_ctranslate2_only(info: dict[str, Any]) -> str:
    """Into this process's store, the entry `info` describes (`entry_info`, read from another
    store) less the checkpoint's weights: configs, tokenizer and the CTranslate2 conversion. What
    the CPU image ships (deploy/image/build.py): without torch its only engine is CTranslate2, which
    never reads the weights, half of the entry. Same tag: the same checkpoint, for one engine."""
    import bentoml

    source = Path(info["path"])
    if not is_converted(source):
        raise RegistrationError(f"{info['tag']} has no CTranslate2 conversion: register it again with save_model.py")
    metadata = {**info["metadata"], "engines": {"ctranslate2": CONVERTED_DIR}}
    with bentoml.models.create(
        info["tag"],
        labels=info["labels"],
        metadata=metadata,
        signatures=SIGNATURES,  # type: ignore[arg-type]
    ) as model:
        destination = Path(model.path)
        for path in sorted(source.rglob("*")):
            relative = path.relative_to(source)
            if path.is_dir() or relative.name in WEIGHT_FILES or relative.name == "model.yaml":
                continue  # model.yaml: the store's own record, written anew by create()
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)  # a link would not survive: create() copies its directory into the store
    return info["tag"]


def _convert(directory: Path, stored: Path) -> None:
    """The CTranslate2 conversion into a store entry; a checkpoint it cannot read is refused here,
    at registration, rather than by the engine at its first start."""
    try:
        convert(directory, converted_path(stored))
    except Exception as exc:  # noqa: BLE001 - the converter's errors are many (safetensors, torch, ctranslate2)
        raise RegistrationError(
            f"{directory}: the weights could not be converted for CTranslate2 ({type(exc).__name__}: {exc})"
        ) from exc


def _copy(files: list[Path], destination: Path, *, progress: bool) -> None:
    from tqdm import tqdm

    total = sum(path.stat().st_size for path in files)
    with tqdm(total=total, unit="B", unit_scale=True, desc="copying checkpoint", disable=not progress) as bar:
        for path in files:
            with path.open("rb") as src, (destination / path.name).open("wb") as dst:
                for chunk in _chunks(src):
                    dst.write(chunk)
                    bar.update(len(chunk))
            shutil.copystat(path, destination / path.name)


def _chunks(handle: Any) -> Iterator[bytes]:
    return iter(lambda: handle.read(_CHUNK), b"")
