"""The offline limit: one process, no server, the model fed length-sorted full batches back to back.

In `arrival` order the batches are the stream cut as it comes, unsorted: the most a service can
do when it has exactly one batch of pieces to choose from (as many one-record clients as pieces
in a batch), where length grouping has nothing to group.

Run by the harness as a subprocess (`python -m bench.offline SPEC OUT`), one per batch size, so
that its peak memory is that of one model process and nothing else: this is the "one model
process" the servers' memory is compared with. Same `Translator`, same settings file as the
service, same sentences in the same order as the one-record stream.
"""

from __future__ import annotations

import json
import logging
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench import workload
from bench.report import ARRIVAL_ORDER
from bench.tokens import generated_tokens, outputs_path, write_outputs
from translator.config import load_settings
from translator.contract.protocol import Piece

logger = logging.getLogger(__name__)

# Length-sort this many batches' worth of sentences at a time: long with long, short with short.
POOL_BATCHES = 8
# How batches are cut from the stream: length-sorted within a pool (the limit), or as they come.
ORDERS = ("sorted", "arrival")


def run(
    model_dir: Path, config: Path, batch_size: int, duration_s: float, log_dir: Path, order: str = "sorted"
) -> dict:
    import torch

    from translator.engine.translator import Translator

    settings = load_settings(config)
    load_started = time.perf_counter()
    translator = Translator(model_dir, settings.engine, settings.generation)
    load_s = time.perf_counter() - load_started
    print("LOADED", flush=True)  # noqa: T201 - the harness starts measuring memory here
    stream = workload.sentences()
    if order not in ORDERS:
        raise ValueError(f"order {order!r}: expected one of {', '.join(ORDERS)}")
    shuffle = random.Random(batch_size)

    def next_batches() -> list[list[Piece]]:
        pool = [next(stream) for _ in range(batch_size * POOL_BATCHES)]
        if order == "sorted":
            pool.sort(key=lambda item: len(translator._encode(item[0], item[2])))
        pieces = [Piece(text=text, source=src, target=tgt) for src, tgt, text in pool]
        batches = [pieces[i : i + batch_size] for i in range(0, len(pieces), batch_size)]
        if order == "sorted":
            # Sorted within, shuffled between: a run that stops mid-pool is not biased to short inputs.
            shuffle.shuffle(batches)
        return batches

    # One batch of the measured size first (not counted): allocator and kernels for this shape.
    translator.translate(next_batches()[0])

    times: list[float] = []
    sentences = 0
    tokens = 0
    texts: list[str] = []
    started = time.perf_counter()
    while time.perf_counter() - started < duration_s:
        for batch in next_batches():
            t0 = time.perf_counter()
            results = translator.translate(batch)
            times.append(time.perf_counter() - t0)
            failed = [r.error for r in results if r.error is not None]
            if failed:
                raise RuntimeError(f"offline translation failed: {failed[0]}")
            sentences += len(batch)
            outputs = [r.text or "" for r in results]
            texts.extend(outputs)
            tokens += generated_tokens(translator.tokenizer, outputs, settings.generation)
            if time.perf_counter() - started >= duration_s:
                break
    elapsed = time.perf_counter() - started
    write_outputs(outputs_path(log_dir, "offline", None, None, batch_size, scenario(order)), texts)
    return {
        "batch_size": batch_size,
        "order": order,
        "sentences": sentences,
        "generated_tokens": tokens,
        "seconds": elapsed,
        "batch_times_s": times,
        "load_s": load_s,
        "engine": translator.describe(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda_device": torch.cuda.get_device_name() if translator.device.startswith("cuda") else None,
    }


def scenario(order: str) -> str | None:
    """The result row's scenario: none for the limit, `arrival-order` for the unsorted batches."""
    return None if order == "sorted" else ARRIVAL_ORDER


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        raise SystemExit("usage: python -m bench.offline SPEC.json OUT.json")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    spec = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    result = run(
        Path(spec["model_dir"]),
        Path(spec["config"]),
        int(spec["batch_size"]),
        float(spec["duration_s"]),
        Path(args[1]).parent,
        spec.get("order", "sorted"),
    )
    Path(args[1]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
