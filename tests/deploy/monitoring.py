"""Reading deploy/monitoring: the rules, the dashboard, and the metric names their queries use;
promtool where it is installed (Debian's `prometheus` package)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

MONITORING = Path(__file__).resolve().parents[2] / "deploy" / "monitoring"
RULES = MONITORING / "translator-rules.yaml"
RULE_TESTS = MONITORING / "translator-rules.test.yaml"
DASHBOARD = MONITORING / "grafana" / "translator-dashboard.json"

# Series the rules read from other exporters than the service, each with where it comes from.
EXTERNAL = {
    "up": "Prometheus itself, per scrape target",
    "kube_deployment_status_replicas_available": "kube-state-metrics",
    "kube_pod_container_status_restarts_total": "kube-state-metrics",
    "DCGM_FI_DEV_FB_USED": "NVIDIA dcgm-exporter (GPU pods)",
    "DCGM_FI_DEV_FB_FREE": "NVIDIA dcgm-exporter (GPU pods)",
}
# What a dashboard query's variables stand for, to check it as PromQL.
DASHBOARD_VARIABLES = {"$namespace": "prod", "$pod": ".+", "$__rate_interval": "1m"}

_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset",
    "inf", "nan",
}  # fmt: skip


def rule_groups() -> list[dict[str, Any]]:
    return yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]


def rules() -> list[dict[str, Any]]:
    return [rule for group in rule_groups() for rule in group["rules"]]


def alerts() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


def recorded() -> set[str]:
    return {rule["record"] for rule in rules() if "record" in rule}


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def dashboard_queries() -> list[str]:
    return [target["expr"] for panel in dashboard()["panels"] for target in panel.get("targets", [])]


def dashboard_query_as_promql(expr: str) -> str:
    for variable, value in DASHBOARD_VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (recorded rules' names included): identifiers
    that are neither functions, keywords, label names nor values."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings: label values, regexes
    expr = re.sub(r"\{[^{}]*\}", "{}", expr)  # label matchers
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", " ", expr)
    expr = re.sub(r"\[[^\[\]]*\]", "[]", expr)  # ranges and subqueries
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?", expr):
        name, call = match.group(1), match.group(2)
        if call or name.lower() in _KEYWORDS:
            continue
        names.add(name)
    return names


def names_in_rules() -> set[str]:
    return {name for rule in rules() for name in metric_names(rule["expr"])}


def names_in_dashboard() -> set[str]:
    names = {name for expr in dashboard_queries() for name in metric_names(dashboard_query_as_promql(expr))}
    for variable in dashboard()["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            inner = re.fullmatch(r"label_values\((.*),\s*\w+\)", query["query"])
            assert inner, (
                f"dashboard variable {variable['name']}: {query['query']!r} is not label_values(selector, label)"
            )
            names |= metric_names(inner.group(1))
    return names


def promtool() -> str:
    """promtool's path, or the test skipped saying how to get it (CI installs it: .ci/run)."""
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus); .ci/run installs it")
    return path
