"""Fabric: InfiniBand between nodes (node-exporter) and NVLink inside them (DCGM). Most
multi-node failures were cross-node communication; transmit wait is congestion."""

from __future__ import annotations

from generators.components.monitoring.dashboards import panels as g
from generators.components.monitoring.promql import Queries

TOP_ROWS = 50
RX_BYTES = "node_infiniband_port_data_received_bytes_total"
VL15_DROPPED = "node_infiniband_vl15_dropped_total"  # in the table, not an alert's counter


def infiniband(q: Queries) -> list[g.Panel]:
    nh = q.m.node_exporter_host_label
    host = g.matches(nh, "host")
    port = g.legend(nh) + " {{device}}/{{port}}"

    def rate(metric: str) -> str:
        return f"rate({q.ib(metric, host)}[$__rate_interval])"

    counters = {**q.ib_error_counters(host), "vl15_dropped": q.ib(VL15_DROPPED, host)}
    errors = q.counter_increases(counters, "$__range")
    not_active = q.ports_not_active(lambda bad: f"count({bad}) or vector(0)", host)
    return [
        g.graph(
            "Transmit throughput per port",
            "Bytes/s sent.",
            [g.Query(rate("node_infiniband_port_data_transmitted_bytes_total"), port)],
            unit="Bps",
        ),
        g.graph(
            "Receive throughput per port", "Bytes/s received.", [g.Query(rate(RX_BYTES), port)], unit="Bps"
        ),
        g.graph(
            "Transmit wait (congestion)",
            "Ticks per second a port had data but could not send: the fabric is congested or a peer is slow.",
            [g.Query(rate("node_infiniband_port_transmit_wait_total"), port)],
            unit="short",
        ),
        g.graph(
            "Transmit discards",
            "Packets dropped on send (port down or congestion).",
            [g.Query(rate("node_infiniband_port_discards_transmitted_total"), port)],
            unit="pps",
        ),
        g.graph(
            "Packets",
            "Packets per second by direction.",
            [
                g.Query(rate("node_infiniband_port_packets_transmitted_total"), port + " tx"),
                g.Query(rate("node_infiniband_port_packets_received_total"), port + " rx"),
            ],
            unit="pps",
        ),
        g.single(
            "Ports not active",
            "Watched ports not ACTIVE now (InfiniBandPortNotActive).",
            g.Query(not_active),
            limit=1,
            span=12,
        ),
        g.grid(
            f"Error counters in range (top {TOP_ROWS})",
            "Increase over the selected range per port and counter: symbol, link recovery, link "
            "downed, receive errors, buffer overrun, link integrity, VL15 drops.",
            [g.Query(f"topk({TOP_ROWS}, sum by ({nh}, device, port, counter) ({errors}))")],
            ["Errors"],
            span=24,
        ),
    ]


def nvlink(q: Queries) -> list[g.Panel]:
    h = q.m.host_label
    host = g.matches(h, "host")
    errors = q.nvlink_counters(host)
    in_range = q.increases_unless_blank(errors, "$__range")
    return [
        g.graph(
            "NVLink throughput per host",
            "Bytes/s over NVLink (profiling metrics), all GPUs of a host.",
            [
                g.Query(
                    f"sum by ({h}) ({q.dcgm('DCGM_FI_PROF_NVLINK_TX_BYTES', host)})", g.legend(h) + " tx"
                ),
                g.Query(
                    f"sum by ({h}) ({q.dcgm('DCGM_FI_PROF_NVLINK_RX_BYTES', host)})", g.legend(h) + " rx"
                ),
            ],
            unit="Bps",
        ),
        g.graph(
            "NVLink errors",
            "Error counter increases per GPU (NVLinkErrors). A healthy-looking node "
            "with NVLink errors should be replaced.",
            [
                g.Query(
                    f"sum by ({h}, gpu, counter) ({q.increases_unless_blank(errors, '$__rate_interval')})",
                    g.legend(h) + " GPU {{gpu}} {{counter}}",
                )
            ],
        ),
        g.grid(
            f"NVLink errors in range (top {TOP_ROWS})",
            "Increase over the selected range per GPU and counter.",
            [g.Query(f"topk({TOP_ROWS}, sum by ({h}, gpu, counter) ({in_range}))")],
            ["Errors"],
            span=24,
        ),
    ]


DASHBOARD = g.Dashboard(
    "fabric",
    "Fabric",
    "InfiniBand per port (throughput, congestion, discards, errors) "
    "and NVLink per GPU (throughput, error counters).",
    rows=(("InfiniBand", infiniband), ("NVLink", nvlink)),
    variables=lambda q: [g.query_variable("host", "Host", q.ib(RX_BYTES), q.m.node_exporter_host_label)],
)
