"""GPU alerts from dcgm-exporter: heat, throttling, XIDs, memory errors, NVLink, missing GPUs.

The talk's rule for all of them: do not fix a bad GPU in place; drain the node and have
the provider replace it. Series are aggregated to host/GPU/UUID so an alert does not
restart when the pod on the GPU changes.
"""

from __future__ import annotations

from generators.components.monitoring.alerts.rule import VALUE, VALUE_PERCENT, Rule, alert, label
from generators.components.monitoring.promql import Queries, num
from generators.model.promql import below_blank, share_of_time, unless_blank

THROTTLE_RATE_WINDOW = "5m"  # long enough to smooth DCGM's 30s sampling of the ns counter


def _by_gpu(q: Queries, extra: str = "") -> str:
    return ", ".join(x for x in (q.m.host_label, "gpu", "UUID", extra) if x)


def temperature(q: Queries) -> Rule:
    m, h = q.m, q.m.host_label
    limit = m.gpu_temp_limit_celsius
    return alert(
        m,
        "GPUTemperatureHigh",
        q.gpu_too_hot(lambda plausible: f"max by ({_by_gpu(q)}) {plausible}"),
        for_=m.alerts.gpu_temp_for,
        severity="critical",
        summary=f"GPU {label('gpu')} on {label(h)} is above {limit} °C.",
        description=(
            f"GPU {label('gpu')} ({label('UUID')}) on node {label(h)} has been at "
            f"{VALUE} °C for more than {m.alerts.gpu_temp_for}, above the {limit} °C limit. "
            "A hot GPU throttles and destabilises the whole job: drain the node and have "
            "the GPU replaced."
        ),
    )


def throttling(q: Queries) -> Rule:
    m, h = q.m, q.m.host_label
    violation = q.dcgm("DCGM_FI_DEV_THERMAL_VIOLATION")
    ratio = unless_blank(violation, share_of_time(violation, THROTTLE_RATE_WINDOW))
    threshold = num(m.alerts.thermal_throttle_percent / 100)
    return alert(
        m,
        "GPUThermalThrottling",
        f"max by ({_by_gpu(q)}) {ratio} > {threshold}",
        for_=m.alerts.thermal_throttle_for,
        severity="warning",
        summary=f"GPU {label('gpu')} on {label(h)} is thermally throttled.",
        description=(
            f"GPU {label('gpu')} ({label('UUID')}) on node {label(h)} spends {VALUE_PERCENT} "
            f"of its time thermally throttled (limit {num(m.alerts.thermal_throttle_percent)}%). "
            "Its job runs at the speed of this GPU: check cooling, then drain and replace."
        ),
    )


def xid(q: Queries) -> Rule:
    m, h = q.m, q.m.host_label
    return alert(
        m,
        "GPUXidRequiresReplacement",
        q.xid_requires_replacement(lambda seen: f"max by ({_by_gpu(q, 'xid')}) ({seen})"),
        severity="critical",
        summary=f"GPU {label('gpu')} on {label(h)} reported XID {label('xid')}.",
        description=(
            f"GPU {label('gpu')} ({label('UUID')}) on node {label(h)} reported XID "
            f"{label('xid')}, one of the codes that mean the GPU must be replaced "
            f"({', '.join(str(c) for c in m.xid_replace_codes)}). Drain the node."
        ),
    )


def memory(q: Queries) -> Rule:
    m, h = q.m, q.m.host_label
    dbe = q.increase_unless_blank(q.dcgm("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"))
    remapped = q.increase_unless_blank(q.dcgm("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"))
    failed = f"({below_blank(q.dcgm('DCGM_FI_DEV_ROW_REMAP_FAILURE') + ' > 0')})"
    expr = f"max by ({_by_gpu(q)}) ({dbe} > 0 or {remapped} > 0 or {failed})"
    return alert(
        m,
        "GPUUncorrectableMemoryErrors",
        expr,
        severity="critical",
        summary=f"GPU {label('gpu')} on {label(h)} has uncorrectable memory errors.",
        description=(
            f"GPU {label('gpu')} ({label('UUID')}) on node {label(h)} had double-bit ECC "
            f"errors or uncorrectable row remaps within {m.alerts.error_window}, or row "
            "remapping failed. Results computed on it cannot be trusted: drain and replace."
        ),
    )


def nvlink(q: Queries) -> Rule:
    m, h = q.m, q.m.host_label
    return alert(
        m,
        "NVLinkErrors",
        q.nvlink_errors(lambda per_gpu: per_gpu),  # already per GPU and counter
        severity="warning",
        summary=f"NVLink {label('counter')} errors on GPU {label('gpu')} of {label(h)}.",
        description=(
            f"GPU {label('gpu')} ({label('UUID')}) on node {label(h)} counted {VALUE} NVLink "
            f"{label('counter')} errors within {m.alerts.error_window}. A node can look "
            "healthy and still corrupt collectives: drain it and have the machine replaced."
        ),
    )


def missing(q: Queries) -> Rule:
    m = q.m
    return alert(
        m,
        "GPUMissing",
        q.nodes_missing_gpus(),
        for_=m.alerts.gpu_missing_for,
        severity="warning",
        summary=f"Node {label('node')} shows {VALUE} of {label('expected')} GPUs.",
        description=(
            f"Node {label('node')} of pool {label('pool')} shows {VALUE} GPUs, but nodes of "
            f"that pool have {label('expected')}. A GPU fell off the bus or the driver lost "
            "it: drain the node and have it repaired."
        ),
    )


def profiling(q: Queries) -> Rule:
    m, h = q.m, q.m.host_label
    expr = (
        f"count by ({h}) ({q.dcgm('DCGM_FI_DEV_GPU_TEMP')}) unless on ({h}) "
        f"count by ({h}) ({q.dcgm('DCGM_FI_PROF_SM_ACTIVE')})"
    )
    return alert(
        m,
        "DCGMProfilingMetricsMissing",
        expr,
        for_=m.alerts.profiling_missing_for,
        severity="warning",
        summary=f"No profiling metrics from {label(h)}.",
        description=(
            f"dcgm-exporter on node {label(h)} reports GPUs but no DCGM_FI_PROF_SM_ACTIVE: "
            "tensor and SM activity (the real utilization) are blind there. Check that the "
            f"counters ConfigMap {m.dcgm_config_map} is mounted and the exporter has SYS_ADMIN."
        ),
    )


def rules(q: Queries) -> list[Rule]:
    return [temperature(q), throttling(q), xid(q), memory(q), nvlink(q), missing(q), profiling(q)]
