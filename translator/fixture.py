"""A tiny, deterministic M2M100 fixture model that reproduces its corpus exactly.

The service's tests need a model that is loaded with the *real* classes
(``M2M100ForConditionalGeneration`` / ``M2M100Tokenizer``) and whose translations
are known in advance.  We get both by training a very small M2M100 from scratch,
with its own sentencepiece model, until it memorises every sentence pair of
``data/fixture_corpus.jsonl`` in both directions, and by refusing to publish a
build that does not decode every pair exactly (greedy and beam search, in mixed
language batches) the way the service decodes.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # heavy imports stay lazy so that reading the corpus is cheap
    import torch
    from transformers import M2M100ForConditionalGeneration, M2M100Tokenizer

logger = logging.getLogger(__name__)

CORPUS_PATH: Path = Path(__file__).resolve().parent / "data" / "fixture_corpus.jsonl"

STAMP_NAME = "fixture.stamp"
# Bump when the build procedure changes in a way the settings below do not capture.
BUILDER_VERSION = 1

_SPM_FILE = "sentencepiece.bpe.model"
_VOCAB_FILE = "vocab.json"
_SPECIAL_VOCAB = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
_DECODER_START_ID = 2
_EOS_ID = 2
_PAD_ID = 1
_BOS_ID = 0
_TERMINAL_PUNCTUATION = (".", "!", "?", "。", "！", "？")


@dataclass(frozen=True)
class _Settings:
    """Everything that shapes the artefact; it is hashed into the stamp."""

    spm_vocab_size: int = 2000
    d_model: int = 64
    layers: int = 2
    heads: int = 4
    ffn_dim: int = 256
    seed: int = 1
    # One thread, not two: the model is too small to gain from a second one, and
    # when other processes (parallel tests, a running service) busy the cores,
    # a second OpenMP thread makes every step spin-wait, ten times slower.
    torch_threads: int = 1
    learning_rate: float = 5e-3
    warmup_steps: int = 20
    lr_halving_epochs: float = 60.0
    token_budget: int = 600  # padded tokens per mini-batch
    epochs_per_round: int = 5
    max_rounds: int = 60
    # Minimum gap (in logits) between the reference token and the runner-up at
    # every teacher-forced step.  A wide gap is what makes the decoded output
    # immune to the float noise that batch composition and padding introduce.
    min_margin: float = 2.0
    # Logit gap enforced at the first step of a wrong beam hypothesis (see _Threat).
    threat_margin: float = 10.0
    beam_size: int = 5
    max_length: int = 200


_SETTINGS = _Settings()


# --------------------------------------------------------------------------- corpus


def load_corpus(path: Path = CORPUS_PATH) -> list[dict]:
    """Read the aligned documents of the fixture corpus (one JSON object per line)."""
    documents: list[dict] = []
    with Path(path).open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            document = json.loads(line)
            _check_document(document, f"{path}:{line_no}")
            documents.append(document)
    if not documents:
        raise ValueError(f"{path}: the fixture corpus is empty")
    return documents


def _check_document(document: Any, where: str) -> None:
    if not isinstance(document, dict):
        raise ValueError(f"{where}: expected a JSON object")
    missing = {"id", "src_lang", "tgt_lang", "source", "target"} - document.keys()
    if missing:
        raise ValueError(f"{where}: missing keys {sorted(missing)}")
    source, target = document["source"], document["target"]
    if not (isinstance(source, list) and isinstance(target, list)) or len(source) != len(target) or not source:
        raise ValueError(f"{where}: 'source' and 'target' must be non-empty lists of equal length")
    for sentence in (*source, *target):
        if not isinstance(sentence, str) or sentence != sentence.strip() or not sentence:
            raise ValueError(f"{where}: sentences must be non-empty strings without outer whitespace")
        if not sentence.endswith(_TERMINAL_PUNCTUATION):
            raise ValueError(f"{where}: sentence lacks terminal punctuation: {sentence!r}")


def sentence_pairs(corpus: Sequence[dict]) -> list[tuple[str, str, str, str]]:
    """Every aligned sentence as (src_lang, tgt_lang, source, target), in both directions.

    Raises ValueError when the same source sentence would need two different
    translations into one language: the fixture could not reproduce both.
    """
    pairs: list[tuple[str, str, str, str]] = []
    seen: dict[tuple[str, str, str], str] = {}
    for document in corpus:
        src_lang, tgt_lang = document["src_lang"], document["tgt_lang"]
        aligned = list(zip(document["source"], document["target"], strict=True))
        forward = [(src_lang, tgt_lang, s, t) for s, t in aligned]
        backward = [(tgt_lang, src_lang, t, s) for s, t in aligned]
        for pair in (*forward, *backward):
            key = pair[:3]
            if key in seen:
                if seen[key] != pair[3]:
                    raise ValueError(
                        f"{document['id']}: {pair[2]!r} ({pair[0]}->{pair[1]}) has two translations: "
                        f"{seen[key]!r} and {pair[3]!r}"
                    )
                continue  # an exact repeat teaches nothing new
            seen[key] = pair[3]
            pairs.append(pair)
    return pairs


def _corpus_sentences(pairs: Sequence[tuple[str, str, str, str]]) -> list[str]:
    """Unique sentences in first-seen order (the order keeps sentencepiece deterministic)."""
    return list(dict.fromkeys(sentence for pair in pairs for sentence in pair[2:]))


# --------------------------------------------------------------------------- stamp


def _stamp(corpus_path: Path, settings: _Settings) -> str:
    import sentencepiece
    import torch
    import transformers

    # Library versions are part of the stamp because they change what
    # save_pretrained writes and how the weights are initialised.
    payload = {
        "builder_version": BUILDER_VERSION,
        "corpus_sha256": hashlib.sha256(Path(corpus_path).read_bytes()).hexdigest(),
        "settings": dataclasses.asdict(settings),
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "sentencepiece": sentencepiece.__version__,
        },
    }
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    return json.dumps({"digest": digest, **payload}, indent=2, sort_keys=True) + "\n"


def _stamp_digest(text: str) -> str | None:
    try:
        return json.loads(text)["digest"]
    except (ValueError, KeyError, TypeError):
        return None


def _is_current(output_dir: Path, stamp: str) -> bool:
    stamp_file = output_dir / STAMP_NAME
    if not stamp_file.is_file():
        return False
    return _stamp_digest(stamp_file.read_text(encoding="utf-8")) == _stamp_digest(stamp)


# --------------------------------------------------------------------------- tokenizer


def _train_sentencepiece(sentences: Sequence[str], settings: _Settings) -> bytes:
    import sentencepiece

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_writer=model,
        model_type="bpe",
        vocab_size=settings.spm_vocab_size,
        hard_vocab_limit=False,  # the corpus is tiny: take what BPE can merge
        character_coverage=1.0,  # every CJK character must stay known
        # NFKC would turn full-width ！？ into !?; decoding must give the corpus back verbatim.
        normalization_rule_name="identity",
        num_threads=1,
        unk_id=0,
        bos_id=-1,
        eos_id=-1,
        pad_id=-1,
        minloglevel=2,
    )
    return model.getvalue()


def _write_tokenizer_files(spm_proto: bytes, directory: Path) -> None:
    import sentencepiece

    (directory / _SPM_FILE).write_bytes(spm_proto)
    processor = sentencepiece.SentencePieceProcessor(model_proto=spm_proto)
    # Same layout as the real m2m100 vocab.json: fairseq specials first, then the pieces.
    vocab = dict(_SPECIAL_VOCAB)
    for piece_id in range(processor.get_piece_size()):
        if processor.is_unknown(piece_id) or processor.is_control(piece_id):
            continue
        vocab.setdefault(processor.id_to_piece(piece_id), len(vocab))
    (directory / _VOCAB_FILE).write_text(json.dumps(vocab, ensure_ascii=False, indent=2), encoding="utf-8")


def _make_tokenizer(directory: Path) -> M2M100Tokenizer:
    from transformers import M2M100Tokenizer

    # model_max_length as in facebook/m2m100_418M, so truncation behaves like the real one.
    return M2M100Tokenizer(
        vocab_file=str(directory / _VOCAB_FILE),
        spm_file=str(directory / _SPM_FILE),
        model_max_length=1024,
    )


def _model_vocab_size(tokenizer: M2M100Tokenizer) -> int:
    # Language ids are encoder_size + i; 8 "madeup words" follow them (as in the
    # real checkpoint, 128004 + 100 + 8 = 128112).  len(tokenizer) does not
    # always count the language tokens, so it is only a lower bound here.
    size = tokenizer.encoder_size + len(tokenizer.lang_code_to_id) + tokenizer.num_madeup_words
    return max(size, len(tokenizer))


def _check_round_trip(tokenizer: M2M100Tokenizer, pairs: Sequence[tuple[str, str, str, str]]) -> None:
    unk = tokenizer.unk_token_id
    for sentence in _corpus_sentences(pairs):
        ids = tokenizer(sentence, add_special_tokens=False).input_ids
        if unk in ids or tokenizer.decode(ids, skip_special_tokens=True) != sentence:
            raise RuntimeError(f"tokenizer cannot round-trip {sentence!r}")


# --------------------------------------------------------------------------- model


def _make_model(vocab_size: int, settings: _Settings) -> M2M100ForConditionalGeneration:
    import torch
    from transformers import GenerationConfig, M2M100Config, M2M100ForConditionalGeneration

    config = M2M100Config(
        vocab_size=vocab_size,
        max_position_embeddings=1024,  # sinusoidal: free, and long inputs do not crash
        d_model=settings.d_model,
        encoder_layers=settings.layers,
        decoder_layers=settings.layers,
        encoder_attention_heads=settings.heads,
        decoder_attention_heads=settings.heads,
        encoder_ffn_dim=settings.ffn_dim,
        decoder_ffn_dim=settings.ffn_dim,
        # No stochasticity at all: memorisation needs a stable objective and the
        # build must be reproducible.
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        encoder_layerdrop=0.0,
        decoder_layerdrop=0.0,
        scale_embedding=True,
        pad_token_id=_PAD_ID,
        bos_token_id=_BOS_ID,
        eos_token_id=_EOS_ID,
        decoder_start_token_id=_DECODER_START_ID,
    )
    torch.manual_seed(settings.seed)
    model = M2M100ForConditionalGeneration(config)
    # Same decoding defaults as facebook/m2m100_418M.
    model.generation_config = GenerationConfig(
        bos_token_id=_BOS_ID,
        decoder_start_token_id=_DECODER_START_ID,
        eos_token_id=_EOS_ID,
        pad_token_id=_PAD_ID,
        max_length=settings.max_length,
        num_beams=settings.beam_size,
        early_stopping=True,
    )
    return model


@dataclass(frozen=True)
class _Example:
    """One sentence pair as token ids, the way the service sees it."""

    source_ids: tuple[int, ...]  # [src_lang_id] + pieces + [eos]
    target_lang_id: int
    target_ids: tuple[int, ...]  # pieces only
    target_text: str


@dataclass
class _Batch:
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    decoder_input_ids: torch.Tensor
    labels: torch.Tensor  # -100 where nothing is supervised


def _pad(rows: Sequence[Sequence[int]], value: int) -> torch.Tensor:
    import torch

    width = max(len(row) for row in rows)
    return torch.tensor([list(row) + [value] * (width - len(row)) for row in rows], dtype=torch.long)


def _encode_source(tokenizer: M2M100Tokenizer, src_lang: str, text: str) -> list[int]:
    """[src_lang_id] + pieces + [eos], exactly what ``tokenizer(text)`` gives the service."""
    previous = tokenizer.src_lang
    tokenizer.src_lang = src_lang
    try:
        return tokenizer(text).input_ids
    finally:
        tokenizer.src_lang = previous


def _encode_pairs(tokenizer: M2M100Tokenizer, pairs: Sequence[tuple[str, str, str, str]]) -> list[_Example]:
    return [
        _Example(
            source_ids=tuple(_encode_source(tokenizer, src, source)),
            target_lang_id=tokenizer.get_lang_id(tgt),
            target_ids=tuple(tokenizer(target, add_special_tokens=False).input_ids),
            target_text=target,
        )
        for src, tgt, source, target in pairs
    ]


def _teacher_batch(examples: Sequence[_Example]) -> _Batch:
    """Teacher forcing: decoder sees [2, lang] + target, predicts target + [eos]."""
    input_ids = _pad([e.source_ids for e in examples], _PAD_ID)
    decoder_rows = [[_DECODER_START_ID, e.target_lang_id, *e.target_ids] for e in examples]
    # Nothing is learned for the language token: it is forced at inference, and
    # one source sentence may legitimately go to several languages.
    label_rows = [[-100, *e.target_ids, _EOS_ID] for e in examples]
    return _Batch(
        input_ids=input_ids,
        attention_mask=(input_ids != _PAD_ID).long(),
        decoder_input_ids=_pad(decoder_rows, _PAD_ID),
        labels=_pad(label_rows, -100),
    )


@dataclass(frozen=True)
class _Threat:
    """Where a wrong beam hypothesis left the reference: prefix, the reference's token, the wrong token."""

    source_ids: tuple[int, ...]
    decoder_prefix: tuple[int, ...]  # [2, lang] + reference tokens before the split
    reference_token: int
    wrong_token: int


def _threat_batch(threats: Sequence[_Threat]) -> tuple[_Batch, torch.Tensor]:
    """Batch whose labels hold the reference token at the split step, plus the wrong tokens."""
    import torch

    input_ids = _pad([t.source_ids for t in threats], _PAD_ID)
    labels = _pad([[-100] * (len(t.decoder_prefix) - 1) + [t.reference_token] for t in threats], -100)
    batch = _Batch(
        input_ids=input_ids,
        attention_mask=(input_ids != _PAD_ID).long(),
        decoder_input_ids=_pad([t.decoder_prefix for t in threats], _PAD_ID),
        labels=labels,
    )
    return batch, torch.tensor([t.wrong_token for t in threats])


def _length_buckets(examples: Sequence[_Example], token_budget: int) -> list[_Batch]:
    """Fixed mini-batches of similar length: far less padding than one full batch."""

    def length(e: _Example) -> int:
        return max(len(e.source_ids), len(e.target_ids) + 2)

    ordered = sorted(examples, key=length)  # stable, so the order is deterministic
    groups: list[list[_Example]] = [[]]
    for example in ordered:
        if groups[-1] and (len(groups[-1]) + 1) * length(example) > token_budget:
            groups.append([])
        groups[-1].append(example)
    return [_teacher_batch(group) for group in groups]


def _logits(model: M2M100ForConditionalGeneration, batch: _Batch) -> torch.Tensor:
    return model(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        decoder_input_ids=batch.decoder_input_ids,
    ).logits


def _teacher_loss(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy and, per supervised position, the logit gap reference - best other."""
    import torch

    mask = labels != -100
    targets = labels.clamp(min=0)
    loss = torch.nn.functional.cross_entropy(logits[mask], targets[mask])
    with torch.no_grad():
        reference = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        others = logits.scatter(-1, targets.unsqueeze(-1), float("-inf")).amax(-1)
    return loss, (reference - others)[mask]


def _threat_loss(logits: torch.Tensor, labels: torch.Tensor, wrong: torch.Tensor, margin: float) -> torch.Tensor:
    """Hinge: the reference must beat the wrong token by `margin` logits where they split."""
    mask = labels != -100
    step_logits = logits[mask]
    reference = step_logits.gather(-1, labels[mask].unsqueeze(-1)).squeeze(-1)
    wrong_logit = step_logits.gather(-1, wrong.unsqueeze(-1)).squeeze(-1)
    return (margin - (reference - wrong_logit)).clamp(min=0).mean()


class _Trainer:
    """Trains until greedy and beam decoding give back every target exactly."""

    def __init__(
        self,
        model: M2M100ForConditionalGeneration,
        tokenizer: M2M100Tokenizer,
        examples: Sequence[_Example],
        settings: _Settings,
    ) -> None:
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self.examples = list(examples)
        self.settings = settings
        self.buckets = _length_buckets(self.examples, settings.token_budget)
        self.full_batch = _teacher_batch(self.examples)
        self.threats: dict[_Threat, None] = {}  # ordered set, for a deterministic batch
        self.threat_batch: tuple[_Batch, torch.Tensor] | None = None
        self.optimizer = torch.optim.Adam(model.parameters(), lr=settings.learning_rate, betas=(0.9, 0.98))
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self._lr_factor)
        self.epoch = 0

    def _lr_factor(self, step: int) -> float:
        epoch = step / len(self.buckets)
        warmup = min(1.0, (step + 1) / self.settings.warmup_steps)
        # Halve the rate every `lr_halving_epochs`: late, small steps are what
        # turn "mostly right" into wide margins without loss spikes.
        return warmup * 0.5 ** (epoch / self.settings.lr_halving_epochs)

    def run(self) -> None:
        settings = self.settings
        for round_no in range(1, settings.max_rounds + 1):
            self._train_epochs(settings.epochs_per_round)
            loss, min_margin = self._evaluate()
            logger.debug(
                "round %d (epoch %d): loss %.5f, min margin %.2f, %d threats",
                round_no,
                self.epoch,
                loss,
                min_margin,
                len(self.threats),
            )
            if min_margin < settings.min_margin:
                continue
            failures, threats = _check_decoding(self.model, self.tokenizer, self.examples, settings.beam_size)
            if not failures:
                logger.info("all %d sentence pairs reproduce exactly after %d epochs", len(self.examples), self.epoch)
                return
            logger.debug("round %d: %d decoding mismatches, e.g. %s", round_no, len(failures), failures[0])
            self._add_threats(threats)
        raise RuntimeError(
            f"fixture model did not reproduce its corpus after {self.epoch} epochs; adjust the settings in {__name__}"
        )

    def _train_epochs(self, epochs: int) -> None:
        self.model.train()
        for _ in range(epochs):
            for batch in self.buckets:
                loss = _teacher_loss(_logits(self.model, batch), batch.labels)[0]
                if self.threat_batch is not None:
                    # A term in every step rather than a step of its own: Adam
                    # would give a lone step a full-size update and knock the
                    # memorised pairs over.
                    threat_batch, wrong = self.threat_batch
                    loss = loss + _threat_loss(
                        _logits(self.model, threat_batch), threat_batch.labels, wrong, self.settings.threat_margin
                    )
                self._step(loss)
            self.epoch += 1

    def _step(self, loss: torch.Tensor) -> None:
        import torch

        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        # Memorising with Adam spikes now and then; clipping keeps the spikes small.
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.scheduler.step()

    def _evaluate(self) -> tuple[float, float]:
        import torch

        self.model.eval()
        with torch.no_grad():
            loss, margins = _teacher_loss(_logits(self.model, self.full_batch), self.full_batch.labels)
        return loss.item(), margins.min().item()

    def _add_threats(self, threats: Sequence[_Threat]) -> None:
        for threat in threats:
            self.threats.setdefault(threat, None)
        self.threat_batch = _threat_batch(list(self.threats))


# --------------------------------------------------------------------------- decoding


def _generate(
    model: M2M100ForConditionalGeneration,
    examples: Sequence[_Example],
    *,
    num_beams: int,
    num_return_sequences: int = 1,
) -> list[list[int]]:
    """Generate for all examples in ONE batch, as the service does; rows without the 2 prefix ids, cut at eos.

    Returns num_return_sequences rows per example; rows that never reached eos
    keep all their tokens and get no eos.
    """
    import torch

    input_ids = _pad([e.source_ids for e in examples], _PAD_ID)
    decoder_input_ids = torch.tensor([[_DECODER_START_ID, e.target_lang_id] for e in examples])
    with torch.no_grad():
        generated = model.generate(  # type: ignore[misc]  # mypy cannot match generate's self type
            input_ids=input_ids,
            attention_mask=(input_ids != _PAD_ID).long(),
            decoder_input_ids=decoder_input_ids,
            num_beams=num_beams,
            num_return_sequences=num_return_sequences,
            do_sample=False,
        )
    rows = []
    for row in generated[:, decoder_input_ids.shape[1] :].tolist():
        rows.append(row[: row.index(_EOS_ID) + 1] if _EOS_ID in row else row)
    return rows


def _decode(tokenizer: M2M100Tokenizer, row: Sequence[int]) -> str:
    # decode returns a list only for batched input, never for one row of ids.
    return cast(str, tokenizer.decode([token for token in row if token != _EOS_ID], skip_special_tokens=True))


def _check_decoding(
    model: M2M100ForConditionalGeneration, tokenizer: M2M100Tokenizer, examples: Sequence[_Example], beam_size: int
) -> tuple[list[str], list[_Threat]]:
    """Exactness of greedy and beam decoding over all examples in one mixed batch.

    Text is compared, not token ids: another segmentation of the same text is
    just as good for the service.  Also returns the threats: where the wrong
    finished hypotheses of failed examples left the reference.  With
    early_stopping=True, beam search stops as soon as it holds beam_size
    finished hypotheses, so wrong ones that finish before the reference can
    crowd it out even when every single step prefers the reference.  Making the
    step where they split far more costly drops them behind the reference.
    """
    model.eval()
    failures: list[str] = []
    for example, row in zip(examples, _generate(model, examples, num_beams=1), strict=True):
        if _decode(tokenizer, row) != example.target_text:
            failures.append(f"greedy: {example.target_text!r} -> {_decode(tokenizer, row)!r}")
    threats = []
    beams = _generate(model, examples, num_beams=beam_size, num_return_sequences=beam_size)
    for index, example in enumerate(examples):
        hypotheses = beams[index * beam_size : (index + 1) * beam_size]
        if _decode(tokenizer, hypotheses[0]) == example.target_text:
            continue
        failures.append(f"beam: {example.target_text!r} -> {_decode(tokenizer, hypotheses[0])!r}")
        reference = [*example.target_ids, _EOS_ID]
        # Only the failed examples: mining every close call as well gives
        # hundreds of threats, which slows training far more than it helps.
        for hypothesis in hypotheses:
            if hypothesis[-1:] == [_EOS_ID] and _decode(tokenizer, hypothesis) != example.target_text:
                # Both end in eos and differ, so they differ within the shorter one.
                split = next(i for i, (a, b) in enumerate(zip(hypothesis, reference, strict=False)) if a != b)
                threats.append(
                    _Threat(
                        source_ids=example.source_ids,
                        decoder_prefix=(_DECODER_START_ID, example.target_lang_id, *reference[:split]),
                        reference_token=reference[split],
                        wrong_token=hypothesis[split],
                    )
                )
    return failures, threats


# --------------------------------------------------------------------------- build


@contextmanager
def _quiet_deterministic_torch(threads: int) -> Iterator[None]:
    """Fixed threads, deterministic kernels, no progress bars; restores all of it afterwards."""
    import torch
    from transformers.utils import logging as hf_logging

    previous_threads = torch.get_num_threads()
    previous_deterministic = torch.are_deterministic_algorithms_enabled()
    bars_were_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # save/load progress bars are noise in build logs
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    # Once the loss is tiny, gradients go subnormal and CPU arithmetic on them
    # crawls; flushing them to zero keeps training fast (and stays deterministic).
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)  # torch's default; the previous value cannot be read back
        torch.use_deterministic_algorithms(previous_deterministic)
        torch.set_num_threads(previous_threads)
        if bars_were_enabled:
            hf_logging.enable_progress_bar()


def _build_into(directory: Path, corpus_path: Path, settings: _Settings) -> None:
    pairs = sentence_pairs(load_corpus(corpus_path))
    spm_dir = directory / ".spm"
    spm_dir.mkdir()
    _write_tokenizer_files(_train_sentencepiece(_corpus_sentences(pairs), settings), spm_dir)
    tokenizer = _make_tokenizer(spm_dir)
    _check_round_trip(tokenizer, pairs)
    examples = _encode_pairs(tokenizer, pairs)

    with _quiet_deterministic_torch(settings.torch_threads):
        model = _make_model(_model_vocab_size(tokenizer), settings)
        _Trainer(model, tokenizer, examples, settings).run()
        model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
        shutil.rmtree(spm_dir)
        _check_saved(directory, model, examples, pairs)


def _check_saved(
    directory: Path,
    model: M2M100ForConditionalGeneration,
    examples: Sequence[_Example],
    pairs: Sequence[tuple[str, str, str, str]],
) -> None:
    """The service loads the directory, not our objects: make sure nothing changed on the way.

    Decoding was verified on the in-memory model; identical weights, generation
    settings and token ids carry that verification over to the saved copy.
    """
    import torch
    from transformers import M2M100ForConditionalGeneration, M2M100Tokenizer

    reloaded = M2M100ForConditionalGeneration.from_pretrained(directory)
    saved_state = reloaded.state_dict()
    for name, tensor in model.state_dict().items():
        if not torch.equal(tensor, saved_state[name]):
            raise RuntimeError(f"saved fixture weight {name} differs from the trained one")
    if reloaded.generation_config.to_diff_dict() != model.generation_config.to_diff_dict():
        raise RuntimeError("saved fixture generation_config differs from the verified one")
    tokenizer = M2M100Tokenizer.from_pretrained(directory)
    if _encode_pairs(tokenizer, pairs) != list(examples):
        raise RuntimeError("saved fixture tokenizer encodes the corpus differently")


def _publish(staging: Path, output_dir: Path, stamp: str) -> None:
    """Swap the finished staging directory into place (renames only, so never half-written)."""
    (staging / STAMP_NAME).write_text(stamp, encoding="utf-8")
    # mkdtemp and some writers create owner-only files; the model is meant to be
    # read by whoever runs the service or the tests.
    staging.chmod(0o755)
    for path in staging.iterdir():
        path.chmod(0o644)
    retired = None
    if output_dir.exists():
        retired = output_dir.with_name(f".{output_dir.name}.old-{os.getpid()}-{time.monotonic_ns()}")
        os.rename(output_dir, retired)
    try:
        os.rename(staging, output_dir)
    except OSError:
        # A concurrent builder published first; its result is as good as ours if the stamps agree.
        if not _is_current(output_dir, stamp):
            raise
        shutil.rmtree(staging, ignore_errors=True)
    if retired is not None:
        shutil.rmtree(retired, ignore_errors=True)


def build_fixture(output_dir: Path, *, force: bool = False, corpus_path: Path = CORPUS_PATH) -> Path:
    """Build the fixture model into ``output_dir`` unless an identical build is already there.

    Returns ``output_dir``.  The directory loads with
    ``M2M100ForConditionalGeneration.from_pretrained`` and ``M2M100Tokenizer.from_pretrained``.
    """
    output_dir = Path(output_dir).resolve()
    stamp = _stamp(corpus_path, _SETTINGS)
    if not force and _is_current(output_dir, stamp):
        logger.info("fixture model in %s is up to date", output_dir)
        return output_dir

    started = time.perf_counter()
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    # A sibling, so the final rename stays on one filesystem and is atomic.
    staging = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.tmp-", dir=output_dir.parent))
    try:
        _build_into(staging, corpus_path, _SETTINGS)
        _publish(staging, output_dir, stamp)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    logger.info("built fixture model in %s in %.1f s", output_dir, time.perf_counter() - started)
    return output_dir


# --------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m translator.fixture", description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, required=True, help="model directory to write")
    parser.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    parser.add_argument("-v", "--verbose", action="store_true", help="log training progress")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    print(build_fixture(args.output, force=args.force))  # noqa: T201 - CLI output
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
