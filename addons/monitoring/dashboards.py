"""The EFA dashboard: each node's EFA interfaces, from the port counters the node-exporter sidecar
exports (efa-counters.sh: node_efa_<counter>_total, labelled device and port)."""

from __future__ import annotations

from typing import Any

from components.dashboards import Chart, Query, Section, dashboard

PER_DEVICE = "instance, device"
LEGEND = "{{instance}} {{device}}"


def rate(counter: str) -> str:
    return f"sum by ({PER_DEVICE}) (rate(node_efa_{counter}_total[5m]))"


def efa() -> dict[str, Any]:
    return dashboard(
        "efa-network",
        "EFA network",
        "Every EFA interface's traffic and its trouble signs: drops, retransmissions, timeouts and unresponsive "
        "or impaired peers (counters exist from the EFA driver versions that report them).",
        (
            Section(
                "Traffic",
                (
                    Chart("Transmitted", (Query(rate("tx_bytes"), LEGEND),), unit="Bps"),
                    Chart("Received", (Query(rate("rx_bytes"), LEGEND),), unit="Bps"),
                    Chart("RDMA read", (Query(rate("rdma_read_bytes"), LEGEND),), unit="Bps"),
                    Chart("RDMA write", (Query(rate("rdma_write_bytes"), LEGEND),), unit="Bps"),
                ),
            ),
            Section(
                "Trouble",
                (
                    Chart("Dropped packets", (Query(rate("rx_drops"), LEGEND),), unit="pps"),
                    Chart(
                        "Retransmitted packets",
                        (Query(rate("retrans_pkts"), LEGEND),),
                        unit="pps",
                        description="SRD retransmits lost packets: a rise points at congestion or a bad link.",
                    ),
                    Chart("Retransmit timeouts", (Query(rate("retrans_timeout_events"), LEGEND),), unit="ops"),
                    Chart(
                        "Unresponsive or impaired peers",
                        (
                            Query(rate("unresponsive_remote_events"), f"{LEGEND} unresponsive"),
                            Query(rate("impaired_remote_conn_events"), f"{LEGEND} impaired"),
                        ),
                        unit="ops",
                    ),
                ),
            ),
        ),
    )


DASHBOARDS = (efa(),)
