"""Writes operator/prometheusrule.yaml: translator-rules.yaml's groups as a PrometheusRule, the
Prometheus Operator's form of a rule file. One source for both; tests/deploy/test_monitoring.py
fails when the two differ.

    .venv/bin/python deploy/monitoring/operator_rules.py    # after changing translator-rules.yaml
"""

from __future__ import annotations

from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
RULES = HERE / "translator-rules.yaml"
OUT = HERE / "operator" / "prometheusrule.yaml"
HEADER = """\
# Generated from ../translator-rules.yaml by deploy/monitoring/operator_rules.py: edit that file and
# run the script. The rules, alerts and runbooks are described there and in docs/runbook.md.
"""


class _Dumper(yaml.SafeDumper):
    """Multi-line expressions as literal blocks, as readable as in the source."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _string)


def prometheus_rule_text(rules: Path = RULES) -> str:
    groups = yaml.safe_load(rules.read_text(encoding="utf-8"))["groups"]
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "translator", "labels": {"app.kubernetes.io/name": "translator"}},
        "spec": {"groups": groups},
    }
    return HEADER + yaml.dump(rule, Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True)


if __name__ == "__main__":
    OUT.write_text(prometheus_rule_text(), encoding="utf-8")
