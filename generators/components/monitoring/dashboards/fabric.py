"""Fabric: InfiniBand between nodes (node-exporter) and NVLink inside them (DCGM). Most
multi-node failures were cross-node communication; transmit wait is congestion."""

from __future__ import annotations

from generators.components.monitoring.dashboards import panels as g
from generators.components.monitoring.promql import Queries

TOP_ROWS = 50
RX_BYTES = "node_infiniband_port_data_received_bytes_total"
VL15_DROPPED = "node_infiniband_vl15_dropped_total"  # in the table, not an alert's counter


def _top_errors(title: str, description: str, labels: str, increases: str) -> g.Panel:
    """A full-width table of the TOP_ROWS largest error counter increases, per `labels` and
    counter (`increases` told apart by the label counter, as Queries builds them)."""
    return g.grid(
        title,
        description,
        [g.Query(f"topk({TOP_ROWS}, sum by ({labels}, counter) ({increases}))")],
        ["Errors"],
        span=24,
    )


def infiniband(q: Queries) -> list[g.Panel]:
    nh = q.m.node_exporter_host_label
    host = g.matches(nh, "host")
    port = g.legend(nh) + " {{device}}/{{port}}"

    def rate(metric: str) -> str:
        return f"rate({q.ib(metric, host)}[$__rate_interval])"

    def per_port(title: str, description: str, metric: str, unit: str) -> g.Panel:
        """One counter's rate, a line per port."""
        return g.graph(title, description, [g.Query(rate(metric), port)], unit=unit)

    counters = {**q.ib_error_counters(host), "vl15_dropped": q.ib(VL15_DROPPED, host)}
    return [
        per_port(
            "Transmit throughput per port",
            "Bytes/s sent.",
            "node_infiniband_port_data_transmitted_bytes_total",
            "Bps",
        ),
        per_port("Receive throughput per port", "Bytes/s received.", RX_BYTES, "Bps"),
        per_port(
            "Transmit wait (congestion)",
            "Ticks per second a port had data but could not send: the fabric is congested or a peer is slow.",
            "node_infiniband_port_transmit_wait_total",
            "short",
        ),
        per_port(
            "Transmit discards",
            "Packets dropped on send (port down or congestion).",
            "node_infiniband_port_discards_transmitted_total",
            "pps",
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
        g.count(
            "Ports not active",
            "Watched ports not ACTIVE now (InfiniBandPortNotActive).",
            q.ports_not_active(lambda bad: bad, host),
            limit=1,
            span=12,
        ),
        _top_errors(
            f"Error counters in range (top {TOP_ROWS})",
            "Increase over the selected range per port and counter: symbol, link recovery, link "
            "downed, receive errors, buffer overrun, link integrity, VL15 drops.",
            f"{nh}, device, port",
            q.counter_increases(counters, "$__range"),
        ),
    ]


def nvlink(q: Queries) -> list[g.Panel]:
    h = q.m.host_label
    host = g.matches(h, "host")
    errors = q.nvlink_counters(host)
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
        _top_errors(
            f"NVLink errors in range (top {TOP_ROWS})",
            "Increase over the selected range per GPU and counter.",
            f"{h}, gpu",
            q.increases_unless_blank(errors, "$__range"),
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
