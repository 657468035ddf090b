"""The rollout gate: compare two evaluation reports direction by direction.

A direction fails when its score dropped by more than ``max_drop`` points, or when the new report
lacks it (an evaluation that silently skipped a direction must not pass). Directions only in the
new report are listed but never fail. Scores computed with different sacreBLEU signatures are
flagged, since they are not comparable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from m2m_tools.evaluation.report import METRICS, ReportError

OK = "ok"
REGRESSION = "REGRESSION"
MISSING = "MISSING"
ADDED = "new"


@dataclass(frozen=True)
class Row:
    direction: str
    old: float | None
    new: float | None
    status: str
    note: str = ""

    @property
    def delta(self) -> float | None:
        return None if self.old is None or self.new is None else round(self.new - self.old, 4)

    @property
    def failed(self) -> bool:
        return self.status in (REGRESSION, MISSING)


def compare_reports(
    old: dict[str, Any], new: dict[str, Any], *, metric: str = "bleu", max_drop: float = 1.0
) -> list[Row]:
    if metric not in METRICS:
        raise ReportError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    if max_drop < 0:
        raise ReportError(f"--max-drop must not be negative, got {max_drop}")
    rows: list[Row] = []
    for name, before in old["directions"].items():
        after = new["directions"].get(name)
        if after is None:
            rows.append(Row(name, before[metric], None, MISSING, "not in the new report"))
            continue
        drop = before[metric] - after[metric]
        # A small epsilon: a drop of exactly max_drop passes, whatever float rounding did to it.
        status = REGRESSION if drop > max_drop + 1e-9 else OK
        rows.append(Row(name, before[metric], after[metric], status, _signature_note(before, after, metric)))
    for name, after in new["directions"].items():
        if name not in old["directions"]:
            rows.append(Row(name, None, after[metric], ADDED, "not in the old report"))
    return rows


def _signature_note(before: dict[str, Any], after: dict[str, Any], metric: str) -> str:
    key = f"{metric}_signature"
    if before.get(key) != after.get(key):
        return f"signatures differ: {before.get(key)} vs {after.get(key)}"
    return ""


def render_comparison(rows: list[Row], *, metric: str, max_drop: float) -> str:
    label = "BLEU" if metric == "bleu" else "chrF"
    lines = [
        f"| direction | old {label} | new {label} | delta | status | note |",
        "|---|--:|--:|--:|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.direction} | {_fmt(row.old)} | {_fmt(row.new)} | {_fmt(row.delta, signed=True)} | "
            f"{row.status} | {row.note} |"
        )
    failed = [row.direction for row in rows if row.failed]
    verdict = (
        f"FAIL: {len(failed)} direction(s) dropped more than {max_drop:g} {label} or are missing: {', '.join(failed)}"
        if failed
        else f"PASS: no direction dropped more than {max_drop:g} {label}"
    )
    return "\n".join([*lines, "", verdict, ""])


def _fmt(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"
