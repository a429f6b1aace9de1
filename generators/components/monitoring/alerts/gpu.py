"""GPU alerts from dcgm-exporter: heat, throttling, XIDs, memory errors, NVLink, missing GPUs.

The talk's rule for all of them: do not fix a bad GPU in place; drain the node and have
the provider replace it. Series are aggregated to host/GPU/UUID so an alert does not
restart when the pod on the GPU changes.
"""

from __future__ import annotations

from generators.components.monitoring.alerts.rule import Alert, Rule, context, evaluate
from generators.components.monitoring.promql import Queries, num
from generators.model.promql import below_blank, share_of_time, unless_blank

THROTTLE_RATE_WINDOW = "5m"  # long enough to smooth DCGM's 30s sampling of the ns counter


def _by_gpu(q: Queries, extra: str = "") -> str:
    return ", ".join(x for x in (q.m.host_label, "gpu", "UUID", extra) if x)


def _throttled(q: Queries) -> str:
    violation = q.dcgm("DCGM_FI_DEV_THERMAL_VIOLATION")
    ratio = unless_blank(violation, share_of_time(violation, THROTTLE_RATE_WINDOW))
    return f"max by ({_by_gpu(q)}) {ratio} > {num(q.m.alerts.thermal_throttle_percent / 100)}"


def _memory_errors(q: Queries) -> str:
    dbe = q.increase_unless_blank(q.dcgm("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"))
    remapped = q.increase_unless_blank(q.dcgm("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"))
    failed = f"({below_blank(q.dcgm('DCGM_FI_DEV_ROW_REMAP_FAILURE') + ' > 0')})"
    return f"max by ({_by_gpu(q)}) ({dbe} > 0 or {remapped} > 0 or {failed})"


def _profiling_missing(q: Queries) -> str:
    h = q.m.host_label
    return (
        f"count by ({h}) ({q.dcgm('DCGM_FI_DEV_GPU_TEMP')}) unless on ({h}) "
        f"count by ({h}) ({q.dcgm('DCGM_FI_PROF_SM_ACTIVE')})"
    )


RULES = (
    Alert(
        "GPUTemperatureHigh",
        lambda q: q.gpu_too_hot(lambda plausible: f"max by ({_by_gpu(q)}) {plausible}"),
        for_="{a.gpu_temp_for}",
        severity="critical",
        summary="GPU {labels.gpu} on {host} is above {m.gpu_temp_limit_celsius} °C.",
        description=(
            "GPU {labels.gpu} ({labels.UUID}) on node {host} has been at {value} °C for more than "
            "{a.gpu_temp_for}, above the {m.gpu_temp_limit_celsius} °C limit. A hot GPU throttles "
            "and destabilises the whole job: drain the node and have the GPU replaced."
        ),
    ),
    Alert(
        "GPUThermalThrottling",
        _throttled,
        for_="{a.thermal_throttle_for}",
        severity="warning",
        summary="GPU {labels.gpu} on {host} is thermally throttled.",
        description=(
            "GPU {labels.gpu} ({labels.UUID}) on node {host} spends {value_percent} of its time "
            "thermally throttled (limit {throttle_percent}%). Its job runs at the speed of this "
            "GPU: check cooling, then drain and replace."
        ),
    ),
    Alert(
        "GPUXidRequiresReplacement",
        lambda q: q.xid_requires_replacement(lambda seen: f"max by ({_by_gpu(q, 'xid')}) ({seen})"),
        severity="critical",
        summary="GPU {labels.gpu} on {host} reported XID {labels.xid}.",
        description=(
            "GPU {labels.gpu} ({labels.UUID}) on node {host} reported XID {labels.xid}, one of the "
            "codes that mean the GPU must be replaced ({xid_codes}). Drain the node."
        ),
    ),
    Alert(
        "GPUUncorrectableMemoryErrors",
        _memory_errors,
        severity="critical",
        summary="GPU {labels.gpu} on {host} has uncorrectable memory errors.",
        description=(
            "GPU {labels.gpu} ({labels.UUID}) on node {host} had double-bit ECC errors or "
            "uncorrectable row remaps within {a.error_window}, or row remapping failed. Results "
            "computed on it cannot be trusted: drain and replace."
        ),
    ),
    Alert(
        "NVLinkErrors",
        lambda q: q.nvlink_errors(lambda per_gpu: per_gpu),  # already per GPU and counter
        severity="warning",
        summary="NVLink {labels.counter} errors on GPU {labels.gpu} of {host}.",
        description=(
            "GPU {labels.gpu} ({labels.UUID}) on node {host} counted {value} NVLink "
            "{labels.counter} errors within {a.error_window}. A node can look healthy and still "
            "corrupt collectives: drain it and have the machine replaced."
        ),
    ),
    Alert(
        "GPUMissing",
        lambda q: q.nodes_missing_gpus(),
        for_="{a.gpu_missing_for}",
        severity="warning",
        summary="Node {labels.node} shows {value} of {labels.expected} GPUs.",
        description=(
            "Node {labels.node} of pool {labels.pool} shows {value} GPUs, but nodes of that pool "
            "have {labels.expected}. A GPU fell off the bus or the driver lost it: drain the node "
            "and have it repaired."
        ),
    ),
    Alert(
        "DCGMProfilingMetricsMissing",
        _profiling_missing,
        for_="{a.profiling_missing_for}",
        severity="warning",
        summary="No profiling metrics from {host}.",
        description=(
            "dcgm-exporter on node {host} reports GPUs but no DCGM_FI_PROF_SM_ACTIVE: tensor and "
            "SM activity (the real utilization) are blind there. Check that the counters "
            "ConfigMap {m.dcgm_config_map} is mounted and the exporter has SYS_ADMIN."
        ),
    ),
)


def rules(q: Queries) -> list[Rule]:
    facts = context(
        q,
        throttle_percent=num(q.m.alerts.thermal_throttle_percent),
        xid_codes=", ".join(str(c) for c in q.m.xid_replace_codes),
    )
    return evaluate(RULES, q, q.m, facts)
