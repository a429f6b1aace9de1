"""`box up ENV --speed X`: the environment with its controller durations divided by X, as a spec.

Like `--scale`, speed is a spec, never a patch of rendered/: the environment is merged over
its `extends:` chain, its schema defaults are filled in (so a duration the file leaves to
the default is divided too), every duration below is divided by X, and the copy is written
as a self-contained environment file that the real generators load, check and render. The
gate's hold times, the descheduler's cycle and `minPodAge`, the health controller's
durations and the alert windows therefore shrink together, and their relations (a hold time
against a reconcile interval, a quarantine duration against an alert's `for`) stay what the
environment says, up to the floors.

Floors: a duration never drops below the schema's `minimum` for it (the copy must stay a
valid spec), nor below one second, and a Prometheus window never below
`PROMETHEUS_WINDOW_FLOOR` (an `increase()` over fewer than two scrapes of the box's
Prometheus, which scrapes every 5 s, returns nothing). A zero stays zero.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

SECONDS_FLOOR = 1
PROMETHEUS_WINDOW_FLOOR = 20  # seconds: 4 scrapes at the box's 5 s interval

# Spec paths of the controller durations ("*": every item of a list or every value of a
# mapping), with their unit: "seconds" (an integer) or "duration" (a Go/Prometheus string).
# Deliberately not here: Prometheus/API timeouts (a request takes as long as it takes) and
# Kueue's waitForPodsReady back-off (Kueue's, not a controller this project runs).
DURATIONS: tuple[tuple[str, str, int], ...] = (
    ("overflow.gate.closeAfterSeconds", "seconds", SECONDS_FLOOR),
    ("overflow.gate.openAfterSeconds", "seconds", SECONDS_FLOOR),
    ("overflow.gate.staggerOpenSeconds", "seconds", SECONDS_FLOOR),
    ("overflow.gate.reconcileIntervalSeconds", "seconds", SECONDS_FLOOR),
    ("overflow.migrateBack.deschedulingInterval", "duration", SECONDS_FLOOR),
    ("overflow.migrateBack.minPodAge", "duration", SECONDS_FLOOR),
    ("overflow.inference.*.scaleDownStabilizationSeconds", "seconds", SECONDS_FLOOR),
    ("health.reconcileIntervalSeconds", "seconds", SECONDS_FLOOR),
    ("health.conditions.*.quarantineAfterSeconds", "seconds", SECONDS_FLOOR),
    ("health.releaseAfterSeconds", "seconds", SECONDS_FLOOR),
    ("monitoring.alerts.gpuTempFor", "duration", SECONDS_FLOOR),
    ("monitoring.alerts.thermalThrottleFor", "duration", SECONDS_FLOOR),
    ("monitoring.alerts.errorWindow", "duration", PROMETHEUS_WINDOW_FLOOR),
    ("monitoring.alerts.infinibandPortDownFor", "duration", SECONDS_FLOOR),
    ("monitoring.alerts.gpuMissingFor", "duration", SECONDS_FLOOR),
    ("monitoring.alerts.profilingMissingFor", "duration", SECONDS_FLOOR),
    ("monitoring.alerts.exporterDownFor", "duration", SECONDS_FLOOR),
    ("monitoring.alerts.quotaDriftFor", "duration", SECONDS_FLOOR),
    ("monitoring.alerts.inferencePendingFor", "duration", SECONDS_FLOOR),
    ("monitoring.alerts.virtualNodeNotReadyFor", "duration", SECONDS_FLOOR),
    ("monitoring.alerts.controllerErrorWindow", "duration", PROMETHEUS_WINDOW_FLOOR),
    ("monitoring.alerts.controllerNoLeaderFor", "duration", SECONDS_FLOOR),
    ("monitoring.alerts.controllerBlindMinSeconds", "seconds", SECONDS_FLOOR),
)

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PART = re.compile(r"([0-9]+)(ms|s|m|h|d|w)")


class SpeedError(ValueError):
    """The environment cannot be sped up as asked (the message says why)."""


def seconds_of(text: str) -> float:
    """A Go or Prometheus duration ("1h30m", "5m", "90s") in seconds."""
    parts = _PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise SpeedError(f"{text!r} is not a duration like 30s, 5m or 1h30m")
    return sum(int(number) * _UNITS[unit] for number, unit in parts)


def divided(seconds: float, speed: int, floor: int) -> int:
    """`seconds` / `speed` in whole seconds, never below `floor` (zero stays zero)."""
    if seconds == 0:
        return 0
    return max(floor, round(seconds / speed))


Slot = tuple[dict[str, Any], str, tuple[str, ...]]


def _slots(value: Any, parts: list[str], at: tuple[str, ...] = ()) -> Iterator[Slot]:
    """(parent mapping, key, schema path) of every value at the dotted path `parts` that is
    present; the schema path names list items "*" and mapping keys by name."""
    head, rest = parts[0], parts[1:]
    if head == "*":
        if isinstance(value, dict):
            children = [(child, (*at, key)) for key, child in value.items()]
        else:
            children = [(child, (*at, "*")) for child in value] if isinstance(value, list) else []
        for child, where in children:
            yield from _slots(child, rest, where) if rest else ()
        return
    if not isinstance(value, dict) or head not in value:
        return
    if rest:
        yield from _slots(value[head], rest, (*at, head))
    else:
        yield value, head, (*at, head)


def sped_up(value: dict[str, Any], speed: int) -> dict[str, Any]:
    """The defaulted environment `value` with every duration of DURATIONS divided (in place)."""
    if speed < 1:
        raise SpeedError(f"--speed must be a positive integer, not {speed}")
    from generators.spec.schema import subschema

    for path, unit, least in DURATIONS:
        for parent, key, where in _slots(value, path.split(".")):
            floor = max(least, int(subschema(where).get("minimum", 0)))
            old = parent[key]
            if unit == "seconds":
                parent[key] = divided(old, speed, floor)
            else:
                parent[key] = f"{divided(seconds_of(old), speed, floor)}s"
    return value
