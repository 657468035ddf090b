"""The model-owning part: pieces in, translations out, in the order given.

`Translator` knows nothing of BentoML, so it is tested directly with the fixture model. The
engine service in `service.py` holds one instance and feeds it the merged batches.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from translator.config import Engine, Generation
from translator.contract.language_codes import LanguageCodes, base_language
from translator.contract.protocol import TRUNCATED, Piece, PieceResult
from translator.engine.backends import MEASURED_ROWS, Backend, Decoding, SpecialIds, measured_on_cuda
from translator.engine.batch_limits import CPU_MAX_BATCH_TOKENS
from translator.engine.batching import deduplicate, plan_batches
from translator.engine.model_runner import BackendSpec, RunnerGone, start_backend
from translator.engine.tokenization import ModelTokenizer
from translator.text.segment import UNSPACED_LANGUAGES, split_clause

logger = logging.getLogger(__name__)

# Encoded pieces kept between the scheduler's count and the model's batch: a piece of up to 400
# characters and its ids take about 1.5 KB, so about 6 MB (the text of pieces already answered
# stays until evicted, as in the sentence cache).
ENCODED_PIECES = 4096

# A piece whose translation does not end is cut in two at most this deep (up to 8 parts).
MAX_SPLIT_DEPTH = 3

# Pieces used to warm the model up at start-up, so the first real batch does not pay for lazy
# initialisation (allocator, kernels selection) and the scheduler's first measurement is honest.
_WARMUP_TEXTS = ("Hello.", "This is a somewhat longer sentence that the model translates at start-up.")


class Translator:
    def __init__(
        self,
        model_dir: str | Path,
        engine: Engine | None = None,
        generation: Generation | None = None,
    ) -> None:
        from transformers import GenerationConfig, M2M100Config

        engine = engine or Engine()
        self.generation = generation or Generation()
        # Until the engine resolves it from the device (translator/engine/batch_limits.py).
        self.max_batch_tokens = engine.max_batch_tokens or CPU_MAX_BATCH_TOKENS

        model_config = M2M100Config.from_pretrained(str(model_dir))
        # Either family's tokenizer (M2M100's or NLLB-200's): the rest works on ids.
        self.model_tokenizer = ModelTokenizer(model_dir, int(model_config.vocab_size))
        self.family = self.model_tokenizer.family
        self.tokenizer = self.model_tokenizer.tokenizer
        try:
            config = GenerationConfig.from_pretrained(str(model_dir))
        except OSError:
            config = GenerationConfig.from_model_config(model_config)
        self.num_beams = self.generation.num_beams or config.num_beams or 1
        # The operator's settings override the checkpoint's generation config, which every
        # backend is then given in full (CTranslate2 does not read that file).
        self.decoding = Decoding(
            num_beams=self.num_beams,
            length_penalty=_first(self.generation.length_penalty, config.length_penalty, 1.0),
            no_repeat_ngram_size=_first(self.generation.no_repeat_ngram_size, config.no_repeat_ngram_size, 0),
        )
        self.decoder_start_id = int(config.decoder_start_token_id or self.tokenizer.eos_token_id)
        self.eos_id = self.model_tokenizer.eos_id
        self.pad_id = self.model_tokenizer.pad_id
        self.unk_id = self.model_tokenizer.unk_id
        # Every code a request may name (the model's own and, for NLLB, the ISO aliases of
        # translator/contract/language_codes.py) to its language token's id.
        self.codes = LanguageCodes(self.model_tokenizer.languages, self.family)
        model_ids = self.model_tokenizer.lang_ids
        self.lang_ids: dict[str, int] = {
            code: model_ids[model] for code in self.codes.accepted if (model := self.codes.to_model(code))
        }
        # Positions beyond this are not what the model was trained on; the output budget stops here.
        self.max_positions = int(model_config.max_position_embeddings)
        forced = self.generation.forced_new_tokens
        if forced is not None and not 1 <= forced <= self.max_positions - 2:
            raise ValueError(f"forced_new_tokens must be between 1 and {self.max_positions - 2}, not {forced}")
        # Each piece is encoded once: when the scheduler counts its tokens (admission, batching)
        # and the model thread reads the ids back from here. Bounded; an evicted piece (one queued
        # behind more than this many others) is encoded again, which changes nothing but the time.
        self._encoded = functools.lru_cache(maxsize=ENCODED_PIECES)(self._encode_uncached)

        special = SpecialIds(decoder_start=self.decoder_start_id, eos=self.eos_id, pad=self.pad_id)
        spec = BackendSpec(str(model_dir), engine, self.decoding, special, int(model_config.vocab_size))
        if measured_on_cuda(engine, model_dir):
            # `auto` on a GPU: which engine is faster depends on the card, so both are timed.
            source, target = self.warmup_pair()
            rows = tuple(tuple(self._encode(source, p.text)) for p in self.calibration_batches(MEASURED_ROWS)[1])
            spec = dataclasses.replace(spec, measured_rows=rows, measured_target=self.lang_ids[target])
        # In a process of its own on CUDA (translator/engine/model_runner.py): either way a Backend.
        self.backend: Backend = start_backend(spec)
        self.device = self.backend.device
        self.precision = self.backend.precision
        logger.info(
            "loaded %s with %s on %s (%s), %d languages, beams=%d",
            model_dir,
            self.backend.name,
            self.device,
            self.precision,
            len(self.codes.model_codes),
            self.num_beams,
        )
        if engine.warmup:
            self.warm_up()

    @property
    def languages(self) -> list[str]:
        """Every code a request may name (for NLLB, ISO aliases beside the model's codes)."""
        return sorted(self.lang_ids)

    def warmup_pair(self) -> tuple[str, str]:
        """A language pair this checkpoint has, preferring common ones, to warm up with."""
        listed = self.codes.listed
        source = "en" if "en" in self.lang_ids else listed[0]
        target = next((code for code in ("fr", "de", "ja") if code in self.lang_ids and code != source), source)
        return source, target

    def warm_up(self) -> None:
        source, target = self.warmup_pair()
        self.translate([Piece(text=text, source=source, target=target) for text in _WARMUP_TEXTS])

    def calibration_batches(self, max_batch_size: int) -> list[list[Piece]]:
        """Two batches, of one piece and of `max_batch_size` distinct pieces, for the scheduler
        to run before it says ready: from the two ends of the range it predicts, its cost model
        tells the fixed cost of a batch from the cost per piece from the first request on."""
        source, target = self.warmup_pair()
        size = max_batch_size
        texts = [f"Sentence number {i} warms the translation engine up." for i in range(size)]
        return [
            [Piece(text=_WARMUP_TEXTS[0], source=source, target=target)],
            [Piece(text=text, source=source, target=target) for text in texts],
        ]

    def translate(self, pieces: Sequence[Piece]) -> list[PieceResult]:
        """Translate every piece; the result list matches `pieces` position by position.

        A piece that cannot be translated gets a result with `error` set; the others are
        unaffected, whichever request each came from.
        """
        results: list[PieceResult | None] = [None] * len(pieces)
        work: list[int] = []
        for index, piece in enumerate(pieces):
            problem = self._check(piece)
            if problem:
                results[index] = PieceResult(error=problem)
            elif not piece.text.strip():
                results[index] = PieceResult(text=piece.text)
            else:
                work.append(index)

        keys = [(pieces[i].source, pieces[i].target, pieces[i].text, pieces[i].alternatives) for i in work]
        unique, positions = deduplicate(keys)
        outcomes = self._translate_unique(unique)
        for index, slot in zip(work, positions, strict=True):
            results[index] = outcomes[slot]
        return [r if r is not None else PieceResult(error="internal: piece not processed") for r in results]

    def count_tokens(self, piece: Piece) -> int:
        """Source tokens of one piece as the model sees them (what batches are budgeted in)."""
        return len(self._encoded(piece.source, piece.text))

    def _check(self, piece: Piece) -> str | None:
        for field, code in (("source", piece.source), ("target", piece.target)):
            if code not in self.lang_ids:
                return f"unsupported {field} language {code!r}"
        return None

    @property
    def max_source_tokens(self) -> int:
        """The longest source row sent to the model: one whose answer, at the output budget's
        ratio, still fits the checkpoint's positions (335 tokens for 1,024 positions, 79 for 256).
        Pieces are cut at 400 characters before they come here, which assumed the 418M's 1,024
        positions; a checkpoint with fewer failed on longer rows (#49: CTranslate2's "no position
        encodings are defined for positions >= 256")."""
        room = self.max_positions - 2 - self.generation.max_length_margin
        return max(1, int(room / max(1.0, self.generation.max_length_ratio)))

    def _translate_unique(self, keys: list[tuple[str, str, str, int]], depth: int = 0) -> list[PieceResult]:
        out: list[PieceResult] = [PieceResult(error="internal: not translated")] * len(keys)
        rows: dict[int, list[int]] = {}
        too_long: list[int] = []
        for index, (source, _, text, _) in enumerate(keys):
            # Encoding is per piece and inside the isolation: one piece that the tokenizer rejects
            # fails alone, not the batch it was merged into.
            try:
                row = self._encode(source, text)
            except Exception as exc:  # noqa: BLE001
                logger.exception("encoding one piece failed")
                out[index] = PieceResult(error=f"{type(exc).__name__}: {exc}")
                continue
            if len(row) > self.max_source_tokens and not self.generation.forced_new_tokens:
                too_long.append(index)  # split before it is sent, never sent to fail
            else:
                rows[index] = row
        for index in too_long:
            failed = PieceResult(
                error=f"a sentence of {len(self._encode(keys[index][0], keys[index][2]))} tokens is longer than "
                f"the model's limit of {self.max_positions} positions allows ({self.max_source_tokens} with room for "
                "its translation), and could not be cut at a clause; send shorter sentences",
                error_kind=TRUNCATED,
            )
            out[index] = self._split_and_translate(keys[index], failed, depth)
        targets = {i: self.lang_ids[keys[i][1]] for i in rows}
        # Pieces that ask for alternatives search a wider beam: they run apart from the others.
        for hypotheses in sorted({keys[i][3] + 1 for i in rows}):
            order = [i for i in rows if keys[i][3] + 1 == hypotheses]
            beams = max(self.num_beams, hypotheses)
            for batch in plan_batches([len(rows[i]) for i in order], self.max_batch_tokens, beams=beams):
                members = [order[i] for i in batch]
                results = self._run_batch([rows[i] for i in members], [targets[i] for i in members], hypotheses)
                for index, result in zip(members, results, strict=True):
                    out[index] = result
        for index, result in enumerate(out):
            if result.error_kind == TRUNCATED:
                out[index] = self._split_and_translate(keys[index], result, depth)
        return out

    def _split_and_translate(self, key: tuple[str, str, str, int], failed: PieceResult, depth: int) -> PieceResult:
        """A piece too long for the model (its source, or its translation that did not end within
        the model's limit): translated in two halves, cut at the clause boundary nearest its middle,
        and rejoined (without alternatives)."""
        source, target, text, _ = key
        halves = split_clause(text) if depth < MAX_SPLIT_DEPTH else None
        if halves is None:
            return failed
        logger.warning("a %d-character piece is too long for the model; translating it in two parts", len(text))
        parts = self._translate_unique([(source, target, half, 0) for half in halves], depth + 1)
        bad = next((part for part in parts if part.error is not None), None)
        if bad is not None:
            return bad
        glue = "" if base_language(target) in UNSPACED_LANGUAGES else " "
        return PieceResult(text=glue.join(part.text or "" for part in parts))

    def _run_batch(self, rows: list[list[int]], targets: list[int], hypotheses: int = 1) -> list[PieceResult]:
        try:
            outputs = self._generate(rows, targets, hypotheses=hypotheses)
        except RunnerGone:
            raise  # no piece caused it, and no half would fare better: the whole batch fails
        except Exception as exc:  # noqa: BLE001 - isolate the failure to the pieces that cause it
            if len(rows) == 1:
                logger.exception("translation of one piece failed")
                return [PieceResult(error=f"{type(exc).__name__}: {exc}")]
            # Out of memory is the usual cause, and half the batch usually fits: halving finds the
            # failing piece (or the size that fits) in log2(n) steps instead of n single calls.
            logger.warning("batch of %d failed (%s); retrying in halves", len(rows), exc)
            self._release_memory()
            half = len(rows) // 2
            return self._run_batch(rows[:half], targets[:half], hypotheses) + self._run_batch(
                rows[half:], targets[half:], hypotheses
            )
        results = []
        for row, target, (text, complete, others) in zip(rows, targets, outputs, strict=True):
            if not complete:
                # Cut at the output budget: once more alone, with all the room the model has.
                [(text, complete, others)] = self._generate([row], [target], full_budget=True, hypotheses=hypotheses)
            if complete:
                # Alternatives: distinct from the best and from each other, in the beam's order.
                alternatives = list(dict.fromkeys(t for t in others if t and t != text))
                results.append(PieceResult(text=text, alternatives=alternatives))
            else:
                results.append(
                    PieceResult(
                        error=f"the translation did not end within the model's limit of {self.max_positions} "
                        "positions; send shorter sentences",
                        error_kind=TRUNCATED,
                    )
                )
        return results

    def _encode(self, source: str, text: str) -> list[int]:
        return list(self._encoded(source, text))

    def _encode_uncached(self, source: str, text: str) -> tuple[int, ...]:
        return self.model_tokenizer.source_row(self.lang_ids[source], text)

    def _generate(
        self, rows: list[list[int]], targets: list[int], full_budget: bool = False, hypotheses: int = 1
    ) -> list[tuple[str, bool, list[str]]]:
        """(text, ended, alternatives) per row: `ended` is false when the output stopped at its
        length budget; `alternatives` the next hypotheses' texts (`hypotheses` - 1 of them)."""
        forced = self.generation.forced_new_tokens
        if forced:
            # Benchmarks: exactly `forced` new tokens per row, whatever the (random) weights say.
            outputs = self.backend.generate(
                rows, targets, max_new_tokens=forced, min_new_tokens=forced, hypotheses=hypotheses
            )
            return [(self._decode(out.ids), True, [self._decode(a) for a in out.alternatives]) for out in outputs]
        # Two decoder positions hold the prefix [</s>, __tgt__].
        room = self.max_positions - 2
        width = max(len(r) for r in rows)
        budget = (
            room
            if full_budget
            else min(math.ceil(width * self.generation.max_length_ratio) + self.generation.max_length_margin, room)
        )
        outputs = self.backend.generate(rows, targets, max_new_tokens=budget, hypotheses=hypotheses)
        return [(self._decode(out.ids), out.ended, [self._decode(a) for a in out.alternatives]) for out in outputs]

    def _decode(self, ids: list[int]) -> str:
        return self.model_tokenizer.decode(ids)

    def _release_memory(self) -> None:
        self.backend.release_memory()

    @property
    def failure(self) -> str | None:
        """Why the model cannot be asked any more (its runner process died), None while it can."""
        return getattr(self.backend, "failure", None)

    def close(self) -> None:
        """Stop the model's runner process, if it has one (translator/engine/model_runner.py)."""
        close = getattr(self.backend, "close", None)
        if close is not None:
            close()

    def describe_generation(self) -> dict[str, Any]:
        """Everything besides the model and the text that decides a translation (cache keys): the
        backend and its precision included, since int8 may translate a sentence differently."""
        return {
            "num_beams": self.num_beams,
            "length_penalty": self.decoding.length_penalty,
            "no_repeat_ngram_size": self.decoding.no_repeat_ngram_size,
            "max_length_ratio": self.generation.max_length_ratio,
            "max_length_margin": self.generation.max_length_margin,
            "forced_new_tokens": self.generation.forced_new_tokens,
            "backend": self.backend.name,
            "dtype": self.precision,
        }

    def describe(self) -> dict[str, Any]:
        return {
            **self.backend.describe(),
            "num_beams": self.num_beams,
            "max_batch_tokens": self.max_batch_tokens,
            "family": self.family,
            "languages": len(self.codes.model_codes),
        }


def _first(*values: Any) -> Any:
    return next(value for value in values if value is not None)
