"""One page of `make gpu-check` (bench/gpu_check.sh): the engines' offline rows (bench/engines.py)
and the service's points (`python -m bench --systems service`), each service point beside the
offline limit at its batch limit and the offline point's GPU busy fraction.

    python -m bench.gpu_summary WORK_DIR OUT_DIR     # writes OUT_DIR/gpu-check.md and .json
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.engines import ENGINES
from bench.report import cell, write_page


def offline_point(engines: dict[str, Any], engine: str, batch: int) -> dict[str, Any] | None:
    """The greedy offline row of `engine` at `batch`."""
    for run in engines.get("runs", []):
        if run["engine"] == engine and run["beams"] == 1:
            return next((row for row in run.get("rows", []) if row["batch"] == batch), None)
    return None


def service_rows(work: Path, engines: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(work.glob("gpu-service-*.json")):
        result = json.loads(path.read_text())
        settings = result["meta"].get("settings", {})
        limit = int((settings.get("batching") or {}).get("max_batch_size") or settings.get("max_batch_size") or 512)
        for row in result["rows"]:
            if row["system"] != "service":
                continue
            label = path.stem.removeprefix("gpu-service-")
            # `auto` is held against the fastest engine offline, whichever it chose at start-up.
            candidates = ["transformers:bfloat16"] if "transformers" in label else list(ENGINES)
            points = [p for p in (offline_point(engines, e, limit) for e in candidates) if p]
            offline = max(points, key=lambda p: p["sentences_per_s"], default={})
            seconds = row["seconds"] or 1.0
            rows.append(
                {
                    "point": label,
                    "clients": row["concurrency"],
                    "records": row["records_per_request"],
                    "sentences_per_s": row["sentences_per_s"],
                    "offline_limit": offline.get("sentences_per_s"),
                    "vs_offline": row["sentences_per_s"] / offline["sentences_per_s"] if offline else None,
                    "mean_batch": row["mean_batch_size"],
                    "p50_s": row.get("latency_p50_s"),
                    "gpu_busy": row.get("gpu_busy"),
                    "gpu_busy_vs_offline": row["gpu_busy"] / offline["gpu_busy"]
                    if row.get("gpu_busy") is not None and offline.get("gpu_busy")
                    else None,
                    "engine_cores": row.get("engine_cpu_s", 0) / seconds,
                    "runner_cores": row.get("runner_cpu_s", 0) / seconds,
                    "api_cores": row.get("api_cpu_s", 0) / seconds,
                    "failed": row["failed_requests"],
                }
            )
    return rows


def step_rows(work: Path) -> list[dict[str, Any]]:
    """What each step of bench/gpu_check.sh came to (its steps.tsv), with its log's last line."""
    path = work / "steps.tsv"
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        name, budget, seconds, outcome = line.split("\t", 3)
        log = work / f"{name}.log"
        said = [text for text in log.read_text(errors="replace").splitlines() if text.strip()] if log.exists() else []
        rows.append(
            {"step": name, "budget_s": int(budget), "seconds": int(seconds), "outcome": outcome, "said": said[-1:]}
        )
    return rows


def markdown(
    engines: dict[str, Any], service: Sequence[dict[str, Any]], device: str, steps: Sequence[dict[str, Any]] = ()
) -> str:
    from bench.engines import report

    lines = [f"# make gpu-check on {device.strip()}", ""]
    if steps:
        lines += ["| step | budget s | took s | outcome | its log's last line |", "|---|---|---|---|---|"]
        for r in steps:
            said = (r["said"][0] if r["said"] else "").replace("|", "/")[:160]
            lines.append(f"| {r['step']} | {r['budget_s']} | {r['seconds']} | {r['outcome']} | {said} |")
        lines.append("")
    if engines:
        lines += [report(engines["meta"], engines["runs"]), ""]
    lines += [
        "## The service",
        "",
        "Offline limit: the engine's greedy rate at the service's batch limit (the engines' table).",
        "",
        "| point | clients x records | sentences/s | offline limit | x offline | mean batch | p50 s | GPU busy |"
        " x offline busy | engine cores | runner cores | API cores | failed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in service:
        lines.append(
            f"| {r['point']} | {r['clients']} x {r['records']} | {r['sentences_per_s']:.1f} |"
            f" {cell(r['offline_limit'], 1)} |"
            f" {cell(r['vs_offline'])} | {cell(r['mean_batch'], 0)} | {cell(r['p50_s'])} | {cell(r['gpu_busy'])} |"
            f" {cell(r['gpu_busy_vs_offline'])} | {cell(r['engine_cores'])} | {cell(r['runner_cores'])} |"
            f" {cell(r['api_cores'])} |"
            f" {r['failed']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    work, out = (Path(a) for a in (argv if argv is not None else sys.argv[1:]))
    engines_path = work / "gpu-engines.json"
    engines = json.loads(engines_path.read_text()) if engines_path.exists() else {}
    service = service_rows(work, engines)
    steps = step_rows(work)
    device_path = work / "device.txt"
    device = device_path.read_text() if device_path.exists() else "?"
    write_page(
        out,
        "gpu-check",
        {"steps": steps, "engines": engines, "service": service},
        markdown(engines, service, device, steps),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
