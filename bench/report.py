"""Rows to files: <name>.json, <name>.md, <name>-throughput.png and <name>-p99.png."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SYSTEMS = ("offline", "service", "baseline")
# The scenario of the offline row cut from the stream unsorted (bench/offline.py, `scenario`).
ARRIVAL_ORDER = "arrival-order"
TARGET_CONCURRENCY = 32

# (column, header) of the markdown table, in order.
COLUMNS = (
    ("engine", "engine"),
    ("system", "system"),
    ("concurrency", "conc."),
    ("records_per_request", "records/req"),
    ("scenario", "scenario"),
    ("priority", "priority"),
    ("batch_size", "batch"),
    ("requests", "requests"),
    ("failed_requests", "failed"),
    ("sentences_per_s", "sentences/s"),
    ("generated_tokens_per_s", "gen. tokens/s"),
    ("latency_p50_s", "p50 s"),
    ("latency_p95_s", "p95 s"),
    ("latency_p99_s", "p99 s"),
    ("mean_batch_size", "mean batch"),
    ("peak_pss_mb", "peak PSS MiB"),
    ("peak_rss_mb", "peak RSS MiB"),
    ("processes", "procs"),
    ("client_cpu_share", "client CPU"),
)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if value >= 100:
            return f"{value:.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.3g}" if value < 1 else f"{value:.2f}"
    return str(value)


def cell(value: Any, digits: int = 2) -> str:
    """A table cell of the one-page reports (frontend, standin, gpu-check): empty for None, a float
    to `digits` places, anything else as it is."""
    return "" if value is None else (f"{value:.{digits}f}" if isinstance(value, float) else str(value))


def write_page(output: Path, name: str, data: dict[str, Any], text: str) -> None:
    """<output>/<name>.json (`data`) and .md (`text`), the page printed: a one-page bench tool's results."""
    output.mkdir(parents=True, exist_ok=True)
    (output / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")
    (output / f"{name}.md").write_text(text)
    print(text)  # noqa: T201


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def _find(
    rows: Sequence[dict],
    system: str,
    concurrency: int | None = None,
    records: int | None = None,
    scenario: str | None = None,
    priority: str | None = None,
) -> dict | None:
    for row in rows:
        if (
            row["system"] == system
            and row.get("scenario") == scenario
            and row.get("priority") == priority
            and (scenario is not None or (row["concurrency"] == concurrency and row["records_per_request"] == records))
        ):
            return row
    return None


def offline_row(rows: Sequence[dict], batch_size: int, scenario: str | None = None) -> dict | None:
    """The offline limit at `batch_size`: length-sorted (no scenario), or cut from the stream
    unsorted (`arrival-order`, bench/offline.py)."""
    return next(
        (
            r
            for r in rows
            if r["system"] == "offline" and r["batch_size"] == batch_size and r.get("scenario") == scenario
        ),
        None,
    )


def offline_full_batch(rows: Sequence[dict], max_batch_size: int) -> dict | None:
    return offline_row(rows, max_batch_size)


def engines(rows: Sequence[dict], meta: dict) -> list[str]:
    """The run's engines in the order measured (one unnamed engine in results from before them)."""
    named = meta.get("engine")
    if isinstance(named, list):
        return list(named)
    return [named] if named else sorted({str(r.get("engine")) for r in rows})


def engine_meta(meta: dict, engine: str) -> dict:
    """The run's meta as one engine's systems saw it: its settings, its one-model-process memory."""
    own = meta.get("engines", {}).get(engine, {})
    return {**meta, **own, "settings": {**meta["settings"], "engine": own.get("settings")}}


def summary(rows: Sequence[dict], meta: dict) -> list[dict]:
    """Each engine's targets, then, with several engines, each against the first (the reference)."""
    names = engines(rows, meta)
    if len(names) <= 1:
        return engine_summary(rows, engine_meta(meta, names[0]) if names else meta)
    checks: list[dict] = []
    for name in names:
        own = [r for r in rows if r.get("engine") == name]
        for check in engine_summary(own, engine_meta(meta, name)):
            checks.append({**check, "detail": f"{name}: {check['detail']}"})
    reference = [r for r in rows if r.get("engine") == names[0]]
    for name in names[1:]:
        checks.extend(_versus_reference([r for r in rows if r.get("engine") == name], name, reference, names[0]))
    return checks


def _versus_reference(rows: Sequence[dict], name: str, reference: Sequence[dict], reference_name: str) -> list[dict]:
    """An engine's service against the reference engine's, the same points of the same run."""
    checks: list[dict] = []
    where = f"{name} vs {reference_name}"

    def check(target: str, value: float | None, bound: float, higher_is_better: bool, detail: str) -> None:
        met = None if value is None else (value >= bound if higher_is_better else value <= bound)
        checks.append({"target": target, "value": value, "bound": bound, "met": met, "detail": detail})

    common = {r["concurrency"] for r in rows if r["system"] == "service" and r.get("scenario") is None} & {
        r["concurrency"] for r in reference if r["system"] == "service" and r.get("scenario") is None
    }
    conc = TARGET_CONCURRENCY if TARGET_CONCURRENCY in common or not common else max(common)
    mine, theirs = _find(rows, "service", conc, 1), _find(reference, "service", conc, 1)
    check(
        "service sentences/s vs the reference engine's ≥ 1.8",
        _ratio(mine and mine["sentences_per_s"], theirs and theirs["sentences_per_s"]),
        1.8,
        True,
        f"{where}, concurrency {conc}, 1 record/request",
    )
    mine, theirs = _find(rows, "service", 1, 1), _find(reference, "service", 1, 1)
    check(
        "1 client: reference p50 latency / this engine's ≥ 1.8",
        _ratio(theirs and theirs["latency_p50_s"], mine and mine["latency_p50_s"]),
        1.8,
        True,
        f"{where}, concurrency 1, 1 record/request",
    )
    peak = max((r["peak_pss_mb"] or 0 for r in rows if r["system"] == "service"), default=None)
    reference_peak = max((r["peak_pss_mb"] or 0 for r in reference if r["system"] == "service"), default=None)
    check(
        "service peak PSS vs the reference engine's ≤ 0.6",
        _ratio(peak, reference_peak),
        0.6,
        False,
        f"{where}: {_fmt(peak)} vs {_fmt(reference_peak)} MiB (all points)",
    )
    return checks


def engine_summary(rows: Sequence[dict], meta: dict) -> list[dict]:
    """The targets of one engine's systems, evaluated at concurrency 32 (or the highest run if 32
    was not)."""
    max_batch = meta["settings"]["batching"]["max_batch_size"]
    max_latency_s = meta["settings"]["batching"]["max_latency_ms"] / 1000
    served = sorted({r["concurrency"] for r in rows if r["system"] == "service" and r.get("scenario") is None})
    if not any(r["system"] == "service" for r in rows):
        return []
    # With --scenarios-only there is no closed-loop grid: only the scenarios' and memory checks.
    conc = TARGET_CONCURRENCY if TARGET_CONCURRENCY in served or not served else served[-1]
    offline = offline_full_batch(rows, max_batch)
    offline_rate = offline["sentences_per_s"] if offline else None
    batch_time = offline["latency_p50_s"] if offline else None
    checks: list[dict] = []

    def check(name: str, value: float | None, target: float, higher_is_better: bool, detail: str) -> None:
        met = None if value is None else (value >= target if higher_is_better else value <= target)
        checks.append({"target": name, "value": value, "bound": target, "met": met, "detail": detail})

    for records in sorted(
        {r["records_per_request"] for r in rows if r["system"] == "service" and not r.get("scenario")}
    ):
        service = _find(rows, "service", conc, records)
        baseline = _find(rows, "baseline", conc, records)
        if service is None:
            continue
        where = f"concurrency {conc}, {records} record(s)/request"
        if records == 1:
            check(
                "service / baseline sentences/s ≥ 4",
                _ratio(service["sentences_per_s"], baseline["sentences_per_s"] if baseline else None),
                4.0,
                True,
                where,
            )
            versus_offline = _ratio(service["sentences_per_s"], offline_rate)
            check("service / offline sentences/s ≥ 0.9", versus_offline, 0.9, True, where)
            arrival = offline_row(rows, max_batch, ARRIVAL_ORDER)
            if arrival is not None and conc <= max_batch:
                # No target: with no more pieces than a batch holds, the service cannot sort them;
                # this is the limit of what it can batch, and the gap to it is the service's own cost.
                checks.append(
                    {
                        "target": "service / offline in arrival order sentences/s (no target: the limit unsorted)",
                        "value": _ratio(service["sentences_per_s"], arrival["sentences_per_s"]),
                        "bound": None,
                        "met": None,
                        "detail": f"{where}; offline arrival order / sorted: "
                        f"{_fmt(_ratio(arrival['sentences_per_s'], offline_rate))}",
                    }
                )
            check("service failed requests = 0", float(service["failed_requests"]), 0.0, False, where)
        else:
            versus_offline = _ratio(service["sentences_per_s"], offline_rate)
            check("service / offline sentences/s ≥ 0.85", versus_offline, 0.85, True, where)
            check("service failed requests = 0", float(service["failed_requests"]), 0.0, False, where)
        bound = 2 * (max_latency_s + batch_time) if batch_time is not None else None
        checks.append(
            {
                "target": "service p99 ≤ 2 × (max_latency_ms + one full batch) [s]",
                "value": service["latency_p99_s"],
                "bound": bound,
                "met": None if bound is None or service["latency_p99_s"] is None else service["latency_p99_s"] <= bound,
                "detail": f"{where}; one batch of {max_batch} offline: {_fmt(batch_time)} s",
            }
        )
    single = _find(rows, "service", 1, 1)
    offline_one = offline_row(rows, 1)
    if single is not None and offline_one is not None:
        check(
            "service (1 client) / offline batch 1 sentences/s ≥ 0.9",
            _ratio(single["sentences_per_s"], offline_one["sentences_per_s"]),
            0.9,
            True,
            "concurrency 1, 1 record/request",
        )
    checks.extend(_scenario_checks(rows, offline_rate, batch_time, max_latency_s))
    service_peak = max((r["peak_pss_mb"] or 0 for r in rows if r["system"] == "service"), default=None)
    one_model = meta.get("one_model_process_pss_mb")
    check(
        "service peak PSS / one model process ≤ 1.3",
        _ratio(service_peak, one_model),
        1.3,
        False,
        f"service peak {_fmt(service_peak)} MiB (all points), offline batch-{max_batch} process {_fmt(one_model)} MiB",
    )
    return checks


def _scenario_checks(
    rows: Sequence[dict], offline_rate: float | None, batch_time: float | None, max_latency_s: float
) -> list[dict]:
    checks: list[dict] = []

    def check(name: str, value: float | None, bound: float | None, higher_is_better: bool, detail: str) -> None:
        met = None
        if value is not None and bound is not None:
            met = value >= bound if higher_is_better else value <= bound
        checks.append({"target": name, "value": value, "bound": bound, "met": met, "detail": detail})

    interactive = _find(rows, "service", scenario="mixed-priority", priority="interactive")
    bulk = _find(rows, "service", scenario="mixed-priority", priority="bulk")
    if interactive is not None and bulk is not None:
        where = f"{interactive['concurrency']} interactive beside {bulk['concurrency']} bulk clients"
        check(
            "interactive p50 ≤ 2 × one full batch [s]",
            interactive["latency_p50_s"],
            2 * batch_time if batch_time is not None else None,
            False,
            where,
        )
        check("bulk / offline sentences/s ≥ 0.8", _ratio(bulk["sentences_per_s"], offline_rate), 0.8, True, where)
        both = bulk["sentences_per_s"] + interactive["sentences_per_s"]
        # Issue #21's bar: a storm of bulk clients the engine must mostly refuse may not take the
        # model's time (0.75 of offline before refusals were decided from the headers and held).
        check("(bulk + interactive) / offline sentences/s ≥ 0.9", _ratio(both, offline_rate), 0.9, True, where)
    repeated = _find(rows, "service", scenario="repeated")
    if repeated is not None:
        check(
            "repeated text (cache): service / offline sentences/s (no target: what the cache buys)",
            _ratio(repeated["sentences_per_s"], offline_rate),
            None,
            True,
            f"{repeated['concurrency']} one-record clients cycling over the corpus",
        )
    bulk_job = _find(rows, "service", scenario="bulk", priority="bulk")
    if bulk_job is not None:
        check(
            "bulk job (m2m-translate --url): service / offline sentences/s (no target: how close a job gets)",
            _ratio(bulk_job["sentences_per_s"], offline_rate),
            None,
            True,
            f"{bulk_job['sentences']} one-sentence records in mixed pairs, m2m-translate's defaults",
        )
    # Each compatible API against the same load on POST /translation, in alternating halves.
    for scenario, api in (("libretranslate", "LibreTranslate"), ("deepl", "DeepL")):
        native = _find(rows, "service", scenario=scenario, priority="native")
        compatible = _find(rows, "service", scenario=scenario, priority=scenario)
        if native is not None and compatible is not None:
            check(
                f"{api} API / POST /translation sentences/s ≥ 0.95",
                _ratio(compatible["sentences_per_s"], native["sentences_per_s"]),
                0.95,
                True,
                f"{native['concurrency']} Weblate-shaped clients, lists of {native['records_per_request']}",
            )
    overload = _find(rows, "service", scenario="overload")
    if overload is not None:
        where = f"open loop at {_fmt(overload.get('offered_requests_per_s'))} requests/s"
        bound = max_latency_s + batch_time if batch_time is not None else None
        check("overload: slowest 200 ≤ max_latency_ms + one batch [s]", overload["latency_max_s"], bound, False, where)
        p50, p99 = overload.get("refusal_latency_p50_s"), overload.get("refusal_latency_p99_s")
        refusals = f"{where}; refusals p50 {_fmt(p50)} s, p99 {_fmt(p99)} s"
        check("overload: slowest refusal ≤ 0.1 s", overload["refusal_latency_max_s"], 0.1, False, refusals)
        check("overload: refusals without Retry-After = 0", overload["refusals_without_retry_after"], 0, False, where)
        lost = sum(n for outcome, n in overload["outcomes"].items() if outcome not in ("ok", "HTTP 429", "HTTP 503"))
        check("overload: lost or failed otherwise = 0", float(lost), 0.0, False, where)
    return checks


def write_json(path: Path, meta: dict, rows: Sequence[dict], checks: Sequence[dict]) -> None:
    path.write_text(json.dumps({"meta": meta, "rows": list(rows), "summary": list(checks)}, indent=2) + "\n")


def write_markdown(path: Path, meta: dict, rows: Sequence[dict], checks: Sequence[dict]) -> None:
    settings = meta["settings"]
    lines = [
        f"# Benchmark `{meta['name']}`",
        "",
        f"- machine: {meta['machine']['cpu']}, {meta['machine']['cores']} cores, "
        f"{meta['machine']['ram_gib']} GiB RAM, device {meta['machine'].get('device') or '?'}, "
        f"torch {meta['machine']['torch']}",
        f"- model: {meta['model']['description']}",
        f"- engines (each on every system; the first is the reference): "
        f"{', '.join(engines(rows, meta)) or 'transformers float32 (before engines were named)'}",
        f"- generation: beams {settings['generation']['num_beams']}, "
        f"forced new tokens {settings['generation']['forced_new_tokens']}; batching: max_batch_size "
        f"{settings['batching']['max_batch_size']}, max_latency_ms {settings['batching']['max_latency_ms']}",
        f"- load: closed loop, {meta['duration_s']} s measured per point after {meta['warmup_s']} s of warm-up; "
        f"baseline workers: {meta['baseline_workers']}",
        f"- commit {meta['git']['commit']}{' (dirty tree)' if meta['git']['dirty'] else ''}; "
        f"command: `{meta['command']}`",
    ]
    if meta.get("incomplete"):
        lines.append(f"- **incomplete run**, stopped by {meta['incomplete']}")
    lines += [
        "",
        "| " + " | ".join(header for _, header in COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(key)) for key, _ in COLUMNS) + " |")
    lines += [
        "",
        "Offline rows: latency is the time of one batch; mean batch is the batch size. Memory: peak over "
        "the point of the sum over the server's processes (PSS every 1 s, RSS every 0.25 s); see bench/README.md.",
        "",
        "## Targets",
        "",
        "| target | value | bound | where | met |",
        "|---|---|---|---|---|",
    ]
    for check in checks:
        met = {True: "met", False: "**missed**", None: "n/a"}[check["met"]]
        lines.append(
            f"| {check['target']} | {_fmt(check['value'])} | {_fmt(check['bound'])} | {check['detail']} | {met} |"
        )
    if not checks:
        lines.append("| (no service rows) | | | | n/a |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_plots(prefix: Path, rows: Sequence[dict], meta: dict) -> list[Path]:
    # The scenario rows (mixed priority, overload) are in the tables, not on the curves.
    rows = [r for r in rows if r.get("scenario") is None]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records_values = sorted({r["records_per_request"] for r in rows if r["records_per_request"] is not None})
    names = engines(rows, meta)
    max_batch = meta["settings"]["batching"]["max_batch_size"]
    written = []
    for metric, label, filename in (
        ("sentences_per_s", "sentences / s", f"{prefix.name}-throughput.png"),
        ("latency_p99_s", "p99 latency (s)", f"{prefix.name}-p99.png"),
    ):
        panels = max(1, len(records_values))
        fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4.2), squeeze=False)
        for ax, records in zip(axes[0], records_values or [None], strict=True):
            for index, name in enumerate(names):
                own = [r for r in rows if len(names) == 1 or r.get("engine") == name]
                suffix = f", {name}" if len(names) > 1 else ""
                color = f"C{index}"
                for system, style in (("service", "-"), ("baseline", ":")):
                    points = sorted(
                        (r["concurrency"], r[metric])
                        for r in own
                        if r["system"] == system and r["records_per_request"] == records and r[metric] is not None
                    )
                    if points:
                        xs, ys = [p[0] for p in points], [p[1] for p in points]
                        ax.plot(xs, ys, style, marker="o", color=color, label=system + suffix)
                # Throughput: the offline limit. Latency: the median time of one full offline
                # batch, the unit the p99 target is expressed in.
                offline = offline_full_batch(own, max_batch)
                reference = (
                    offline["sentences_per_s" if metric == "sentences_per_s" else "latency_p50_s"] if offline else None
                )
                if offline is not None and reference is not None:
                    what = "offline limit" if metric == "sentences_per_s" else "offline: one full batch"
                    ax.axhline(reference, linestyle="--", color=color, alpha=0.6, label=f"{what}{suffix}")
            concurrencies = sorted({r["concurrency"] for r in rows if r["concurrency"] is not None})
            if concurrencies:
                ax.set_xscale("log", base=2)
                ax.set_xticks(concurrencies, [str(c) for c in concurrencies])
            ax.set_xlabel("concurrency (closed-loop clients)")
            ax.set_ylabel(label)
            ax.set_ylim(bottom=0)
            ax.set_title(f"{records} record(s) per request" if records else meta["name"])
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(f"{meta['name']}: {meta['model']['description']}", fontsize=9)
        fig.tight_layout()
        path = prefix.parent / filename
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
