"""deploy/monitoring, checked offline: the rules by promtool (syntax, and their unit tests: each
alert fires when it should and not when it should not), the Prometheus Operator objects by the
operator's API validators, the dashboard's queries as PromQL, and every alert's runbook in
docs/runbook.md. tests/e2e/test_operator_metrics.py checks the metric names on a running server."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from deploy.monitoring.operator_rules import OUT as OPERATOR_RULES
from deploy.monitoring.operator_rules import prometheus_rule_text
from tests.deploy.helpers import ROOT, render_dir
from tests.deploy.monitoring import (
    EXTERNAL,
    MONITORING,
    RULE_TESTS,
    RULES,
    alerts,
    dashboard,
    dashboard_queries,
    dashboard_query_as_promql,
    names_in_dashboard,
    names_in_rules,
    promtool,
    recorded,
    rule_groups,
)

pytestmark = pytest.mark.processes

RUNBOOK = ROOT / "docs" / "runbook.md"
OPERATOR = MONITORING / "operator"
MODELS_INSTALLER = ROOT / "deploy" / "tools" / "install-operator-models.sh"


def run_promtool(*args: str, cwd: Path = MONITORING) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_promtool_checks_the_rules():
    done = run_promtool("check", "rules", RULES.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in rule_groups())} rules found" in done.stdout


def test_promtool_checks_the_plain_prometheus_config():
    done = run_promtool("check", "config", "prometheus.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_passes_its_promtool_unit_tests():
    done = run_promtool("test", "rules", RULE_TESTS.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_alert_is_tested_firing_and_quiet():
    checks: dict[str, set[bool]] = {}
    for case in yaml.safe_load(RULE_TESTS.read_text(encoding="utf-8"))["tests"]:
        for check in case.get("alert_rule_test", []):
            checks.setdefault(check["alertname"], set()).add(bool(check.get("exp_alerts")))
    for alert in alerts():
        assert checks.get(alert["alert"]) == {True, False}, f"{alert['alert']}: tested {checks.get(alert['alert'])}"


def test_the_unit_tests_fail_on_a_broken_rule(tmp_path):
    # Guards the test above against promtool runs that pass whatever the rules say.
    broken = RULES.read_text(encoding="utf-8").replace("ratio_rate5m > 0.05", "ratio_rate5m > 0.5")
    assert broken != RULES.read_text(encoding="utf-8")
    (tmp_path / RULES.name).write_text(broken, encoding="utf-8")
    shutil.copy(RULE_TESTS, tmp_path / RULE_TESTS.name)
    done = run_promtool("test", "rules", RULE_TESTS.name, cwd=tmp_path)
    assert done.returncode != 0 and "TranslatorRefusingRequests" in done.stdout + done.stderr


def test_every_alert_has_a_severity_a_summary_and_a_runbook_section():
    anchors = {_anchor(line) for line in RUNBOOK.read_text(encoding="utf-8").splitlines() if line.startswith("## ")}
    for alert in alerts():
        name = alert["alert"]
        assert alert["labels"]["severity"] in ("warning", "critical"), name
        assert alert["annotations"]["summary"] and alert["annotations"]["description"], name
        url = alert["annotations"]["runbook_url"]
        assert url == f"docs/runbook.md#{name.lower()}", f"{name}: runbook_url {url}"
        assert name.lower() in anchors, f"docs/runbook.md has no section '## {name}'"


def _anchor(heading: str) -> str:
    # As GitHub and most renderers make a heading's anchor.
    return re.sub(r"[^\w\- ]", "", heading[3:].strip().lower()).replace(" ", "-")


def test_the_prometheusrule_holds_exactly_the_rule_files_groups():
    assert OPERATOR_RULES.read_text(encoding="utf-8") == prometheus_rule_text(), (
        "deploy/monitoring/operator/prometheusrule.yaml differs from translator-rules.yaml: "
        "run .venv/bin/python deploy/monitoring/operator_rules.py"
    )
    [rule] = [o for o in render_dir(OPERATOR) if o["kind"] == "PrometheusRule"]
    assert rule["spec"]["groups"] == rule_groups()


@pytest.fixture(scope="module")
def operator_objects() -> list[dict]:
    objs = render_dir(OPERATOR)
    assert sorted(o["kind"] for o in objs) == ["PrometheusRule", "ServiceMonitor"]
    return objs


@pytest.fixture(scope="module")
def models() -> Path:
    """The operator's API validators (npm), installed once under build/tools."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js and npm are not installed: the operator's API validators are an npm package")
    done = subprocess.run(["bash", str(MODELS_INSTALLER)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{MODELS_INSTALLER.name} failed:\n{done.stderr[-3000:]}"
    return Path(done.stdout.strip().splitlines()[-1])


def validate_operator_objects(models: Path, objs: list[dict]) -> list[dict]:
    done = subprocess.run(
        ["node", str(Path(__file__).with_name("operator_objects.mjs")), str(models)],
        input=json.dumps(objs),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_operator_objects_match_the_operators_api(models, operator_objects):
    results = validate_operator_objects(models, operator_objects)
    assert [r["error"] for r in results] == [None, None], results


def test_the_operator_validators_reject_broken_objects(models, operator_objects):
    # Guards the test above against validators that accept anything.
    monitor = copy.deepcopy(next(o for o in operator_objects if o["kind"] == "ServiceMonitor"))
    monitor["spec"]["endpoints"][0]["interval"] = "15 seconds"
    rule = copy.deepcopy(next(o for o in operator_objects if o["kind"] == "PrometheusRule"))
    del rule["spec"]["groups"][0]["name"]
    results = validate_operator_objects(models, [monitor, rule])
    assert "interval" in results[0]["error"] and "name" in results[1]["error"], results


def test_promtool_checks_the_prometheusrules_groups_strictly(tmp_path, operator_objects):
    # The operator's validators let unknown fields pass (the API server would drop them); promtool
    # refuses them in a rule group: the PrometheusRule's groups, written out as a rule file.
    [rule] = [o for o in operator_objects if o["kind"] == "PrometheusRule"]
    path = tmp_path / "operator-groups.yaml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}), encoding="utf-8")
    assert run_promtool("check", "rules", str(path)).returncode == 0
    rule["spec"]["groups"][0]["rules"][0]["fore"] = "5m"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}), encoding="utf-8")
    assert run_promtool("check", "rules", str(path)).returncode != 0


def test_the_servicemonitor_scrapes_the_service_as_the_rules_expect(operator_objects):
    monitor = next(o for o in operator_objects if o["kind"] == "ServiceMonitor")
    service = next(o for o in render_dir(ROOT / "deploy" / "overlays" / "cpu") if o["kind"] == "Service")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    # BentoML's `endpoint` label kept as is (the operator's own `endpoint` target label would rename it).
    assert endpoint["honorLabels"] is True
    # The operator names the job after the Service: what the rules select.
    assert service["metadata"]["name"] == "translator"
    assert all('job="translator"' in r["expr"] for r in alerts() if "translation_" in r["expr"])


def test_the_dashboards_queries_are_promql(tmp_path):
    # promtool parses each query (its variables given values) as a recording rule's expression.
    queries = dashboard_queries()
    assert len(queries) >= 20
    groups = [{"name": "dashboard", "rules": [{"record": f"dashboard:q{i}", "expr": dashboard_query_as_promql(q)}
                                               for i, q in enumerate(queries)]}]  # fmt: skip
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}), encoding="utf-8")
    done = run_promtool("check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_dashboard_is_provisioning_ready_and_covers_what_operators_ask():
    board = dashboard()
    assert board["uid"] and "id" not in board
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["pod"]["multi"] and variables["pod"]["includeAll"]
    titles = " | ".join(p["title"] for p in board["panels"]).lower()
    wanted_panels = ("sentences per second", "requests per second", "latency p95", "batch size", "batch time")
    wanted_panels += ("engine queue", "predicted wait", "refusals by reason", "cache hit ratio", "document jobs")
    for wanted in wanted_panels:
        assert wanted in titles, f"no panel for {wanted}"
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]
    provider = yaml.safe_load((MONITORING / "grafana" / "provisioning" / "dashboards" / "translator.yaml").read_text())
    assert provider["providers"][0]["type"] == "file"


def test_recorded_series_used_anywhere_are_recorded_here():
    used = {name for name in names_in_rules() | names_in_dashboard() if ":" in name}
    assert used <= recorded(), used - recorded()


def test_external_series_are_only_the_named_exporters():
    foreign = {name for name in names_in_rules() | names_in_dashboard() if ":" not in name}
    foreign = {n for n in foreign if not n.startswith(("translation_", "bentoml_service_"))}
    assert foreign <= set(EXTERNAL), foreign - set(EXTERNAL)
