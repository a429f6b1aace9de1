"""gate/trainyard_gate/runtime/log.py: one JSON object per log line (time, level, message, then
the event's fields), so a transition's numbers can be grepped and parsed; JSON has no NaN, so a
non-finite float is written as its name."""

from __future__ import annotations

import json
import logging

from trainyard_gate.runtime.log import _FIELDS, JsonFormatter


def record(message: str, level: int = logging.INFO, **fields: object) -> logging.LogRecord:
    made = logging.LogRecord("trainyard_gate", level, __file__, 1, message, None, None)
    made.created, made.msecs = 86400.25, 250.0  # 1970-01-02T00:00:00.250Z
    setattr(made, _FIELDS, fields)
    return made


def test_a_line_is_one_json_object_with_the_fields_after_the_message() -> None:
    line = JsonFormatter().format(record("gate opened", free_gpus=3, provider="mock"))
    assert line == (
        '{"ts":"1970-01-02T00:00:00.250Z","level":"info","msg":"gate opened","free_gpus":3,"provider":"mock"}'
    )


def test_a_float_json_cannot_hold_is_written_as_its_name() -> None:
    line = JsonFormatter().format(record("no data", logging.WARNING, ratio=float("nan"), limit=float("inf")))
    assert json.loads(line) == {
        "ts": "1970-01-02T00:00:00.250Z",
        "level": "warning",
        "msg": "no data",
        "ratio": "nan",
        "limit": "inf",
    }
