"""The dcgm-exporter counters CSV (`DCGM FIELD, Prometheus type, help`).

dcgm-exporter reads ONE CSV and it replaces the default whole, so this lists the default
fields we use plus what the default lacks: profiling (SM and tensor activity, NVLink and
PCIe bytes), NVLink error counters, throttling time, ECC, XID and clock-event counts.
Fields and units as in NVIDIA/dcgm-exporter etc/*.csv.

dcgm-exporter reads it with Go's encoding/csv (Comment '#') and exits unless every record
has exactly three fields and a type it knows (internal/pkg/counters/counter_config.go,
`ReadCSVFile`/`ExtractCounters`; types in variables.go `promMetricType`), so `check` refuses
help texts with a comma, quote or line break before anything is rendered.
"""

from __future__ import annotations

COUNTERS: tuple[tuple[str, str, str], ...] = (
    # Clocks, temperature, power (default CSV)
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    # Utilization: GPU_UTIL is 'the lie' (busy, not useful); kept to show next to the truth
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    # Errors and violations (violations are not in the default CSV)
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in ns)."),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in ns)."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Remapped rows for uncorrectable errors."),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Remapped rows for correctable errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    # NVLink: bandwidth (default) and the error counters the default leaves commented out
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "NVLink bandwidth counter (all lanes)."),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "NVLink retries."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "NVLink recovery errors."),
    # Profiling (DCP): needs SYS_ADMIN and a single DCGM host engine per node
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned."),
    ("DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the memory interface is active."),
    ("DCGM_FI_PROF_NVLINK_TX_BYTES", "gauge", "NVLink data sent (in B/s)."),
    ("DCGM_FI_PROF_NVLINK_RX_BYTES", "gauge", "NVLink data received (in B/s)."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "PCIe data sent (in B/s)."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "PCIe data received (in B/s)."),
    # dcgm-exporter's own event counts (label xid / clock_event), per count window
    ("DCGM_EXP_XID_ERRORS_COUNT", "gauge", "XID errors within --xid-count-window-size."),
    ("DCGM_EXP_CLOCK_EVENTS_COUNT", "gauge", "Clock events within --clock-events-count-window-size."),
    # Static information, exported as labels on the other metrics
    ("DCGM_FI_DRIVER_VERSION", "label", "Driver Version"),
)

CSV_KEY = "dcgm-metrics.csv"  # the file name the GPU operator's docs mount it under
PROM_TYPES = frozenset({"gauge", "counter", "histogram", "summary", "label"})  # dcgm-exporter's
FORBIDDEN = (",", '"', "\n", "\r")  # a field separator, a quote (Go refuses bare quotes), a record end


def check(counters: tuple[tuple[str, str, str], ...]) -> None:
    """ValueError unless dcgm-exporter can read every line (see the module docstring)."""
    for field, kind, help_text in counters:
        if kind not in PROM_TYPES:
            raise ValueError(f"{field}: type {kind!r} is not one of {sorted(PROM_TYPES)}")
        if field.startswith("#"):  # Go's csv reader (Comment '#') would skip the whole line
            raise ValueError(f"field {field!r} starts with '#': dcgm-exporter reads the line as a comment")
        for part, text in (("field", field), ("help text", help_text)):
            bad = [c for c in FORBIDDEN if c in text]
            if bad or text != text.strip() or not text:
                raise ValueError(
                    f"{part} of {field} ({text!r}) would break dcgm-exporter's CSV: "
                    "no commas, quotes, line breaks or surrounding blanks"
                )


def csv_text() -> str:
    lines = [
        "# Rendered by trainyard (generators/components/monitoring/dcgm_counters.py); do not edit.",
        "# Format: DCGM FIELD, Prometheus metric type, help message",
    ]
    check(COUNTERS)
    lines += [f"{field}, {kind}, {help_text}" for field, kind, help_text in COUNTERS]
    return "\n".join(lines) + "\n"


def fields() -> frozenset[str]:
    return frozenset(field for field, _, _ in COUNTERS)
