"""An evaluation's outputs: ``report.json``, ``report.md`` and ``heatmap.png``.

The report is built from the per-direction results alone (scores and the translation time summed
over every run that contributed chunks), so re-running a finished evaluation, or finishing an
interrupted one, writes the same report.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from m2m_tools.jobs.checkpoint import atomic_write_text

REPORT_VERSION = 1
REPORT_JSON = "report.json"
REPORT_MD = "report.md"
HEATMAP_PNG = "heatmap.png"
METRICS = ("bleu", "chrf")


class ReportError(ValueError):
    """A report file is missing or is not an evaluation report."""


def build_report(
    directions: Sequence[dict[str, Any]],
    *,
    system: dict[str, Any],
    data: dict[str, Any],
    settings: dict[str, Any],
) -> dict[str, Any]:
    n = sum(d["n"] for d in directions)
    seconds = sum(d["seconds"] for d in directions)
    average = {metric: _mean([d[metric] for d in directions]) for metric in METRICS}
    return {
        "version": REPORT_VERSION,
        "system": system,
        "data": data,
        "settings": settings,
        "directions": {d["direction"]: d for d in directions},
        # Macro average, as FLORES reports it: every direction counts the same whatever its size.
        "average": {**average, "directions": len(directions)},
        "segments": n,
        "seconds": round(seconds, 3),
        "sentences_per_second": _rate(n, seconds),
    }


def direction_entry(name: str, source: str, target: str, n: int, scores: dict[str, Any], seconds: float) -> dict:
    return {
        "direction": name,
        "source": source,
        "target": target,
        "n": n,
        **scores,
        "seconds": round(seconds, 3),
        "sentences_per_second": _rate(n, seconds),
    }


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _rate(n: int, seconds: float) -> float | None:
    return round(n / seconds, 3) if seconds > 0 else None


def load_report(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if path.is_dir():
        path = path / REPORT_JSON
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportError(f"cannot read report {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise ReportError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(report, dict) or not isinstance(report.get("directions"), dict):
        raise ReportError(f"{path} is not an evaluation report (no 'directions' object)")
    return report


# --------------------------------------------------------------------------- markdown


def render_markdown(report: dict[str, Any]) -> str:
    system = report.get("system", {})
    data = report.get("data", {})
    lines = [
        "# Evaluation report",
        "",
        f"- system: `{system.get('label', '?')}` ({system.get('kind', '?')})",
        f"- data: `{data.get('path', '?')}` ({data.get('format', '?')}), {report['segments']} segments",
        f"- translation time: {report['seconds']:.1f} s, {_fmt(report['sentences_per_second'], 1)} sentences/s",
        "",
        "| direction | n | BLEU | chrF | sentences/s |",
        "|---|--:|--:|--:|--:|",
    ]
    for name, entry in report["directions"].items():
        lines.append(
            f"| {name} | {entry['n']} | {_fmt(entry['bleu'])} | {_fmt(entry['chrf'])} | "
            f"{_fmt(entry['sentences_per_second'], 1)} |"
        )
    average = report["average"]
    lines.append(
        f"| **average** ({average['directions']}) | {report['segments']} | {_fmt(average['bleu'])} | "
        f"{_fmt(average['chrf'])} | {_fmt(report['sentences_per_second'], 1)} |"
    )
    signatures = sorted({e[f"{m}_signature"] for e in report["directions"].values() for m in METRICS})
    lines += ["", "sacreBLEU signatures:", "", *(f"- `{s}`" for s in signatures), ""]
    return "\n".join(lines)


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


# --------------------------------------------------------------------------- heatmap


def write_heatmap(report: dict[str, Any], path: Path, metric: str = "bleu") -> None:
    """A source x target grid of one metric; pairs not evaluated stay blank."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    entries = list(report["directions"].values())
    sources = sorted({e["source"] for e in entries})
    targets = sorted({e["target"] for e in entries})
    grid = np.full((len(sources), len(targets)), np.nan)
    for e in entries:
        grid[sources.index(e["source"]), targets.index(e["target"])] = e[metric]

    # Figure and canvas directly, not pyplot: no global state, no GUI backend, safe in threads.
    figure = Figure(figsize=(1.2 + 0.8 * len(targets), 1.0 + 0.7 * len(sources)), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.set_facecolor("#e6e6e6")  # grey: direction not evaluated
    image = axes.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=0, vmax=100)
    axes.set_xticks(range(len(targets)), targets)
    axes.set_yticks(range(len(sources)), sources)
    axes.set_xlabel("target")
    axes.set_ylabel("source")
    axes.set_title(f"{metric.upper() if metric == 'bleu' else 'chrF'} by direction")
    for row, col in zip(*np.nonzero(~np.isnan(grid)), strict=True):
        value = grid[row, col]
        axes.text(col, row, f"{value:.1f}", ha="center", va="center", color="black" if value > 60 else "white")
    figure.colorbar(image, ax=axes)
    figure.tight_layout()
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".png", dir=path.parent)
    os.close(fd)
    try:
        figure.savefig(temp, format="png")
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def write_outputs(report: dict[str, Any], output: Path) -> dict[str, Path]:
    output.mkdir(parents=True, exist_ok=True)
    paths = {"json": output / REPORT_JSON, "md": output / REPORT_MD, "heatmap": output / HEATMAP_PNG}
    atomic_write_text(paths["json"], json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    atomic_write_text(paths["md"], render_markdown(report))
    write_heatmap(report, paths["heatmap"])
    return paths
