"""Grafana dashboards as code, built with Grafana's own typed builders (grafana-foundation-sdk).

Why that library: it is Grafana's, generated from the dashboard schema of the Grafana version it
names (11.6 here), so a panel or field that does not exist is a type error, not a dashboard that
silently renders nothing; it is pure Python with no dependencies. Each add-on declares the
dashboards for what it runs (components/helm/addon.py, Monitors.dashboards); the monitoring add-on
provisions them as ConfigMaps that Grafana's dashboard sidecar loads.

Every query reads metrics from the platform's metric contract (tests/fixtures/metrics/contract.json),
checked by tests/test_dashboards.py, and promtool parses each one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from grafana_foundation_sdk.builders import prometheus, timeseries
from grafana_foundation_sdk.builders.dashboard import Dashboard, DatasourceVariable, Row
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

from components.expressions import template_text

# Grafana's dashboard sidecar (kube-prometheus-stack's grafana.sidecar.dashboards) loads the
# ConfigMaps that carry this label in the namespace it searches; the monitoring add-on sets the
# label and limits the search to Grafana's own namespace.
DASHBOARD_LABEL = ("grafana_dashboard", "1")
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
# dcgm-exporter renamed its host label Hostname to hostname after 4.5.3 (the metric contract):
# queries group by both and legends print both, so either exporter version fills them.
HOST = "Hostname, hostname"
HOST_LEGEND = "{{Hostname}}{{hostname}}"


@dataclass(frozen=True)
class Query:
    expr: str
    """PromQL."""
    legend: str
    """The series' legend, with {{label}} placeholders."""


@dataclass(frozen=True)
class Chart:
    title: str
    queries: tuple[Query, ...]
    unit: str = "short"
    """A Grafana unit id (percent, percentunit, watt, celsius, short, ...)."""
    description: str = ""


@dataclass(frozen=True)
class Section:
    title: str
    charts: tuple[Chart, ...]


def dashboard(uid: str, title: str, description: str, sections: tuple[Section, ...]) -> dict[str, Any]:
    """The dashboard's JSON model: one row per section, two charts side by side."""
    builder = (
        Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(["gpu-platform"])
        .refresh("1m")
        .time("now-6h", "now")
        .with_variable(DatasourceVariable("datasource").label("Data source").type("prometheus"))
    )
    panel_id = 1
    for section in sections:
        builder = builder.with_row(Row(section.title).id(panel_id))
        panel_id += 1
        for chart in section.charts:
            panel = (
                timeseries.Panel()
                .id(panel_id)
                .title(chart.title)
                .description(chart.description)
                .unit(chart.unit)
                .datasource(DATASOURCE)
                .height(8)
                .span(12)
            )
            for index, query in enumerate(chart.queries):
                target = (
                    prometheus.Dataquery().expr(query.expr).legend_format(query.legend).ref_id(chr(ord("A") + index))
                )
                panel = panel.with_target(target)
            builder = builder.with_panel(panel)
            panel_id += 1
    model: dict[str, Any] = json.loads(JSONEncoder(sort_keys=True).encode(builder.build()))
    return model


def queries(model: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard's panels."""
    return [target["expr"] for panel in model["panels"] for target in panel.get("targets", [])]


_KEYWORDS = {"by", "on", "and", "or", "unless", "without", "ignoring", "group_left", "group_right", "bool"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers that are not functions, keywords,
    label names (in matchers or in by/on/without/ignoring lists), strings or numbers."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|`[^`]*`', " ", expr)  # strings (label_replace's arguments)
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # range and subquery selectors ([15m], [1h:5m])
    text = re.sub(r"\b(offset|@)\s+\S+", " ", text)  # modifiers
    text = re.sub(r"\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)  # label lists
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        following = text[match.end() :].lstrip()
        if not following.startswith("(") and match.group() not in _KEYWORDS:
            names.add(match.group())
    return names


def docs_page(model: dict[str, Any], *, add_on: str) -> str:
    """A dashboard's documentation page, written from its model: what it answers, and for each
    panel what it shows, its queries and the metrics they read (docs/dashboards/<uid>.md)."""
    lines = [
        f"# {model['title']}",
        "",
        "<!-- Written by `make dashboard-docs` from the dashboard's code; edit the code, not this page. -->",
        "",
        model["description"],
        "",
        f"- Provisioned with the `{add_on}` add-on, as the ConfigMap `dashboard-{model['uid']}` in the monitoring "
        f"namespace (uid `{model['uid']}`).",
        "",
    ]
    for panel in model["panels"]:
        if panel["type"] == "row":
            lines += [f"## {panel['title']}", ""]
            continue
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "")
        lines += [f"### {panel['title']}", ""]
        if panel.get("description"):
            lines += [panel["description"], ""]
        lines += [f"Unit: `{unit}`.", ""]
        for target in panel.get("targets", []):
            metrics = ", ".join(f"`{name}`" for name in sorted(metric_names(target["expr"])))
            lines += [f"- `{target['expr']}` (legend `{target['legendFormat']}`): reads {metrics}."]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def dashboard_config_maps(namespace: str, dashboards: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """One ConfigMap per dashboard, in Grafana's namespace, labelled for its sidecar. Binding-free:
    verify's tests list them as the cluster would without loading a provider binding."""
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"dashboard-{model['uid']}",
                "namespace": namespace,
                "labels": {DASHBOARD_LABEL[0]: DASHBOARD_LABEL[1]},
            },
            # Grafana's ${datasource} is text, not a Terraform interpolation.
            "data": {f"{model['uid']}.json": template_text(json.dumps(model, sort_keys=True))},
        }
        for model in dashboards
    ]
