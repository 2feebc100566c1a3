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
from dataclasses import dataclass
from typing import Any

from grafana_foundation_sdk.builders import prometheus, timeseries
from grafana_foundation_sdk.builders.dashboard import Dashboard, DatasourceVariable, Row
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

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
